//! The ROCm libraries a profiled process loads, by the names the runtimes and the profiler ask
//! for, and where the loader resolves each in the environment checked (and what it shadows):
//! the facts the library checks, the application inspection and the pairing warning share.

use crate::check::and_list;
use crate::generation::Generation;
use crate::loader::{self, Found, Loader, Resolution};

/// The name both the HSA runtime and the profiler ask for.
pub const THUNK: &str = "librocdxg.so";
/// The HSA runtime's soname.
pub const HSA: &str = "libhsa-runtime64.so.1";
/// HIP's sonames, newest first.
pub const HIP: [&str; 3] = ["libamdhip64.so.7", "libamdhip64.so.6", "libamdhip64.so"];
/// ROCTx's sonames.
pub const ROCTX: [&str; 2] = [
    "librocprofiler-sdk-roctx.so.1",
    "librocprofiler-sdk-roctx.so",
];
/// rocprofiler-register's soname (the runtime `dlopen`s it to register its tables).
pub const REGISTER: &str = "librocprofiler-register.so.0";

/// Where each library resolves in the environment checked.
#[derive(Debug, Clone)]
pub struct Libraries {
    /// `librocdxg.so`.
    pub thunk: Resolution,
    /// `libhsa-runtime64.so.1`.
    pub hsa: Resolution,
    /// `libamdhip64.so.*`.
    pub hip: Resolution,
    /// `librocprofiler-sdk-roctx.so.*`.
    pub roctx: Resolution,
    /// `librocprofiler-register.so.0`.
    pub register: Resolution,
}

impl Libraries {
    /// Resolves every name as a `dlopen` from the profiler (no search path of its own) would.
    pub fn resolve(loader: &Loader) -> Libraries {
        Libraries {
            thunk: loader.resolve(THUNK, None, None),
            hsa: loader.resolve(HSA, None, None),
            hip: loader.resolve_any(&HIP),
            roctx: loader.resolve_any(&ROCTX),
            register: loader.resolve(REGISTER, None, None),
        }
    }
}

/// `name → file (via; version V, SONAME S); shadows A and B`.
pub fn describe(r: &Resolution, stem: &str) -> String {
    let Some(f) = &r.chosen else {
        return format!("{} is not found", r.name);
    };
    let mut facts = Vec::new();
    if let Some(v) = loader::file_version(&f.real, stem) {
        facts.push(format!("version {v}"));
    }
    if let Some((a, b, c)) = loader::rocm_release(&f.real, stem) {
        facts.push(format!("ROCm {a}.{b}.{c}"));
    }
    if let Some(s) = &f.soname {
        facts.push(format!("SONAME {s}"));
    }
    let mut s = format!("{} resolves to {}", r.name, f.describe());
    if !facts.is_empty() {
        s.push_str(&format!(" [{}]", facts.join(", ")));
    }
    if !r.shadowed.is_empty() {
        let others: Vec<String> = r.shadowed.iter().map(Found::describe).collect();
        s.push_str(&format!(", ahead of {}", and_list(&others)));
    }
    s
}

/// The search in words, for a name that was not found.
pub fn searched(loader: &Loader) -> String {
    let ld: Vec<String> = loader
        .ld_library_path()
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    format!(
        "searched LD_LIBRARY_PATH ({}), /etc/ld.so.conf and the system directories",
        if ld.is_empty() {
            "unset".to_owned()
        } else {
            ld.join(":")
        }
    )
}

/// What a record size is known as.
pub fn layout_name(size: usize) -> &'static str {
    match size {
        376 => "the layout of the ROCm 7.2.x packages",
        396 => "the layout of current development sources",
        368 | 392 => "a layout of intermediate sources",
        _ => "a layout this build does not know",
    }
}

/// The generation a runtime's file name implies (its ROCm release).
pub fn generation_from_file(r: &Resolution) -> Option<(Generation, String)> {
    let f = r.chosen.as_ref()?;
    let (major, minor, patch) = loader::rocm_release(&f.real, "libhsa-runtime64.so")?;
    let release = format!("ROCm {major}.{minor}.{patch} by its file");
    match (major, minor) {
        (7, 2) => Some((Generation::Stock72, release)),
        (7, m) if m > 2 => Some((Generation::Current, release)),
        (m, _) if m > 7 => Some((Generation::Current, release)),
        _ => None,
    }
}
