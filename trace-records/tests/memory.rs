//! Memory-allocation and scratch-memory records: their labels, and their way through the log
//! (written in any order, read back in time order, a truncated one counted as malformed).

use proptest::prelude::*;
use trace_records::log::*;
use trace_records::loss::LossCause;
use trace_records::*;

fn header() -> FileHeader {
    FileHeader {
        pid: 5,
        image: 0,
        ppid: 1,
        created_ns: 2,
    }
}

fn allocation(
    start: u64,
    op: AllocationOperation,
    address: u64,
    size: u64,
) -> MemoryAllocationRecord {
    MemoryAllocationRecord {
        correlation_id: start / 10,
        start,
        end: start + 3,
        address,
        size,
        thread_id: 77,
        agent_node_id: 1,
        operation: op as u8,
        has_agent: u8::from(op.is_allocation()),
        reserved: [0; 6],
    }
}

fn scratch(start: u64, op: ScratchOperation, size: u64) -> ScratchMemoryRecord {
    ScratchMemoryRecord {
        correlation_id: 0,
        start,
        end: start + 9,
        queue_id: 3,
        size,
        thread_id: 113,
        agent_node_id: 1,
        flags: 0,
        operation: op as u8,
        reserved: [0; 3],
    }
}

#[test]
fn labels_are_rocprofv3s() {
    let names: Vec<&str> = AllocationOperation::ALL
        .iter()
        .map(|o| o.csv_name())
        .collect();
    assert_eq!(
        names,
        [
            "MEMORY_ALLOCATION_ALLOCATE",
            "MEMORY_ALLOCATION_VMEM_ALLOCATE",
            "MEMORY_ALLOCATION_FREE",
            "MEMORY_ALLOCATION_VMEM_FREE"
        ]
    );
    assert_eq!(AllocationOperation::label(0), "MEMORY_ALLOCATION_NONE");
    assert_eq!(AllocationOperation::label(9), "MEMORY_ALLOCATION_NONE");
    assert_eq!(ScratchOperation::label(1), "SCRATCH_MEMORY_ALLOC");
    assert_eq!(ScratchOperation::label(2), "SCRATCH_MEMORY_FREE");
    assert_eq!(ScratchOperation::label(3), "SCRATCH_MEMORY_ASYNC_RECLAIM");
    assert_eq!(ScratchOperation::label(0), "SCRATCH_MEMORY_NONE");
    assert!(AllocationOperation::VmemFree.is_vmem() && !AllocationOperation::Free.is_vmem());
    assert!(AllocationOperation::VmemAllocate.is_allocation());
    assert!(!AllocationOperation::Free.is_allocation());
}

#[test]
fn a_truncated_record_is_counted_not_kept() {
    let mut b = LogBuilder::new(header());
    b.chunk(true, |f, p| {
        assert!(f.push(
            p,
            &allocation(10, AllocationOperation::Allocate, 0x1000, 64)
        ));
        let bytes =
            zerocopy::IntoBytes::as_bytes(&scratch(20, ScratchOperation::Alloc, 1)).to_vec();
        assert!(f.push_parts(p, Tag::ScratchMemory, &[&bytes[..30]]));
    });
    let t = ProcessTrace::from_bytes(b.bytes()).unwrap();
    assert_eq!(t.allocations.len(), 1);
    assert!(t.scratch.is_empty());
    assert_eq!(t.losses.get(LossCause::Malformed), 1);
    assert_eq!(t.record_count(), 1);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Whatever order the records were appended in, they come back complete and in time order.
    #[test]
    fn records_round_trip_in_time_order(
        allocs in proptest::collection::vec((0u64..1_000_000, 1u8..5, any::<u64>(), any::<u64>()), 0..200),
        events in proptest::collection::vec((0u64..1_000_000, 1u8..4, any::<u64>()), 0..200),
    ) {
        let allocs: Vec<MemoryAllocationRecord> = allocs
            .iter()
            .map(|&(start, op, address, size)| {
                allocation(start, AllocationOperation::from_u8(op).unwrap(), address, size)
            })
            .collect();
        let events: Vec<ScratchMemoryRecord> = events
            .iter()
            .map(|&(start, op, size)| scratch(start, ScratchOperation::from_u8(op).unwrap(), size))
            .collect();
        let mut b = LogBuilder::new(header());
        b.chunk(true, |f, p| {
            for r in &allocs {
                assert!(f.push(p, r));
            }
            for r in &events {
                assert!(f.push(p, r));
            }
        });
        let t = ProcessTrace::from_bytes(b.bytes()).unwrap();
        prop_assert_eq!(t.allocations.len(), allocs.len());
        prop_assert_eq!(t.scratch.len(), events.len());
        prop_assert!(t.allocations.windows(2).all(|w| w[0].start <= w[1].start));
        prop_assert!(t.scratch.windows(2).all(|w| w[0].start <= w[1].start));
        let mut want = allocs.clone();
        let mut got = t.allocations.clone();
        want.sort_by_key(|r| r.as_key());
        got.sort_by_key(|r| r.as_key());
        prop_assert_eq!(want, got);
        prop_assert_eq!(t.losses.total(), 0);
    }
}

trait Key {
    fn as_key(&self) -> (u64, u64, u64, u8);
}

impl Key for MemoryAllocationRecord {
    fn as_key(&self) -> (u64, u64, u64, u8) {
        (self.start, self.address, self.size, self.operation)
    }
}
