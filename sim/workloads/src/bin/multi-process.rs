//! `multi-process`: forks before loading any runtime; parent and child each run the reference
//! workload; exits 0 only if both verified.

fn main() {
    // SAFETY: no runtime is loaded and no thread exists yet, so the child is a clean process.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        sim_workloads::fail("fork failed");
    }
    if pid == 0 {
        std::process::exit(sim_workloads::reference::run("multi-process child", None));
    }
    let parent = sim_workloads::reference::run("multi-process parent", None);
    let mut status = 0;
    // SAFETY: waits for our own child.
    let waited = unsafe { libc::waitpid(pid, &mut status, 0) };
    let child_ok = waited == pid && libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0;
    println!(
        "multi-process: parent {}, child {} (pid {pid})",
        if parent == 0 { "verified" } else { "FAILED" },
        if child_ok { "verified" } else { "FAILED" }
    );
    std::process::exit(if parent == 0 && child_ok { 0 } else { 1 });
}
