//! `reference-then <ending>`: the seed's reference workload (all its GPU work, every copy waited
//! for), then the process ends in the given way, without the usual exit path:
//!
//! - `exit`: normally (`exit`, handlers run);
//! - `_exit`: `_exit(0)`: no `atexit` handler, no flush of anything;
//! - `exec`: `exec`s itself as `reference-then exit`, so a second image of the same process
//!   does the whole workload again;
//! - `exec-true`: `exec`s `/bin/true` (a program without any GPU runtime);
//! - `sigkill`: `kill(getpid(), SIGKILL)`.

use std::ffi::CString;

fn main() {
    let ending = std::env::args().nth(1).unwrap_or_else(|| "exit".into());
    let code = sim_workloads::reference::run("reference-then", None);
    println!("reference-then: GPU work done, ending with {ending}");
    use std::io::Write as _;
    let _ = std::io::stdout().flush();
    match ending.as_str() {
        "exit" => std::process::exit(code),
        // SAFETY: ends the process at once, as the workload is meant to.
        "_exit" => unsafe { libc::_exit(code) },
        "sigkill" => {
            // SAFETY: sends SIGKILL to this process.
            unsafe { libc::kill(libc::getpid(), libc::SIGKILL) };
            unreachable!("SIGKILL cannot be caught");
        }
        "exec" | "exec-true" => {
            let exe = std::env::current_exe().expect("own executable");
            let (path, args) = if ending == "exec" {
                (
                    exe.to_string_lossy().into_owned(),
                    vec!["reference-then", "exit"],
                )
            } else {
                ("/bin/true".to_owned(), vec!["true"])
            };
            let path = CString::new(path).expect("no NUL");
            let args: Vec<CString> = args
                .iter()
                .map(|a| CString::new(*a).expect("no NUL"))
                .collect();
            let mut argv: Vec<*const libc::c_char> = args.iter().map(|a| a.as_ptr()).collect();
            argv.push(std::ptr::null());
            // SAFETY: a NUL-terminated path and a NULL-terminated argv of live C strings; the
            // environment is inherited.
            unsafe { libc::execv(path.as_ptr(), argv.as_ptr()) };
            eprintln!(
                "reference-then: exec failed: {}",
                std::io::Error::last_os_error()
            );
            std::process::exit(127)
        }
        other => {
            eprintln!(
                "reference-then: unknown ending {other:?} (exit, _exit, exec, exec-true, sigkill)"
            );
            std::process::exit(2)
        }
    }
}
