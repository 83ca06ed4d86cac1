//! rocprofv3's `--kernel-rename`: a dispatch takes the message of the innermost ROCTx range
//! (`roctxRangePushA`/`roctxRangePop`, per thread) open on its launching thread when it was
//! launched; a dispatch outside any range keeps its kernel name. The tool notes the range in
//! each dispatch record ([`KernelDispatchRecord::region`]); every writer names a dispatch
//! through [`dispatch_name`], so `kernel_trace.csv`, the stats, `counter_collection.csv`,
//! rocpd (`region_name_id`), JSON and Perfetto agree. Without `--kernel-rename` the CLI calls
//! [`apply`] with `false`, which forgets the noted ranges.

use trace_records::{KernelDispatchRecord, ProcessTrace};

/// Keeps the ranges noted in `trace`'s dispatches when `rename` (`--kernel-rename`), else
/// forgets them, so every writer shows kernel names.
pub fn apply(trace: &mut ProcessTrace, rename: bool) {
    if !rename {
        trace.dispatches.iter_mut().for_each(|d| d.region = 0);
    }
}

/// The range message a renamed dispatch takes, `None` when it keeps its kernel name.
pub fn region<'a>(trace: &'a ProcessTrace, d: &KernelDispatchRecord) -> Option<&'a str> {
    (d.region != 0).then(|| trace.string(d.region))
}

/// The name a dispatch is shown by: its range's message when renamed, else `kernel_name`.
pub fn dispatch_name<'a>(
    trace: &'a ProcessTrace,
    d: &KernelDispatchRecord,
    kernel_name: &'a str,
) -> &'a str {
    region(trace, d).unwrap_or(kernel_name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renamed_dispatches_take_their_range_and_the_rest_keep_the_kernel() {
        let mut t = ProcessTrace::default();
        t.strings.insert(7, "iter3".into());
        let inside = KernelDispatchRecord {
            region: 7,
            ..Default::default()
        };
        let outside = KernelDispatchRecord::default();
        t.dispatches = vec![inside, outside];
        assert_eq!(dispatch_name(&t, &inside, "axpb"), "iter3");
        assert_eq!(dispatch_name(&t, &outside, "axpb"), "axpb");
        apply(&mut t, true);
        assert_eq!(t.dispatches[0].region, 7);
        apply(&mut t, false);
        assert!(t.dispatches.iter().all(|d| region(&t, d).is_none()));
    }
}
