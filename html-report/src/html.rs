//! The page around the charts: escaping, the document frame, tables.

use std::fmt::Write as _;

/// `s` safe inside HTML text and attribute values: control and bidi characters shown escaped
/// (`terminal_text`), then `& < > " '` as entities.
pub fn text(s: &str) -> String {
    let shown = terminal_text::escape(s);
    let mut out = String::with_capacity(shown.len());
    for c in shown.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// The whole document: `title`, then `body` (already HTML).
pub fn page(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{}</title>\n<style>\n{STYLE}</style>\n</head>\n<body>\n<h1>{}</h1>\n{body}\
         </body>\n</html>\n",
        text(title),
        text(title)
    )
}

const STYLE: &str = "body{font-family:sans-serif;margin:1.5em;color:#222}\
table{border-collapse:collapse;margin:0.5em 0 1.5em}\
td,th{border:1px solid #ccc;padding:2px 6px;font-size:13px;text-align:right}\
td.name,th.name{text-align:left;font-family:monospace}\
tr.flagged td{background:#fde2e2}\
figure{margin:1em 0}figcaption{font-weight:bold;margin-bottom:4px}\n";

/// A figure holding an SVG chart.
pub fn figure(id: &str, caption: &str, svg: &str) -> String {
    format!(
        "<figure id=\"{}\">\n<figcaption>{}</figcaption>\n{svg}\n</figure>\n",
        text(id),
        text(caption)
    )
}

/// A table: `head` cells, then rows of (cells, whether flagged); a cell starting with `\u{1}`
/// is a name (left-aligned, monospace).
pub fn table(head: &[&str], rows: &[(Vec<String>, bool)]) -> String {
    let mut out = String::from("<table>\n<tr>");
    for h in head {
        let _ = write!(out, "<th>{}</th>", text(h));
    }
    out.push_str("</tr>\n");
    for (cells, flagged) in rows {
        out.push_str(if *flagged {
            "<tr class=\"flagged\">"
        } else {
            "<tr>"
        });
        for c in cells {
            match c.strip_prefix('\u{1}') {
                Some(name) => {
                    let _ = write!(out, "<td class=\"name\">{}</td>", text(name));
                }
                None => {
                    let _ = write!(out, "<td>{}</td>", text(c));
                }
            }
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</table>\n");
    out
}

/// A name cell for [`table`].
pub fn name(s: &str) -> String {
    format!("\u{1}{s}")
}
