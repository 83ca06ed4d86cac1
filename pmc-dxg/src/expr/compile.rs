//! Compilation: a set of counters into a [`Program`], names resolved to input indices, shapes
//! checked, constants folded and scratch laid out.

use super::ast::{AccumulateMode, BinOp, Expr, ReduceOp, Selection};
use super::parse::MAX_DEPTH;
use super::shape::{Dim, Shape};
use crate::{BaseEvent, Block, Error};

/// What a name in an expression stands for, as the caller's resolver says.
#[derive(Debug, Clone)]
pub enum Binding<'a> {
    /// A base counter, collected as `event`, with one value per element of `shape`.
    Base {
        /// Its hardware event.
        event: BaseEvent,
        /// The shape of its values.
        shape: Shape,
    },
    /// A constant (an agent property).
    Constant(f64),
    /// A derived counter, expanded in place.
    Derived(&'a Expr),
    /// Defined, but not usable (why).
    Unusable(String),
}

/// A base counter a [`Program`] reads, in the order it is first needed.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Input {
    /// The counter.
    pub name: String,
    /// Its hardware event.
    pub event: BaseEvent,
    /// The accumulation the collector must configure for it (`accumulate(NAME, MODE)`; `None`
    /// for a plain reference). The same counter with two modes is two inputs.
    pub accumulate: AccumulateMode,
    /// The shape (and so the number) of its values.
    pub shape: Shape,
}

/// A counter a [`Program`] computes.
#[derive(Debug, Clone, PartialEq)]
pub struct Output {
    /// The counter.
    pub name: String,
    /// The shape of its values.
    pub shape: Shape,
    /// Where its values start in the scratch buffer.
    pub(super) offset: usize,
}

/// Where an operation reads a value from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Src {
    Input(usize),
    Scratch(usize),
    Const(f64),
}

/// One step of a [`Program`].
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Op {
    /// `out[..len] = a op b`, each side either `len` values or one.
    Binary {
        op: BinOp,
        a: Src,
        a_len: usize,
        b: Src,
        b_len: usize,
        out: usize,
        len: usize,
    },
    /// `out[0] = reduce(a[..len])`.
    ReduceAll {
        op: ReduceOp,
        a: Src,
        len: usize,
        out: usize,
    },
    /// `out[group[i]] = reduce over i`, groups in the output's order; `members` lists the input
    /// indices of each group back to back, `bounds[g]..bounds[g+1]` being group g's.
    ReduceGroups {
        op: ReduceOp,
        a: Src,
        a_len: usize,
        members: Box<[u32]>,
        bounds: Box<[u32]>,
        out: usize,
    },
    /// `out[k] = a[index[k]]`.
    Gather {
        a: Src,
        a_len: usize,
        index: Box<[u32]>,
        out: usize,
    },
    /// `out[..len] = a[..len]` (a constant or an input that is itself an output).
    Copy { a: Src, len: usize, out: usize },
}

#[derive(Debug, Clone)]
struct Value {
    src: Src,
    shape: Shape,
}

/// A set of counters compiled for evaluation: inputs resolved to indices, shapes checked,
/// constants folded, scratch laid out. Build one per counter set (or per dispatch
/// configuration), then evaluate it as often as needed with an
/// [`Evaluator`](super::Evaluator).
#[derive(Debug, Clone, PartialEq)]
pub struct Program {
    pub(super) inputs: Vec<Input>,
    pub(super) outputs: Vec<Output>,
    pub(super) ops: Vec<Op>,
    /// Values of scratch the operations need.
    pub(super) scratch: usize,
}

struct Compiler<'a, 'r> {
    resolve: &'r dyn Fn(&str) -> Option<Binding<'a>>,
    counter: String,
    inputs: Vec<Input>,
    ops: Vec<Op>,
    scratch: usize,
    expanding: Vec<String>,
    /// Nodes being compiled, derived counters' expansions included.
    depth: usize,
    /// Nodes compiled for the current counter.
    visited: usize,
}

/// The deepest a counter's expression may become with its derived counters expanded in place.
pub const MAX_EXPANDED_DEPTH: usize = 2 * MAX_DEPTH;
/// The most nodes a counter's expression may have with its derived counters expanded in place
/// (a definition using another twice at every level would otherwise grow exponentially).
pub const MAX_EXPANDED_NODES: usize = 1 << 14;

impl<'a> Compiler<'a, '_> {
    fn fail(&self, message: String) -> Error {
        Error::Evaluate {
            counter: self.counter.clone(),
            message,
        }
    }

    fn alloc(&mut self, len: usize) -> usize {
        let at = self.scratch;
        self.scratch += len;
        at
    }

    fn input(&mut self, name: &str, event: BaseEvent, mode: AccumulateMode, shape: Shape) -> Src {
        let found = self
            .inputs
            .iter()
            .position(|i| i.name == name && i.accumulate == mode);
        Src::Input(found.unwrap_or_else(|| {
            self.inputs.push(Input {
                name: name.to_owned(),
                event,
                accumulate: mode,
                shape,
            });
            self.inputs.len() - 1
        }))
    }

    fn node(&mut self, e: &Expr) -> Result<Value, Error> {
        self.visited += 1;
        if self.visited > MAX_EXPANDED_NODES {
            return Err(self.fail(format!(
                "the expression, its derived counters expanded, has more than \
                 {MAX_EXPANDED_NODES} nodes"
            )));
        }
        if self.depth >= MAX_EXPANDED_DEPTH {
            return Err(self.fail(format!(
                "the expression, its derived counters expanded, is more than \
                 {MAX_EXPANDED_DEPTH} levels deep"
            )));
        }
        self.depth += 1;
        let value = self.node_inner(e);
        self.depth -= 1;
        value
    }

    fn node_inner(&mut self, e: &Expr) -> Result<Value, Error> {
        match e {
            Expr::Number(n) => Ok(Value {
                src: Src::Const(f64::from(*n)),
                shape: Shape::single(),
            }),
            Expr::Name(name) => self.name(name),
            Expr::Accumulate { name, mode } => match (self.resolve)(name) {
                Some(Binding::Base { event, shape }) => {
                    if *mode != AccumulateMode::None && event.block != Block::Sq {
                        return Err(self.fail(format!(
                            "accumulate({name}, {}) needs an SQ counter; {name} counts in {}",
                            mode.name(),
                            event.block
                        )));
                    }
                    let src = self.input(name, event, *mode, shape.clone());
                    Ok(Value { src, shape })
                }
                Some(Binding::Unusable(why)) => {
                    Err(self.fail(format!("input {name} cannot be used: {why}")))
                }
                Some(_) => Err(self.fail(format!(
                    "accumulate() takes a base counter, and {name} is not one"
                ))),
                None => Err(Error::UnknownInput {
                    counter: self.counter.clone(),
                    input: name.clone(),
                }),
            },
            Expr::Binary { op, lhs, rhs } => {
                let a = self.node(lhs)?;
                let b = self.node(rhs)?;
                self.binary(*op, a, b, lhs, rhs)
            }
            Expr::Reduce { arg, op, dims } => {
                let a = self.node(arg)?;
                self.reduce(*op, a, dims)
            }
            Expr::Select { arg, selections } => {
                let a = self.node(arg)?;
                self.select(a, selections, e)
            }
        }
    }

    fn name(&mut self, name: &str) -> Result<Value, Error> {
        match (self.resolve)(name) {
            None => Err(Error::UnknownInput {
                counter: self.counter.clone(),
                input: name.to_owned(),
            }),
            Some(Binding::Unusable(why)) => {
                Err(self.fail(format!("input {name} cannot be used: {why}")))
            }
            Some(Binding::Constant(v)) => Ok(Value {
                src: Src::Const(v),
                shape: Shape::single(),
            }),
            Some(Binding::Base { event, shape }) => {
                let src = self.input(name, event, AccumulateMode::None, shape.clone());
                Ok(Value { src, shape })
            }
            Some(Binding::Derived(expr)) => {
                // Only an expansion can loop: a base counter or constant compiled under its
                // own name (`AgentCounters::prepare(&["SQ_WAVES"])`) is just itself.
                if let Some(at) = self.expanding.iter().position(|n| n == name) {
                    let mut path: Vec<&str> =
                        self.expanding[at..].iter().map(String::as_str).collect();
                    path.push(name);
                    return Err(self.fail(format!(
                        "the definition refers to itself: {}",
                        path.join(" -> ")
                    )));
                }
                self.expanding.push(name.to_owned());
                let v = self.node(expr);
                self.expanding.pop();
                v
            }
        }
    }

    fn binary(
        &mut self,
        op: BinOp,
        a: Value,
        b: Value,
        lhs: &Expr,
        rhs: &Expr,
    ) -> Result<Value, Error> {
        let (da, db) = (a.shape.dims().len(), b.shape.dims().len());
        if a.shape != b.shape && da > 1 && db > 1 {
            return Err(self.fail(format!(
                "dimension mismatch: `{lhs}` has {} and `{rhs}` has {}",
                a.shape, b.shape
            )));
        }
        let (la, lb) = (a.shape.len(), b.shape.len());
        let len = if la == lb || lb == 1 {
            la
        } else if la == 1 {
            lb
        } else {
            return Err(self.fail(format!(
                "mismatched sizes: `{lhs}` has {la} values and `{rhs}` has {lb}"
            )));
        };
        let shape = if la != lb {
            if la > lb { a.shape } else { b.shape }
        } else if da > db {
            a.shape
        } else {
            b.shape
        };
        if let (Src::Const(x), Src::Const(y)) = (a.src, b.src) {
            return Ok(Value {
                src: Src::Const(op.apply(x, y)),
                shape,
            });
        }
        let out = self.alloc(len);
        self.ops.push(Op::Binary {
            op,
            a: a.src,
            a_len: la,
            b: b.src,
            b_len: lb,
            out,
            len,
        });
        Ok(Value {
            src: Src::Scratch(out),
            shape,
        })
    }

    fn reduce(&mut self, op: ReduceOp, a: Value, dims: &[Dim]) -> Result<Value, Error> {
        let kept: Vec<(Dim, u32)> = if dims.is_empty() {
            Vec::new()
        } else {
            a.shape
                .dims()
                .iter()
                .copied()
                .filter(|(d, _)| !dims.contains(d))
                .collect()
        };
        let len = a.shape.len();
        if kept.is_empty() {
            if let Src::Const(v) = a.src {
                return Ok(Value {
                    src: Src::Const(op.reduce([v])),
                    shape: Shape::single(),
                });
            }
            let out = self.alloc(1);
            self.ops.push(Op::ReduceAll {
                op,
                a: a.src,
                len,
                out,
            });
            return Ok(Value {
                src: Src::Scratch(out),
                shape: Shape::single(),
            });
        }
        let shape = Shape::from_ordered(kept);
        // Which output element each input element lands in.
        let mut group_of = Vec::with_capacity(len);
        let mut coords = Vec::new();
        for i in 0..len {
            a.shape.coords(i, &mut coords);
            let (mut g, mut stride) = (0usize, 1usize);
            for (k, &(d, _)) in a.shape.dims().iter().enumerate() {
                if let Some(e) = shape.extent(d) {
                    g += coords[k] as usize * stride;
                    stride *= e as usize;
                }
            }
            group_of.push(g);
        }
        let groups = shape.len();
        // Input indices grouped, each group in input order (a stable sort by group).
        let mut members: Vec<u32> = (0..len as u32).collect();
        members.sort_by_key(|&i| group_of[i as usize]);
        let mut bounds = vec![0u32; groups + 1];
        for &g in &group_of {
            bounds[g + 1] += 1;
        }
        for g in 0..groups {
            bounds[g + 1] += bounds[g];
        }
        let out = self.alloc(groups);
        self.ops.push(Op::ReduceGroups {
            op,
            a: a.src,
            a_len: len,
            members: members.into(),
            bounds: bounds.into(),
            out,
        });
        Ok(Value {
            src: Src::Scratch(out),
            shape,
        })
    }

    fn select(&mut self, a: Value, selections: &[Selection], e: &Expr) -> Result<Value, Error> {
        let kept_along = |dim: Dim, extent: u32| -> Vec<u32> {
            match selections.iter().find(|s| s.dim == dim) {
                None => (0..extent).collect(),
                Some(s) => (0..extent)
                    .filter(|&c| s.ranges.iter().any(|r| r.first <= c && c <= r.last))
                    .collect(),
            }
        };
        // A dimension the value does not have counts as one coordinate, 0.
        for s in selections {
            if a.shape.extent(s.dim).is_none() && kept_along(s.dim, 1).is_empty() {
                return Err(self.fail(format!(
                    "`{e}` keeps no value: the operand has no {} beyond index 0",
                    s.dim
                )));
            }
        }
        let per_dim: Vec<Vec<u32>> = a
            .shape
            .dims()
            .iter()
            .map(|&(d, ext)| kept_along(d, ext))
            .collect();
        if let Some(k) = per_dim.iter().position(Vec::is_empty) {
            return Err(self.fail(format!(
                "`{e}` keeps no value: {} has indices 0 to {} only",
                a.shape.dims()[k].0,
                a.shape.dims()[k].1 - 1
            )));
        }
        let mut dims = Vec::new();
        for (k, &(d, _)) in a.shape.dims().iter().enumerate() {
            let selected = selections.iter().any(|s| s.dim == d);
            let n = per_dim[k].len() as u32;
            if !(selected && n == 1) {
                dims.push((d, n));
            }
        }
        let shape = Shape::from_ordered(dims);
        // Gather in the output's order: the first dimension fastest.
        let total: usize = per_dim.iter().map(Vec::len).product();
        let mut index = Vec::with_capacity(total);
        let mut strides = Vec::with_capacity(per_dim.len());
        let mut s = 1usize;
        for &(_, ext) in a.shape.dims() {
            strides.push(s);
            s *= ext as usize;
        }
        for mut k in 0..total {
            let mut flat = 0usize;
            for (j, kept) in per_dim.iter().enumerate() {
                flat += kept[k % kept.len()] as usize * strides[j];
                k /= kept.len();
            }
            index.push(flat as u32);
        }
        let len = a.shape.len();
        if index.len() == len && index.iter().enumerate().all(|(i, &v)| v as usize == i) {
            return Ok(Value { src: a.src, shape });
        }
        let out = self.alloc(index.len());
        self.ops.push(Op::Gather {
            a: a.src,
            a_len: len,
            index: index.into(),
            out,
        });
        Ok(Value {
            src: Src::Scratch(out),
            shape,
        })
    }
}

impl Program {
    /// Compiles `counters` (name, expression) with `resolve` saying what each name in them
    /// stands for. Fails on the first counter that cannot be evaluated: an unknown name
    /// ([`Error::UnknownInput`]), an unusable one, a definition that refers to itself, one
    /// that expanded is deeper than [`MAX_EXPANDED_DEPTH`] or larger than
    /// [`MAX_EXPANDED_NODES`], or shapes that do not combine ([`Error::Evaluate`]).
    pub fn compile<'a>(
        counters: &[(&str, &Expr)],
        resolve: &dyn Fn(&str) -> Option<Binding<'a>>,
    ) -> Result<Program, Error> {
        let mut c = Compiler {
            resolve,
            counter: String::new(),
            inputs: Vec::new(),
            ops: Vec::new(),
            scratch: 0,
            expanding: Vec::new(),
            depth: 0,
            visited: 0,
        };
        let mut outputs = Vec::with_capacity(counters.len());
        for &(name, expr) in counters {
            c.counter = name.to_owned();
            c.visited = 0;
            c.expanding.clear();
            c.expanding.push(name.to_owned());
            let v = c.node(expr)?;
            let len = v.shape.len();
            let offset = match v.src {
                Src::Scratch(at) => at,
                src => {
                    let out = c.alloc(len);
                    c.ops.push(Op::Copy { a: src, len, out });
                    out
                }
            };
            outputs.push(Output {
                name: name.to_owned(),
                shape: v.shape,
                offset,
            });
        }
        Ok(Program {
            inputs: c.inputs,
            outputs,
            ops: c.ops,
            scratch: c.scratch,
        })
    }

    /// The base counters to pass to [`Evaluator::evaluate`](super::Evaluator::evaluate), in
    /// this order.
    pub fn inputs(&self) -> &[Input] {
        &self.inputs
    }

    /// The counters computed, in the order they were given.
    pub fn outputs(&self) -> &[Output] {
        &self.outputs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sq(shape: &Shape) -> Binding<'static> {
        Binding::Base {
            event: BaseEvent {
                block: Block::Sq,
                event: 4,
            },
            shape: shape.clone(),
        }
    }

    fn compile(text: &str, shape: &Shape) -> Program {
        let e = Expr::parse("T", text).unwrap();
        let resolve = |n: &str| match n {
            "X" => Some(sq(shape)),
            "K" => Some(Binding::Constant(3.0)),
            _ => None,
        };
        Program::compile(&[("T", &e)], &resolve).unwrap()
    }

    #[test]
    fn constants_fold_into_one_copy() {
        let p = compile("(2*K+1)/2", &Shape::single());
        assert_eq!(
            p.ops,
            [Op::Copy {
                a: Src::Const(3.5),
                len: 1,
                out: 0
            }]
        );
        assert!(p.inputs.is_empty());
        assert_eq!(p.scratch, 1);
        assert_eq!(compile("reduce(K,max)", &Shape::single()).ops.len(), 1);
    }

    #[test]
    fn a_selection_of_everything_gathers_nothing() {
        let shape = Shape::new([(Dim::Wgp, 4), (Dim::ShaderEngine, 2)]);
        let p = compile("select(X,[DIMENSION_WGP=[0:3]])", &shape);
        assert_eq!(
            p.ops,
            [Op::Copy {
                a: Src::Input(0),
                len: 8,
                out: 0
            }]
        );
        assert_eq!(p.outputs[0].shape, shape);
        // One index drops the dimension and gathers.
        let p = compile("select(X,[DIMENSION_WGP=[1]])", &shape);
        assert!(matches!(&p.ops[0], Op::Gather { index, .. } if **index == [1, 5]));
        assert_eq!(p.outputs[0].shape, Shape::new([(Dim::ShaderEngine, 2)]));
    }

    #[test]
    fn groups_of_a_partial_reduction_list_their_members_in_input_order() {
        let shape = Shape::new([(Dim::Wgp, 2), (Dim::ShaderEngine, 3)]);
        let p = compile("reduce(X,sum,[DIMENSION_WGP])", &shape);
        match &p.ops[0] {
            Op::ReduceGroups {
                members, bounds, ..
            } => {
                assert_eq!(**members, [0, 1, 2, 3, 4, 5]);
                assert_eq!(**bounds, [0, 2, 4, 6]);
            }
            other => panic!("{other:?}"),
        }
        let p = compile("reduce(X,sum,[DIMENSION_SHADER_ENGINE])", &shape);
        match &p.ops[0] {
            Op::ReduceGroups {
                members, bounds, ..
            } => {
                assert_eq!(**members, [0, 2, 4, 1, 3, 5]);
                assert_eq!(**bounds, [0, 3, 6]);
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(p.outputs[0].shape, Shape::new([(Dim::Wgp, 2)]));
    }

    #[test]
    fn an_input_used_twice_is_read_once() {
        let shape = Shape::new([(Dim::Wgp, 4)]);
        let p = compile("X*X+accumulate(X,NONE)-accumulate(X,HIGH_RES)", &shape);
        let modes: Vec<AccumulateMode> = p.inputs.iter().map(|i| i.accumulate).collect();
        assert_eq!(modes, [AccumulateMode::None, AccumulateMode::HighRes]);
    }
}
