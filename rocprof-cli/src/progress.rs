//! Long work's progress (a conversion, a merge, decoding thread traces) as one `indicatif` bar
//! on stderr: only when stderr is a terminal, not under a quiet `--log-level` (`fatal`,
//! `error`), and only once the task has run for a second ([`AFTER_MS_VAR`] sets another delay,
//! in milliseconds: the tests use 0). The runner reports [`Progress`] values through
//! [`rocprof_runner::notice::Report::progress`]; this is the one place they are drawn.
//!
//! There is one stderr, so there is one bar: the state is process-wide. Every line the CLI
//! writes to stderr goes through [`suspend`], which takes the bar off the screen for the line
//! and draws it again below it.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use rocprof_runner::notice::{Progress, Task};
use std::io::IsTerminal as _;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

/// The variable giving the delay before a task's bar appears, in milliseconds (default 1000).
pub const AFTER_MS_VAR: &str = "ROCPROF_PROGRESS_AFTER_MS";

/// The delay when [`AFTER_MS_VAR`] is not set.
const DEFAULT_AFTER: Duration = Duration::from_secs(1);

/// How often a shown bar is redrawn (its elapsed time moves while one step runs long).
const TICK: Duration = Duration::from_millis(200);

/// `--log-level fatal` or `error`: no progress.
static QUIET: AtomicBool = AtomicBool::new(false);

/// The task in progress and its bar (hidden until its delay has passed).
static BAR: Mutex<Option<(Task, ProgressBar)>> = Mutex::new(None);

fn slot() -> MutexGuard<'static, Option<(Task, ProgressBar)>> {
    BAR.lock().unwrap_or_else(PoisonError::into_inner)
}

/// No progress at all (a quiet `--log-level`).
pub fn set_quiet(quiet: bool) {
    QUIET.store(quiet, Ordering::Relaxed);
}

fn delay() -> Duration {
    std::env::var(AFTER_MS_VAR)
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map_or(DEFAULT_AFTER, Duration::from_millis)
}

/// Takes one progress value: starts the task's bar (shown after the delay), moves it, or ends
/// it (its last value, or another task's first).
pub fn update(p: &Progress) {
    if QUIET.load(Ordering::Relaxed) || !std::io::stderr().is_terminal() {
        return;
    }
    let mut slot = slot();
    if (slot.as_ref().is_some_and(|(task, _)| *task != p.task) || p.finished())
        && let Some((_, bar)) = slot.take()
    {
        bar.finish_and_clear();
    }
    if p.finished() {
        return;
    }
    let bar = match slot.as_ref() {
        Some((_, bar)) => bar.clone(),
        None => {
            let bar = new_bar(p.task, p.total);
            *slot = Some((p.task, bar.clone()));
            show_later(bar.clone(), delay());
            bar
        }
    };
    bar.set_length(p.total);
    bar.set_position(p.done);
    bar.set_message(terminal_text::escape(&p.item).into_owned());
}

fn new_bar(task: Task, total: u64) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::hidden());
    let style = ProgressStyle::with_template(
        "rocprof: {prefix} [{elapsed}] {bar:24} {pos}/{len} {wide_msg}",
    )
    .unwrap_or_else(|_| ProgressStyle::default_bar());
    bar.set_style(style);
    bar.set_prefix(task.verb());
    bar
}

/// Draws `bar` on stderr once `delay` has passed, if its task is still running then.
fn show_later(bar: ProgressBar, delay: Duration) {
    let show = move || {
        if !bar.is_finished() {
            bar.set_draw_target(ProgressDrawTarget::stderr());
            bar.enable_steady_tick(TICK);
            bar.tick();
        }
    };
    if delay.is_zero() {
        show();
    } else {
        std::thread::spawn(move || {
            std::thread::sleep(delay);
            show();
        });
    }
}

/// Ends whatever task is in progress (its bar cleared): at the end of a command, and before
/// its error line.
pub fn end() {
    if let Some((_, bar)) = slot().take() {
        bar.finish_and_clear();
    }
}

/// Runs `write` (a write to stderr or stdout) with the bar, if one is shown, off the screen.
/// Re-entrant: a write made inside another's suspension (a notice's lines) runs as it is —
/// the bar's state is locked for the outer one, and a second `suspend` would wait for it
/// forever.
pub fn suspend<R>(write: impl FnOnce() -> R) -> R {
    thread_local! {
        static SUSPENDED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    }
    if SUSPENDED.get() {
        return write();
    }
    let bar = slot().as_ref().map(|(_, bar)| bar.clone());
    match bar {
        Some(bar) => {
            SUSPENDED.set(true);
            // Cleared however `write` ends (it may unwind).
            struct Clear;
            impl Drop for Clear {
                fn drop(&mut self) {
                    SUSPENDED.set(false);
                }
            }
            let _clear = Clear;
            bar.suspend(write)
        }
        None => write(),
    }
}
