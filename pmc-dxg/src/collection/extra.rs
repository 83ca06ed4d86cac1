//! Extra counter definitions for one run (rocprofv3's `-E`): the file's text kept whole with the
//! run, so a later evaluation resolves the counters exactly as the run did.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::Error;
use crate::defs::Definitions;

/// Counter definitions (either `counter_defs.yaml` schema) added to the installed or built-in
/// ones for one run; a counter of the same name is replaced.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExtraCounters {
    /// The file as given.
    pub path: PathBuf,
    /// Its contents when the run started.
    pub text: String,
}

impl ExtraCounters {
    /// Reads and checks the file (before anything runs), once.
    ///
    /// # Errors
    ///
    /// [`Error::Definitions`] naming the file when it is missing, unreadable or malformed, or
    /// defines no counter.
    pub fn read(path: &Path) -> Result<ExtraCounters, Error> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::Definitions {
            origin: path.display().to_string(),
            message: format!("cannot be read: {e}"),
        })?;
        let extra = ExtraCounters {
            path: path.to_owned(),
            text,
        };
        extra.definitions()?;
        Ok(extra)
    }

    /// The definitions it holds.
    ///
    /// # Errors
    ///
    /// [`Error::Definitions`] naming the file when its text is malformed or defines no counter.
    pub fn definitions(&self) -> Result<Definitions, Error> {
        let origin = self.path.display().to_string();
        let defs = Definitions::parse(&origin, &self.text)?;
        if defs.counters().is_empty() {
            return Err(Error::Definitions {
                origin,
                message: "defines no counter".into(),
            });
        }
        Ok(defs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(tag: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("pmc-dxg-extra-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    const ONE: &str = "\
rocprofiler-sdk:
  counters-schema-version: 1
  counters:
    - name: MY_WAVES
      description: waves, twice
      properties: []
      definitions:
        - architectures: [gfx11]
          expression: SQ_WAVES*2
";

    #[test]
    fn a_file_is_read_once_and_kept_whole() {
        let dir = scratch("ok");
        let path = dir.join("extra.yaml");
        std::fs::write(&path, ONE).unwrap();
        let extra = ExtraCounters::read(&path).unwrap();
        assert_eq!(extra.path, path);
        assert_eq!(extra.text, ONE);
        // The text, not the file, is what is evaluated later.
        std::fs::remove_file(&path).unwrap();
        let defs = extra.definitions().unwrap();
        assert_eq!(defs.counters()[0].name, "MY_WAVES");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_missing_empty_or_malformed_file_is_refused_naming_it() {
        let dir = scratch("bad");
        let missing = dir.join("missing.yaml");
        match ExtraCounters::read(&missing).unwrap_err() {
            Error::Definitions { origin, message } => {
                assert_eq!(origin, missing.display().to_string());
                assert!(message.starts_with("cannot be read: "), "{message}");
            }
            other => panic!("{other:?}"),
        }
        let empty = dir.join("empty.yaml");
        std::fs::write(
            &empty,
            "rocprofiler-sdk:\n  counters-schema-version: 1\n  counters: []\n",
        )
        .unwrap();
        let err = ExtraCounters::read(&empty).unwrap_err();
        assert_eq!(
            err,
            Error::Definitions {
                origin: empty.display().to_string(),
                message: "defines no counter".into()
            }
        );
        let junk = dir.join("junk.yaml");
        std::fs::write(&junk, "[unclosed").unwrap();
        let err = ExtraCounters::read(&junk).unwrap_err();
        assert!(
            err.to_string().starts_with(&junk.display().to_string()),
            "{err}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
