//! Output options (`-d`, `-o`, `-f`, `--stats`, `-S`, `-M`, `-T`, `-A`), checked before
//! anything runs, and output files that are never half-written or mixed.
//!
//! A process's files are written into a private staging directory beside their final place
//! (`.rocprof-<pid>-<random>/`, same file system) and renamed into place only when all of
//! them are complete; a failure removes what was staged. Each file itself is also written
//! under a temporary name and renamed (`trace_export::csv`), so a full disk or a concurrent
//! run leaves either the old file or the whole new one. [`Placement`] remembers the identity
//! (device, inode) of every file it renamed into place, notices a target that another run
//! created after this one started, and at the end re-checks its own files.

use crate::placeholders::{Context, Expansion};
use crate::plan::{Launch, OutputSettings};
use crate::words::{io_reason, is_no_space};
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io;
use std::os::unix::ffi::OsStrExt as _;
use std::os::unix::fs::{DirBuilderExt as _, MetadataExt as _};
use std::path::{Component, Path, PathBuf};
use std::time::SystemTime;
use trace_export::output::OutputPrefix;

/// A bad output path, found before anything is written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    /// A placeholder's value takes `-o` out of `-d`: makes it absolute, or climbs out with `..`.
    #[error("{}", path_escapes(template, expanded, directory))]
    Escapes {
        /// `-o` as given.
        template: String,
        /// What it expanded to.
        expanded: String,
        /// The output directory.
        directory: PathBuf,
    },
    /// A placeholder's value makes a component of `-o` that is not a name: `.`, `..` (that
    /// stays inside `-d`) or empty.
    #[error("{}", not_a_name(template, expanded, component))]
    NotAName {
        /// `-o` as given.
        template: String,
        /// What it expanded to.
        expanded: String,
        /// The component (`.`, `..` or empty).
        component: String,
    },
    /// A name longer than a file system allows.
    #[error("{}", name_too_long(name))]
    NameTooLong {
        /// The name (one path component).
        name: String,
    },
    /// A path longer than the system allows.
    #[error("{}", path_too_long(path))]
    PathTooLong {
        /// The longest path an output could have.
        path: PathBuf,
    },
    /// Something on the way is not a directory.
    #[error("{}", not_a_directory(path))]
    NotADirectory {
        /// It.
        path: PathBuf,
    },
    /// Nothing can be created there.
    #[error("{}", not_writable(path, reason))]
    NotWritable {
        /// The deepest existing directory.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// A format asked for cannot be written on this machine (`-f otf2` without the OTF2
    /// library): the text says what to install.
    #[error("-f otf2: {reason}")]
    Otf2Unavailable {
        /// Why (`otf2_export`'s error, which names the package).
        reason: String,
    },
}

/// The longest name a component may have (Linux file systems).
const NAME_MAX: usize = 255;
/// The longest path the system accepts (with its terminating NUL).
const PATH_MAX: usize = 4096;
/// The names of the files rocprof writes after the prefix (`<prefix>_<name>.csv`).
pub const OUTPUT_NAMES: [&str; 16] = [
    "agent_info",
    "hip_api_trace",
    "hsa_api_trace",
    "kernel_trace",
    "memory_copy_trace",
    "memory_allocation_trace",
    "scratch_memory_trace",
    "marker_api_trace",
    "hip_api_stats",
    "hsa_api_stats",
    "kernel_stats",
    "memory_copy_stats",
    "memory_allocation_stats",
    "scratch_memory_stats",
    "marker_api_stats",
    "domain_stats",
];
/// A process id of the longest kind (Linux's `pid_max` is at most 2^22).
pub const STAND_IN_PID: u32 = 4_194_304;

/// The output prefix of the process `ctx` describes: `-d` joined with `-o`, placeholders
/// substituted once (their values literally), refused if a placeholder's value takes it out of
/// `-d` or makes a component of `-o` that is not a name.
pub fn prefix_for(s: &OutputSettings, ctx: &Context<'_>) -> Result<PathBuf, PathError> {
    let dir = s.base.join(ctx.expand(&s.directory));
    let file = ctx.expansion(&s.file);
    check_components(&s.file, &file, &dir)?;
    let file = file.into_text();
    // `Path::join` would drop a trailing `/` of `-o` (a prefix naming a directory).
    let mut prefix = dir.join(&file).into_os_string();
    if file.ends_with('/') && !prefix.as_bytes().ends_with(b"/") {
        prefix.push("/");
    }
    Ok(PathBuf::from(prefix))
}

/// Checks the components of the expanded `-o` (split at every `/`, none skipped) that a
/// placeholder's value touches (with a character, a `/` before or after, or an empty value in
/// it): such a component is a name. One that makes the path absolute, or a `..` that climbs out
/// of `-d`, is [`PathError::Escapes`]; a `.`, an empty component or a `..` that stays inside is
/// [`PathError::NotAName`]. What the template itself writes is the user's choice and passes.
fn check_components(template: &str, file: &Expansion, directory: &Path) -> Result<(), PathError> {
    let text = file.text();
    let values = file.substitutions();
    let (mut next, mut depth, mut start) = (0, 0isize, 0);
    let mut odd: Option<&str> = None;
    for (index, component) in text.split('/').enumerate() {
        let end = start + component.len();
        // A value that ends before this component (and its `/` before it) touches no later one.
        while values.get(next).is_some_and(|v| v.value.end < start) {
            next += 1;
        }
        let touched = values.get(next).is_some_and(|v| v.value.start <= end);
        let escapes = || PathError::Escapes {
            template: template.to_owned(),
            expanded: text.to_owned(),
            directory: directory.to_owned(),
        };
        match component {
            "" if index == 0 && !text.is_empty() => {
                if touched {
                    return Err(escapes());
                }
            }
            "" | "." => {
                if touched {
                    odd = odd.or(Some(component));
                }
            }
            ".." => {
                if touched {
                    if depth <= 0 {
                        return Err(escapes());
                    }
                    odd = odd.or(Some(component));
                }
                depth -= 1;
            }
            _ => depth += 1,
        }
        start = end + 1;
    }
    match odd {
        Some(component) => Err(PathError::NotAName {
            template: template.to_owned(),
            expanded: text.to_owned(),
            component: component.to_owned(),
        }),
        None => Ok(()),
    }
}

/// Checks `-d`/`-o` (and that `-f otf2` can be written) before anything runs: no placeholder's value takes `-o` out of `-d` or makes
/// a component of it that is not a name, every name fits the file system, and the directory can be created and written. Values known only per
/// process (`%pid%`) stand in with a value of the longest shape.
pub fn validate(s: &OutputSettings, launch: &Launch) -> Result<(), PathError> {
    if s.formats.contains(&crate::plan::OutputFormat::Otf2) {
        otf2_export::available().map_err(|e| PathError::Otf2Unavailable {
            reason: e.to_string(),
        })?;
    }
    let ctx = Context::new(launch, STAND_IN_PID, STAND_IN_PID);
    let prefix = prefix_for(s, &ctx)?;
    let (parent, name) = split_prefix(&prefix);
    let longest = OUTPUT_NAMES.iter().map(|n| n.len()).max().unwrap_or(0);
    // `<name>_<pid>_<output>.csv`: the `_<pid>` is added when processes share a name.
    let file_len = name.len() + 1 + STAND_IN_PID.to_string().len() + 1 + longest + 4;
    for c in parent.components() {
        if let Component::Normal(n) = c
            && n.len() > NAME_MAX
        {
            return Err(PathError::NameTooLong {
                name: n.to_string_lossy().into_owned(),
            });
        }
    }
    if file_len > NAME_MAX {
        return Err(PathError::NameTooLong {
            name: format!(
                "{}_{STAND_IN_PID}_memory_copy_trace.csv",
                name.to_string_lossy()
            ),
        });
    }
    if parent.as_os_str().len() + 1 + file_len >= PATH_MAX {
        return Err(PathError::PathTooLong {
            path: parent.join(format!(
                "{}_{STAND_IN_PID}_memory_copy_trace.csv",
                name.to_string_lossy()
            )),
        });
    }
    check_writable(&parent)
}

/// `(directory, file-name prefix)` of an output prefix (`dir/` → `(dir, "")`).
fn split_prefix(prefix: &Path) -> (PathBuf, OsString) {
    if prefix.as_os_str().as_bytes().ends_with(b"/") {
        return (prefix.to_owned(), OsString::new());
    }
    let parent = prefix
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = prefix.file_name().map(OsString::from).unwrap_or_default();
    (parent.to_owned(), name)
}

/// The deepest existing ancestor of `dir` is a directory in which this process can create
/// entries (a directory is created and removed there to find out).
fn check_writable(dir: &Path) -> Result<(), PathError> {
    let mut at = dir;
    loop {
        match std::fs::metadata(at) {
            Ok(m) if m.is_dir() => break,
            Ok(_) => {
                return Err(PathError::NotADirectory {
                    path: at.to_owned(),
                });
            }
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
                ) =>
            {
                match at.parent().filter(|p| !p.as_os_str().is_empty()) {
                    Some(p) => at = p,
                    None => {
                        return Err(PathError::NotWritable {
                            path: dir.to_owned(),
                            reason: e.to_string(),
                        });
                    }
                }
            }
            Err(e) => {
                return Err(PathError::NotWritable {
                    path: at.to_owned(),
                    reason: e.to_string(),
                });
            }
        }
    }
    let probe = at.join(format!(
        ".rocprof-probe-{}-{}",
        std::process::id(),
        crate::record_dir::random_token()
    ));
    match std::fs::create_dir(&probe) {
        Ok(()) => {
            let _ = std::fs::remove_dir(&probe);
            Ok(())
        }
        Err(e) => Err(PathError::NotWritable {
            path: at.to_owned(),
            reason: io_reason(&e),
        }),
    }
}

/// An output file that could not be written.
#[derive(Debug, thiserror::Error)]
#[error("{}", write_failed(file, source))]
pub struct WriteFailure {
    /// The file (its final name).
    pub file: PathBuf,
    /// Why.
    pub source: io::Error,
}

/// What happened to a file this run wrote, or one it replaced, because of another run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Replacement {
    /// Another run replaced (or removed) this file after this run wrote it.
    ByOther(PathBuf),
    /// This run replaced a file another run wrote after this run started.
    OfOther(PathBuf),
}

/// The files of one conversion: staged, moved into place, checked at the end.
#[derive(Debug)]
pub struct Placement {
    /// When this run started, on the file system's clock.
    since: SystemTime,
    /// Final directory → its staging directory.
    staging: BTreeMap<PathBuf, PathBuf>,
    /// Files renamed into place, with (device, inode).
    placed: Vec<(PathBuf, (u64, u64))>,
    /// Files of other runs this run replaced.
    replaced: Vec<PathBuf>,
    /// Output directories this placement created (removed again if they stay empty).
    created: Vec<PathBuf>,
}

impl Placement {
    /// A placement for a run that started at `since` (file-system time).
    pub fn new(since: SystemTime) -> Self {
        Self {
            since,
            staging: BTreeMap::new(),
            placed: Vec::new(),
            replaced: Vec::new(),
            created: Vec::new(),
        }
    }

    /// The prefix to write a process's files under, in the staging directory beside their
    /// final place `prefix` (creating both directories).
    pub fn stage(&mut self, prefix: &Path) -> Result<OutputPrefix, WriteFailure> {
        let (parent, name) = split_prefix(prefix);
        let stage = match self.staging.get(&parent) {
            Some(s) => s.clone(),
            None => {
                let fail = |source| WriteFailure {
                    file: parent.clone(),
                    source,
                };
                let missing: Vec<PathBuf> = parent
                    .ancestors()
                    .take_while(|a| !a.as_os_str().is_empty() && !a.exists())
                    .map(Path::to_owned)
                    .collect();
                std::fs::create_dir_all(&parent).map_err(fail)?;
                self.created.extend(missing);
                let stage = parent.join(format!(
                    ".rocprof-{}-{}",
                    std::process::id(),
                    crate::record_dir::random_token()
                ));
                std::fs::DirBuilder::new()
                    .mode(0o700)
                    .create(&stage)
                    .map_err(fail)?;
                self.staging.insert(parent, stage.clone());
                stage
            }
        };
        let mut staged = stage.into_os_string();
        staged.push("/");
        staged.push(name);
        Ok(OutputPrefix(PathBuf::from(staged)))
    }

    /// The final name of a staged file.
    pub fn final_path(staged: &Path) -> PathBuf {
        let stage = staged.parent().unwrap_or(Path::new("."));
        let dir = stage.parent().unwrap_or(Path::new("."));
        dir.join(staged.file_name().unwrap_or_default())
    }

    /// Renames a process's staged files into place; returns their final names.
    pub fn commit(&mut self, staged: &[PathBuf]) -> Result<Vec<PathBuf>, WriteFailure> {
        let mut done = Vec::with_capacity(staged.len());
        for s in staged {
            let target = Self::final_path(s);
            let fail = |source| WriteFailure {
                file: target.clone(),
                source,
            };
            let id = std::fs::symlink_metadata(s)
                .map(|m| (m.dev(), m.ino()))
                .map_err(fail)?;
            let old = std::fs::symlink_metadata(&target);
            if let Ok(old) = &old
                && !self.placed.iter().any(|p| p.1 == (old.dev(), old.ino()))
                && old.modified().is_ok_and(|t| t >= self.since)
            {
                self.replaced.push(target.clone());
            }
            if let Ok(old) = &old
                && old.is_dir()
            {
                // An OTF2 archive's directory replaces the one of an earlier archive: moved
                // into the staging directory (removed at the end), never merged with it.
                set_aside(s, &target).map_err(fail)?;
            }
            std::fs::rename(s, &target).map_err(fail)?;
            self.placed.push((target.clone(), id));
            done.push(target);
        }
        Ok(done)
    }

    /// Removes staged files (and an archive's directories) that will not be committed.
    pub fn discard(&self, staged: &[PathBuf]) {
        for s in staged {
            let _ = if s.is_dir() {
                std::fs::remove_dir_all(s)
            } else {
                std::fs::remove_file(s)
            };
        }
    }

    /// Removes the staging directories and reports every replacement: files of other runs
    /// this run replaced, and files of this run that are no longer in place.
    pub fn finish(mut self) -> Vec<Replacement> {
        for stage in self.staging.values() {
            let _ = std::fs::remove_dir_all(stage);
        }
        // Deepest first; a directory that received a file (or anything else) stays.
        self.created
            .sort_by_key(|d| std::cmp::Reverse(d.components().count()));
        for dir in &self.created {
            let _ = std::fs::remove_dir(dir);
        }
        let mut out: Vec<Replacement> = self
            .replaced
            .into_iter()
            .map(Replacement::OfOther)
            .collect();
        for (path, id) in self.placed {
            let now = std::fs::symlink_metadata(&path).map(|m| (m.dev(), m.ino()));
            if now.ok() != Some(id) {
                out.push(Replacement::ByOther(path));
            }
        }
        out
    }
}

/// Moves `target`, the directory of an earlier OTF2 archive, beside the staged `staged` (into
/// the staging directory, which is removed at the end), so that `staged` can take its place.
/// Refused when `target` holds anything but an archive's location files (`<n>.evt`,
/// `<n>.def`, `<n>.snap`): a directory of the user's is never replaced.
fn set_aside(staged: &Path, target: &Path) -> io::Result<()> {
    for entry in std::fs::read_dir(target)? {
        let entry = entry?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let location_file = name.rsplit_once('.').is_some_and(|(n, ext)| {
            !n.is_empty()
                && n.bytes().all(|b| b.is_ascii_digit())
                && matches!(ext, "evt" | "def" | "snap")
        });
        if !location_file || !entry.file_type()?.is_file() {
            return Err(io::Error::other(format!(
                "{} is in the way: a directory that is not an OTF2 archive's (it holds {}); \
                 move it or choose another -o",
                terminal_text::escape_path(target),
                terminal_text::escape(&name)
            )));
        }
    }
    let aside = staged.with_file_name(format!(".replaced-{}", crate::record_dir::random_token()));
    std::fs::rename(target, aside)
}

/// A placeholder's value takes `-o` out of `-d`.
fn path_escapes(template: &str, expanded: &str, directory: &Path) -> String {
    format!(
        "-o '{template}' expands to '{expanded}', which a placeholder's value takes out of the output directory {}: use a placeholder without '/' or '..' in its value (e.g. %tag% or %argt%), or write the path literally",
        directory.display()
    )
}

/// A placeholder's value makes a component of `-o` that is not a name.
fn not_a_name(template: &str, expanded: &str, component: &str) -> String {
    let what = if component.is_empty() {
        "an empty path component".to_owned()
    } else {
        format!("the path component '{component}'")
    };
    format!(
        "-o '{template}' expands to '{expanded}', in which a placeholder's value makes {what}, not a name: use a placeholder whose value is a plain name (e.g. %tag% or %pid%), or write the path literally"
    )
}

/// A path component longer than a file name may be.
fn name_too_long(name: &str) -> String {
    format!(
        "the output name '{name}' would be {} bytes long, more than the 255 a file name may have: shorten -d/-o",
        name.len()
    )
}

/// A path longer than the system accepts.
fn path_too_long(path: &Path) -> String {
    format!(
        "the output path {} would be longer than the 4095 bytes a path may have: shorten -d/-o",
        path.display()
    )
}

/// Something on the output path is a file.
fn not_a_directory(path: &Path) -> String {
    format!(
        "{} is not a directory, so no output can be written under it: choose another -d/-o, or move it away",
        path.display()
    )
}

/// The output directory cannot be written.
fn not_writable(path: &Path, reason: &str) -> String {
    format!(
        "cannot create the output files under {}: {reason}; choose a writable -d, or fix the directory",
        path.display()
    )
}

/// An output file could not be written.
fn write_failed(file: &Path, e: &io::Error) -> String {
    if is_no_space(e) {
        format!(
            "cannot write {}: {}; nothing of this process's outputs was left half-written. Free space there (or choose another -d), then finish with the convert command below",
            file.display(),
            io_reason(e)
        )
    } else {
        format!(
            "cannot write {}: {}; fix the cause, then finish with the convert command below",
            file.display(),
            io_reason(e)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(d: &str, o: &str) -> OutputSettings {
        let mut s = OutputSettings::new(Path::new("/base"));
        s.directory = d.into();
        s.file = o.into();
        s
    }

    fn launch(args: &[&str]) -> Launch {
        Launch {
            rocprof_pid: 1,
            hostname: "h".into(),
            cwd: "/w".into(),
            argv: args.iter().map(|a| (*a).to_owned()).collect(),
            ..Default::default()
        }
    }

    #[test]
    fn a_placeholder_cannot_take_the_output_out_of_the_directory() {
        // Arguments are cleaned as rocprofv3 cleans them (every `/` an `_`, leading `.` and
        // `_` removed), which can still leave `..`.
        let l = launch(&["app", "/..", "/abs", "sub/dir"]);
        let ctx = Context::new(&l, 5, 0);
        for o in ["%arg1%", "a/%arg1%/%arg1%"] {
            let e = prefix_for(&settings("out", o), &ctx).unwrap_err();
            assert!(matches!(e, PathError::Escapes { .. }), "{o}: {e}");
            assert!(e.to_string().contains("-o"), "{e}");
        }
        // A value that stays inside, and a literal path the user wrote, are fine.
        assert_eq!(
            prefix_for(&settings("out", "%arg3%_%pid%"), &ctx).unwrap(),
            Path::new("/base/out/sub_dir_5")
        );
        assert_eq!(
            prefix_for(&settings("out", "../side/%pid%"), &ctx).unwrap(),
            Path::new("/base/out/../side/5")
        );
        assert_eq!(
            prefix_for(&settings("/abs", "run/"), &ctx).unwrap(),
            Path::new("/abs/run/")
        );
    }

    #[test]
    fn a_placeholder_value_makes_names_only() {
        // Arguments as rocprofv3 cleans them: `/.` gives `.`, `/..` gives `..`.
        let l = launch(&["app", "/.", "", "x/.", "sub/", "/..", "x/../y", "%arg1%"]);
        let ctx = Context::new(&l, 5, 0);
        for (o, component) in [
            ("%arg1%", "."),
            ("%arg2%", ""),
            ("run/%arg2%", ""),
            ("a/%arg2%/x", ""),
            ("a/%arg5%", ".."),
            ("%arg1%/x", "."),
        ] {
            let e = prefix_for(&settings("out", o), &ctx).unwrap_err();
            assert_eq!(
                e,
                PathError::NotAName {
                    template: o.into(),
                    expanded: ctx.expand(o),
                    component: component.into()
                },
                "{o}"
            );
        }
        let e = prefix_for(&settings("out", "%arg2%/x"), &ctx).unwrap_err();
        assert!(matches!(e, PathError::Escapes { .. }), "{e}");
        assert_eq!(
            e.to_string(),
            "-o '%arg2%/x' expands to '/x', which a placeholder's value takes out of the output directory /base/out: use a placeholder without '/' or '..' in its value (e.g. %tag% or %argt%), or write the path literally"
        );
        assert_eq!(
            prefix_for(&settings("out", "%arg1%"), &ctx)
                .unwrap_err()
                .to_string(),
            "-o '%arg1%' expands to '.', in which a placeholder's value makes the path component '.', not a name: use a placeholder whose value is a plain name (e.g. %tag% or %pid%), or write the path literally"
        );
        assert!(
            prefix_for(&settings("out", "%arg2%"), &ctx)
                .unwrap_err()
                .to_string()
                .contains("makes an empty path component, not a name")
        );
        // What the template writes itself, and dots inside names, are fine.
        for (o, prefix) in [
            ("./%pid%", "/base/out/./5"),
            ("a//b_%pid%", "/base/out/a//b_5"),
            ("%pid%/", "/base/out/5/"),
            ("run%arg1%", "/base/out/run."),
            ("%arg1%x", "/base/out/.x"),
            ("%arg2%_%pid%", "/base/out/_5"),
            ("%arg7%", "/base/out/%arg1%"),
            ("%arg3%.%arg4%.%arg6%", "/base/out/x_..sub_.x_.._y"),
        ] {
            assert_eq!(
                prefix_for(&settings("out", o), &ctx).unwrap().as_os_str(),
                prefix,
                "{o}"
            );
        }
    }

    #[test]
    fn an_argument_that_repeats_its_placeholder_is_one_long_name() {
        let fifty = "%arg1%".repeat(50);
        let l = launch(&["app", &fifty]);
        let e = validate(&settings("/tmp", "%arg1%"), &l).unwrap_err();
        assert_eq!(
            e,
            PathError::NameTooLong {
                name: format!("{fifty}_{STAND_IN_PID}_memory_copy_trace.csv")
            }
        );
        let e = validate(&settings("/tmp/%arg1%", "run"), &l).unwrap_err();
        assert_eq!(
            e,
            PathError::NameTooLong {
                name: fifty.clone()
            }
        );
    }

    proptest::proptest! {
        /// Whatever the argument, an accepted prefix is `-d`, `/`, and the expansion, every
        /// component of which is a name; a refusal names a component that is not one.
        #[test]
        fn an_accepted_prefix_is_made_of_names_inside_the_directory(
            value in "[./a%{}]{0,6}",
            template in proptest::sample::select(vec![
                "%arg1%", "a/%arg1%", "%arg1%/b", "r%arg1%", "%arg1%_%pid%", "%arg1%%arg1%",
            ]),
        ) {
            let l = launch(&["app", &value]);
            let ctx = Context::new(&l, 5, 0);
            let expanded = ctx.expand(template);
            let bad = expanded.split('/').any(|c| matches!(c, "" | "." | ".."));
            match prefix_for(&settings("out", template), &ctx) {
                Ok(p) => {
                    proptest::prop_assert!(!bad, "{} accepted", expanded);
                    proptest::prop_assert_eq!(p, PathBuf::from(format!("/base/out/{expanded}")));
                }
                Err(PathError::Escapes { expanded: e, .. } | PathError::NotAName { expanded: e, .. }) => {
                    proptest::prop_assert!(bad, "{} refused", expanded);
                    proptest::prop_assert_eq!(e, expanded);
                }
                Err(e) => proptest::prop_assert!(false, "{}", e),
            }
        }
    }

    #[test]
    fn bad_directories_and_names_are_refused() {
        let l = launch(&["app"]);
        let file =
            std::env::temp_dir().join(format!("rocprof-outputs-test-{}", std::process::id()));
        std::fs::write(&file, "x").unwrap();
        let e = validate(&settings(file.to_str().unwrap(), "run"), &l).unwrap_err();
        assert_eq!(e, PathError::NotADirectory { path: file.clone() });
        let sub = file.join("deeper");
        let e = validate(&settings(sub.to_str().unwrap(), "run"), &l).unwrap_err();
        assert_eq!(e, PathError::NotADirectory { path: file.clone() });
        std::fs::remove_file(&file).unwrap();
        let e = validate(&settings("/tmp", &"n".repeat(230)), &l).unwrap_err();
        assert!(matches!(e, PathError::NameTooLong { .. }), "{e}");
        let e = validate(&settings(&format!("/tmp/{}", "d".repeat(256)), "run"), &l).unwrap_err();
        assert!(matches!(e, PathError::NameTooLong { .. }), "{e}");
        let deep = format!("/tmp{}", "/d".repeat(2100));
        let e = validate(&settings(&deep, "run"), &l).unwrap_err();
        assert!(matches!(e, PathError::PathTooLong { .. }), "{e}");
        let e = validate(&settings("/proc/self", "run"), &l).unwrap_err();
        assert!(matches!(e, PathError::NotWritable { .. }), "{e}");
        validate(
            &settings("/tmp/rocprof-not-yet/%pid%", "%hostname%/%pid%"),
            &l,
        )
        .unwrap();
        assert!(
            !Path::new("/tmp/rocprof-not-yet").exists(),
            "validation creates nothing"
        );
    }

    #[test]
    fn placement_stages_renames_and_tells_replacements_apart() {
        let root = std::env::temp_dir().join(format!("rocprof-placement-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let out = root.join("out");
        std::fs::create_dir_all(&out).unwrap();
        // Older than this run: replacing it is an ordinary overwrite, not another run's file.
        std::fs::write(out.join("run_old.csv"), "old").unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        let stamp = root.join("stamp");
        std::fs::write(&stamp, "").unwrap();
        let since = std::fs::metadata(&stamp).unwrap().modified().unwrap();
        // Written by "another run" after this one started.
        std::fs::write(out.join("run_other.csv"), "other").unwrap();

        let mut p = Placement::new(since);
        let staged = p.stage(&out.join("run")).unwrap();
        assert_ne!(
            staged.0.parent().unwrap(),
            out,
            "staged beside, not in place"
        );
        let files: Vec<PathBuf> = ["old", "other", "mine"]
            .iter()
            .map(|n| {
                let f = staged.file(n, "csv");
                std::fs::write(&f, format!("new {n}")).unwrap();
                f
            })
            .collect();
        let done = p.commit(&files).unwrap();
        assert_eq!(done[2], out.join("run_mine.csv"));
        assert_eq!(std::fs::read_to_string(&done[0]).unwrap(), "new old");
        // Another run replaces one of this run's files afterwards.
        std::fs::write(root.join("theirs"), "theirs").unwrap();
        std::fs::rename(root.join("theirs"), &done[2]).unwrap();
        let said = p.finish();
        assert_eq!(
            said,
            [
                Replacement::OfOther(out.join("run_other.csv")),
                Replacement::ByOther(out.join("run_mine.csv")),
            ]
        );
        let mut left: Vec<_> = std::fs::read_dir(&out)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        left.sort();
        assert_eq!(
            left,
            ["run_mine.csv", "run_old.csv", "run_other.csv"],
            "staging removed"
        );
        std::fs::remove_dir_all(&root).unwrap();
    }
}
