//! The libraries a profiled process loads: which file the loader resolves first for each name
//! the runtimes and the profiler ask for (and what it shadows), their versions, whether the
//! DXG thunk and the HSA runtime are a matched pair, and `LD_PRELOAD`.

use crate::check::{Check, and_list};
use crate::context::{Context, is_override, names_written_size};
use crate::libs::{THUNK, describe, layout_name, searched};
use crate::loader::{self, Resolution, same_file};
use crate::selftest::SelfTest;
use std::path::{Path, PathBuf};
use wsl_topology::layout_choice::LayoutWarning;

/// The library checks, in report order.
pub fn checks(ctx: &Context, test: &SelfTest) -> Vec<Check> {
    vec![
        thunk(ctx),
        thunk_layout(ctx),
        hsa(ctx, test),
        pair(ctx, test),
        optional(
            "lib.hip",
            &ctx.libs.hip,
            "libamdhip64.so",
            "HIP applications cannot start",
        ),
        optional(
            "lib.roctx",
            &ctx.libs.roctx,
            "librocprofiler-sdk-roctx.so",
            "applications using ROCTx cannot start, and --marker-trace records nothing",
        ),
        register(ctx, test),
        ld_preload(ctx, test),
    ]
}

fn thunk(ctx: &Context) -> Check {
    const CHECK: &str = "lib.thunk";
    let r = &ctx.libs.thunk;
    let Some(found) = &r.chosen else {
        if ctx.native() {
            return Check::ok(
                CHECK,
                "librocdxg.so is not found; native Linux does not use it",
            );
        }
        return Check::error(
            CHECK,
            format!(
                "{} ({}): the HSA runtime cannot reach /dev/dxg without the DXG thunk, so no GPU is visible",
                describe(r, THUNK),
                searched(&ctx.loader)
            ),
            "put the directory holding the librocdxg.so matched with your HSA runtime first on LD_LIBRARY_PATH (a librocdxg.so symlink to it is enough)",
        );
    };
    let mut evidence = describe(r, THUNK);
    if let Some(probed) = ctx.layout.probe.as_ref().and_then(|p| p.path.as_deref()) {
        if same_file(Path::new(probed), &found.real) {
            evidence.push_str("; rocprof's probe loaded that file");
        } else {
            evidence.push_str(&format!("; rocprof's probe loaded {probed}"));
        }
    }
    evidence.push_str(
        "; the HSA runtime and the profiler both ask for librocdxg.so, so this file serves both",
    );
    Check::ok(CHECK, evidence)
}

fn thunk_layout(ctx: &Context) -> Check {
    const CHECK: &str = "lib.thunk-layout";
    if !ctx.wsl() {
        return Check::ok(CHECK, "not probed: this is not a WSL2 GPU environment");
    }
    let Some(p) = &ctx.layout.probe else {
        let why = ctx
            .layout
            .probe_error
            .clone()
            .unwrap_or_else(|| "the thunk could not be loaded".into());
        return Check::error(
            CHECK,
            format!("the thunk's record layout cannot be probed: {why}"),
            "install a librocdxg built from the same sources as the HSA runtime",
        );
    };
    let probe = &p.probe;
    let handshake = match (probe.handshake_offered, probe.accepted) {
        (false, _) => "the thunk does not export DxgAbiCheck (an in-tree build): its records are read on the assumption that the layouts match".to_owned(),
        (true, Some(l)) => format!("DxgAbiCheck accepts {}-byte HsaNodeProperties", l.size()),
        (true, None) => "DxgAbiCheck refuses every layout this build knows (368, 376, 392, 396)".to_owned(),
    };
    let measured = match probe.measured {
        Some(m) => format!(
            "the thunk writes {m} bytes per node (measured with canaries): {}",
            layout_name(m)
        ),
        None => format!(
            "its record size could not be measured ({})",
            probe
                .measure_error
                .as_deref()
                .unwrap_or("no node could be read")
        ),
    };
    // A warning that names the written size already says what the measurement found.
    let evidence = if ctx.layout.warnings.iter().any(names_written_size) {
        handshake
    } else {
        format!("{handshake}; {measured}")
    };
    if ctx.layout.warnings.is_empty() {
        let choice = ctx
            .layout
            .choice
            .as_ref()
            .map(|c| format!("; rocprof reads {} bytes ({})", c.size, c.source))
            .unwrap_or_default();
        return Check::ok(CHECK, format!("{evidence}{choice}"));
    }
    let layout_only = ctx.layout.warnings.iter().all(is_override);
    if layout_only {
        // The override itself is reported by env.hsakmt-layout.
        return Check::ok(CHECK, evidence);
    }
    Check::error(
        CHECK,
        format!(
            "{evidence}; {}",
            ctx.layout
                .warnings
                .iter()
                .map(LayoutWarning::to_string)
                .collect::<Vec<_>>()
                .join("; ")
        ),
        "install a librocdxg and an HSA runtime built from the same sources (a librocdxg.so symlink first on LD_LIBRARY_PATH selects another thunk)",
    )
}

fn hsa(ctx: &Context, test: &SelfTest) -> Check {
    const CHECK: &str = "lib.hsa-runtime";
    let r = &ctx.libs.hsa;
    if r.chosen.is_none() {
        return Check::error(
            CHECK,
            format!(
                "{} ({}): HSA and HIP applications cannot start",
                describe(r, "libhsa-runtime64.so"),
                searched(&ctx.loader)
            ),
            "put the lib directory of the ROCm runtime matched with your librocdxg first on LD_LIBRARY_PATH",
        );
    }
    let mut evidence = describe(r, "libhsa-runtime64.so");
    if let Some(v) = test.build_version() {
        evidence.push_str(&format!("; it reports build version {v}"));
    }
    if let Some(g) = &test.generation {
        evidence.push_str(&format!("; {}", g.evidence));
    }
    Check::ok(CHECK, evidence)
}

fn pair(ctx: &Context, test: &SelfTest) -> Check {
    const CHECK: &str = "lib.pair";
    let Some(p) = ctx.layout.probe.as_ref().filter(|_| ctx.wsl()) else {
        return Check::ok(
            CHECK,
            "not checked: the thunk was not probed (see lib.thunk-layout, platform.dxg)",
        );
    };
    let probe = &p.probe;
    let Some(thunk) = probe.accepted.map(|l| l.size()).or(probe.measured) else {
        return Check::ok(
            CHECK,
            "not checked: the thunk's record size is unknown (see lib.thunk-layout)",
        );
    };
    let thunk_words = match (probe.handshake_offered, probe.accepted) {
        (_, Some(l)) => format!("the thunk accepts {}-byte records in DxgAbiCheck", l.size()),
        (true, None) => format!(
            "the thunk writes {thunk}-byte records and its DxgAbiCheck refuses every layout this build knows"
        ),
        (false, None) => format!("the thunk writes {thunk}-byte records and offers no DxgAbiCheck"),
    };
    let init = test.init();
    let fix = "install a libhsa-runtime64 and a librocdxg built from the same sources: put the directory of the matched pair first on LD_LIBRARY_PATH (a librocdxg.so symlink to the matched thunk is enough)";
    match &test.generation {
        Some(g) => {
            let expected = g.generation.layout();
            let runtime_words = format!(
                "the runtime is {} ({}), built for {expected}-byte HsaNodeProperties",
                g.generation.describe(),
                g.evidence
            );
            if thunk == expected {
                return Check::ok(
                    CHECK,
                    format!("a matched pair: {runtime_words}, and {thunk_words}"),
                );
            }
            if probe.handshake_offered {
                return Check::error(
                    CHECK,
                    format!(
                        "a mismatched pair: {runtime_words}, but {thunk_words}, so it refuses the runtime's DxgAbiCheck and hsa_init fails{}",
                        init.map(|s| format!(
                            " (the self-test's hsa_init returned {})",
                            s.describe()
                        ))
                        .unwrap_or_default()
                    ),
                    fix,
                );
            }
            if thunk > expected {
                return Check::error(
                    CHECK,
                    format!(
                        "a mismatched pair — the seed's heap corruption: {runtime_words}, but {thunk_words}. hsaKmtGetNodeProperties has no size argument, so the thunk writes {thunk} bytes into storage the runtime sized for {expected}: the extra bytes land past the end of the runtime's record, in whatever the heap holds next, and the damage shows up later as a crash with no visible link to its cause"
                    ),
                    fix,
                );
            }
            Check::error(
                CHECK,
                format!(
                    "a mismatched pair: {runtime_words}, but {thunk_words}: the runtime reads its last {} bytes of every node from memory the thunk never wrote",
                    expected - thunk
                ),
                fix,
            )
        }
        None => match init {
            Some(s) if s.success() && probe.accepted.is_some() => Check::ok(
                CHECK,
                format!(
                    "{thunk_words}, and the runtime passed it (the self-test's hsa_init succeeded), so both use {thunk}-byte records"
                ),
            ),
            Some(s) if !s.success() && probe.handshake_offered => Check::error(
                CHECK,
                format!(
                    "{thunk_words}, and the self-test's hsa_init failed with {} although DXG detection was on: a runtime built for another record size is refused exactly so",
                    s.describe()
                ),
                fix,
            ),
            _ => Check::warning(
                CHECK,
                format!(
                    "cannot be verified: {thunk_words} ({}), and neither the runtime's file name nor the self-test tells which layout the runtime was built for",
                    layout_name(thunk)
                ),
                "make sure libhsa-runtime64 and librocdxg come from the same build (the ROCm 7.2.x packages use 376-byte records, current sources 396)",
            ),
        },
    }
}

fn optional(check: &'static str, r: &Resolution, stem: &str, consequence: &str) -> Check {
    if r.chosen.is_some() {
        return Check::ok(check, describe(r, stem));
    }
    Check::warning(
        check,
        format!(
            "{} (along LD_LIBRARY_PATH, /etc/ld.so.conf and the system directories): {consequence}",
            describe(r, stem)
        ),
        "put the ROCm install's lib directory on LD_LIBRARY_PATH",
    )
}

fn register(ctx: &Context, test: &SelfTest) -> Check {
    const CHECK: &str = "lib.register";
    let r = &ctx.libs.register;
    let mut evidence = describe(r, "librocprofiler-register.so");
    let mapped = test
        .mapped()
        .iter()
        .any(|m| m.contains("librocprofiler-register.so"));
    if test.init().is_some_and(|s| s.success()) {
        evidence.push_str(if mapped {
            "; the runtime loaded it in the self-test"
        } else {
            "; the runtime did not load it in the self-test"
        });
    }
    if r.chosen.is_none() {
        return Check::error(
            CHECK,
            format!(
                "{evidence} ({}): the HSA runtime hands its API table to tools through it and skips registration silently when it cannot load it, so a run records nothing",
                searched(&ctx.loader)
            ),
            "put the ROCm install's lib directory (which holds librocprofiler-register.so.0) on LD_LIBRARY_PATH",
        );
    }
    Check::ok(CHECK, evidence)
}

/// `LD_PRELOAD`'s entries (colons or blanks separate them, as for glibc).
fn preload_entries(value: &str) -> Vec<String> {
    value
        .split([':', ' ', '\t', '\n'])
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

fn ld_preload(ctx: &Context, test: &SelfTest) -> Check {
    const CHECK: &str = "env.ld-preload";
    let Some(value) = ctx.env.non_empty("LD_PRELOAD") else {
        return Check::ok(
            CHECK,
            "LD_PRELOAD is unset (rocprof preloads its own library)",
        );
    };
    let entries = preload_entries(value);
    let copies: Vec<&String> = test
        .mapped()
        .iter()
        .filter(|m| m.rsplit('/').next().is_some_and(|n| n.starts_with(THUNK)))
        .collect();
    let mapped_note = if copies.len() > 1 {
        format!(
            "; the self-test process mapped {} copies of the thunk: {}",
            copies.len(),
            and_list(&copies.iter().map(|c| c.to_string()).collect::<Vec<_>>())
        )
    } else {
        String::new()
    };
    let mut notes = Vec::new();
    for entry in &entries {
        let name = entry.rsplit('/').next().unwrap_or(entry);
        if name.contains("rocprofiler-sdk-tool") || name.contains("librocprof_tool") {
            return Check::warning(
                CHECK,
                format!(
                    "LD_PRELOAD names a profiler tool ({entry}): rocprof preloads its own, and two tools would both wrap the runtime's tables"
                ),
                format!("remove {entry} from LD_PRELOAD"),
            );
        }
        if !name.starts_with("librocdxg") {
            notes.push(format!("{entry} (not a ROCm library)"));
            continue;
        }
        if !entry.contains('/') {
            let r = ctx.loader.resolve(entry, None, None);
            let Some(found) = &r.chosen else {
                return Check::warning(
                    CHECK,
                    format!(
                        "LD_PRELOAD names {entry} by bare name, but the loader's search ({}) finds no such file, so the preload is ignored (ld.so says so on every program's stderr)",
                        searched(&ctx.loader)
                    ),
                    format!(
                        "remove {entry} from LD_PRELOAD, or put its directory on LD_LIBRARY_PATH"
                    ),
                );
            };
            notes.push(format!(
                "{entry} by bare name: the loader resolves it through an ordinary search ({}), and the runtime's and the profiler's requests for librocdxg.so find that copy",
                found.describe()
            ));
            continue;
        }
        let path = PathBuf::from(entry);
        if !path.is_file() {
            return Check::error(
                CHECK,
                format!(
                    "LD_PRELOAD names {entry}, which does not exist: the loader cannot preload it (it says so on every program's stderr)"
                ),
                format!(
                    "remove {entry} from LD_PRELOAD; put a directory with a librocdxg.so symlink to the matched thunk first on LD_LIBRARY_PATH instead"
                ),
            );
        }
        let soname = loader::soname(&path);
        if soname.as_deref() == Some(THUNK) {
            notes.push(format!("{entry} by path, whose SONAME is librocdxg.so, the name the runtime and the profiler ask for, so they find it"));
            continue;
        }
        let registered = match &soname {
            Some(s) => format!("{entry} and {s} (its SONAME)"),
            None => format!("{entry} (it has no SONAME)"),
        };
        let fix = format!(
            "remove {entry} from LD_PRELOAD and put a directory holding a librocdxg.so symlink to it first on LD_LIBRARY_PATH (mkdir -p ~/wsl-dxg-lib && ln -sf {entry} ~/wsl-dxg-lib/librocdxg.so && export LD_LIBRARY_PATH=~/wsl-dxg-lib:$LD_LIBRARY_PATH), or preload it by bare name (LD_PRELOAD=librocdxg.so)"
        );
        match &ctx.libs.thunk.chosen {
            Some(other) if same_file(&other.real, &path) => notes.push(format!(
                "{entry} by path; the search for librocdxg.so finds the same file ({}), which the loader recognises, so there is one copy",
                other.describe()
            )),
            Some(other) => {
                return Check::error(
                    CHECK,
                    format!(
                        "LD_PRELOAD={value}: the preload succeeds, but glibc registers the object as {registered}, and the HSA runtime and the profiler ask for librocdxg.so, which matches neither; the loader then searches the path and maps another copy, {}, next to the preloaded one, without any message — every profiled process ends up with two thunks, each with its own state{mapped_note}",
                        other.describe()
                    ),
                    fix,
                );
            }
            None => {
                return Check::error(
                    CHECK,
                    format!(
                        "LD_PRELOAD={value}: glibc registers the preloaded object as {registered}; the runtime's and the profiler's requests for librocdxg.so match neither, and a path search finds no librocdxg.so, so their dlopen fails although the preload succeeded{mapped_note}"
                    ),
                    fix,
                );
            }
        }
    }
    Check::ok(
        CHECK,
        format!("LD_PRELOAD={value}: {}{mapped_note}", notes.join("; ")),
    )
}
