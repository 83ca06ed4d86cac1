//! A wave's timeline (`wave_state_t[]`), derived from its instructions.
//!
//! Walking the instructions in stream order with a cursor that starts at the wave's begin time:
//! a gap before an instruction's issue time is IDLE; then its first `min(stall, duration)`
//! cycles are STALL and the rest EXEC (WAIT for IMMED instructions such as `s_waitcnt`); only the
//! part after the cursor counts, so overlapping instructions are not counted twice; the cursor
//! moves to the latest completion. The gap from the last completion to the wave's end is IDLE.
//! Adjacent entries of one state are merged; an entry longer than `i32::MAX` cycles is split.

use wslsim_sqtt::{Category, Instruction};

use crate::ffi::{WaveStateT, wave_state};

/// Appends `cycles` of `state`, merging with the previous entry and splitting at `i32::MAX`.
fn push(timeline: &mut Vec<WaveStateT>, state: i32, mut cycles: u64) {
    while cycles > 0 {
        let room = match timeline.last() {
            Some(last) if last.r#type == state => (i32::MAX - last.duration) as u64,
            _ => 0,
        };
        if room > 0 {
            let add = room.min(cycles);
            if let Some(last) = timeline.last_mut() {
                last.duration += add as i32;
            }
            cycles -= add;
            continue;
        }
        let add = cycles.min(i32::MAX as u64);
        timeline.push(WaveStateT {
            r#type: state,
            duration: add as i32,
        });
        cycles -= add;
    }
}

/// The timeline of a wave that ran from `begin` to `end` executing `insts`.
pub fn derive<'a>(
    begin: u64,
    end: u64,
    insts: impl IntoIterator<Item = &'a Instruction>,
) -> Vec<WaveStateT> {
    let mut timeline = Vec::new();
    let mut cursor = begin;
    for inst in insts {
        let start = inst.time;
        let stall_end = start.saturating_add(u64::from(inst.stall.min(inst.duration)));
        let done = start.saturating_add(u64::from(inst.duration));
        if start > cursor {
            push(&mut timeline, wave_state::IDLE, start - cursor);
            cursor = start;
        }
        if stall_end > cursor {
            push(&mut timeline, wave_state::STALL, stall_end - cursor);
            cursor = stall_end;
        }
        if done > cursor {
            let state = if inst.category == Category::IMMED {
                wave_state::WAIT
            } else {
                wave_state::EXEC
            };
            push(&mut timeline, state, done - cursor);
            cursor = done;
        }
    }
    if end > cursor {
        push(&mut timeline, wave_state::IDLE, end - cursor);
    }
    timeline
}
