//! The statics the traced exit reads, in one static.
//!
//! The tool is a shared object, and stable rustc reaches every static through a GOT entry the
//! linker cannot relax: each static the exit reads costs a load of its address before the load
//! of its value. The clock's published epoch and ring ([`crate::clock`]) and the current sink
//! and its append mode ([`crate::sink`]) are therefore fields of [`HOT`], so the exit loads one
//! address for all of them. The types here are plain atomics; their meaning and every access
//! are in the modules named above, which depend on this one (not the other way round).

use std::ffi::c_void;
use std::sync::atomic::{AtomicPtr, AtomicU8, AtomicU64, AtomicUsize};

/// Epochs the clock keeps published at once (see [`crate::clock`]).
pub(crate) const RING: usize = 256;

/// `ClockState::current` before the TSC was calibrated, or when it is not used.
pub(crate) const NO_TSC: usize = usize::MAX;

/// One clock calibration (see [`crate::clock`]).
pub(crate) struct Epoch {
    pub(crate) tsc0: AtomicU64,
    pub(crate) ns0: AtomicU64,
    pub(crate) scale: AtomicU64,
}

/// The clock's published state.
pub(crate) struct ClockState {
    /// Sequence number of the current epoch, or [`NO_TSC`] while the TSC is not used.
    pub(crate) current: AtomicUsize,
    pub(crate) epochs: [Epoch; RING],
}

/// The sink's published state.
pub(crate) struct SinkState {
    /// The current sink (a leaked `sink::Sink`, or null).
    pub(crate) current: AtomicPtr<c_void>,
    /// How appends run (`sink`'s mode bits).
    pub(crate) mode: AtomicU8,
}

/// Everything the traced exit reads besides the thread's own state.
pub(crate) struct Hot {
    pub(crate) clock: ClockState,
    pub(crate) sink: SinkState,
}

pub(crate) static HOT: Hot = Hot {
    clock: ClockState {
        current: AtomicUsize::new(NO_TSC),
        epochs: [const {
            Epoch {
                tsc0: AtomicU64::new(0),
                ns0: AtomicU64::new(0),
                scale: AtomicU64::new(0),
            }
        }; RING],
    },
    sink: SinkState {
        current: AtomicPtr::new(std::ptr::null_mut()),
        mode: AtomicU8::new(0),
    },
};
