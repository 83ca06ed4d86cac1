//! The writer against the real file system and real process deaths: every committed record is
//! read back after `_exit`, `SIGKILL` and `exec`-style reuse of a pid, from several threads,
//! and a file-size limit turns into counted losses instead of a dead process.

use record_log::{LogFile, NoChunk};
use std::path::{Path, PathBuf};
use trace_records::log::FileHeader;
use trace_records::loss::LossCause;
use trace_records::{ApiDomain, ApiRecord, ProcessTrace};

fn api(i: u64, thread: u64) -> ApiRecord {
    ApiRecord {
        correlation_id: i,
        start: i,
        end: i + 1,
        thread_id: thread as u32,
        operation: 1,
        domain: ApiDomain::HsaCore as u8,
        reserved: 0,
    }
}

fn tempdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("record-log-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn header(pid: u32) -> FileHeader {
    FileHeader {
        pid,
        ..Default::default()
    }
}

/// Writes `n` records from the calling thread, replacing chunks as they fill.
fn write(log: &LogFile, n: u64, thread: u64) {
    let mut chunk = log.take(thread as u32).unwrap();
    for i in 0..n {
        let r = api(i, thread);
        if !chunk.push(&r) {
            chunk = log.replace(chunk, thread as u32).unwrap();
            assert!(chunk.push(&r));
        }
    }
    log.seal(chunk);
}

#[test]
fn threads_write_concurrently_and_every_record_reads_back() {
    let dir = tempdir("threads");
    let log = LogFile::create(&dir, header(5)).unwrap();
    std::thread::scope(|s| {
        for t in 0..4 {
            let log = &log;
            s.spawn(move || write(log, 50_000, t));
        }
    });
    let t = ProcessTrace::read(log.path()).unwrap();
    assert!(t.damage.is_empty());
    assert_eq!(t.open_chunks, 0);
    assert_eq!(t.api.len(), 200_000);
    for thread in 0..4 {
        let mine: Vec<u64> = t
            .api
            .iter()
            .filter(|r| u64::from(r.thread_id) == thread)
            .map(|r| r.correlation_id)
            .collect();
        assert_eq!(
            mine,
            (0..50_000).collect::<Vec<_>>(),
            "thread {thread} in order"
        );
    }
}

#[test]
fn a_second_image_of_a_pid_gets_its_own_log_and_truncates_nothing() {
    let dir = tempdir("images");
    let first = LogFile::create(&dir, header(9)).unwrap();
    write(&first, 10, 1);
    let second = LogFile::create(&dir, header(9)).unwrap();
    write(&second, 3, 1);
    assert_eq!(first.path(), dir.join("9.rplog"));
    assert_eq!(second.path(), dir.join("9.1.rplog"));
    let a = ProcessTrace::read(first.path()).unwrap();
    let b = ProcessTrace::read(second.path()).unwrap();
    assert_eq!((a.api.len(), a.image), (10, 0));
    assert_eq!((b.api.len(), b.image), (3, 1));
}

#[test]
fn the_log_is_private_to_its_owner() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = tempdir("mode");
    let log = LogFile::create(&dir, header(3)).unwrap();
    let mode = std::fs::metadata(log.path()).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
}

/// Runs `child` in a forked process and returns its wait status. The child must end the
/// process itself (it never returns into the test harness).
fn in_child(child: impl FnOnce()) -> i32 {
    // SAFETY: fork in a test; the child only runs `child`, which ends it with _exit or a
    // signal, and never returns into the harness's threads.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(child));
        // SAFETY: ends the child without running the parent's exit handlers.
        unsafe { libc::_exit(if r.is_ok() { 0 } else { 101 }) };
    }
    let mut status = 0;
    // SAFETY: waits for the child just forked.
    unsafe { libc::waitpid(pid, &mut status, 0) };
    status
}

/// Writes 100 000 records without sealing the last chunk, then ends the process with `end`.
fn write_then(dir: &Path, end: fn()) -> i32 {
    let dir = dir.to_owned();
    in_child(move || {
        let log = LogFile::create(&dir, header(std::process::id())).unwrap();
        let mut chunk = log.take(1).unwrap();
        for i in 0..100_000 {
            let r = api(i, 1);
            if !chunk.push(&r) {
                chunk = log.replace(chunk, 1).unwrap();
                assert!(chunk.push(&r));
            }
        }
        log.lost(LossCause::DispatchTime, 2);
        // The last chunk stays open (unsealed), as a dying process leaves it.
        end();
    })
}

fn only_log(dir: &Path) -> ProcessTrace {
    let logs: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(logs.len(), 1, "{logs:?}");
    ProcessTrace::read(&logs[0]).unwrap()
}

#[test]
fn every_record_survives_exit_without_flush_and_sigkill() {
    let dir = tempdir("exit");
    // SAFETY: ends the forked child at once.
    let status = write_then(&dir, || unsafe { libc::_exit(0) });
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "{status}"
    );
    let t = only_log(&dir);
    assert_eq!(t.api.len(), 100_000, "_exit loses nothing");
    assert_eq!(t.open_chunks, 1);
    assert_eq!(t.losses.get(LossCause::DispatchTime), 2);

    let dir = tempdir("kill");
    // SAFETY: the forked child kills itself.
    let status = write_then(&dir, || unsafe {
        libc::kill(libc::getpid(), libc::SIGKILL);
    });
    assert!(
        libc::WIFSIGNALED(status) && libc::WTERMSIG(status) == libc::SIGKILL,
        "{status}"
    );
    let t = only_log(&dir);
    assert_eq!(t.api.len(), 100_000, "SIGKILL loses nothing");
    assert!(t.damage.is_empty());
    assert_eq!(t.losses.get(LossCause::DispatchTime), 2);
}

#[test]
fn a_file_size_limit_is_counted_as_no_space_and_the_process_lives() {
    let dir = tempdir("fsize");
    let d = dir.clone();
    let status = in_child(move || {
        let limit = libc::rlimit {
            rlim_cur: 512 * 1024,
            rlim_max: 512 * 1024,
        };
        // SAFETY: lowers this child's own file-size limit.
        assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_FSIZE, &limit) }, 0);
        let log = LogFile::create(&d, header(std::process::id())).unwrap();
        let mut chunk = Some(log.take(1).unwrap());
        let mut lost = 0u64;
        for i in 0..200_000 {
            let r = api(i, 1);
            if let Some(c) = chunk.as_mut()
                && c.push(&r)
            {
                continue;
            }
            let next = match chunk.take() {
                Some(full) => log.replace(full, 1),
                None => log.take(1),
            };
            match next {
                Ok(mut c) => {
                    assert!(c.push(&r));
                    chunk = Some(c);
                }
                Err(e) => {
                    assert_eq!(e, NoChunk::NoSpace);
                    log.lost(e.cause(), 1);
                    lost += 1;
                }
            }
        }
        assert!(lost > 0, "the limit must stop the log");
    });
    assert!(
        libc::WIFEXITED(status),
        "the process was not killed by SIGXFSZ: {status}"
    );
    let t = only_log(&dir);
    let lost = t.losses.get(LossCause::NoSpace);
    assert!(
        lost > 0 && !t.api.is_empty(),
        "{} written, {lost} lost",
        t.api.len()
    );
    assert!(t.damage.is_empty(), "{:?}", t.damage);
    let size = std::fs::metadata(dir.join(format!("{}.rplog", t.pid)))
        .unwrap()
        .len();
    assert!(size <= 512 * 1024, "{size}");
}

/// Issue 23, case 7: the header counts the chunks handed out, and a chunk's header is written
/// before it is counted, so a process killed while its threads take chunks leaves a log that
/// reads as complete (no bogus damage); the same log cut short afterwards is damage, with the
/// number of chunks missing.
#[test]
fn a_killed_writer_leaves_a_complete_log_and_a_cut_one_is_damage() {
    for round in 0..8u64 {
        let dir = tempdir(&format!("killed-{round}"));
        let d = dir.clone();
        let status = in_child(move || {
            let log = LogFile::create(&d, header(std::process::id())).unwrap();
            std::thread::scope(|s| {
                for t in 0..3 {
                    let log = &log;
                    s.spawn(move || {
                        // Tiny fills: chunks are taken and replaced over and over (with a
                        // pause, so the log stays a few megabytes).
                        let mut chunk = log.take(t).unwrap();
                        for i in 0.. {
                            if i % 64 == 0 || !chunk.push(&api(i, u64::from(t))) {
                                chunk = log.replace(chunk, t).unwrap();
                                std::thread::sleep(std::time::Duration::from_micros(100));
                            }
                        }
                    });
                }
                std::thread::sleep(std::time::Duration::from_millis(20 + 7 * round));
                // SAFETY: kills this forked child while its threads take chunks.
                unsafe { libc::kill(libc::getpid(), libc::SIGKILL) };
            });
        });
        assert!(libc::WIFSIGNALED(status), "{status}");
        let t = only_log(&dir);
        let written = t.chunks_written.expect("a version-3 log counts its chunks");
        assert!(written > 3, "{written}");
        assert!(t.damage.is_empty(), "round {round}: {:?}", t.damage);
        let path = std::fs::read_dir(&dir)
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path();
        // Cut at the boundary before the last counted chunk.
        let keep = 4096 + (written - 1) * 65536;
        let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        f.set_len(keep).unwrap();
        drop(f);
        let cut = ProcessTrace::read(&path).unwrap();
        assert_eq!(cut.damage.len(), 1, "{:?}", cut.damage);
        assert_eq!((cut.damage[0].offset, cut.damage[0].chunks), (keep, 1));
        assert!(cut.api.len() <= t.api.len());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

#[test]
fn loss_counters_keep_their_check_under_concurrent_updates() {
    let dir = tempdir("counters");
    let log = LogFile::create(&dir, header(8)).unwrap();
    std::thread::scope(|s| {
        for _ in 0..4 {
            let log = &log;
            s.spawn(move || {
                for _ in 0..10_000 {
                    log.lost(LossCause::NoSpace, 1);
                }
            });
        }
    });
    write(&log, 1, 1);
    let t = ProcessTrace::read(log.path()).unwrap();
    assert_eq!(t.losses.get(LossCause::NoSpace), 40_000);
    assert!(t.damage.is_empty(), "{:?}", t.damage);
}
