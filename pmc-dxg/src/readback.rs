//! From read-back to counter values: feeding what [`crate::pm4::decode`] made of one or more
//! passes' output buffers into a [`Program`] prepared by
//! [`crate::defs::AgentCounters::prepare`].
//!
//! The decoder gives each base counter its values in read order (SQ: shader engine outermost,
//! then shader array, then WGP); the program wants each input in its shape's storage order
//! (the first dimension fastest). For a gfx11 agent whose topology [`crate::pm4::Geometry`]
//! accepts, the two are the same order, and [`evaluate`] checks that they are, value by
//! value, before it evaluates.
//!
//! [`Program`]: crate::expr::Program

use crate::Error;
use crate::expr::{AccumulateMode, Dim, Evaluator, Input};
use crate::pm4::{CounterValues, Instance};

/// Evaluates the program of `evaluator` over `decoded`, the counters read back for one
/// dispatch (from one pass or several, in any order); the results are then in
/// [`Evaluator::values`].
///
/// Every input of the program must be among `decoded` (by name; the first of a name is used)
/// with the same event, with one value per element of its shape, each from the instance its
/// position stands for. An input asking for accumulation (`accumulate(X, LOW_RES|HIGH_RES)`)
/// is refused: [`crate::pm4::build_pass`] programs every counter plain, so its values would
/// not be what the expression means.
pub fn evaluate(evaluator: &mut Evaluator<'_>, decoded: &[CounterValues]) -> Result<(), Error> {
    let inputs = evaluator.program().inputs();
    let mut found = Vec::with_capacity(inputs.len());
    for input in inputs {
        let fail = |message: String| Error::Evaluate {
            counter: input.name.clone(),
            message,
        };
        if input.accumulate != AccumulateMode::None {
            return Err(fail(format!(
                "needs {} accumulation, and the counters were collected without it",
                input.accumulate.name()
            )));
        }
        let values = decoded
            .iter()
            .find(|c| c.name == input.name)
            .ok_or_else(|| fail("is not among the counters read back".to_owned()))?;
        if values.event != input.event {
            return Err(fail(format!(
                "was read back as {} event {}, and the program counts {} event {}",
                values.event.block, values.event.event, input.event.block, input.event.event
            )));
        }
        check_order(input, values).map_err(fail)?;
        found.push(values);
    }
    let flat: Vec<f64> = found
        .iter()
        .flat_map(|c| c.values.iter().map(|&v| v as f64))
        .collect();
    let mut slices = Vec::with_capacity(found.len());
    let mut rest = flat.as_slice();
    for c in &found {
        let (head, tail) = rest.split_at(c.values.len());
        slices.push(head);
        rest = tail;
    }
    evaluator.evaluate(&slices)
}

/// That `values` has one value per element of `input`'s shape, element k from the instance
/// whose coordinates are k's (a dimension the instance does not name is coordinate 0).
fn check_order(input: &Input, values: &CounterValues) -> Result<(), String> {
    let shape = &input.shape;
    if values.values.len() != shape.len() || values.instances.len() != shape.len() {
        return Err(format!(
            "{} values read back, its dimensions {shape} hold {}",
            values.values.len(),
            shape.len()
        ));
    }
    for (k, instance) in values.instances.iter().enumerate() {
        let mut rest = k;
        for &(dim, extent) in shape.dims() {
            let at = (rest % extent as usize) as u32;
            rest /= extent as usize;
            let read = coordinate(instance, dim);
            if read != at {
                return Err(format!(
                    "value {k} was read from SE {} SA {} WGP {}, where its dimensions put \
                     {dim} {at}",
                    instance.se, instance.sa, instance.wgp
                ));
            }
        }
    }
    Ok(())
}

fn coordinate(instance: &Instance, dim: Dim) -> u32 {
    match dim {
        Dim::ShaderEngine => instance.se,
        Dim::ShaderArray => instance.sa,
        Dim::Wgp => instance.wgp,
        Dim::Xcc | Dim::Aid | Dim::Agent | Dim::Instance => 0,
    }
}
