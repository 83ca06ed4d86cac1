//! How the application is started: the program, what is preloaded after the tool, `--echo`.

use std::ffi::OsString;

/// How to start the application of a pass.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Launcher {
    /// The command line as given: the program, then its arguments (what the placeholders and
    /// `run.json` record).
    pub command: Vec<OsString>,
    /// The program that is executed: `command[0]` resolved as `--readlink` or `--realpath`
    /// ask (else the same).
    pub program: OsString,
    /// Libraries preloaded after the tool (`--preload`).
    pub preloads: Vec<String>,
    /// `--echo`: say what the application would be started with, and do not start it.
    pub echo: bool,
}
