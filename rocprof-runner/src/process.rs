//! Running the application: spawn it tied to `rocprof`'s life, forward the signals `rocprof`
//! receives, report how it ended; and notice a signal that interrupts `rocprof` itself.
//!
//! The signal handler is installed once ([`Signals::install`]) and decides per delivery:
//!
//! - while the application runs, a signal someone sent to `rocprof` (`kill`, `sigqueue`) is
//!   forwarded to it; one the terminal sent to the whole foreground process group (`si_code`
//!   `SI_KERNEL`: Ctrl-C, Ctrl-\, a hang-up) already reached the application, which shares
//!   `rocprof`'s process group, so it is not sent a second time — unless the application
//!   moved to a process group of its own;
//! - at any other time (before the launch, while converting) the signal is an interruption:
//!   `rocprof` stops what it is doing cleanly ([`Signals::interrupted`]).
//!
//! The handler does nothing but atomics, `getpgid`, `getpgrp` and `kill`, all
//! async-signal-safe.

#![allow(unsafe_code)]

use serde::{Deserialize, Serialize};
use std::os::unix::process::{CommandExt as _, ExitStatusExt as _};
use std::process::{Command, ExitCode};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicI32, AtomicU32, Ordering};

/// The signals `rocprof` forwards to the application (and that interrupt it otherwise).
pub const FORWARDED: [libc::c_int; 6] = [
    libc::SIGHUP,
    libc::SIGINT,
    libc::SIGQUIT,
    libc::SIGTERM,
    libc::SIGUSR1,
    libc::SIGUSR2,
];

/// How the application ended.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Status {
    /// Its exit code, if it exited.
    pub code: Option<i32>,
    /// The signal that killed it, if one did.
    pub signal: Option<i32>,
}

impl Status {
    /// rocprof's own exit code: the application's, or 128 + signal.
    pub fn exit_code(&self) -> ExitCode {
        match (self.code, self.signal) {
            (Some(c), _) => ExitCode::from(c.clamp(0, 255) as u8),
            (None, Some(s)) => signal_exit_code(s),
            _ => ExitCode::FAILURE,
        }
    }

    /// Whether the application ended well (exit status 0).
    pub fn success(&self) -> bool {
        self.code == Some(0)
    }

    /// A phrase for messages: "exited with status 0", "was killed by SIGSEGV".
    pub fn describe(&self) -> String {
        match (self.code, self.signal) {
            (Some(c), _) => format!("exited with status {c}"),
            (None, Some(s)) => format!("was killed by {}", signal_name(s)),
            _ => "ended".into(),
        }
    }
}

/// The shell's exit code for "killed by `signal`": 128 + its number.
pub fn signal_exit_code(signal: i32) -> ExitCode {
    ExitCode::from((128 + signal).clamp(0, 255) as u8)
}

/// The conventional name of a signal.
pub fn signal_name(s: i32) -> String {
    let name = match s {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGUSR1 => "SIGUSR1",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGUSR2 => "SIGUSR2",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGTERM => "SIGTERM",
        libc::SIGXFSZ => "SIGXFSZ",
        other => return format!("signal {other}"),
    };
    name.into()
}

/// The application's pid while it runs (0 otherwise).
static CHILD: AtomicI32 = AtomicI32::new(0);
/// Handlers currently looking at [`CHILD`] (the reaper waits for them).
static IN_HANDLER: AtomicU32 = AtomicU32::new(0);
/// The first signal that arrived while no application was running (0: none).
static INTERRUPTED: AtomicI32 = AtomicI32::new(0);

/// The installed signal handling (see the module documentation).
#[derive(Debug)]
pub struct Signals(());

impl Signals {
    /// Installs the handler for [`FORWARDED`] (once per process) and ignores `SIGXFSZ`, so an
    /// output that exceeds the file-size limit is an error to report, not a silent death.
    pub fn install() -> std::io::Result<&'static Signals> {
        static INSTALLED: OnceLock<Signals> = OnceLock::new();
        if let Some(s) = INSTALLED.get() {
            return Ok(s);
        }
        for signal in FORWARDED {
            // SAFETY: the action only touches atomics and calls the async-signal-safe
            // getpgid, getpgrp and kill; it never allocates, locks or panics.
            unsafe { signal_hook_registry::register_sigaction(signal, on_signal) }?;
        }
        // SAFETY: SIG_IGN for SIGXFSZ changes no memory; the child restores the default
        // before exec (see `launch`).
        unsafe { libc::signal(libc::SIGXFSZ, libc::SIG_IGN) };
        Ok(INSTALLED.get_or_init(|| Signals(())))
    }

    /// The signal that interrupted `rocprof` (one that arrived while no application ran).
    pub fn interrupted(&self) -> Option<i32> {
        match INTERRUPTED.load(Ordering::SeqCst) {
            0 => None,
            s => Some(s),
        }
    }
}

fn on_signal(info: &libc::siginfo_t) {
    IN_HANDLER.fetch_add(1, Ordering::SeqCst);
    let signal = info.si_signo;
    let child = CHILD.load(Ordering::SeqCst);
    if child > 0 {
        // SAFETY: getpgid and getpgrp are async-signal-safe and take no pointers.
        let same_group = unsafe { libc::getpgid(child) == libc::getpgrp() };
        if info.si_code != libc::SI_KERNEL || !same_group {
            // SAFETY: async-signal-safe; `child` is not reaped while a handler is running
            // (the reaper waits for IN_HANDLER to drop to 0 after clearing CHILD).
            unsafe { libc::kill(child, signal) };
        }
    } else {
        let _ = INTERRUPTED.compare_exchange(0, signal, Ordering::SeqCst, Ordering::SeqCst);
    }
    IN_HANDLER.fetch_sub(1, Ordering::SeqCst);
}

/// Why the application could not be started.
#[derive(Debug)]
pub enum LaunchError {
    /// No such file (exit code 127).
    NotFound,
    /// It exists but cannot be executed (exit code 126).
    NotExecutable(std::io::Error),
    /// A signal arrived before the launch: nothing was started.
    Interrupted(i32),
}

impl From<std::io::Error> for LaunchError {
    /// Why `exec` (or a spawn) failed: no such file, or anything else that stops it running.
    fn from(e: std::io::Error) -> Self {
        match e.kind() {
            std::io::ErrorKind::NotFound => Self::NotFound,
            _ => Self::NotExecutable(e),
        }
    }
}

impl LaunchError {
    /// The shell's exit code for this failure.
    pub fn exit_code(&self) -> ExitCode {
        match self {
            Self::NotFound => ExitCode::from(127),
            Self::NotExecutable(_) => ExitCode::from(126),
            Self::Interrupted(s) => signal_exit_code(*s),
        }
    }
}

/// Spawns `cmd` from the calling thread (which must live until the application ends: the
/// application is killed when the thread that forked it exits, so an orphan never runs on
/// unprofiled), forwards signals to it (see the module documentation), and waits.
pub fn launch(signals: &Signals, mut cmd: Command) -> Result<Status, LaunchError> {
    if let Some(s) = signals.interrupted() {
        return Err(LaunchError::Interrupted(s));
    }
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: the closure runs in the forked child before exec and calls only
    // async-signal-safe functions (prctl, getppid, signal); it allocates nothing.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // rocprof died between the fork and the prctl: the death signal will never come.
            if libc::getppid() != parent {
                return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
            }
            libc::signal(libc::SIGXFSZ, libc::SIG_DFL);
            Ok(())
        });
    }
    let mut child = cmd.spawn()?;
    let pid = child.id() as libc::pid_t;
    CHILD.store(pid, Ordering::SeqCst);
    // A signal between the fork and the line above was taken for an interruption: it was
    // meant for the application.
    let early = INTERRUPTED.swap(0, Ordering::SeqCst);
    if early != 0 {
        // SAFETY: kill with our own, not yet reaped, child's pid.
        unsafe { libc::kill(pid, early) };
    }
    wait_exited(pid);
    CHILD.store(0, Ordering::SeqCst);
    while IN_HANDLER.load(Ordering::SeqCst) != 0 {
        std::hint::spin_loop();
    }
    // The child is a zombie now: reaping it cannot fail but for a bug, and then its end is
    // unknown rather than invented.
    Ok(child.wait().map_or(Status::default(), |s| Status {
        code: s.code(),
        signal: s.signal(),
    }))
}

/// Waits until `pid` has ended, without reaping it (its pid stays ours until `wait`).
fn wait_exited(pid: libc::pid_t) {
    loop {
        // SAFETY: siginfo_t is plain old data; all zeroes is a valid value.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: waitid writes one siginfo_t into the exclusively borrowed `info`.
        let r = unsafe {
            libc::waitid(
                libc::P_PID,
                pid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOWAIT,
            )
        };
        if r == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return;
        }
    }
}

/// The current UTC date (`YYYY-MM-DD`) and time (`HH.MM`), for `%launch_date%`/`%launch_time%`.
pub fn now_local() -> (String, String) {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Civil date from days since 1970-01-01 (proleptic Gregorian).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (
        format!("{year:04}-{month:02}-{day:02}"),
        format!("{:02}.{:02}", rem / 3600, rem % 3600 / 60),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_and_descriptions() {
        let s = Status {
            code: None,
            signal: Some(libc::SIGSEGV),
        };
        assert_eq!(s.describe(), "was killed by SIGSEGV");
        assert_eq!(s.exit_code(), ExitCode::from(139));
        assert_eq!(
            Status {
                code: Some(3),
                signal: None
            }
            .exit_code(),
            ExitCode::from(3)
        );
        assert_eq!(signal_name(libc::SIGUSR2), "SIGUSR2");
        assert_eq!(signal_name(40), "signal 40");
    }

    #[test]
    fn a_child_signal_is_reported_and_missing_programs_are_told_apart() {
        let signals = Signals::install().unwrap();
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "kill -SEGV $$"]);
        let s = launch(signals, cmd).unwrap();
        assert_eq!(s.signal, Some(libc::SIGSEGV));
        let e = launch(signals, Command::new("/nonexistent/app")).unwrap_err();
        assert_eq!(e.exit_code(), ExitCode::from(127), "{e:?}");
        let e = launch(signals, Command::new("/")).unwrap_err();
        assert_eq!(e.exit_code(), ExitCode::from(126), "{e:?}");
        let (date, time) = now_local();
        assert_eq!((date.len(), time.len()), (10, 5));
    }
}
