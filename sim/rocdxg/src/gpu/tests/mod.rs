//! Tests of the GPU model: the PM4 decoder and executor, aqlprofile's sequences against the
//! frame, the counter statistics, and the exports in-process.

mod builder;
mod counters;
mod exports;
mod gfx11;
mod pm4;
mod sqtt;
mod timing;

use std::collections::{BTreeMap, HashMap};

use wslsim_scenario::Counters;

use crate::gpu::pm4::Memory;

/// The default counters without the WSL2 pitfalls: no contamination, no GRBM zero burst, no
/// SQ zero read-back.
pub fn clean() -> Counters {
    Counters {
        contamination_per_ms: 0.0,
        grbm_zero_session_probability: 0.0,
        sq_zero_probability: 0.0,
        ..Counters::default()
    }
}

/// Memory for tests: a sparse dword map plus the ranges that may be read as IBs.
#[derive(Clone, Debug, Default)]
pub struct FakeMemory {
    /// Dword values by (4-aligned) address.
    pub dwords: HashMap<u64, u32>,
    /// Readable IB regions: start address → dwords.
    pub buffers: BTreeMap<u64, Vec<u32>>,
}

impl FakeMemory {
    /// Places an IB at `address`.
    pub fn map(&mut self, address: u64, dwords: &[u32]) {
        self.buffers.insert(address, dwords.to_vec());
    }

    /// The dword at `address` (0 if never written).
    pub fn get(&self, address: u64) -> u32 {
        self.dwords.get(&address).copied().unwrap_or(0)
    }
}

impl Memory for FakeMemory {
    fn read_dwords(&self, address: u64, count: usize) -> Result<Vec<u32>, String> {
        let (&start, buffer) = self
            .buffers
            .range(..=address)
            .next_back()
            .ok_or_else(|| "unmapped".to_owned())?;
        let offset = usize::try_from((address - start) / 4).map_err(|e| e.to_string())?;
        if !(address - start).is_multiple_of(4) || offset + count > buffer.len() {
            return Err("unmapped".to_owned());
        }
        Ok(buffer[offset..offset + count].to_vec())
    }

    fn read_u32(&self, address: u64) -> Result<u32, String> {
        Ok(self.get(address))
    }

    fn write_u32(&mut self, address: u64, value: u32) -> Result<(), String> {
        self.dwords.insert(address, value);
        Ok(())
    }
}
