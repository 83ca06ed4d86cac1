//! Evaluation: a compiled [`Program`] run over one set of input values at a time, without
//! allocating or looking anything up.

use super::ast::{BinOp, divide};
use super::compile::{Op, Output, Program, Src};
use crate::Error;

impl Program {
    /// A reusable evaluator (it owns the scratch buffer).
    pub fn evaluator(&self) -> Evaluator<'_> {
        Evaluator {
            program: self,
            scratch: vec![0.0; self.scratch],
        }
    }
}

/// Evaluates a [`Program`] over one set of input values at a time, without allocating.
#[derive(Debug, Clone)]
pub struct Evaluator<'p> {
    program: &'p Program,
    scratch: Vec<f64>,
}

#[inline]
fn operand<'v>(src: &'v Src, len: usize, inputs: &[&'v [f64]], scratch: &'v [f64]) -> &'v [f64] {
    match src {
        Src::Input(i) => inputs[*i],
        Src::Scratch(at) => &scratch[*at..*at + len],
        Src::Const(v) => std::slice::from_ref(v),
    }
}

#[inline]
fn combine(dst: &mut [f64], a: &[f64], b: &[f64], f: impl Fn(f64, f64) -> f64) {
    match (a.len(), b.len()) {
        (1, 1) if dst.len() == 1 => dst[0] = f(a[0], b[0]),
        (_, 1) => {
            let y = b[0];
            for (d, &x) in dst.iter_mut().zip(a) {
                *d = f(x, y);
            }
        }
        (1, _) => {
            let x = a[0];
            for (d, &y) in dst.iter_mut().zip(b) {
                *d = f(x, y);
            }
        }
        _ => {
            for ((d, &x), &y) in dst.iter_mut().zip(a).zip(b) {
                *d = f(x, y);
            }
        }
    }
}

impl<'p> Evaluator<'p> {
    /// The program evaluated.
    pub fn program(&self) -> &'p Program {
        self.program
    }

    /// Evaluates every output from `inputs`, one slice per [`Program::inputs`] entry with
    /// exactly its shape's number of values (in the shape's storage order).
    pub fn evaluate(&mut self, inputs: &[&[f64]]) -> Result<(), Error> {
        let want = &self.program.inputs;
        if inputs.len() != want.len() {
            return Err(Error::Evaluate {
                counter: self
                    .program
                    .outputs
                    .first()
                    .map(|o| o.name.clone())
                    .unwrap_or_default(),
                message: format!(
                    "{} input vectors given, the program reads {}",
                    inputs.len(),
                    want.len()
                ),
            });
        }
        for (given, input) in inputs.iter().zip(want) {
            if given.len() != input.shape.len() {
                return Err(Error::Evaluate {
                    counter: input.name.clone(),
                    message: format!(
                        "{} values given, its shape {} has {}",
                        given.len(),
                        input.shape,
                        input.shape.len()
                    ),
                });
            }
        }
        let scratch = &mut self.scratch[..];
        for op in &self.program.ops {
            match op {
                Op::Binary {
                    op,
                    a,
                    a_len,
                    b,
                    b_len,
                    out,
                    len,
                } => {
                    let (done, rest) = scratch.split_at_mut(*out);
                    let x = operand(a, *a_len, inputs, done);
                    let y = operand(b, *b_len, inputs, done);
                    let dst = &mut rest[..*len];
                    match op {
                        BinOp::Add => combine(dst, x, y, |p, q| p + q),
                        BinOp::Sub => combine(dst, x, y, |p, q| p - q),
                        BinOp::Mul => combine(dst, x, y, |p, q| p * q),
                        BinOp::Div => combine(dst, x, y, divide),
                    }
                }
                Op::ReduceAll { op, a, len, out } => {
                    let (done, rest) = scratch.split_at_mut(*out);
                    let x = operand(a, *len, inputs, done);
                    rest[0] = op.reduce(x.iter().copied());
                }
                Op::ReduceGroups {
                    op,
                    a,
                    a_len,
                    members,
                    bounds,
                    out,
                } => {
                    let (done, rest) = scratch.split_at_mut(*out);
                    let x = operand(a, *a_len, inputs, done);
                    for (g, w) in bounds.windows(2).enumerate() {
                        let group = &members[w[0] as usize..w[1] as usize];
                        rest[g] = op.reduce(group.iter().map(|&i| x[i as usize]));
                    }
                }
                Op::Gather {
                    a,
                    a_len,
                    index,
                    out,
                } => {
                    let (done, rest) = scratch.split_at_mut(*out);
                    let x = operand(a, *a_len, inputs, done);
                    for (d, &i) in rest.iter_mut().zip(index.iter()) {
                        *d = x[i as usize];
                    }
                }
                Op::Copy { a, len, out } => {
                    let (done, rest) = scratch.split_at_mut(*out);
                    let x = operand(a, *len, inputs, done);
                    rest[..*len].copy_from_slice(x);
                }
            }
        }
        Ok(())
    }

    /// The values of output `k` from the last [`Evaluator::evaluate`] (in its shape's order).
    pub fn value(&self, k: usize) -> &[f64] {
        let o = &self.program.outputs[k];
        &self.scratch[o.offset..o.offset + o.shape.len()]
    }

    /// Every output with its values.
    pub fn values(&self) -> impl Iterator<Item = (&'p Output, &[f64])> + '_ {
        self.program
            .outputs
            .iter()
            .enumerate()
            .map(|(k, o)| (o, self.value(k)))
    }
}
