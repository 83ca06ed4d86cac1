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
//!
//! # Modules
//!
//! - `shape`: dimensions ([`Dim`]) and the shapes of per-instance values ([`Shape`]);
//! - `ast`: the tree ([`Expr`] and its operators), its printing and the names it uses;
//! - `lex`: the scanner (upstream's flex rules, `atoi` literals);
//! - `parse`: the parser ([`Expr::parse`], [`MAX_DEPTH`]);
//! - `compile`: a set of counters into a [`Program`] ([`Program::compile`], [`Binding`]);
//! - `eval`: running a program ([`Evaluator`]).
//!
//! Each uses only those listed before it (`lex` the tree's operators, `parse` the scanner and
//! the tree, `compile` the tree and the parser's depth bound, `eval` the compiled program).

mod ast;
mod compile;
mod eval;
mod lex;
mod parse;
mod shape;

pub use ast::{AccumulateMode, BinOp, Expr, IndexRange, ReduceOp, Selection};
pub use compile::{Binding, Input, MAX_EXPANDED_DEPTH, MAX_EXPANDED_NODES, Output, Program};
pub use eval::Evaluator;
pub use parse::MAX_DEPTH;
pub use shape::{Dim, Shape};
