//! The derived-counter language of `counter_defs.yaml`, as rocprofiler-sdk reads and evaluates
//! it: parsing (with the same tokens as its flex scanner), printing, and evaluation over
//! per-instance values with dimensions.
//!
//! # The language
//!
//! - `+ - * /`, left-associative, `*` and `/` binding tighter; parentheses; no unary minus.
//! - Names `[a-zA-Z_][a-zA-Z0-9_]*`: a base counter, an agent-property constant or another
//!   derived counter (expanded in place). `reduce`, `select` and `accumulate` are reserved.
//! - Numbers: the scanner takes a whole decimal literal, fraction and exponent included
//!   (`[0-9]+.[0-9]*([eE][+-]?[0-9]+)?` or `.?[0-9]+([eE][+-]?[0-9]+)?`), and its value is
//!   what C's `atoi` makes of that text: the leading digits only. So `0.5` is one token worth
//!   0, `.5` is 0, `2.5e3` is 2 and `7.` is 7; nothing of the literal is left over to become a
//!   second token. glibc's `atoi` is `(int) strtol(..)`: digits saturate at `i64::MAX`, and
//!   the result is truncated to 32 bits (so `4294967295` reads as -1, and so does
//!   `9223372036854775808`).
//! - `reduce(e, sum|avr|min|max)` reduces everything to one value; `reduce(e, op, [DIM, ...])`
//!   reduces over the listed dimensions and keeps the others.
//! - `accumulate(NAME, NONE|LOW_RES|HIGH_RES)`: the value is the base counter itself; the mode
//!   is an attribute of how it is collected (the SQ accumulation flag 0/1/2), exposed through
//!   [`Input::accumulate`].
//! - `select(e, [DIM=[n], DIM=[a:b,c]])` keeps the values at the given coordinates.
//! - Spaces and tabs are ignored, `//` starts a comment to the end of the line; a newline, `|`
//!   (tokenised upstream but used by no rule) or any other character is an error.
//!
//! # Evaluation
//!
//! Values are vectors of f64 with a [`Shape`]: a list of dimensions and their extents (a base
//! SQ counter on gfx11 has one value per shader engine, shader array and WGP). A binary
//! operator broadcasts a single value over the other side, combines equal sizes element by
//! element and rejects anything else; `x / 0` is 0. Its result's dimension list is the longer
//! of the two (two lists both longer than one entry must be equal). A reduction without
//! dimensions yields one value; the dimension list of a single value is `DIMENSION_INSTANCE`
//! with extent 1.
//!
//! Where this deliberately differs from rocprofiler-sdk:
//! - A single value on the *left* of `-` or `/` stays on the left (`2 - X` is `2 - x` for each
//!   element). Upstream swaps the operands so that the larger side comes first, which turns
//!   `2 - X` into `x - 2`; no stock definition has that form (a test checks the gfx11 ones).
//! - Expressions deeper than [`MAX_DEPTH`], and counters whose expansion is deeper than
//!   [`MAX_EXPANDED_DEPTH`] or larger than [`MAX_EXPANDED_NODES`], are refused: bounds of
//!   this crate's own, far above anything the stock file needs.
//! - An unknown `reduce` operation, accumulation mode or dimension name is a parse error here;
//!   upstream finds the first only when evaluating and the others when building its tree.
//! - `select` accepts index ranges (`[0:3,5]`), which upstream parses but refuses to evaluate.
//!   A dimension selected at exactly one index disappears from the shape; one selected at
//!   several keeps them, renumbered from 0 (upstream drops the dimension either way and so
//!   produces values its dimension list does not describe).
//! - When a binary operator broadcasts, the result takes the shape of the side that has many
//!   values even if the single value's dimension list is longer.
//!
//! # Storage order
//!
//! A shape's dimensions are kept in the order rocprofv3-avail lists them (`DIMENSION_INSTANCE`
//! first, then WGP, shader array, shader engine, AID, XCC, agent), and the first one varies
//! fastest in the flat vector. For a gfx11 SQ counter that is exactly aqlprofile's read-back
//! order: sample `((xcc·SE + se)·2 + sa)·WGP + wgp`.
//!
//! # Performance
//!
//! [`Program::compile`] resolves names to input indices once, checks every shape, folds
//! constant sub-expressions and lays out a scratch buffer; [`Evaluator::evaluate`] then runs a
//! flat list of operations over it without allocating or looking anything up.

use std::fmt;

use crate::{BaseEvent, Block, Error};

// ---------------------------------------------------------------------------------------------
// Dimensions and shapes
// ---------------------------------------------------------------------------------------------

/// A dimension of per-instance counter values, with rocprofiler-sdk's numbering (the 6-bit
/// field `d` of a counter instance id sits at bits `[(d-1)·6+5 : (d-1)·6]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Dim {
    /// Accelerated compute die.
    Xcc = 1,
    /// Active interposer die.
    Aid = 2,
    /// Shader engine.
    ShaderEngine = 3,
    /// The agent.
    Agent = 4,
    /// Shader array within a shader engine.
    ShaderArray = 5,
    /// Workgroup processor within a shader array.
    Wgp = 6,
    /// Instance of the counting block.
    Instance = 7,
}

impl Dim {
    /// Every dimension, by id.
    pub const ALL: [Dim; 7] = [
        Dim::Xcc,
        Dim::Aid,
        Dim::ShaderEngine,
        Dim::Agent,
        Dim::ShaderArray,
        Dim::Wgp,
        Dim::Instance,
    ];

    /// The order in which shapes keep (and rocprofv3-avail lists) dimensions: the block's own
    /// instances first, then the topology around them, innermost first.
    pub const LISTING_ORDER: [Dim; 7] = [
        Dim::Instance,
        Dim::Wgp,
        Dim::ShaderArray,
        Dim::ShaderEngine,
        Dim::Aid,
        Dim::Xcc,
        Dim::Agent,
    ];

    /// rocprofiler-sdk's id (1-7).
    pub fn id(self) -> u8 {
        self as u8
    }

    /// The name used in expressions and listings (`DIMENSION_SHADER_ENGINE`).
    pub fn name(self) -> &'static str {
        match self {
            Dim::Xcc => "DIMENSION_XCC",
            Dim::Aid => "DIMENSION_AID",
            Dim::ShaderEngine => "DIMENSION_SHADER_ENGINE",
            Dim::Agent => "DIMENSION_AGENT",
            Dim::ShaderArray => "DIMENSION_SHADER_ARRAY",
            Dim::Wgp => "DIMENSION_WGP",
            Dim::Instance => "DIMENSION_INSTANCE",
        }
    }

    /// From its name (`DIMENSION_NONE` is not a dimension one can reduce or select over).
    pub fn from_name(name: &str) -> Option<Dim> {
        Dim::ALL.into_iter().find(|d| d.name() == name)
    }

    fn listing_rank(self) -> usize {
        Dim::LISTING_ORDER
            .iter()
            .position(|&d| d == self)
            .unwrap_or(usize::MAX)
    }
}

impl fmt::Display for Dim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The dimensions of a vector of values and their extents, in [`Dim::LISTING_ORDER`]; the
/// first dimension varies fastest in the flat vector.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Shape {
    dims: Vec<(Dim, u32)>,
}

impl Shape {
    /// A shape from dimensions in any order. A repeated dimension keeps its last extent; an
    /// extent of 0 counts as 1; no dimensions at all is [`Shape::single`].
    pub fn new(dims: impl IntoIterator<Item = (Dim, u32)>) -> Shape {
        let mut out: Vec<(Dim, u32)> = Vec::new();
        for (d, e) in dims {
            let e = e.max(1);
            match out.iter_mut().find(|(od, _)| *od == d) {
                Some(slot) => slot.1 = e,
                None => out.push((d, e)),
            }
        }
        if out.is_empty() {
            return Shape::single();
        }
        out.sort_by_key(|(d, _)| d.listing_rank());
        Shape { dims: out }
    }

    /// One value: `DIMENSION_INSTANCE` with extent 1 (what numbers, constants and full
    /// reductions have).
    pub fn single() -> Shape {
        Shape {
            dims: vec![(Dim::Instance, 1)],
        }
    }

    /// The dimensions and their extents.
    pub fn dims(&self) -> &[(Dim, u32)] {
        &self.dims
    }

    /// The extent of `dim`, if the shape has it.
    pub fn extent(&self, dim: Dim) -> Option<u32> {
        self.dims.iter().find(|(d, _)| *d == dim).map(|&(_, e)| e)
    }

    /// Number of values.
    pub fn len(&self) -> usize {
        self.dims
            .iter()
            .fold(1usize, |n, &(_, e)| n.saturating_mul(e as usize))
    }

    /// Whether the shape holds no value (never: every extent is at least 1).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The coordinate of the flat element `index` along each dimension.
    fn coords(&self, mut index: usize, out: &mut Vec<u32>) {
        out.clear();
        for &(_, e) in &self.dims {
            out.push((index % e as usize) as u32);
            index /= e as usize;
        }
    }
}

/// As rocprofv3-avail prints dimensions: `DIMENSION_INSTANCE[0:0] DIMENSION_WGP[0:3]`.
impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, (d, e)) in self.dims.iter().enumerate() {
            if i > 0 {
                f.write_str(" ")?;
            }
            write!(f, "{}[0:{}]", d.name(), e - 1)?;
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// The tree
// ---------------------------------------------------------------------------------------------

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

    fn precedence(self) -> u8 {
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

#[inline]
fn divide(a: f64, b: f64) -> f64 {
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
    /// Parses `text`, the expression of `counter` (named in errors).
    pub fn parse(counter: &str, text: &str) -> Result<Expr, Error> {
        Parser::new(counter, text)?.top()
    }

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

// ---------------------------------------------------------------------------------------------
// Scanner
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq)]
enum Tok<'a> {
    Number(i32),
    /// A `DIM_ARGS_RANGE` token (`0:3,5`), only meaningful inside `select`.
    Range(&'a str),
    Name(&'a str),
    Reduce,
    Select,
    Accumulate,
    Op(BinOp),
    Bar,
    LParen,
    RParen,
    Equals,
    Comma,
    Colon,
    LBracket,
    RBracket,
    Newline,
    End,
}

impl Tok<'_> {
    fn describe(&self) -> String {
        match self {
            Tok::Number(_) => "a number".into(),
            Tok::Range(r) => format!("`{r}`"),
            Tok::Name(n) => format!("`{n}`"),
            Tok::Reduce => "`reduce`".into(),
            Tok::Select => "`select`".into(),
            Tok::Accumulate => "`accumulate`".into(),
            Tok::Op(op) => format!("`{}`", op.symbol()),
            Tok::Bar => "`|`".into(),
            Tok::LParen => "`(`".into(),
            Tok::RParen => "`)`".into(),
            Tok::Equals => "`=`".into(),
            Tok::Comma => "`,`".into(),
            Tok::Colon => "`:`".into(),
            Tok::LBracket => "`[`".into(),
            Tok::RBracket => "`]`".into(),
            Tok::Newline => "a line break".into(),
            Tok::End => "the end".into(),
        }
    }
}

fn digits(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
    }
    i
}

/// The end of an optional exponent `[Ee][-+]?[0-9]+` starting at `i` (or `i`).
fn exponent(b: &[u8], i: usize) -> usize {
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        let mut j = i + 1;
        if j < b.len() && (b[j] == b'+' || b[j] == b'-') {
            j += 1;
        }
        let k = digits(b, j);
        if k > j {
            return k;
        }
    }
    i
}

/// The longest match of the scanner's NUMBER rule at `i` (its length, 0 for none).
fn number_len(b: &[u8], i: usize) -> usize {
    // [0-9]+ "." [0-9]* EXP?
    let mut best = 0;
    let d = digits(b, i);
    if d > i && d < b.len() && b[d] == b'.' {
        best = exponent(b, digits(b, d + 1)) - i;
    }
    // "."? [0-9]+ EXP?
    let start = if i < b.len() && b[i] == b'.' {
        i + 1
    } else {
        i
    };
    let d = digits(b, start);
    if d > start {
        best = best.max(exponent(b, d) - i);
    }
    best
}

/// The longest match of the scanner's DIM_ARGS_RANGE rule at `i` (0 for none):
/// `([0-9]+(:[0-9]+)?)(,[0-9]+(:[0-9]+)?)*`.
fn range_len(b: &[u8], i: usize) -> usize {
    let item = |j: usize| -> Option<usize> {
        let d = digits(b, j);
        if d == j {
            return None;
        }
        if d < b.len() && b[d] == b':' {
            let e = digits(b, d + 1);
            if e > d + 1 {
                return Some(e);
            }
        }
        Some(d)
    };
    let Some(mut end) = item(i) else { return 0 };
    while end < b.len() && b[end] == b',' {
        match item(end + 1) {
            Some(e) => end = e,
            None => break,
        }
    }
    end - i
}

/// C's `atoi` on glibc: the leading decimal digits, saturated at `i64::MAX` by `strtol`, then
/// truncated to `int`. A literal starting with `.` has no leading digits and reads as 0.
fn atoi(text: &str) -> i32 {
    let mut v: i64 = 0;
    for c in text.bytes().take_while(u8::is_ascii_digit) {
        v = v.saturating_mul(10).saturating_add(i64::from(c - b'0'));
    }
    v as i32
}

struct Scanner<'a> {
    text: &'a str,
    pos: usize,
}

impl<'a> Scanner<'a> {
    /// The next token and its byte offset, or the offset of a character no rule matches.
    fn next(&mut self) -> Result<(Tok<'a>, usize), usize> {
        let b = self.text.as_bytes();
        loop {
            while self.pos < b.len() && (b[self.pos] == b' ' || b[self.pos] == b'\t') {
                self.pos += 1;
            }
            if b[self.pos..].starts_with(b"//") {
                while self.pos < b.len() && b[self.pos] != b'\n' {
                    self.pos += 1;
                }
                continue;
            }
            break;
        }
        let start = self.pos;
        let Some(&c) = b.get(start) else {
            return Ok((Tok::End, start));
        };
        let single = match c {
            b'+' => Some(Tok::Op(BinOp::Add)),
            b'-' => Some(Tok::Op(BinOp::Sub)),
            b'*' => Some(Tok::Op(BinOp::Mul)),
            b'/' => Some(Tok::Op(BinOp::Div)),
            b'|' => Some(Tok::Bar),
            b'(' => Some(Tok::LParen),
            b')' => Some(Tok::RParen),
            b'=' => Some(Tok::Equals),
            b',' => Some(Tok::Comma),
            b':' => Some(Tok::Colon),
            b'[' => Some(Tok::LBracket),
            b']' => Some(Tok::RBracket),
            b'\n' => Some(Tok::Newline),
            _ => None,
        };
        if let Some(t) = single {
            self.pos += 1;
            return Ok((t, start));
        }
        if c.is_ascii_alphabetic() || c == b'_' {
            let mut end = start + 1;
            while end < b.len() && (b[end].is_ascii_alphanumeric() || b[end] == b'_') {
                end += 1;
            }
            self.pos = end;
            let word = &self.text[start..end];
            let tok = match word {
                "reduce" => Tok::Reduce,
                "select" => Tok::Select,
                "accumulate" => Tok::Accumulate,
                _ => Tok::Name(word),
            };
            return Ok((tok, start));
        }
        if c.is_ascii_digit() || c == b'.' {
            let n = number_len(b, start);
            let r = range_len(b, start);
            // flex takes the longest match; on a tie the earlier rule (NUMBER) wins.
            if r > n {
                self.pos = start + r;
                return Ok((Tok::Range(&self.text[start..start + r]), start));
            }
            if n > 0 {
                self.pos = start + n;
                return Ok((Tok::Number(atoi(&self.text[start..start + n])), start));
            }
        }
        Err(start)
    }
}

// ---------------------------------------------------------------------------------------------
// Parser
// ---------------------------------------------------------------------------------------------

struct Parser<'a> {
    counter: &'a str,
    text: &'a str,
    scanner: Scanner<'a>,
    tok: Tok<'a>,
    at: usize,
    /// Parentheses and function arguments open around the current token.
    nesting: usize,
}

/// An expression parsed so far, with the depth of its tree.
type Parsed = (Expr, usize);

/// The deepest expression [`Expr::parse`] accepts: at most this many parentheses and
/// function arguments open at once, and a tree at most this deep (a chain `a+b+c` is as deep as
/// it has operators). The stock file's deepest is 8 levels (12 with derived counters expanded,
/// see [`MAX_EXPANDED_DEPTH`]); the bound keeps a hostile definitions file from exhausting the
/// stack of the parser, the printer or the compiler.
pub const MAX_DEPTH: usize = 64;

const OPERAND: &str = "a number, a name, `(`, `reduce(`, `select(` or `accumulate(`";

impl<'a> Parser<'a> {
    fn new(counter: &'a str, text: &'a str) -> Result<Self, Error> {
        let mut p = Parser {
            counter,
            text,
            scanner: Scanner { text, pos: 0 },
            tok: Tok::End,
            at: 0,
            nesting: 0,
        };
        p.advance()?;
        Ok(p)
    }

    fn error(&self, position: usize, expected: impl Into<String>) -> Error {
        Error::Parse {
            counter: self.counter.to_owned(),
            expression: self.text.to_owned(),
            position,
            expected: expected.into(),
        }
    }

    fn advance(&mut self) -> Result<(), Error> {
        match self.scanner.next() {
            Ok((t, at)) => {
                self.tok = t;
                self.at = at;
                Ok(())
            }
            Err(at) => {
                let c = self.text[at..].chars().next().unwrap_or(' ');
                Err(self.error(
                    at,
                    format!(
                        "a token (no token starts with {c:?}; {OPERAND}, an operator, `,` or a \
                         bracket)"
                    ),
                ))
            }
        }
    }

    fn unexpected(&self, expected: &str) -> Error {
        self.error(
            self.at,
            format!("{expected}, found {}", self.tok.describe()),
        )
    }

    fn expect(&mut self, want: Tok<'_>, expected: &str) -> Result<(), Error> {
        if std::mem::discriminant(&self.tok) == std::mem::discriminant(&want) {
            self.advance()
        } else {
            Err(self.unexpected(expected))
        }
    }

    fn name(&mut self, expected: &str) -> Result<(&'a str, usize), Error> {
        match self.tok {
            Tok::Name(n) => {
                let at = self.at;
                self.advance()?;
                Ok((n, at))
            }
            _ => Err(self.unexpected(expected)),
        }
    }

    fn top(mut self) -> Result<Expr, Error> {
        let (e, _) = self.binary(1)?;
        if self.tok != Tok::End {
            return Err(self.unexpected("an operator or the end of the expression"));
        }
        Ok(e)
    }

    fn too_deep(&self) -> Error {
        self.error(
            self.at,
            format!("an expression at most {MAX_DEPTH} levels deep"),
        )
    }

    /// A parenthesised expression or function argument, `binary(1)` one level further in.
    fn nested(&mut self) -> Result<Parsed, Error> {
        if self.nesting >= MAX_DEPTH {
            return Err(self.too_deep());
        }
        self.nesting += 1;
        let parsed = self.binary(1);
        self.nesting -= 1;
        parsed
    }

    /// Operators of at least `min` precedence, left-associative.
    fn binary(&mut self, min: u8) -> Result<Parsed, Error> {
        let (mut lhs, mut depth) = self.primary()?;
        while let Tok::Op(op) = self.tok {
            if op.precedence() < min {
                break;
            }
            if depth >= MAX_DEPTH {
                return Err(self.too_deep());
            }
            self.advance()?;
            let (rhs, rhs_depth) = self.binary(op.precedence() + 1)?;
            depth = 1 + depth.max(rhs_depth);
            if depth > MAX_DEPTH {
                return Err(self.too_deep());
            }
            lhs = Expr::Binary {
                op,
                lhs: Box::new(lhs),
                rhs: Box::new(rhs),
            };
        }
        Ok((lhs, depth))
    }

    fn primary(&mut self) -> Result<Parsed, Error> {
        match self.tok {
            Tok::Number(n) => {
                self.advance()?;
                Ok((Expr::Number(n), 1))
            }
            Tok::Name(n) => {
                self.advance()?;
                Ok((Expr::Name(n.to_owned()), 1))
            }
            Tok::LParen => {
                self.advance()?;
                let e = self.nested()?;
                self.expect(Tok::RParen, "an operator or `)`")?;
                Ok(e)
            }
            Tok::Reduce => self.reduce(),
            Tok::Select => self.select(),
            Tok::Accumulate => Ok((self.accumulate()?, 1)),
            _ => Err(self.unexpected(OPERAND)),
        }
    }

    /// `arg` wrapped in a function node: one level deeper.
    fn wrap(&self, arg: Parsed, node: impl FnOnce(Box<Expr>) -> Expr) -> Result<Parsed, Error> {
        let depth = arg.1 + 1;
        if depth > MAX_DEPTH {
            return Err(self.too_deep());
        }
        Ok((node(Box::new(arg.0)), depth))
    }

    fn reduce(&mut self) -> Result<Parsed, Error> {
        self.advance()?;
        self.expect(Tok::LParen, "`(` after `reduce`")?;
        let arg = self.nested()?;
        self.expect(Tok::Comma, "an operator or `,`")?;
        let expected_op = "a reduction: sum, avr, min or max";
        let op = match self.tok {
            Tok::Name(n) => ReduceOp::from_name(n).ok_or_else(|| self.unexpected(expected_op))?,
            _ => return Err(self.unexpected(expected_op)),
        };
        self.advance()?;
        let mut dims = Vec::new();
        if self.tok == Tok::Comma {
            self.advance()?;
            self.expect(Tok::LBracket, "`[` and a list of dimensions")?;
            loop {
                let dim = self.dim()?;
                if !dims.contains(&dim) {
                    dims.push(dim);
                }
                if self.tok == Tok::Comma {
                    self.advance()?;
                } else {
                    break;
                }
            }
            self.expect(Tok::RBracket, "`,` or `]`")?;
        }
        self.expect(Tok::RParen, "`,` or `)`")?;
        self.wrap(arg, |arg| Expr::Reduce { arg, op, dims })
    }

    fn dim(&mut self) -> Result<Dim, Error> {
        let expected = "a dimension (DIMENSION_XCC, DIMENSION_AID, \
                        DIMENSION_SHADER_ENGINE, DIMENSION_AGENT, DIMENSION_SHADER_ARRAY, \
                        DIMENSION_WGP or DIMENSION_INSTANCE)";
        match self.tok {
            Tok::Name(n) => {
                let d = Dim::from_name(n).ok_or_else(|| self.unexpected(expected))?;
                self.advance()?;
                Ok(d)
            }
            _ => Err(self.unexpected(expected)),
        }
    }

    fn select(&mut self) -> Result<Parsed, Error> {
        self.advance()?;
        self.expect(Tok::LParen, "`(` after `select`")?;
        let arg = self.nested()?;
        self.expect(Tok::Comma, "an operator or `,`")?;
        self.expect(Tok::LBracket, "`[` and a list of DIMENSION=[indices]")?;
        let mut selections: Vec<Selection> = Vec::new();
        loop {
            let dim = self.dim()?;
            self.expect(Tok::Equals, "`=`")?;
            self.expect(Tok::LBracket, "`[` and indices")?;
            let limit = IndexRange::LIMIT;
            let ranges = match self.tok {
                Tok::Number(n) => {
                    if n < 0 || n as u32 >= limit {
                        return Err(self.error(
                            self.at,
                            format!("an index from 0 to {} (read {n})", limit - 1),
                        ));
                    }
                    vec![IndexRange {
                        first: n as u32,
                        last: n as u32,
                    }]
                }
                Tok::Range(text) => self.ranges(text)?,
                _ => return Err(self.unexpected("an index or index ranges (`0:3,5`)")),
            };
            self.advance()?;
            self.expect(Tok::RBracket, "`]`")?;
            // Upstream keeps the first selection of a dimension named twice.
            if !selections.iter().any(|s| s.dim == dim) {
                selections.push(Selection { dim, ranges });
            }
            if self.tok == Tok::Comma {
                self.advance()?;
            } else {
                break;
            }
        }
        self.expect(Tok::RBracket, "`,` or `]`")?;
        self.expect(Tok::RParen, "`)`")?;
        self.wrap(arg, |arg| Expr::Select { arg, selections })
    }

    fn ranges(&self, text: &str) -> Result<Vec<IndexRange>, Error> {
        let limit = IndexRange::LIMIT;
        let mut out = Vec::new();
        let mut offset = self.at;
        for item in text.split(',') {
            let value = |s: &str, at: usize| -> Result<u32, Error> {
                match s.parse::<u32>() {
                    Ok(v) if v < limit => Ok(v),
                    _ => {
                        Err(self.error(at, format!("an index from 0 to {} (read {s})", limit - 1)))
                    }
                }
            };
            let range = match item.split_once(':') {
                Some((a, b)) => {
                    let first = value(a, offset)?;
                    let last = value(b, offset + a.len() + 1)?;
                    if last < first {
                        return Err(self.error(
                            offset,
                            format!("a range whose end is not below its start (read {item})"),
                        ));
                    }
                    IndexRange { first, last }
                }
                None => {
                    let v = value(item, offset)?;
                    IndexRange { first: v, last: v }
                }
            };
            out.push(range);
            offset += item.len() + 1;
        }
        Ok(out)
    }

    fn accumulate(&mut self) -> Result<Expr, Error> {
        self.advance()?;
        self.expect(Tok::LParen, "`(` after `accumulate`")?;
        let (name, _) = self.name("the name of a base counter")?;
        self.expect(Tok::Comma, "`,`")?;
        let expected = "an accumulation mode: NONE, LOW_RES or HIGH_RES";
        let mode = match self.tok {
            Tok::Name(n) => {
                AccumulateMode::from_name(n).ok_or_else(|| self.unexpected(expected))?
            }
            _ => return Err(self.unexpected(expected)),
        };
        self.advance()?;
        self.expect(Tok::RParen, "`)`")?;
        Ok(Expr::Accumulate {
            name: name.to_owned(),
            mode,
        })
    }
}

// ---------------------------------------------------------------------------------------------
// Compilation
// ---------------------------------------------------------------------------------------------

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
    offset: usize,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Src {
    Input(usize),
    Scratch(usize),
    Const(f64),
}

#[derive(Debug, Clone, PartialEq)]
enum Op {
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
/// configuration), then evaluate it as often as needed with an [`Evaluator`].
#[derive(Debug, Clone, PartialEq)]
pub struct Program {
    inputs: Vec<Input>,
    outputs: Vec<Output>,
    ops: Vec<Op>,
    scratch: usize,
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
        let shape = Shape { dims: kept };
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
        let shape = if dims.is_empty() {
            Shape::single()
        } else {
            Shape { dims }
        };
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

    /// The base counters to pass to [`Evaluator::evaluate`], in this order.
    pub fn inputs(&self) -> &[Input] {
        &self.inputs
    }

    /// The counters computed, in the order they were given.
    pub fn outputs(&self) -> &[Output] {
        &self.outputs
    }

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
