//! The tree of a parsed expression, how it prints (in the form it parses from) and the names
//! it refers to.

use std::fmt;

use super::shape::Dim;

/// A binary operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BinOp {
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `*`
    Mul,
    /// `/` (`x / 0 = 0`)
    Div,
}

impl BinOp {
    /// Its symbol.
    pub fn symbol(self) -> char {
        match self {
            BinOp::Add => '+',
            BinOp::Sub => '-',
            BinOp::Mul => '*',
            BinOp::Div => '/',
        }
    }

    pub(super) fn precedence(self) -> u8 {
        match self {
            BinOp::Add | BinOp::Sub => 1,
            BinOp::Mul | BinOp::Div => 2,
        }
    }

    /// Applies the operator as upstream does on doubles.
    #[inline]
    pub fn apply(self, a: f64, b: f64) -> f64 {
        match self {
            BinOp::Add => a + b,
            BinOp::Sub => a - b,
            BinOp::Mul => a * b,
            BinOp::Div => divide(a, b),
        }
    }
}

/// `a / b`, and 0 for `b == 0` (as upstream divides).
#[inline]
pub(super) fn divide(a: f64, b: f64) -> f64 {
    if b == 0.0 { 0.0 } else { a / b }
}

/// How `reduce` combines values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReduceOp {
    /// `sum`
    Sum,
    /// `avr`: the mean.
    Avr,
    /// `min`
    Min,
    /// `max`
    Max,
}

impl ReduceOp {
    /// Every operation.
    pub const ALL: [ReduceOp; 4] = [ReduceOp::Sum, ReduceOp::Avr, ReduceOp::Min, ReduceOp::Max];

    /// Its spelling in expressions.
    pub fn name(self) -> &'static str {
        match self {
            ReduceOp::Sum => "sum",
            ReduceOp::Avr => "avr",
            ReduceOp::Min => "min",
            ReduceOp::Max => "max",
        }
    }

    /// From its spelling.
    pub fn from_name(name: &str) -> Option<ReduceOp> {
        ReduceOp::ALL.into_iter().find(|o| o.name() == name)
    }

    /// Reduces a non-empty run of values as upstream does: sums from 0 in order, the mean is
    /// that sum over the count, and min/max keep the first of equal values (`<` only).
    pub fn reduce(self, values: impl IntoIterator<Item = f64>) -> f64 {
        let mut it = values.into_iter();
        match self {
            ReduceOp::Sum => it.fold(0.0, |acc, v| acc + v),
            ReduceOp::Avr => {
                let (sum, n) = it.fold((0.0, 0usize), |(s, n), v| (s + v, n + 1));
                sum / n as f64
            }
            ReduceOp::Min => {
                let first = it.next().unwrap_or(0.0);
                it.fold(first, |acc, v| if v < acc { v } else { acc })
            }
            ReduceOp::Max => {
                let first = it.next().unwrap_or(0.0);
                it.fold(first, |acc, v| if acc < v { v } else { acc })
            }
        }
    }
}

/// The SQ accumulation mode `accumulate()` asks for (aqlprofile's event flag).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
pub enum AccumulateMode {
    /// `NONE` (flag 0): the plain counter.
    #[default]
    None,
    /// `LOW_RES` (flag 1).
    LowRes,
    /// `HIGH_RES` (flag 2).
    HighRes,
}

impl AccumulateMode {
    /// Every mode.
    pub const ALL: [AccumulateMode; 3] = [
        AccumulateMode::None,
        AccumulateMode::LowRes,
        AccumulateMode::HighRes,
    ];

    /// Its spelling in expressions.
    pub fn name(self) -> &'static str {
        match self {
            AccumulateMode::None => "NONE",
            AccumulateMode::LowRes => "LOW_RES",
            AccumulateMode::HighRes => "HIGH_RES",
        }
    }

    /// From its spelling.
    pub fn from_name(name: &str) -> Option<AccumulateMode> {
        AccumulateMode::ALL.into_iter().find(|m| m.name() == name)
    }

    /// The value of aqlprofile's `aqlprofile_pmc_event_flags_t` for it (0, 1, 2).
    pub fn flag(self) -> u32 {
        self as u32
    }
}

/// An inclusive run of indices in a `select` (`3` is `3..=3`, `0:2` is `0..=2`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct IndexRange {
    /// The first index.
    pub first: u32,
    /// The last index (at least `first`).
    pub last: u32,
}

impl IndexRange {
    /// Indices must fit the 6-bit dimension field of an instance id.
    pub const LIMIT: u32 = 64;
}

/// One dimension of a `select` and the indices kept along it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Selection {
    /// The dimension.
    pub dim: Dim,
    /// The indices (at least one range).
    pub ranges: Vec<IndexRange>,
}

/// A parsed expression.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Expr {
    /// An integer literal, as `atoi` read it.
    Number(i32),
    /// A counter or constant name.
    Name(String),
    /// `lhs op rhs`.
    Binary {
        /// The operator.
        op: BinOp,
        /// Left operand.
        lhs: Box<Expr>,
        /// Right operand.
        rhs: Box<Expr>,
    },
    /// `reduce(arg, op)` or `reduce(arg, op, [dims])`.
    Reduce {
        /// What is reduced.
        arg: Box<Expr>,
        /// How.
        op: ReduceOp,
        /// Over which dimensions (empty: all of them, one value results). No repeats.
        dims: Vec<Dim>,
    },
    /// `accumulate(name, mode)`.
    Accumulate {
        /// The base counter.
        name: String,
        /// Its accumulation mode.
        mode: AccumulateMode,
    },
    /// `select(arg, [DIM=[...], ...])`.
    Select {
        /// What is selected from.
        arg: Box<Expr>,
        /// The coordinates kept (at least one; no dimension twice).
        selections: Vec<Selection>,
    },
}

impl Expr {
    /// Every name the expression refers to (counters and constants, `accumulate` included),
    /// in order of first appearance, without repeats.
    pub fn names(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        self.visit_names(&mut |n| {
            if !out.contains(&n) {
                out.push(n);
            }
        });
        out
    }

    fn visit_names<'a>(&'a self, f: &mut impl FnMut(&'a str)) {
        match self {
            Expr::Number(_) => {}
            Expr::Name(n) | Expr::Accumulate { name: n, .. } => f(n),
            Expr::Binary { lhs, rhs, .. } => {
                lhs.visit_names(f);
                rhs.visit_names(f);
            }
            Expr::Reduce { arg, .. } | Expr::Select { arg, .. } => arg.visit_names(f),
        }
    }

    fn fmt_operand(&self, f: &mut fmt::Formatter<'_>, parent: BinOp, right: bool) -> fmt::Result {
        let parens = match self {
            Expr::Binary { op, .. } => {
                op.precedence() < parent.precedence()
                    || (right && op.precedence() == parent.precedence())
            }
            _ => false,
        };
        if parens {
            write!(f, "({self})")
        } else {
            write!(f, "{self}")
        }
    }
}

/// Prints the expression in the form it parses from: compact, with only the parentheses the
/// tree needs. A negative number (which `atoi` makes of a literal above `i32::MAX`) prints as
/// the unsigned 32-bit literal that reads back as it.
impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Expr::Number(n) if *n < 0 => write!(f, "{}", *n as u32),
            Expr::Number(n) => write!(f, "{n}"),
            Expr::Name(n) => f.write_str(n),
            Expr::Binary { op, lhs, rhs } => {
                lhs.fmt_operand(f, *op, false)?;
                write!(f, "{}", op.symbol())?;
                rhs.fmt_operand(f, *op, true)
            }
            Expr::Reduce { arg, op, dims } => {
                write!(f, "reduce({arg},{}", op.name())?;
                if !dims.is_empty() {
                    f.write_str(",[")?;
                    for (i, d) in dims.iter().enumerate() {
                        if i > 0 {
                            f.write_str(",")?;
                        }
                        f.write_str(d.name())?;
                    }
                    f.write_str("]")?;
                }
                f.write_str(")")
            }
            Expr::Accumulate { name, mode } => write!(f, "accumulate({name},{})", mode.name()),
            Expr::Select { arg, selections } => {
                write!(f, "select({arg},[")?;
                for (i, s) in selections.iter().enumerate() {
                    if i > 0 {
                        f.write_str(",")?;
                    }
                    write!(f, "{}=[", s.dim.name())?;
                    for (j, r) in s.ranges.iter().enumerate() {
                        if j > 0 {
                            f.write_str(",")?;
                        }
                        if r.first == r.last {
                            write!(f, "{}", r.first)?;
                        } else {
                            write!(f, "{}:{}", r.first, r.last)?;
                        }
                    }
                    f.write_str("]")?;
                }
                f.write_str("])")
            }
        }
    }
}
