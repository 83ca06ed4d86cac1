//! Scratch (private segment) memory as ROCr manages it, and the tool events it reports.
//!
//! ROCr gives each queue a scratch area sized for the largest per-work-item private segment a
//! dispatch on it has needed. When a dispatch needs more than the queue holds, the runtime
//! releases the old area and allocates one large enough (the `HandleInsufficientScratch` path),
//! calling the `ToolsApiTable`'s scratch events around each step: `free_start`/`free_end` for
//! the old area, `alloc_start`/`alloc_end` (with the size and slot count) for the new one; at
//! queue destruction the area is freed with `free_start`/`free_end`. The simulator does the
//! same on the queue's packet-processor thread, before the dispatch runs. Sizes follow ROCr:
//! the per-work-item size rounded up to 16 bytes, times the wave size, rounded up to 1 KiB per
//! wave, times the scratch slots (32 waves per compute unit). Flags are always
//! `HSA_AMD_EVENT_SCRATCH_ALLOC_FLAG_NONE` (no use-once or alternate scratch), and nothing is
//! reclaimed asynchronously (the async-reclaim events are never raised).

use std::ffi::c_void;
use std::sync::Mutex;
use std::sync::atomic::Ordering;

use crate::tables::{TOOLS_TABLE, ToolsSlot};
use crate::types::*;

/// `hsa_amd_tool_event_kind_t`.
pub const EVENT_ALLOC_START: u32 = 1;
pub const EVENT_ALLOC_END: u32 = 2;
pub const EVENT_FREE_START: u32 = 3;
pub const EVENT_FREE_END: u32 = 4;

/// Scratch waves per compute unit (`Max_Slots_Scratch_Cu`).
pub const SLOTS_PER_CU: u64 = 32;

/// `hsa_amd_event_scratch_alloc_start_t`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct AllocStart {
    pub kind: u32,
    pub queue: *const HsaQueue,
    pub flags: u32,
    pub dispatch_id: u64,
}

/// `hsa_amd_event_scratch_alloc_end_t`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct AllocEnd {
    pub kind: u32,
    pub queue: *const HsaQueue,
    pub flags: u32,
    pub dispatch_id: u64,
    pub size: usize,
    pub num_slots: usize,
}

/// `hsa_amd_event_scratch_free_start_t` / `_free_end_t` (and the async-reclaim pair).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct FreeEvent {
    pub kind: u32,
    pub queue: *const HsaQueue,
    pub flags: u32,
}

const _: () = {
    use std::mem::offset_of;
    assert!(size_of::<AllocStart>() == 32);
    assert!(offset_of!(AllocStart, queue) == 8);
    assert!(offset_of!(AllocStart, flags) == 16);
    assert!(offset_of!(AllocStart, dispatch_id) == 24);
    assert!(size_of::<AllocEnd>() == 48);
    assert!(offset_of!(AllocEnd, size) == 32);
    assert!(offset_of!(AllocEnd, num_slots) == 40);
    assert!(size_of::<FreeEvent>() == 24);
    assert!(offset_of!(FreeEvent, flags) == 16);
};

/// The default of every `ToolsApiTable` slot: ROCr's no-op.
pub unsafe extern "C" fn no_tool(_event: *const c_void) -> Status {
    SUCCESS
}

/// Calls the tools-table slot `slot` with `event` (a tool may have replaced the slot).
fn raise<T>(slot: ToolsSlot, event: &T) {
    let f = TOOLS_TABLE.slots[slot as usize].load(Ordering::Acquire);
    // SAFETY: every tools slot holds `no_tool` or a tool's handler with the tool-event
    // signature (`hsa_status_t (*)(hsa_amd_tool_event_t)`, a union of one pointer).
    let f = unsafe {
        std::mem::transmute::<*mut c_void, unsafe extern "C" fn(*const c_void) -> Status>(f)
    };
    let event = (event as *const T).cast::<c_void>();
    let _ = std::panic::catch_unwind(|| {
        // SAFETY: the event lives across the call; the handler only reads it.
        unsafe { f(event) }
    });
}

/// The scratch area one queue holds.
#[derive(Debug, Default)]
pub struct QueueScratch {
    held: Mutex<Area>,
}

#[derive(Debug, Default, Clone, Copy)]
struct Area {
    /// Bytes per work-item the area is sized for (0 = none).
    per_item: u32,
    /// Host memory standing in for it.
    base: usize,
}

/// The scratch size ROCr allocates for `private_segment_size` bytes per work-item.
pub fn scratch_size(private_segment_size: u32, wave_size: u32, compute_units: u32) -> (u64, u64) {
    let per_item = u64::from(private_segment_size).next_multiple_of(16);
    let per_wave = (per_item * u64::from(wave_size.max(1))).next_multiple_of(1024);
    let slots = u64::from(compute_units.max(1)) * SLOTS_PER_CU;
    (per_wave * slots, slots)
}

impl QueueScratch {
    /// Makes sure the queue holds scratch for `private_segment_size` bytes per work-item,
    /// raising the events for what changes. `report` is the queue the events name.
    pub fn ensure(
        &self,
        report: *const HsaQueue,
        dispatch_id: u64,
        private_segment_size: u32,
        wave_size: u32,
        compute_units: u32,
    ) {
        if private_segment_size == 0 {
            return;
        }
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        if held.per_item >= private_segment_size {
            return;
        }
        release(report, &mut held);
        let (size, slots) = scratch_size(private_segment_size, wave_size, compute_units);
        raise(
            ToolsSlot::hsa_amd_tool_scratch_event_alloc_start,
            &AllocStart {
                kind: EVENT_ALLOC_START,
                queue: report,
                flags: 0,
                dispatch_id,
            },
        );
        let base = crate::memory::allocate(size as usize, 0, false).map_or(0, |p| p as usize);
        if base != 0 {
            *held = Area {
                per_item: private_segment_size,
                base,
            };
        }
        raise(
            ToolsSlot::hsa_amd_tool_scratch_event_alloc_end,
            &AllocEnd {
                kind: EVENT_ALLOC_END,
                queue: report,
                flags: 0,
                dispatch_id,
                size: if base == 0 { 0 } else { size as usize },
                num_slots: if base == 0 { 0 } else { slots as usize },
            },
        );
    }

    /// Frees the queue's scratch (at queue destruction), raising the free events if it held any.
    pub fn release(&self, report: *const HsaQueue) {
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        release(report, &mut held);
    }
}

fn release(report: *const HsaQueue, held: &mut Area) {
    if held.per_item == 0 {
        return;
    }
    let event = |kind| FreeEvent {
        kind,
        queue: report,
        flags: 0,
    };
    raise(
        ToolsSlot::hsa_amd_tool_scratch_event_free_start,
        &event(EVENT_FREE_START),
    );
    let _ = crate::memory::free(held.base as *mut c_void);
    *held = Area::default();
    raise(
        ToolsSlot::hsa_amd_tool_scratch_event_free_end,
        &event(EVENT_FREE_END),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_follow_rocr() {
        // 100 B per item -> 112 B, × 32 lanes = 3584 -> 4096 B per wave, × 16 CUs × 32 slots.
        assert_eq!(scratch_size(100, 32, 16), (4096 * 512, 512));
        assert_eq!(scratch_size(16, 64, 1), (1024 * 32, 32));
    }
}
