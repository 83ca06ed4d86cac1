//! How the application is started: the program, what is preloaded after the tool, `--echo`.

use std::ffi::OsString;

/// How to start the application of a pass.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Launcher {
    /// The program and its arguments (the program already resolved as `--readlink` or
    /// `--realpath` ask).
    pub command: Vec<OsString>,
    /// Libraries preloaded after the tool (`--preload`).
    pub preloads: Vec<String>,
    /// `--echo`: say what the application is started with.
    pub echo: bool,
}
