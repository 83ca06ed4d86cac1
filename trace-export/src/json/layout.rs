//! The file's layout, serde_json's pretty printer with an indent of width 0 (every member on a
//! line of its own, no indentation), written by hand for the containers around the API calls
//! and for the calls themselves, which are most of a file's bytes.
//!
//! With no indentation a value's text does not depend on how deeply it is nested, so a value
//! serialized on its own ([`value`]) fits anywhere, and the hand-written containers and
//! records give the bytes serde_json gives (a unit test of `json` compares them): an empty
//! container is `[]` or `{}`; a full one opens, puts each member after `\n` (the first) or
//! `,\n` (the others), and closes after `\n`; a member of an object is `"key": value`.

use serde::Serialize;
use std::io::Write;

/// serde_json's error for a failed write (so one error type carries both kinds).
pub(super) fn io(e: std::io::Error) -> serde_json::Error {
    serde_json::Error::io(e)
}

/// Writes `v` as the file lays values out.
pub(super) fn value<W: Write, T: Serialize + ?Sized>(out: W, v: &T) -> serde_json::Result<()> {
    let formatter = serde_json::ser::PrettyFormatter::with_indent(b"");
    let mut serializer = serde_json::Serializer::with_formatter(out, formatter);
    v.serialize(&mut serializer)
}

/// An array or object being written.
pub(super) struct Open {
    empty: bool,
    close: &'static [u8],
}

impl Open {
    /// Opens an array.
    pub(super) fn array(out: &mut impl Write) -> serde_json::Result<Self> {
        out.write_all(b"[").map_err(io)?;
        Ok(Self {
            empty: true,
            close: b"]",
        })
    }

    /// Opens an object.
    pub(super) fn object(out: &mut impl Write) -> serde_json::Result<Self> {
        out.write_all(b"{").map_err(io)?;
        Ok(Self {
            empty: true,
            close: b"}",
        })
    }

    /// Starts the next member of an array.
    pub(super) fn item(&mut self, out: &mut impl Write) -> serde_json::Result<()> {
        let sep: &[u8] = if self.empty { b"\n" } else { b",\n" };
        self.empty = false;
        out.write_all(sep).map_err(io)
    }

    /// Starts the member `key` of an object (a plain name: nothing in it needs escaping); its
    /// value follows.
    pub(super) fn key(&mut self, out: &mut impl Write, key: &str) -> serde_json::Result<()> {
        debug_assert!(
            key.bytes()
                .all(|b| b.is_ascii_graphic() && b != b'"' && b != b'\\')
        );
        self.item(out)?;
        out.write_all(b"\"").map_err(io)?;
        out.write_all(key.as_bytes()).map_err(io)?;
        out.write_all(b"\": ").map_err(io)
    }

    /// Writes the member `key` with the value `v`.
    pub(super) fn entry<T: Serialize + ?Sized>(
        &mut self,
        out: &mut impl Write,
        key: &str,
        v: &T,
    ) -> serde_json::Result<()> {
        self.key(out, key)?;
        value(out, v)
    }

    /// Closes the container.
    pub(super) fn close(self, out: &mut impl Write) -> serde_json::Result<()> {
        if !self.empty {
            out.write_all(b"\n").map_err(io)?;
        }
        out.write_all(self.close).map_err(io)
    }
}

/// Appends a number's decimal digits.
#[inline]
pub(super) fn number(buf: &mut Vec<u8>, v: impl itoa::Integer) {
    buf.extend_from_slice(itoa::Buffer::new().format(v).as_bytes());
}
