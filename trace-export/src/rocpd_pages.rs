//! A rocpd table's shape for reading it page by page with `sqlite_pages`: where each column
//! the read-back needs sits in the table's records, taken from SQLite's own view of the table
//! (`sqlite_master`, `pragma_table_xinfo`, `pragma_index_list`), and what a column reads as in
//! a record too short to hold it.
//!
//! A table is read page by page only when the walk gives exactly what SQLite's
//! `SELECT … ORDER BY id` gives: a rowid table whose `id` is its `INTEGER PRIMARY KEY` (the key
//! order is then the id order), no hidden or generated columns (the records hold the declared
//! columns in order), and defaults that are plain literals. Anything else reads through
//! SQLite, as before.

use rusqlite::Connection;
use sqlite_pages::{Row, Value};

/// Where one column's value comes from.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Column {
    /// The row's key: the table's `INTEGER PRIMARY KEY`.
    Key,
    /// The record's value at this position, or the column's default when the record is
    /// shorter (a column added by `ALTER TABLE`).
    At(usize, Default),
}

/// A column's default as a literal.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Default {
    Null,
    Integer(i64),
    Text(Box<str>),
}

impl Column {
    /// The column's value in `r`.
    pub(crate) fn get<'r>(&'r self, r: &Row<'r>) -> Value<'r> {
        match self {
            Column::Key => Value::Integer(r.key()),
            Column::At(i, d) if *i < r.len() => r.value(*i),
            Column::At(_, Default::Null) => Value::Null,
            Column::At(_, Default::Integer(v)) => Value::Integer(*v),
            Column::At(_, Default::Text(t)) => Value::Text(t.as_bytes()),
        }
    }

    /// The column's value in `r` as the read-back's `int` reads a column: an integer, or 0.
    pub(crate) fn int(&self, r: &Row<'_>) -> i64 {
        match self.get(r) {
            Value::Integer(i) => i,
            _ => 0,
        }
    }
}

/// A table's root page and the positions of the columns asked for.
pub(crate) struct Shape {
    pub(crate) root: u32,
    pub(crate) columns: Vec<Column>,
}

/// The shape of table `name` (unquoted) for the columns `wanted`, or `None` when the table
/// must be read through SQLite (see the module's text), including when it lacks a column.
pub(crate) fn shape(
    db: &Connection,
    name: &str,
    wanted: &[&str],
) -> rusqlite::Result<Option<Shape>> {
    let root: Option<i64> = db
        .query_row(
            "SELECT rootpage FROM sqlite_master WHERE type = 'table' AND name = ?1",
            [name],
            |r| r.get(0),
        )
        .ok();
    let Some(root) = root.and_then(|r| u32::try_from(r).ok()).filter(|&r| r > 0) else {
        return Ok(None);
    };
    let mut stmt = db.prepare(
        "SELECT name, type, dflt_value, pk, hidden FROM pragma_table_xinfo(?1) ORDER BY cid",
    )?;
    let declared = stmt
        .query_map([name], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, Option<String>>(1)?.unwrap_or_default(),
                r.get::<_, Option<String>>(2)?,
                r.get::<_, i64>(3)?,
                r.get::<_, i64>(4)?,
            ))
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    if declared.iter().any(|c| c.4 != 0) {
        return Ok(None); // hidden or generated columns: records are not the declared list
    }
    // The rowid alias: the one primary key column, declared `INTEGER` exactly, without the
    // automatic index SQLite gives a primary key that is no alias (`INTEGER PRIMARY KEY DESC`).
    let keys: Vec<&String> = declared.iter().filter(|c| c.3 > 0).map(|c| &c.0).collect();
    let pk_index: bool = db
        .query_row(
            "SELECT count(*) FROM pragma_index_list(?1) WHERE origin = 'pk'",
            [name],
            |r| r.get::<_, i64>(0),
        )
        .map(|n| n > 0)?;
    let alias = match (keys.as_slice(), pk_index) {
        ([k], false) => declared
            .iter()
            .find(|c| &c.0 == *k)
            .filter(|c| c.1.eq_ignore_ascii_case("INTEGER"))
            .map(|c| c.0.clone()),
        _ => None,
    };
    // Ids come in key order only when `id` is the key.
    if !alias
        .as_deref()
        .is_some_and(|a| a.eq_ignore_ascii_case("id"))
    {
        return Ok(None);
    }
    let mut columns = Vec::with_capacity(wanted.len());
    for w in wanted {
        let Some(at) = declared.iter().position(|c| c.0.eq_ignore_ascii_case(w)) else {
            return Ok(None);
        };
        let (name, kind, default, _, _) = &declared[at];
        if alias.as_deref() == Some(name.as_str()) {
            columns.push(Column::Key);
            continue;
        }
        let Some(default) = literal(default.as_deref(), kind) else {
            return Ok(None);
        };
        columns.push(Column::At(at, default));
    }
    Ok(Some(Shape { root, columns }))
}

/// A default's SQL text as the value SQLite gives a record too short to hold the column:
/// `NULL`, an integer, or a quoted text that no numeric affinity would turn into a number.
/// Anything else (expressions, reals, numeric-looking text in a numeric column) is `None`.
fn literal(sql: Option<&str>, declared_type: &str) -> Option<Default> {
    let Some(sql) = sql.map(str::trim) else {
        return Some(Default::Null);
    };
    if sql.eq_ignore_ascii_case("NULL") {
        return Some(Default::Null);
    }
    if let Ok(i) = sql.parse::<i64>() {
        return Some(Default::Integer(i));
    }
    let inner = sql.strip_prefix('\'')?.strip_suffix('\'')?;
    if inner.replace("''", "").contains('\'') {
        return None;
    }
    let text = inner.replace("''", "'");
    let upper = declared_type.to_ascii_uppercase();
    let textual = upper.contains("CHAR") || upper.contains("CLOB") || upper.contains("TEXT");
    if !textual && text.trim().parse::<f64>().is_ok() {
        return None;
    }
    Some(Default::Text(text.into()))
}

/// Whether a text value of the process's `guid` column is `guid` (`x.guid = ?1`: a column of
/// text affinity against a bound text).
pub(crate) fn is_text(v: Value<'_>, guid: &str) -> bool {
    matches!(v, Value::Text(t) if t == guid.as_bytes())
}

/// Whether a value of an integer column equals `n` as SQLite compares them (`x.pid = ?2`).
pub(crate) fn is_integer(v: Value<'_>, n: i64) -> bool {
    match v {
        Value::Integer(i) => i == n,
        Value::Real(r) => r == n as f64 && r as i64 == n,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_read_as_literals_or_refuse_the_page_walk() {
        assert_eq!(literal(None, "INTEGER"), Some(Default::Null));
        assert_eq!(literal(Some("NULL"), "TEXT"), Some(Default::Null));
        assert_eq!(literal(Some("-5"), "INTEGER"), Some(Default::Integer(-5)));
        assert_eq!(
            literal(Some("'{}'"), "JSONB"),
            Some(Default::Text("{}".into()))
        );
        assert_eq!(
            literal(Some("'it''s'"), "TEXT"),
            Some(Default::Text("it's".into()))
        );
        assert_eq!(
            literal(Some("'5'"), "TEXT"),
            Some(Default::Text("5".into()))
        );
        assert_eq!(literal(Some("'5'"), "INTEGER"), None);
        assert_eq!(literal(Some("CURRENT_TIMESTAMP"), "TEXT"), None);
        assert_eq!(literal(Some("1.5"), "REAL"), None);
        assert_eq!(literal(Some("'a'||'b'"), "TEXT"), None);
    }

    #[test]
    fn only_a_table_keyed_by_its_id_is_walked() {
        let db = Connection::open_in_memory().unwrap();
        db.execute_batch(
            "CREATE TABLE good (id INTEGER PRIMARY KEY, guid TEXT, extdata JSONB DEFAULT '{}');
             CREATE TABLE desc_key (id INTEGER PRIMARY KEY DESC, guid TEXT);
             CREATE TABLE no_alias (id INT PRIMARY KEY, guid TEXT);
             CREATE TABLE other_key (k INTEGER PRIMARY KEY, id INTEGER);
             CREATE TABLE computed (id INTEGER PRIMARY KEY, a, b AS (a + 1));",
        )
        .unwrap();
        let s = shape(&db, "good", &["guid", "id", "extdata"])
            .unwrap()
            .unwrap();
        assert_eq!(
            s.columns,
            vec![
                Column::At(1, Default::Null),
                Column::Key,
                Column::At(2, Default::Text("{}".into()))
            ]
        );
        assert!(shape(&db, "good", &["missing"]).unwrap().is_none());
        for table in ["desc_key", "no_alias", "other_key", "computed", "absent"] {
            assert!(shape(&db, table, &["id"]).unwrap().is_none(), "{table}");
        }
    }
}
