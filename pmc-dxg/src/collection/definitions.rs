//! The counter definitions a run uses: the same search as the tool's (the metrics path, the
//! ROCm install beside the HSA runtime on the library path, else the built-in ones), with a
//! plan's extra definitions added.

use std::path::{Path, PathBuf};

use super::counter_plan::CounterPlan;
use crate::Error;
use crate::defs::{Definitions, DefsSource};

/// The HSA runtime's library file name (a prefix: `libhsa-runtime64.so.1`, …).
const HSA_RUNTIME: &str = "libhsa-runtime64.so";

/// Where ROCm installs its libraries by default.
const DEFAULT_ROCM_LIB: &str = "/opt/rocm/lib";

/// The directory the HSA runtime would be loaded from: the first `LD_LIBRARY_PATH` entry that
/// holds `libhsa-runtime64.so*`, else `/opt/rocm/lib` when it does.
pub fn runtime_lib_dir() -> Option<PathBuf> {
    runtime_lib_dir_in(
        std::env::var_os("LD_LIBRARY_PATH").as_deref(),
        Path::new(DEFAULT_ROCM_LIB),
    )
}

/// [`runtime_lib_dir`] over a given `LD_LIBRARY_PATH` value and default directory.
fn runtime_lib_dir_in(
    ld_library_path: Option<&std::ffi::OsStr>,
    default: &Path,
) -> Option<PathBuf> {
    let holds = |d: &Path| {
        std::fs::read_dir(d).is_ok_and(|rd| {
            rd.filter_map(Result::ok)
                .any(|e| e.file_name().to_string_lossy().starts_with(HSA_RUNTIME))
        })
    };
    let from_path = ld_library_path.and_then(|v| {
        std::env::split_paths(v)
            .filter(|d| !d.as_os_str().is_empty())
            .find(|d| holds(d))
    });
    from_path.or_else(|| holds(default).then(|| default.to_owned()))
}

/// Where this process finds the counter definitions (the tool's search).
pub fn source() -> DefsSource {
    DefsSource::from_process(runtime_lib_dir().as_deref())
}

/// Loads the definitions from `source`.
///
/// # Errors
///
/// [`Error::DefinitionsUnavailable`] naming the source.
pub fn load(source: &DefsSource) -> Result<Definitions, Error> {
    Definitions::load(source).map_err(|e| Error::DefinitionsUnavailable {
        origin: source.origin(),
        cause: Box::new(e),
    })
}

/// Loads the counter definitions the tool used (the same search as the tool's: [`source`]).
///
/// # Errors
///
/// [`Error::DefinitionsUnavailable`] naming the source.
pub fn definitions() -> Result<Definitions, Error> {
    load(&source())
}

/// [`definitions`] with a plan's extra definitions added.
///
/// # Errors
///
/// As [`definitions`], or the extra definitions' [`Error::Definitions`].
pub fn definitions_for(plan: &CounterPlan) -> Result<Definitions, Error> {
    let defs = definitions()?;
    Ok(match &plan.extra_counters {
        Some(extra) => defs.extended(&extra.definitions()?),
        None => defs,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsString;

    fn dir_with(tag: &str, file: Option<&str>) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("pmc-dxg-rtdir-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        if let Some(f) = file {
            std::fs::write(dir.join(f), b"").unwrap();
        }
        dir
    }

    #[test]
    fn the_first_library_path_entry_with_the_runtime_wins() {
        let none = dir_with("none", None);
        let one = dir_with("one", Some("libhsa-runtime64.so.1"));
        let two = dir_with("two", Some("libhsa-runtime64.so"));
        let path = std::env::join_paths([&none, &one, &two]).unwrap();
        assert_eq!(runtime_lib_dir_in(Some(&path), &none), Some(one.clone()));
        // Empty entries are skipped, not the current directory.
        let mut with_empty = OsString::from(":");
        with_empty.push(&two);
        assert_eq!(
            runtime_lib_dir_in(Some(&with_empty), &none),
            Some(two.clone())
        );
        // Else the default directory, if it holds the runtime.
        assert_eq!(runtime_lib_dir_in(None, &two), Some(two.clone()));
        assert_eq!(runtime_lib_dir_in(Some(none.as_os_str()), &none), None);
        for d in [none, one, two] {
            let _ = std::fs::remove_dir_all(d);
        }
    }

    #[test]
    fn an_unreadable_source_is_named() {
        let missing = std::env::temp_dir().join("pmc-dxg-no-such-defs.yaml");
        let err = load(&DefsSource::MetricsPath(missing.clone())).unwrap_err();
        match &err {
            Error::DefinitionsUnavailable { origin, cause } => {
                assert_eq!(origin, &missing.display().to_string());
                assert!(matches!(**cause, Error::Definitions { .. }), "{cause:?}");
            }
            other => panic!("{other:?}"),
        }
        assert!(
            err.to_string().starts_with(&format!(
                "cannot read the counter definitions ({}): ",
                missing.display()
            )),
            "{err}"
        );
        assert!(load(&DefsSource::BuiltIn).is_ok());
    }
}
