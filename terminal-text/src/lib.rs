//! `terminal-text`: the one terminal-safe rendering of text that did not come from rocprof
//! itself — kernel and ROCTx names, paths, command lines, option values echoed in messages.
//!
//! A profiled application chooses its kernel and marker names; a user chooses paths and option
//! values. Written to a terminal raw, such text can forge lines (`\nrocprof: error: …`), run
//! escape sequences (clear the screen, set the window title, make hyperlinks), reverse the
//! text that follows it (U+202E) or make a table line 65 KB wide. Rendered here:
//!
//! * **Escaped** ([`escape`], [`Escaped`], [`escape_bytes`], [`escape_path`]): every character
//!   for which [`needs_escape`] holds is written as an escape, everything else as it is:
//!   - `\n`, `\r`, `\t`, and `\\` for the backslash itself (so the output reads back one way:
//!     a literal backslash-n in a name shows as `\\n`, a newline as `\n`);
//!   - the other C0 controls and DEL as `\xNN` (`\x1b` for ESC, `\x00`, `\x7f`);
//!   - the C1 controls (U+0080–U+009F), the bidirectional controls (U+061C, U+200E, U+200F,
//!     U+202A–U+202E, U+2066–U+2069) and the line and paragraph separators (U+2028, U+2029)
//!     as `\u{…}` in lower-case hex (`\u{9b}`, `\u{202e}`);
//!   - in bytes that are not UTF-8 ([`escape_bytes`], [`escape_path`]), each byte of an
//!     invalid sequence as `\xNN` — always 80 or above, so it is never mistaken for a control
//!     character (those are below 80, or written `\u{…}`).
//!
//!   The escaped text contains no control, bidirectional or separator character at all, so it
//!   cannot start a line, move the cursor or reorder what follows it. [`escape_lines`] keeps
//!   the newlines of a text that is made of lines and escapes everything else.
//! * **Shortened** ([`shorten`], [`cell`]): a name in a table is at most a width of characters
//!   (Unicode scalar values, not bytes; a wide CJK character counts one), cut to a prefix and
//!   an ellipsis (`…`). [`cell`] escapes first and cuts between escapes, never inside one.
//!   [`NAME_WIDTH`] (60) is the width of names in the `-S` tables and `rocprof analyze`'s
//!   table.
//!
//! Files keep the exact bytes: CSV, JSON, Perfetto and rocpd outputs do not use this crate.
//! It has no dependencies and prints nothing.

#![forbid(unsafe_code)]

use std::borrow::Cow;
use std::fmt::{self, Write as _};
use std::path::Path;

/// The widest a name is shown in a text table (the `-S` summary tables, `rocprof analyze`'s
/// "where time goes" table), in characters, ellipsis included.
pub const NAME_WIDTH: usize = 60;

/// The ellipsis that ends a shortened text.
pub const ELLIPSIS: char = '…';

/// A C0 control (U+0000–U+001F), DEL (U+007F) or a C1 control (U+0080–U+009F).
pub fn is_control(c: char) -> bool {
    c.is_control()
}

/// A bidirectional formatting character: the Arabic letter mark (U+061C), the left-to-right and
/// right-to-left marks (U+200E, U+200F), the embeddings, overrides and their pop (U+202A–U+202E)
/// and the isolates (U+2066–U+2069).
pub fn is_bidi_control(c: char) -> bool {
    matches!(
        c,
        '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
    )
}

/// The line and paragraph separators (U+2028, U+2029), which some viewers break lines at.
pub fn is_separator(c: char) -> bool {
    matches!(c, '\u{2028}' | '\u{2029}')
}

/// Whether `c` is never written to a terminal as it is: a control ([`is_control`]), a
/// bidirectional control ([`is_bidi_control`]), a separator ([`is_separator`]), or the
/// backslash that introduces the escapes.
pub fn needs_escape(c: char) -> bool {
    c == '\\' || is_control(c) || is_bidi_control(c) || is_separator(c)
}

/// Whether `c` may appear in escaped text: anything but a control, bidirectional control or
/// separator (the backslash may: it starts the escapes).
pub fn is_safe(c: char) -> bool {
    !(is_control(c) || is_bidi_control(c) || is_separator(c))
}

/// Writes `c`, escaped if it [`needs_escape`].
fn write_char(out: &mut impl fmt::Write, c: char) -> fmt::Result {
    match c {
        '\\' => out.write_str("\\\\"),
        '\n' => out.write_str("\\n"),
        '\r' => out.write_str("\\r"),
        '\t' => out.write_str("\\t"),
        '\0'..='\u{1f}' | '\u{7f}' => write!(out, "\\x{:02x}", u32::from(c)),
        c if needs_escape(c) => write!(out, "\\u{{{:x}}}", u32::from(c)),
        c => out.write_char(c),
    }
}

/// How many characters `c` takes once escaped.
fn escaped_len(c: char) -> usize {
    match c {
        '\\' | '\n' | '\r' | '\t' => 2,
        '\0'..='\u{1f}' | '\u{7f}' => 4,
        // `\u{` + hex digits + `}`.
        c if needs_escape(c) => 4 + format!("{:x}", u32::from(c)).len(),
        _ => 1,
    }
}

/// Text displayed escaped (see the crate documentation): `format!("{}", Escaped(name))`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Escaped<'a>(pub &'a str);

impl fmt::Display for Escaped<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut rest = self.0;
        while let Some(at) = rest.find(needs_escape) {
            f.write_str(&rest[..at])?;
            let c = rest[at..].chars().next().unwrap_or_default();
            write_char(f, c)?;
            rest = &rest[at + c.len_utf8()..];
        }
        f.write_str(rest)
    }
}

/// `s` escaped: every character that [`needs_escape`] written as an escape (borrowed when
/// there is none).
pub fn escape(s: &str) -> Cow<'_, str> {
    if s.contains(needs_escape) {
        Cow::Owned(Escaped(s).to_string())
    } else {
        Cow::Borrowed(s)
    }
}

/// `bytes` as text, escaped: the UTF-8 parts as [`escape`] writes them, each byte of an invalid
/// sequence as `\xNN`.
pub fn escape_bytes(bytes: &[u8]) -> Cow<'_, str> {
    if let Ok(s) = std::str::from_utf8(bytes) {
        return escape(s);
    }
    let mut out = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        let _ = write!(out, "{}", Escaped(chunk.valid()));
        for b in chunk.invalid() {
            let _ = write!(out, "\\x{b:02x}");
        }
    }
    Cow::Owned(out)
}

/// A path, escaped ([`escape_bytes`] of its bytes).
pub fn escape_path(path: &Path) -> Cow<'_, str> {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt as _;
        escape_bytes(path.as_os_str().as_bytes())
    }
    #[cfg(not(unix))]
    {
        match path.to_string_lossy() {
            Cow::Borrowed(s) => escape(s),
            Cow::Owned(s) => Cow::Owned(escape(&s).into_owned()),
        }
    }
}

/// A text made of lines, escaped line by line: its newlines are kept, everything else is as
/// [`escape`] writes it (a `\r` too, so no line is overwritten).
pub fn escape_lines(s: &str) -> Cow<'_, str> {
    if !s.contains(|c| c != '\n' && needs_escape(c)) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 16);
    for (i, line) in s.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let _ = write!(out, "{}", Escaped(line));
    }
    Cow::Owned(out)
}

/// `s` in at most `width` characters: as it is when it fits, else its first `width - 1`
/// characters and [`ELLIPSIS`] (nothing at all for a width of 0). `s` should be safe already
/// (escaped); [`cell`] does both.
pub fn shorten(s: &str, width: usize) -> Cow<'_, str> {
    match s.char_indices().nth(width) {
        None => Cow::Borrowed(s),
        Some(_) if width == 0 => Cow::Borrowed(""),
        Some(_) => {
            let cut = s.char_indices().nth(width - 1).map_or(s.len(), |(i, _)| i);
            let mut out = String::with_capacity(cut + ELLIPSIS.len_utf8());
            out.push_str(&s[..cut]);
            out.push(ELLIPSIS);
            Cow::Owned(out)
        }
    }
}

/// A name for a table cell: [`escape`]d, then shortened to `width` characters as [`shorten`]
/// does, but cut between escapes, never inside one (`ab\x1b…`, not `ab\x…`).
pub fn cell(s: &str, width: usize) -> Cow<'_, str> {
    let total: usize = s.chars().map(escaped_len).sum();
    if total <= width {
        return escape(s);
    }
    if width == 0 {
        return Cow::Borrowed("");
    }
    let mut out = String::new();
    let mut used = 0;
    for c in s.chars() {
        let n = escaped_len(c);
        if used + n > width - 1 {
            break;
        }
        let _ = write_char(&mut out, c);
        used += n;
    }
    out.push(ELLIPSIS);
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Reads escaped text back (the tests' proof that the escapes are unambiguous): the
    /// original bytes.
    fn unescape(s: &str) -> Vec<u8> {
        let mut out = Vec::new();
        let mut it = s.chars().peekable();
        while let Some(c) = it.next() {
            if c != '\\' {
                let mut buf = [0u8; 4];
                out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                continue;
            }
            match it.next() {
                Some('\\') => out.push(b'\\'),
                Some('n') => out.push(b'\n'),
                Some('r') => out.push(b'\r'),
                Some('t') => out.push(b'\t'),
                Some('x') => {
                    let hex: String = it.by_ref().take(2).collect();
                    out.push(u8::from_str_radix(&hex, 16).expect("two hex digits"));
                }
                Some('u') => {
                    assert_eq!(it.next(), Some('{'));
                    let hex: String = it.by_ref().take_while(|&c| c != '}').collect();
                    let c = char::from_u32(u32::from_str_radix(&hex, 16).unwrap()).unwrap();
                    assert!(needs_escape(c), "{c:?} is escaped needlessly");
                    let mut buf = [0u8; 4];
                    out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                }
                other => panic!("not an escape: \\{other:?} in {s:?}"),
            }
        }
        out
    }

    #[test]
    fn the_escapes_are_the_documented_ones() {
        assert_eq!(
            escape("\nrocprof: error: forged line\n"),
            "\\nrocprof: error: forged line\\n"
        );
        assert_eq!(escape("\x1b]0;title\x07"), "\\x1b]0;title\\x07");
        assert_eq!(escape("a\tb\rc\0\x7f"), "a\\tb\\rc\\x00\\x7f");
        assert_eq!(escape("\u{202e}evil\u{2066}"), "\\u{202e}evil\\u{2066}");
        assert_eq!(escape("\u{9b}2J\u{85}"), "\\u{9b}2J\\u{85}");
        assert_eq!(
            escape("\u{61c}\u{200e}\u{200f}\u{2028}"),
            "\\u{61c}\\u{200e}\\u{200f}\\u{2028}"
        );
        assert_eq!(escape(r"C:\dir\n"), r"C:\\dir\\n");
        assert!(matches!(escape("vector_add<float>"), Cow::Borrowed(_)));
        assert_eq!(escape("ünïcode ✓ 名前"), "ünïcode ✓ 名前");
        assert_eq!(escape_bytes(b"a\xffb\xc3\n"), "a\\xffb\\xc3\\n");
        assert_eq!(escape_path(Path::new("/tmp/x\x1b[2J")), "/tmp/x\\x1b[2J");
        assert_eq!(escape_lines("one\x1b[2J\ntwo\r\n"), "one\\x1b[2J\ntwo\\r\n");
        assert_eq!(Escaped("a\nb").to_string(), "a\\nb");
    }

    #[test]
    fn names_are_cut_to_a_prefix_and_an_ellipsis() {
        assert_eq!(shorten("abcdef", 6), "abcdef");
        assert_eq!(shorten("abcdefg", 6), "abcde…");
        assert_eq!(shorten("名前名前名前名", 4), "名前名…");
        assert_eq!(shorten("abc", 0), "");
        assert_eq!(shorten("", 0), "");
        assert_eq!(shorten("ab", 1), "…");
        assert_eq!(cell("ab\x1bcdefgh", 7), "ab\\x1b…");
        assert_eq!(cell("ab\x1bcdefgh", 6), "ab…");
        assert_eq!(cell("ab\x1bc", 7), "ab\\x1bc");
        assert_eq!(cell("abc\u{202e}defghijk", 9), "abc…");
        let long = "x".repeat(65 * 1024);
        let c = cell(&long, NAME_WIDTH);
        assert_eq!(c.chars().count(), NAME_WIDTH);
        assert!(c.ends_with(ELLIPSIS) && c.starts_with("xxxx"));
    }

    fn unsafe_char() -> impl Strategy<Value = char> {
        prop_oneof![
            (0u32..0x20).prop_map(|c| char::from_u32(c).unwrap()),
            Just('\u{7f}'),
            (0x80u32..0xa0).prop_map(|c| char::from_u32(c).unwrap()),
            prop::sample::select(vec![
                '\u{61c}', '\u{200e}', '\u{200f}', '\u{202a}', '\u{202b}', '\u{202c}', '\u{202d}',
                '\u{202e}', '\u{2066}', '\u{2067}', '\u{2068}', '\u{2069}', '\u{2028}', '\u{2029}',
                '\\', '…',
            ]),
            any::<char>(),
        ]
    }

    /// Strings rich in what must be escaped, and any characters at all.
    fn hostile() -> impl Strategy<Value = String> {
        prop_oneof![
            prop::collection::vec(unsafe_char(), 0..64).prop_map(|v| v.into_iter().collect()),
            any::<String>(),
        ]
    }

    proptest! {
        #[test]
        fn no_control_or_bidi_character_comes_out_and_the_text_reads_back(s in hostile()) {
            let e = escape(&s);
            prop_assert!(e.chars().all(is_safe), "{e:?}");
            prop_assert_eq!(unescape(&e), s.as_bytes());
            prop_assert_eq!(Escaped(&s).to_string(), e.as_ref());
        }

        #[test]
        fn any_bytes_come_out_safe_and_read_back(b in prop::collection::vec(any::<u8>(), 0..96)) {
            let e = escape_bytes(&b);
            prop_assert!(e.chars().all(is_safe), "{e:?}");
            prop_assert_eq!(unescape(&e), b);
        }

        #[test]
        fn lines_keep_their_newlines_only(s in hostile()) {
            let e = escape_lines(&s);
            prop_assert!(e.chars().all(|c| c == '\n' || is_safe(c)), "{e:?}");
            prop_assert_eq!(e.matches('\n').count(), s.matches('\n').count());
            let back: Vec<u8> = e.split('\n').map(unescape).collect::<Vec<_>>().join(&b'\n');
            prop_assert_eq!(back, s.as_bytes());
        }

        #[test]
        fn shortening_never_exceeds_the_width_and_keeps_a_prefix(s in hostile(), width in 0usize..80) {
            let short = shorten(&s, width);
            let n = short.chars().count();
            prop_assert!(n <= width);
            if s.chars().count() <= width {
                prop_assert_eq!(short.as_ref(), s.as_str());
            } else if width > 0 {
                prop_assert_eq!(n, width);
                let kept = short.strip_suffix(ELLIPSIS).expect("an ellipsis");
                prop_assert!(s.starts_with(kept));
            }
        }

        #[test]
        fn a_cell_is_safe_within_its_width_and_a_prefix_of_the_escaped_text(s in hostile(), width in 0usize..80) {
            let full = escape(&s);
            let c = cell(&s, width);
            prop_assert!(c.chars().all(is_safe), "{c:?}");
            prop_assert!(c.chars().count() <= width);
            if full.chars().count() <= width {
                prop_assert_eq!(c.as_ref(), full.as_ref());
            } else if width > 0 {
                let kept = c.strip_suffix(ELLIPSIS).expect("an ellipsis");
                prop_assert!(full.starts_with(kept));
                // Cut between escapes: what is kept reads back to a prefix of the original.
                prop_assert!(s.as_bytes().starts_with(&unescape(kept)));
                // And nothing more would have fit.
                prop_assert!(kept.chars().count() + 8 >= width, "{c:?} for width {width}");
            }
        }
    }
}
