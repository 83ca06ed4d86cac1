//! Signals and exit codes end to end: every signal rocprof forwards reaches the application
//! exactly once (sent with `kill`, or by the terminal to the whole foreground process group),
//! the application dies with a rocprof killed outright and its logs stay convertible, a
//! signal during the conversion stops it cleanly, and the exit codes follow the shell's.
//!
//! Needs the staged simulator and workloads: run through `cargo xtask test`.

mod support;
use support::*;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// An application that counts every delivery of the six forwarded signals into `<dir>/got`
/// (one line each), says it is ready in `<dir>/ready`, and exits 0 a while after `<dir>/stop`
/// exists (so that a late duplicate would still be counted). Python's own handlers run once
/// for deliveries that arrive close together, so the deliveries are counted from the bytes
/// its C-level handler writes to the wakeup descriptor, one per delivery.
const COUNTER: &str = r#"
import os, select, signal, sys, time
d = sys.argv[1]
names = ["SIGHUP", "SIGINT", "SIGQUIT", "SIGTERM", "SIGUSR1", "SIGUSR2"]
by_number = {int(getattr(signal, n)): n for n in names}
r, w = os.pipe()
os.set_blocking(w, False)
signal.set_wakeup_fd(w)
for n in names:
    signal.signal(getattr(signal, n), lambda s, f: None)
open(os.path.join(d, "ready"), "w").write(str(os.getpid()))
end = time.time() + 20
while time.time() < end:
    if os.path.exists(os.path.join(d, "stop")):
        end = min(end, time.time() + 0.2)
    if select.select([r], [], [], 0.01)[0]:
        with open(os.path.join(d, "got"), "a") as f:
            for b in os.read(r, 64):
                f.write(by_number[b] + "\n")
"#;

fn got(dir: &Path) -> BTreeMap<String, usize> {
    let mut m = BTreeMap::new();
    for l in std::fs::read_to_string(dir.join("got"))
        .unwrap_or_default()
        .lines()
    {
        *m.entry(l.to_owned()).or_insert(0) += 1;
    }
    m
}

fn counting_run(tmp: &Path, c: &mut Command) -> Child {
    let child = c
        .args(["--sim", "--kernel-trace", "-d"])
        .arg(tmp.join("out"))
        .arg("--")
        .arg(python())
        .args(["-c", COUNTER])
        .arg(tmp)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for("the application", Duration::from_secs(10), || {
        tmp.join("ready").exists()
    });
    child
}

#[test]
fn every_forwarded_signal_reaches_the_application_exactly_once() {
    let tmp = scratch_here("forward");
    let child = counting_run(&tmp, &mut rocprof(&tmp));
    let names = [
        (libc::SIGHUP, "SIGHUP"),
        (libc::SIGINT, "SIGINT"),
        (libc::SIGQUIT, "SIGQUIT"),
        (libc::SIGTERM, "SIGTERM"),
        (libc::SIGUSR1, "SIGUSR1"),
        (libc::SIGUSR2, "SIGUSR2"),
    ];
    for (n, (signal, name)) in names.iter().enumerate() {
        // SAFETY: kill with our own child's pid and a valid signal.
        assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, *signal) }, 0);
        wait_for(name, Duration::from_secs(5), || {
            got(&tmp).values().sum::<usize>() > n
        });
    }
    std::fs::write(tmp.join("stop"), "").unwrap();
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let expected: BTreeMap<String, usize> = names.iter().map(|(_, n)| ((*n).into(), 1)).collect();
    assert_eq!(got(&tmp), expected);
}

/// Opens a new pseudo-terminal: (master, slave path).
fn pty() -> (std::fs::File, PathBuf) {
    use std::os::fd::FromRawFd as _;
    // SAFETY: plain libc calls on a descriptor we own; ptsname_r writes at most `buf.len()`
    // bytes into `buf`.
    unsafe {
        let master = libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY);
        assert!(
            master >= 0,
            "posix_openpt: {}",
            std::io::Error::last_os_error()
        );
        assert_eq!(libc::grantpt(master), 0);
        assert_eq!(libc::unlockpt(master), 0);
        let mut buf = [0 as libc::c_char; 128];
        assert_eq!(libc::ptsname_r(master, buf.as_mut_ptr(), buf.len()), 0);
        let name = std::ffi::CStr::from_ptr(buf.as_ptr())
            .to_string_lossy()
            .into_owned();
        (std::fs::File::from_raw_fd(master), PathBuf::from(name))
    }
}

#[test]
fn a_signal_the_terminal_sends_to_the_group_reaches_the_application_once() {
    use std::io::Write as _;
    use std::os::unix::process::CommandExt as _;
    let tmp = scratch_here("terminal");
    let (mut master, slave) = pty();
    let slave_c = std::ffi::CString::new(slave.to_str().unwrap()).unwrap();
    let mut c = rocprof(&tmp);
    // SAFETY: runs in the child before exec and only calls async-signal-safe functions:
    // a new session whose controlling terminal is the pty, on standard input.
    unsafe {
        c.pre_exec(move || {
            if libc::setsid() < 0 {
                return Err(std::io::Error::last_os_error());
            }
            let fd = libc::open(slave_c.as_ptr(), libc::O_RDWR);
            if fd < 0 || libc::ioctl(fd, libc::TIOCSCTTY, 0) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            libc::dup2(fd, 0);
            Ok(())
        });
    }
    let child = counting_run(&tmp, &mut c);
    // ^C on the terminal: SIGINT to the foreground process group (rocprof and the app).
    master.write_all(&[0x03]).unwrap();
    wait_for("SIGINT", Duration::from_secs(5), || {
        got(&tmp).contains_key("SIGINT")
    });
    std::fs::write(tmp.join("stop"), "").unwrap();
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        got(&tmp),
        BTreeMap::from([("SIGINT".to_owned(), 1)]),
        "once, not once from the terminal and once forwarded"
    );
}

fn alive(pid: u32) -> bool {
    // A zombie waiting for a reaper has ended too.
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        s.rsplit(')')
            .next()
            .is_some_and(|r| !r.trim_start().starts_with('Z'))
    })
}

#[test]
fn a_rocprof_killed_outright_takes_the_application_with_it_and_its_logs_convert() {
    let tmp = scratch_here("pdeathsig");
    let out = tmp.join("out");
    let mut child = rocprof(&tmp)
        .args(["--sim", "--hip-trace", "-d"])
        .arg(&out)
        .args(["-o", "run", "--"])
        .arg(workload("hip-rate"))
        .arg("1000000000")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut log = None;
    wait_for(
        "the application's record log",
        Duration::from_secs(10),
        || {
            log = record_dirs(&tmp).iter().find_map(|d| {
                std::fs::read_dir(d)
                    .ok()?
                    .flatten()
                    .map(|e| e.path())
                    .find(|p| p.extension().is_some_and(|x| x == "rplog"))
            });
            log.is_some()
        },
    );
    let log = log.unwrap();
    let app: u32 = log
        .file_stem()
        .unwrap()
        .to_str()
        .unwrap()
        .split('.')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    std::thread::sleep(Duration::from_millis(200));
    assert!(alive(app), "the application runs");
    child.kill().unwrap();
    child.wait().unwrap();
    let start = Instant::now();
    while alive(app) && start.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(10));
    }
    if alive(app) {
        // SAFETY: kill of the pid we saw; never leave it running.
        unsafe { libc::kill(app as libc::pid_t, libc::SIGKILL) };
        panic!("the application outlived rocprof");
    }
    let dir = log.parent().unwrap();
    let o = rocprof(&tmp).arg("convert").arg(dir).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let hip = out.join("run_hip_api_trace.csv");
    let lines = std::fs::read_to_string(&hip)
        .unwrap_or_else(|e| panic!("{}: {e}\n{}", hip.display(), stderr(&o)))
        .lines()
        .count();
    assert!(lines > 1, "records from before the kill: {lines} lines");
}

#[test]
fn a_signal_during_the_conversion_stops_it_cleanly_and_convert_finishes() {
    let tmp = scratch_here("midconvert");
    let out = tmp.join("out");
    let child = rocprof(&tmp)
        .args(["--sim", "--hip-trace", "-d"])
        .arg(&out)
        .args(["-o", "run", "--"])
        .arg(workload("hip-rate"))
        .arg("300000")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The staging directory appears when the writing starts.
    wait_for("the conversion", Duration::from_secs(20), || {
        std::fs::read_dir(&out).is_ok_and(|rd| {
            rd.flatten().any(|e| {
                let n = e.file_name().to_string_lossy().into_owned();
                n.starts_with(".rocprof-") && !n.starts_with(".rocprof-probe-")
            })
        })
    });
    // SAFETY: kill with our own child's pid.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
    let o = child.wait_with_output().unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(128 + libc::SIGTERM), "{err}");
    assert!(
        err.contains("interrupted by SIGTERM while writing"),
        "{err}"
    );
    // The output directory this run created is gone again, being empty.
    let left: Vec<String> = std::fs::read_dir(&out)
        .map(|rd| {
            rd.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    assert!(left.is_empty(), "no partial file: {left:?}");
    let line = err
        .lines()
        .find(|l| l.contains(" convert /"))
        .unwrap_or_else(|| panic!("no convert command:\n{err}"));
    let dir = PathBuf::from(line.trim().rsplit(' ').next().unwrap());
    let o = rocprof(&tmp).arg("convert").arg(&dir).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let rows = std::fs::read_to_string(out.join("run_hip_api_trace.csv"))
        .unwrap()
        .lines()
        .count();
    // hipSetDevice, the loop's hipGetDevice calls and the header.
    assert!(rows > 300_000, "{rows}");
}

#[test]
fn exit_codes_are_the_shell_s() {
    let tmp = scratch_here("codes");
    let code = |app: &[&str]| {
        let o = rocprof(&tmp)
            .args(["--sim", "--kernel-trace", "-d"])
            .arg(tmp.join("out"))
            .arg("--")
            .args(app)
            .output()
            .unwrap();
        (o.status.code(), stderr(&o))
    };
    assert_eq!(code(&["sh", "-c", "exit 3"]).0, Some(3));
    assert_eq!(
        code(&["sh", "-c", "kill -TERM $$"]).0,
        Some(128 + libc::SIGTERM)
    );
    let (c, err) = code(&["/nonexistent/app"]);
    assert_eq!(c, Some(127), "{err}");
    assert!(
        err.contains("cannot run /nonexistent/app: no such file"),
        "{err}"
    );
    let (c, err) = code(&["no-such-program-on-path"]);
    assert_eq!(c, Some(127), "{err}");
    let script = tmp.join("not-executable.sh");
    std::fs::write(&script, "#!/bin/sh\n").unwrap();
    let (c, err) = code(&[script.to_str().unwrap()]);
    assert_eq!(c, Some(126), "{err}");
    assert!(err.contains("it must be an executable file"), "{err}");
    let (c, err) = code(&[]);
    assert_eq!(c, Some(2), "{err}");
    assert!(record_dirs(&tmp).is_empty(), "nothing is left behind");
}

fn scratch_here(tag: &str) -> PathBuf {
    support::scratch("sig", tag)
}
