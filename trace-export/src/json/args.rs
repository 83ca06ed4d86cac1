//! `args` and `retval` of the HIP API records, as upstream's serialization writes them: each
//! argument `{"type", "name", "value"}` (the type as `typeid` names it), the return value
//! `{"uint64_t_retval": …}` (its retval union).

use serde::Serialize;

/// One argument.
#[derive(Serialize)]
pub(super) struct ArgOut {
    #[serde(rename = "type")]
    pub(super) type_name: String,
    pub(super) name: &'static str,
    pub(super) value: String,
}

/// `retval`.
#[derive(Serialize)]
pub(super) struct Retval {
    pub(super) uint64_t_retval: u64,
}

/// A HIP record's `args` (empty when none were captured) and `retval` (absent then).
pub(super) fn of(
    view: &crate::view::ProcessView<'_>,
    r: &trace_records::ApiRecord,
) -> (Vec<ArgOut>, Option<Retval>) {
    match crate::args::decoded(view, r) {
        Some(d) => (
            d.args
                .into_iter()
                .map(|a| ArgOut {
                    type_name: a.mangled_type,
                    name: a.name,
                    value: a.value,
                })
                .collect(),
            Some(Retval {
                uint64_t_retval: d.retval,
            }),
        ),
        None => (Vec::new(), None),
    }
}
