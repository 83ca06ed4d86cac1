//! The command processor's register file: plain storage for every register in a known space,
//! plus the gfx11 perfmon registers (intercept-pmc-att.md §5.3) that drive the [`PerfBlock`]
//! and the per-shader-engine thread-trace registers of the [`ThreadTrace`].

use std::ops::Range;

use super::counters::{GRBM_SLOTS, PerfBlock, SQ_SLOTS};
use super::sqtt::{self, ThreadTrace};

/// CONFIG space (dword addresses; written with COPY_DATA dst_sel 4 "perfcounters").
pub const CONFIG_SPACE: Range<u32> = 0x2000..0xA000;
/// SH (persistent) space reachable with SET_SH_REG.
pub const SH_SPACE: Range<u32> = 0x2C00..0x3000;
/// UCONFIG space.
pub const UCONFIG_SPACE: Range<u32> = 0xC000..0x1_0000;

/// One past the highest register address of any known space: the register file's size.
pub const REGISTER_COUNT: usize = UCONFIG_SPACE.end as usize;
const _: () = assert!(CONFIG_SPACE.end as usize <= REGISTER_COUNT);
const _: () = assert!(SH_SPACE.end as usize <= REGISTER_COUNT);

/// GRBM_GFX_INDEX: selects SE / SA / instance for later selects and reads.
pub const GRBM_GFX_INDEX: u32 = 0xC200;
/// Broadcast to every SE, SA and instance.
pub const GRBM_BROADCAST: u32 = 0xE000_0000;
/// GRBM_PERFCOUNTER0/1_SELECT.
pub const GRBM_PERFCOUNTER_SELECT: [u32; GRBM_SLOTS] = [0xD840, 0xD841];
/// GRBM_PERFCOUNTER0/1_LO.
pub const GRBM_PERFCOUNTER_LO: [u32; GRBM_SLOTS] = [0xD040, 0xD043];
/// GRBM_PERFCOUNTER0/1_HI.
pub const GRBM_PERFCOUNTER_HI: [u32; GRBM_SLOTS] = [0xD041, 0xD044];
/// SQ_PERFCOUNTER0_SELECT; SQ_PERFCOUNTERn_SELECT is this + n (n 0..16); slot i uses 2i.
pub const SQ_PERFCOUNTER0_SELECT: u32 = 0xD9C0;
/// SQ_PERFCOUNTER0_LO; SQ_PERFCOUNTERk_LO is this + 2k (k 0..8). 32-bit, no HI.
pub const SQ_PERFCOUNTER0_LO: u32 = 0xD1C0;
/// SQ_PERFCOUNTER_CTRL: PS_EN b0, GS_EN b2, HS_EN b4, CS_EN b6, DISABLE_ME*PIPE*_PERF
/// [19:14] on gfx11 (there are no VS/ES/LS bits); aqlprofile writes 0x55. Stored, not
/// interpreted.
pub const SQ_PERFCOUNTER_CTRL: u32 = 0xD9E0;
/// SQ_PERFCOUNTER_CTRL2: FORCE_EN b0, VMID_EN [16:1]; aqlprofile writes 0x1FFFF. Stored, not
/// interpreted.
pub const SQ_PERFCOUNTER_CTRL2: u32 = 0xD9E2;
/// CP_PERFMON_CNTL: PERFMON_STATE [3:0], SPM_PERFMON_STATE [7:4], PERFMON_ENABLE_MODE [9:8],
/// PERFMON_SAMPLE_ENABLE b10 (aqlprofile's read writes 0x401 and it reads back as written).
pub const CP_PERFMON_CNTL: u32 = 0xD808;
/// GRBM_GFX_INDEX.INSTANCE_INDEX [6:0] (7 bits in GC 11.5; Mesa's gc_11_0_0 table says 8).
pub const INSTANCE_INDEX_MASK: u32 = 0x7F;
/// COMPUTE_PERFCOUNT_ENABLE (SH space, SET_SH_REG offset 0x20B).
pub const COMPUTE_PERFCOUNT_ENABLE: u32 = 0x2E0B;

/// `GRBM_GFX_INDEX` decoded: `None` in a field means "broadcast".
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GfxIndex {
    /// SE_INDEX [23:16], or broadcast (b31).
    pub se: Option<u32>,
    /// SA_INDEX [15:8], or broadcast (b29).
    pub sa: Option<u32>,
    /// INSTANCE_INDEX [6:0], or broadcast (b30).
    pub instance: Option<u32>,
}

impl GfxIndex {
    /// Decodes a `GRBM_GFX_INDEX` value (bit 7 and bits 24–28 are not part of any field).
    pub fn decode(value: u32) -> GfxIndex {
        let field = |broadcast_bit: u32, shift: u32, mask: u32| {
            (value & (1 << broadcast_bit) == 0).then_some((value >> shift) & mask)
        };
        GfxIndex {
            se: field(31, 16, 0xFF),
            sa: field(29, 8, 0xFF),
            instance: field(30, 0, INSTANCE_INDEX_MASK),
        }
    }
}

/// The register file of one node's command processor.
#[derive(Clone, Debug)]
pub struct RegisterFile {
    /// Every register's stored value, indexed by its dword address: all three known spaces
    /// lie below [`REGISTER_COUNT`] (256 KiB, where a hash map cost a hash per access).
    values: Box<[u32]>,
    /// The perfmon hardware behind the counter registers.
    pub perf: PerfBlock,
    /// The thread-trace hardware behind the SQ thread-trace registers.
    pub trace: ThreadTrace,
    /// A thread-trace register was written since [`RegisterFile::take_trace_written`] was last
    /// called: its tokens may wait for a flush.
    trace_written: bool,
}

impl RegisterFile {
    /// Power-on state: every register 0 except `GRBM_GFX_INDEX` (broadcast); one set of
    /// thread-trace registers per shader engine of the perfmon block's geometry.
    pub fn new(perf: PerfBlock) -> RegisterFile {
        let mut values = vec![0u32; REGISTER_COUNT].into_boxed_slice();
        values[GRBM_GFX_INDEX as usize] = GRBM_BROADCAST;
        let trace = ThreadTrace::new(perf.geometry().shader_engines);
        RegisterFile {
            values,
            perf,
            trace,
            trace_written: false,
        }
    }

    /// Writes `value` to `reg` (which the PM4 validator has checked is in a known space).
    /// Thread-trace registers go to the shader engines `GRBM_GFX_INDEX` selects.
    pub fn write(&mut self, reg: u32, value: u32) {
        if let Some(slot) = self.values.get_mut(reg as usize) {
            *slot = value;
        }
        match reg {
            CP_PERFMON_CNTL => self.perf.set_state(value & 0xF),
            COMPUTE_PERFCOUNT_ENABLE => self.perf.set_compute_enable(value & 1 != 0),
            sqtt::reg::COMPUTE_THREAD_TRACE_ENABLE => {
                self.trace_written = true;
                self.trace.set_compute_enable(value & 1 != 0);
            }
            _ if ThreadTrace::owns(reg) => {
                self.trace_written = true;
                let index = GfxIndex::decode(self.stored(GRBM_GFX_INDEX));
                self.trace.write(index, reg, value);
            }
            _ => {
                if let Some(slot) = GRBM_PERFCOUNTER_SELECT.iter().position(|&r| r == reg) {
                    self.perf.set_grbm_select(slot, value);
                } else if let Some(slot) = sq_slot(reg, SQ_PERFCOUNTER0_SELECT) {
                    self.perf.set_sq_select(slot, value);
                }
            }
        }
    }

    /// Reads `reg`: counter registers report the perfmon block (SQ through the instance that
    /// `GRBM_GFX_INDEX` selects; a broadcast field reads index 0), thread-trace registers the
    /// selected shader engine's; every other register reads what was last written (0 if
    /// never).
    pub fn read(&self, reg: u32) -> u32 {
        if ThreadTrace::owns(reg) {
            return self
                .trace
                .read(GfxIndex::decode(self.stored(GRBM_GFX_INDEX)), reg);
        }
        if let Some(slot) = GRBM_PERFCOUNTER_LO.iter().position(|&r| r == reg) {
            return self.perf.read_grbm(slot) as u32;
        }
        if let Some(slot) = GRBM_PERFCOUNTER_HI.iter().position(|&r| r == reg) {
            return (self.perf.read_grbm(slot) >> 32) as u32;
        }
        if let Some(slot) = sq_slot(reg, SQ_PERFCOUNTER0_LO) {
            let index = GfxIndex::decode(self.stored(GRBM_GFX_INDEX));
            let wgp = index.instance.unwrap_or(0) >> 2;
            let instance =
                self.perf
                    .geometry()
                    .sq_instance(index.se.unwrap_or(0), index.sa.unwrap_or(0), wgp);
            return instance.map_or(0, |instance| self.perf.read_sq(slot, instance));
        }
        if reg == CP_PERFMON_CNTL {
            return (self.stored(reg) & !0xF) | self.perf.state();
        }
        self.stored(reg)
    }

    /// Whether a thread-trace register was written since the last call (which clears it):
    /// only such a write appends tokens to a stream outside a dispatch.
    pub fn take_trace_written(&mut self) -> bool {
        std::mem::take(&mut self.trace_written)
    }

    fn stored(&self, reg: u32) -> u32 {
        self.values.get(reg as usize).copied().unwrap_or(0)
    }
}

/// The SQ slot `i` whose register is `reg` in a bank of slots every other dword from `base`:
/// `SQ_PERFCOUNTER(2i)_SELECT` for [`SQ_PERFCOUNTER0_SELECT`], `SQ_PERFCOUNTERi_LO` for
/// [`SQ_PERFCOUNTER0_LO`].
fn sq_slot(reg: u32, base: u32) -> Option<usize> {
    let n = reg.checked_sub(base)? as usize;
    (n < 2 * SQ_SLOTS && n.is_multiple_of(2)).then_some(n / 2)
}
