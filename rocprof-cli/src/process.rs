//! Running the application: spawn, forward SIGINT/SIGTERM, report how it ended.

#![allow(unsafe_code)]

use std::os::unix::process::ExitStatusExt;
use std::process::{Command, ExitCode};

/// How the application ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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
            (None, Some(s)) => ExitCode::from((128 + s).clamp(0, 255) as u8),
            _ => ExitCode::FAILURE,
        }
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

/// The conventional name of a signal.
pub fn signal_name(s: i32) -> String {
    match s {
        libc::SIGSEGV => "SIGSEGV".into(),
        libc::SIGABRT => "SIGABRT".into(),
        libc::SIGBUS => "SIGBUS".into(),
        libc::SIGFPE => "SIGFPE".into(),
        libc::SIGILL => "SIGILL".into(),
        libc::SIGKILL => "SIGKILL".into(),
        libc::SIGINT => "SIGINT".into(),
        libc::SIGTERM => "SIGTERM".into(),
        other => format!("signal {other}"),
    }
}

/// Spawns `cmd`, forwards SIGINT and SIGTERM received meanwhile to it, and waits.
pub fn run_forwarding_signals(mut cmd: Command) -> std::io::Result<Status> {
    let mut child = cmd.spawn()?;
    let pid = child.id() as libc::pid_t;
    let mut signals = signal_hook::iterator::Signals::new([libc::SIGINT, libc::SIGTERM])?;
    let handle = signals.handle();
    let forwarder = std::thread::spawn(move || {
        for signal in signals.forever() {
            // SAFETY: kill(2) with the child's pid (reaped only after this thread is closed)
            // and a valid signal number.
            unsafe { libc::kill(pid, signal) };
        }
    });
    let status = child.wait();
    handle.close();
    let _ = forwarder.join();
    let status = status?;
    Ok(Status {
        code: status.code(),
        signal: status.signal(),
    })
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
    }

    #[test]
    fn a_child_signal_is_reported() {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "kill -SEGV $$"]);
        let s = run_forwarding_signals(cmd).unwrap();
        assert_eq!(s.signal, Some(libc::SIGSEGV));
        let (date, time) = now_local();
        assert_eq!((date.len(), time.len()), (10, 5));
    }
}
