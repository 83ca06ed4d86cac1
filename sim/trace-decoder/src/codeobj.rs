//! The code objects one SE stream's markers announce, and pc translation.

use wslsim_sqtt::marker::CodeObjectMarker;

use crate::ffi::PcT;

/// One loaded code object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Loaded {
    id: u64,
    addr: u64,
    size: u64,
}

/// The code objects loaded at the current point of a stream, in load order.
#[derive(Clone, Debug, Default)]
pub struct CodeObjects {
    loaded: Vec<Loaded>,
}

impl CodeObjects {
    /// No code objects.
    pub fn new() -> Self {
        Self::default()
    }

    /// Applies a marker: a load (re)places the object with that id; an unload removes it (an
    /// unknown id is ignored). Id 0 cannot name a code object (it means "raw address") and is
    /// ignored.
    pub fn apply(&mut self, marker: &CodeObjectMarker) {
        if marker.id == 0 {
            return;
        }
        self.loaded.retain(|l| l.id != marker.id);
        if !marker.unload {
            self.loaded.push(Loaded {
                id: marker.id,
                addr: marker.addr,
                size: marker.size,
            });
        }
    }

    /// The decoder's name for device address `pc`: `{pc - load address, id}` inside the most
    /// recently loaded object whose `[addr, addr + size)` holds it, else `{pc, 0}`.
    pub fn translate(&self, pc: u64) -> PcT {
        self.loaded
            .iter()
            .rev()
            .find(|l| pc >= l.addr && pc - l.addr < l.size)
            .map_or(
                PcT {
                    addr: pc,
                    marker_id: 0,
                },
                |l| PcT {
                    addr: pc - l.addr,
                    marker_id: l.id,
                },
            )
    }
}
