//! Reading rocprofiler-sdk's `api_args.h` headers (`hip/`, `hsa/`, `marker/`): the union
//! `rocprofiler_<domain>_api_args_t` holds one `struct { <type> <name>; … } <function>;` per
//! traced function, the arguments in call order under the names upstream's argument iteration
//! reports. `cargo xtask api-signatures` turns them into `abi/api-signatures.tsv`; a test checks
//! that file against the headers.
//!
//! The preprocessor is followed only as far as these headers need: `#ifdef __cplusplus` blocks
//! (constructors) are skipped, `#if … < N` blocks (older table steps) are skipped and their
//! `#else` kept, every other `#if` is taken (the newest step).

use crate::Error;

/// One traced function as a header declares its arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Function {
    /// The function's name (the union member's).
    pub name: String,
    /// Its arguments in order: (C type in canonical spelling, name).
    pub args: Vec<(String, String)>,
}

/// Parses one `api_args.h`: every member of its `…_api_args_t` union, in the header's order.
pub fn parse(text: &str) -> Result<Vec<Function>, Error> {
    let text = preprocess(&strip_comments(&text.replace("\\\n", " ")));
    let start = text
        .find("_api_args_t")
        .and_then(|i| text[..i].rfind("typedef union").map(|_| i))
        .ok_or_else(|| Error::Header("no `typedef union …_api_args_t`".into()))?;
    let body_open = text[start..]
        .find('{')
        .map(|i| start + i)
        .ok_or_else(|| Error::Header("the args union has no body".into()))?;
    let body_close = matching(&text, body_open)?;
    let body = &text[body_open + 1..body_close];
    let mut out = Vec::new();
    let mut rest = body;
    while let Some(s) = find_word(rest, "struct") {
        let open = rest[s..]
            .find('{')
            .map(|i| s + i)
            .ok_or_else(|| Error::Header("a member struct has no body".into()))?;
        let close = matching(rest, open)?;
        let semi = rest[close..]
            .find(';')
            .map(|i| close + i)
            .ok_or_else(|| Error::Header("a member is not closed by `;`".into()))?;
        let name = rest[close + 1..semi].trim().to_owned();
        if !is_identifier(&name) {
            return Err(Error::Header(format!("member name {name:?}")));
        }
        let args = declarations(&rest[open + 1..close])?;
        out.push(Function { name, args });
        rest = &rest[semi + 1..];
    }
    if out.is_empty() {
        return Err(Error::Header("the args union has no members".into()));
    }
    Ok(out)
}

/// The arguments declared in one member struct's body (`no_args` members are no argument).
fn declarations(body: &str) -> Result<Vec<(String, String)>, Error> {
    let mut out = Vec::new();
    for decl in split_top(body, ';') {
        let decl = decl.trim();
        if decl.is_empty() {
            continue;
        }
        let (c_type, name) = declaration(decl)?;
        if name == "no_args" {
            continue;
        }
        out.push((c_type, name));
    }
    Ok(out)
}

/// One declaration: `<type> <name>` or `<ret> (*<name>)(<params>)`.
fn declaration(decl: &str) -> Result<(String, String), Error> {
    if let Some(star) = decl.find("(*") {
        let close = decl[star..]
            .find(')')
            .map(|i| star + i)
            .ok_or_else(|| Error::Header(format!("function pointer {decl:?}")))?;
        let name = decl[star + 2..close].trim().to_owned();
        let ret = canonical(&decl[..star]);
        let params_open = decl[close + 1..]
            .find('(')
            .map(|i| close + 1 + i)
            .ok_or_else(|| Error::Header(format!("function pointer {decl:?}")))?;
        let params_close = matching(decl, params_open)?;
        let params: Vec<String> = split_top(&decl[params_open + 1..params_close], ',')
            .into_iter()
            .map(|p| canonical(&drop_parameter_name(p)))
            .filter(|p| !p.is_empty())
            .collect();
        return Ok((format!("{ret} (*)({})", params.join(", ")), name));
    }
    let decl = decl.trim();
    let split = decl
        .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .ok_or_else(|| Error::Header(format!("declaration {decl:?} has no type")))?;
    let name = decl[split + 1..].to_owned();
    if !is_identifier(&name) {
        return Err(Error::Header(format!("declaration {decl:?}")));
    }
    Ok((canonical(&decl[..=split]), name))
}

/// A function-pointer parameter without its name (`void* data` → `void*`).
fn drop_parameter_name(p: &str) -> String {
    let p = p.trim();
    let Some(split) = p.rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) else {
        return p.to_owned();
    };
    let last = &p[split + 1..];
    let keyword = matches!(
        last,
        "int" | "char" | "long" | "short" | "signed" | "unsigned" | "float" | "double" | "void"
    );
    if keyword || last.is_empty() {
        p.to_owned()
    } else {
        p[..=split].to_owned()
    }
}

/// A type in canonical spelling: words separated by one space, `*` attached to what precedes
/// it, `struct`/`enum`/`union` keywords dropped (`const struct hsa_agent_s *` →
/// `const hsa_agent_s*`).
pub fn canonical(t: &str) -> String {
    let spaced = t.replace('*', " * ");
    let mut out = String::new();
    for word in spaced.split_whitespace() {
        if matches!(word, "struct" | "enum" | "union") {
            continue;
        }
        if word == "*" {
            out.push('*');
        } else {
            if !out.is_empty() {
                out.push(' ');
            }
            out.push_str(word);
        }
    }
    out
}

fn is_identifier(s: &str) -> bool {
    !s.is_empty()
        && !s.starts_with(|c: char| c.is_ascii_digit())
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// `word` as a whole word in `s`.
fn find_word(s: &str, word: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(i) = s[from..].find(word).map(|i| from + i) {
        let before = s[..i].chars().next_back();
        let after = s[i + word.len()..].chars().next();
        let ident = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
        if !ident(before) && !ident(after) {
            return Some(i);
        }
        from = i + word.len();
    }
    None
}

/// The index of the bracket closing the one at `open` (`{`/`}` or `(`/`)`).
fn matching(s: &str, open: usize) -> Result<usize, Error> {
    let (o, c) = match s.as_bytes()[open] {
        b'{' => (b'{', b'}'),
        b'(' => (b'(', b')'),
        _ => return Err(Error::Header("not a bracket".into())),
    };
    let mut depth = 0usize;
    for (i, b) in s.bytes().enumerate().skip(open) {
        if b == o {
            depth += 1;
        } else if b == c {
            depth -= 1;
            if depth == 0 {
                return Ok(i);
            }
        }
    }
    Err(Error::Header("unbalanced brackets".into()))
}

/// Splits at `sep` outside parentheses and braces.
fn split_top(s: &str, sep: char) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut from) = (0i32, 0);
    for (i, c) in s.char_indices() {
        match c {
            '(' | '{' => depth += 1,
            ')' | '}' => depth -= 1,
            c if c == sep && depth == 0 => {
                out.push(&s[from..i]);
                from = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[from..]);
    out
}

fn strip_comments(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    loop {
        let line = rest.find("//");
        let block = rest.find("/*");
        match (line, block) {
            (Some(l), b) if b.is_none_or(|b| l < b) => {
                out.push_str(&rest[..l]);
                rest = rest[l..].find('\n').map_or("", |e| &rest[l + e..]);
            }
            (_, Some(b)) => {
                out.push_str(&rest[..b]);
                rest = rest[b + 2..]
                    .find("*/")
                    .map_or("", |e| &rest[b + 2 + e + 2..]);
                out.push(' ');
            }
            _ => {
                out.push_str(rest);
                return out;
            }
        }
    }
}

/// Drops preprocessor lines and the blocks they exclude (see the module docs).
fn preprocess(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    // (this block taken, some enclosing block excluded)
    let mut stack: Vec<(bool, bool)> = Vec::new();
    let active = |stack: &[(bool, bool)]| stack.iter().all(|&(taken, _)| taken);
    for line in s.lines() {
        let t = line.trim_start();
        if let Some(d) = t.strip_prefix('#') {
            let d = d.trim_start();
            let outer = active(&stack);
            if let Some(cond) = d.strip_prefix("ifdef") {
                stack.push((cond.trim() != "__cplusplus", !outer));
            } else if d.starts_with("ifndef") {
                stack.push((true, !outer));
            } else if let Some(cond) = d.strip_prefix("if") {
                stack.push((!cond.contains('<'), !outer));
            } else if d.starts_with("elif") {
                if let Some(top) = stack.last_mut() {
                    top.0 = false;
                }
            } else if d.starts_with("else") {
                if let Some(top) = stack.last_mut() {
                    top.0 = !top.0;
                }
            } else if d.starts_with("endif") {
                stack.pop();
            }
            continue;
        }
        if active(&stack) {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// The upstream headers the table comes from, as paths in ROCm/rocm-systems, with their group.
pub const SOURCES: [(&str, &str); 3] = [
    (
        "hip",
        "projects/rocprofiler-sdk/source/include/rocprofiler-sdk/hip/api_args.h",
    ),
    (
        "hsa",
        "projects/rocprofiler-sdk/source/include/rocprofiler-sdk/hsa/api_args.h",
    ),
    (
        "roctx",
        "projects/rocprofiler-sdk/source/include/rocprofiler-sdk/marker/api_args.h",
    ),
];

/// `abi/api-signatures.tsv` from the three headers' texts (in [`SOURCES`] order): one line per
/// argument, `group<TAB>function<TAB>position<TAB>type<TAB>name`, and `-` as the position of a
/// function without arguments; functions sorted by name within their group.
pub fn tsv(texts: [&str; 3]) -> Result<String, Error> {
    let mut out = String::from(
        "# Generated by `cargo xtask api-signatures` from rocprofiler-sdk's hip/, hsa/ and \
         marker/api_args.h\n# group\tfunction\tposition\ttype\tname\n",
    );
    for ((group, _), text) in SOURCES.iter().zip(texts) {
        let mut functions = parse(text)?;
        functions.sort_by(|a, b| a.name.cmp(&b.name));
        functions.dedup_by(|a, b| a.name == b.name);
        for f in functions {
            if f.args.is_empty() {
                out.push_str(&format!("{group}\t{}\t-\t\t\n", f.name));
            }
            for (k, (c_type, name)) in f.args.iter().enumerate() {
                out.push_str(&format!("{group}\t{}\t{k}\t{c_type}\t{name}\n", f.name));
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = r#"
typedef union rocprofiler_hip_api_retval_t { int int_retval; } rocprofiler_hip_api_retval_t;
typedef union rocprofiler_hip_api_args_t
{
#ifdef __cplusplus
    rocprofiler_hip_api_args_t()  = default;
#endif
    struct
    {
        rocprofiler_hip_api_no_args no_args;
    } hipDeviceSynchronize;
    struct
    {
        void*         dst;  // destination
        const void*   src;
        size_t        sizeBytes;
        hipMemcpyKind kind;
    } hipMemcpy;
    struct
    {
#if STEP < 13
        const OLD* params;
#else
        const struct hipNew *params;
#endif
        hsa_status_t (*callback)(hsa_agent_t agent, void* data, unsigned int);
    } hipThing;
} rocprofiler_hip_api_args_t;
"#;

    #[test]
    fn members_types_names_and_conditionals() {
        let f = parse(SAMPLE).unwrap();
        assert_eq!(f.len(), 3);
        assert_eq!(f[0].name, "hipDeviceSynchronize");
        assert!(f[0].args.is_empty());
        assert_eq!(
            f[1].args,
            [
                ("void*".into(), "dst".into()),
                ("const void*".into(), "src".into()),
                ("size_t".into(), "sizeBytes".into()),
                ("hipMemcpyKind".into(), "kind".into()),
            ]
        );
        assert_eq!(
            f[2].args,
            [
                ("const hipNew*".into(), "params".into()),
                (
                    "hsa_status_t (*)(hsa_agent_t, void*, unsigned int)".into(),
                    "callback".into()
                ),
            ]
        );
    }

    #[test]
    fn refuses_what_is_not_an_args_header() {
        assert!(parse("int x;").is_err());
        assert!(parse("typedef union rocprofiler_x_api_args_t { struct { int a; } f; ").is_err());
        assert!(parse("typedef union rocprofiler_x_api_args_t { };").is_err());
    }
}
