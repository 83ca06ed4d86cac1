//! API calls' arguments and return values, decoded for the writers that show them (JSON
//! `args`/`retval`, `rocpd_arg`, Perfetto annotations) from what the tool captured
//! ([`trace_records::ApiArgs`]) through the signature table of `api-signatures`.
//!
//! Upstream shows them for HIP calls only (its argument iteration is implemented for the HIP
//! buffer records), and so does every writer here.

use crate::view::ProcessView;
use api_signatures::{Decoded, RawCall};
use trace_records::{ApiArgs, ApiRecord};

/// The decoded arguments and return value of `r`, if they were captured and the signature
/// table knows the call.
pub fn decoded(view: &ProcessView<'_>, r: &ApiRecord) -> Option<Decoded> {
    let trace = view.trace;
    if trace.api_args.is_empty() {
        return None;
    }
    let args = trace.api_args.get(&ApiArgs::key(r))?;
    let name = trace.operation_name(r.domain, r.operation);
    let sig = api_signatures::signature(&name)?;
    api_signatures::decode(
        sig,
        &RawCall {
            rax: args.header.rax,
            int_words: usize::from(args.header.int_words),
            sse_words: usize::from(args.header.sse_words),
            stack_words: usize::from(args.header.stack_words),
            words: &args.words,
            strings: &args.strings,
        },
    )
}
