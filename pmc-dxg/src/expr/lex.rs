//! The scanner: the tokens of upstream's flex rules, numbers read as C's `atoi` reads the
//! scanner's literal.

use super::ast::BinOp;

/// A token.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Tok<'a> {
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
    /// How an error message names it.
    pub(super) fn describe(&self) -> String {
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

/// The scanner over one expression's text.
pub(super) struct Scanner<'a> {
    text: &'a str,
    pos: usize,
}

impl<'a> Scanner<'a> {
    /// A scanner at the start of `text`.
    pub(super) fn new(text: &'a str) -> Self {
        Scanner { text, pos: 0 }
    }

    /// The next token and its byte offset, or the offset of a character no rule matches.
    pub(super) fn next(&mut self) -> Result<(Tok<'a>, usize), usize> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Every token of `text` with its offset, up to the end or the first unscannable byte.
    fn tokens(text: &str) -> Result<Vec<(Tok<'_>, usize)>, usize> {
        let mut s = Scanner::new(text);
        let mut out = Vec::new();
        loop {
            let (t, at) = s.next()?;
            out.push((t, at));
            if t == Tok::End {
                return Ok(out);
            }
        }
    }

    #[test]
    fn a_range_wins_only_when_it_is_longer_than_the_number() {
        // A lone integer matches both rules equally long: NUMBER, the earlier rule, wins.
        assert_eq!(tokens("12").unwrap()[0], (Tok::Number(12), 0));
        assert_eq!(tokens("0:3,5").unwrap()[0], (Tok::Range("0:3,5"), 0));
        assert_eq!(tokens("4,7").unwrap()[0], (Tok::Range("4,7"), 0));
        // A dangling separator is not part of the range.
        assert_eq!(
            tokens("1:2,").unwrap(),
            [(Tok::Range("1:2"), 0), (Tok::Comma, 3), (Tok::End, 4)]
        );
        // `1.5` is longer as a number than `1` as a range.
        assert_eq!(tokens("1.5:2").unwrap()[0], (Tok::Number(1), 0));
    }

    #[test]
    fn match_lengths_follow_the_flex_rules() {
        let b = |s: &str| s.as_bytes().to_vec();
        assert_eq!(number_len(&b("2.5e3+"), 0), 5);
        assert_eq!(number_len(&b("7."), 0), 2);
        assert_eq!(number_len(&b(".5"), 0), 2);
        assert_eq!(
            number_len(&b("1e+"), 0),
            1,
            "an incomplete exponent is left over"
        );
        assert_eq!(number_len(&b("."), 0), 0);
        assert_eq!(range_len(&b("0:3,5]"), 0), 5);
        assert_eq!(range_len(&b("3:"), 0), 1);
        assert_eq!(range_len(&b(":3"), 0), 0);
    }

    #[test]
    fn atoi_saturates_then_truncates_to_32_bits() {
        assert_eq!(atoi("2147483648"), i32::MIN);
        assert_eq!(atoi("4294967295"), -1);
        assert_eq!(atoi("9223372036854775807"), -1);
        assert_eq!(atoi("9223372036854775808"), -1, "saturated at i64::MAX");
        assert_eq!(atoi(".5"), 0);
        assert_eq!(atoi("12e3"), 12);
    }

    #[test]
    fn words_blanks_comments_and_bad_bytes() {
        assert_eq!(
            tokens(" reduce\t(x_1 // the rest\n)").unwrap(),
            [
                (Tok::Reduce, 1),
                (Tok::LParen, 8),
                (Tok::Name("x_1"), 9),
                (Tok::Newline, 24),
                (Tok::RParen, 25),
                (Tok::End, 26),
            ]
        );
        assert_eq!(tokens("selector").unwrap()[0].0, Tok::Name("selector"));
        assert_eq!(tokens("a | b").unwrap()[1], (Tok::Bar, 2));
        assert_eq!(tokens("a $ b"), Err(2));
        assert_eq!(
            tokens("a\u{e9}"),
            Err(1),
            "a byte of a multi-byte character"
        );
        assert_eq!(tokens("// only a comment").unwrap(), [(Tok::End, 17)]);
    }

    proptest! {
        /// Any text scans to the end or to an unscannable byte, each token starting after the
        /// last and every byte between tokens a blank or part of a comment.
        #[test]
        fn scanning_advances_and_skips_only_blanks_and_comments(
            text in "[ \t0-9a-z_.:,+*/()\\[\\]=|\n-]{0,40}|\\PC{0,20}"
        ) {
            let mut s = Scanner::new(&text);
            let mut last_end = 0usize;
            loop {
                let before = s.pos;
                match s.next() {
                    Ok((tok, at)) => {
                        prop_assert!(at >= before && at >= last_end);
                        let gap = &text[last_end..at];
                        let blank = gap.trim_start_matches([' ', '\t']);
                        prop_assert!(
                            blank.is_empty() || blank.starts_with("//"),
                            "{gap:?} skipped before {tok:?}"
                        );
                        if tok == Tok::End {
                            prop_assert_eq!(at, text.len());
                            break;
                        }
                        prop_assert!(s.pos > at, "{tok:?} at {at} consumed nothing");
                        last_end = s.pos;
                    }
                    Err(at) => {
                        prop_assert!(at < text.len());
                        let c = text.as_bytes()[at];
                        let token_start =
                            c.is_ascii_alphanumeric() || b"+-*/|()=,:[]_\n ".contains(&c);
                        prop_assert!(!token_start, "{c:#x} refused at {at}");
                        break;
                    }
                }
            }
        }
    }
}
