//! The parser: upstream's grammar by recursive descent, with the depth bound
//! [`MAX_DEPTH`].

use super::ast::{AccumulateMode, Expr, IndexRange, ReduceOp, Selection};
use super::lex::{Scanner, Tok};
use super::shape::Dim;
use crate::Error;

impl Expr {
    /// Parses `text`, the expression of `counter` (named in errors).
    pub fn parse(counter: &str, text: &str) -> Result<Expr, Error> {
        Parser::new(counter, text)?.top()
    }
}

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
/// see [`MAX_EXPANDED_DEPTH`](super::MAX_EXPANDED_DEPTH)); the bound keeps a hostile
/// definitions file from exhausting the stack of the parser, the printer or the compiler.
pub const MAX_DEPTH: usize = 64;

const OPERAND: &str = "a number, a name, `(`, `reduce(`, `select(` or `accumulate(`";

impl<'a> Parser<'a> {
    fn new(counter: &'a str, text: &'a str) -> Result<Self, Error> {
        let mut p = Parser {
            counter,
            text,
            scanner: Scanner::new(text),
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
