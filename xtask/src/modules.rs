//! `cargo xtask tidy`'s source rules, checked on each product crate's module tree as `syn`
//! parses it (code under `#[cfg(test)]` is left out):
//!
//! - **No module cycles.** No two modules of one crate depend on each other through `crate::`,
//!   `super::` or `self::` paths, directly or through other modules. A path names the deepest
//!   module it reaches (`crate::a::b::Item` depends on `a::b`), so a child that uses an item of
//!   its parent (`super::Item`) depends on the parent; declaring a child (`mod b;`) is not a
//!   dependency. Each cycle is reported with its modules and their files.
//! - **Library crates print nothing**: no `print!`, `println!`, `eprint!`, `eprintln!`, and no
//!   `std::io::stdout()`/`stderr()`, outside tests, examples, build scripts and binaries. A
//!   library reports values; only a binary decides what reaches the terminal. A crate whose
//!   [`crate::tidy::Rule`] says `prints` is exempt (the tool library the application loads,
//!   whose one warning line goes to the application's stderr).

use anyhow::{Context as _, Result};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};
use syn::visit::Visit;

/// One module of a crate's tree.
#[derive(Debug, Clone)]
struct Module {
    /// `a::b` (empty for the crate root).
    path: Vec<String>,
    /// The file it is in.
    file: PathBuf,
    /// The modules its paths name (resolved later), as written: absolute segments.
    uses: BTreeSet<Vec<String>>,
}

/// A problem in a crate's sources.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Finding {
    /// Modules that depend on each other.
    Cycle {
        /// The crate.
        krate: String,
        /// The modules of the cycle (`crate` for the root) with their files.
        modules: Vec<(String, PathBuf)>,
    },
    /// Printing in a library crate.
    Prints {
        /// The crate.
        krate: String,
        /// The file.
        file: PathBuf,
        /// 1-based line.
        line: usize,
        /// What prints.
        what: String,
    },
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Cycle { krate, modules } => {
                let names: Vec<&str> = modules.iter().map(|(m, _)| m.as_str()).collect();
                write!(
                    f,
                    "`{krate}`: modules depend on each other in a cycle ({}); make the dependency one-way (move what both need into a module of its own)",
                    names.join(" <-> ")
                )?;
                for (m, file) in modules {
                    write!(f, "\n    {m}: {}", file.display())?;
                }
                Ok(())
            }
            Self::Prints {
                krate,
                file,
                line,
                what,
            } => write!(
                f,
                "`{krate}` is a library and prints: {what} at {}:{line}; return the text or a typed notice and let the binary print it",
                file.display()
            ),
        }
    }
}

/// Whether `attrs` hold `#[cfg(test)]` (alone; `cfg(any(test, …))` is not left out).
fn is_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg")
            && a.parse_args::<syn::Path>()
                .is_ok_and(|p| p.is_ident("test"))
    })
}

/// The file of the out-of-line module `name` declared in `file` (`mod_rs`: whether `file` owns
/// its directory, as `lib.rs`, `main.rs` and `mod.rs` do; a `#[path]` attribute wins).
fn child_file(file: &Path, mod_rs: bool, name: &str, attrs: &[syn::Attribute]) -> PathBuf {
    let dir = if mod_rs {
        file.parent().map(Path::to_owned).unwrap_or_default()
    } else {
        file.with_extension("")
    };
    for a in attrs {
        if a.path().is_ident("path")
            && let syn::Meta::NameValue(nv) = &a.meta
            && let syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(s),
                ..
            }) = &nv.value
        {
            return file.parent().unwrap_or(Path::new("")).join(s.value());
        }
    }
    let flat = dir.join(format!("{name}.rs"));
    if flat.exists() {
        flat
    } else {
        dir.join(name).join("mod.rs")
    }
}

/// Collects the paths of one module's items (not of its child modules).
struct Paths<'a> {
    /// The module's own path.
    at: &'a [String],
    /// Absolute module paths named.
    uses: BTreeSet<Vec<String>>,
    /// Printing found: (line, what).
    prints: Vec<(usize, String)>,
}

impl Paths<'_> {
    /// `segments` made absolute, if they start with `crate`, `super` or `self`.
    fn absolute(&self, segments: &[String]) -> Option<Vec<String>> {
        let first = segments.first()?;
        let mut base: Vec<String> = match first.as_str() {
            "crate" => Vec::new(),
            "self" | "super" => self.at.to_vec(),
            _ => return None,
        };
        let mut rest = segments;
        if first == "crate" || first == "self" {
            rest = &rest[1..];
        }
        while rest.first().is_some_and(|s| s == "super") {
            base.pop();
            rest = &rest[1..];
        }
        base.extend(rest.iter().cloned());
        Some(base)
    }

    fn add(&mut self, segments: &[String]) {
        if let Some(p) = self.absolute(segments) {
            self.uses.insert(p);
        }
    }

    fn tree(&mut self, prefix: &mut Vec<String>, tree: &syn::UseTree) {
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.tree(prefix, &p.tree);
                prefix.pop();
            }
            syn::UseTree::Name(n) => {
                let mut full = prefix.clone();
                if n.ident != "self" {
                    full.push(n.ident.to_string());
                }
                self.add(&full);
                self.io_stream(&full, n.ident.span());
            }
            syn::UseTree::Rename(r) => {
                let mut full = prefix.clone();
                full.push(r.ident.to_string());
                self.add(&full);
                self.io_stream(&full, r.ident.span());
            }
            syn::UseTree::Glob(_) => self.add(prefix),
            syn::UseTree::Group(g) => {
                for t in &g.items {
                    self.tree(prefix, t);
                }
            }
        }
    }

    /// `std::io::stdout`/`stderr` (or `io::…`) named.
    fn io_stream(&mut self, segments: &[String], span: proc_macro2::Span) {
        let n = segments.len();
        if n >= 2
            && segments[n - 2] == "io"
            && (segments[n - 1] == "stdout" || segments[n - 1] == "stderr")
        {
            self.prints
                .push((span.start().line, format!("io::{}", segments[n - 1])));
        }
    }
}

fn segments(p: &syn::Path) -> Vec<String> {
    p.segments.iter().map(|s| s.ident.to_string()).collect()
}

impl<'ast> Visit<'ast> for Paths<'_> {
    fn visit_item(&mut self, i: &'ast syn::Item) {
        // Child modules are modules of their own; test code is left out.
        let attrs = match i {
            syn::Item::Mod(_) => return,
            syn::Item::Fn(f) => &f.attrs,
            syn::Item::Impl(x) => &x.attrs,
            syn::Item::Use(x) => &x.attrs,
            syn::Item::Const(x) => &x.attrs,
            syn::Item::Static(x) => &x.attrs,
            syn::Item::Struct(x) => &x.attrs,
            syn::Item::Enum(x) => &x.attrs,
            syn::Item::Trait(x) => &x.attrs,
            syn::Item::Macro(x) => &x.attrs,
            syn::Item::Type(x) => &x.attrs,
            _ => return syn::visit::visit_item(self, i),
        };
        if is_test(attrs) {
            return;
        }
        syn::visit::visit_item(self, i);
    }

    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        if !is_test(&f.attrs) {
            syn::visit::visit_impl_item_fn(self, f);
        }
    }

    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        self.tree(&mut Vec::new(), &u.tree);
    }

    fn visit_path(&mut self, p: &'ast syn::Path) {
        let s = segments(p);
        self.add(&s);
        if let Some(last) = p.segments.last() {
            self.io_stream(&s, last.ident.span());
        }
        syn::visit::visit_path(self, p);
    }

    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        if let Some(name) = m.path.segments.last().map(|s| s.ident.to_string())
            && matches!(name.as_str(), "print" | "println" | "eprint" | "eprintln")
        {
            let line = m.path.segments[0].ident.span().start().line;
            self.prints.push((line, format!("{name}!")));
        }
        syn::visit::visit_macro(self, m);
    }
}

/// The module tree of the target rooted at `root` (`lib.rs`, `main.rs`, …), with what each
/// module names, and printing found (line, file, what).
fn tree(root: &Path) -> Result<(Vec<Module>, Prints)> {
    let mut modules = Vec::new();
    let mut prints = Vec::new();
    let mut stack: Pending = vec![(Vec::new(), root.to_owned(), true)];
    while let Some((path, file, mod_rs)) = stack.pop() {
        let text = std::fs::read_to_string(&file)
            .with_context(|| format!("cannot read {}", file.display()))?;
        let parsed =
            syn::parse_file(&text).with_context(|| format!("cannot parse {}", file.display()))?;
        walk(
            &path,
            &file,
            mod_rs,
            &parsed.items,
            &mut modules,
            &mut prints,
            &mut stack,
        );
    }
    Ok((modules, prints))
}

type Pending = Vec<(Vec<String>, PathBuf, bool)>;
/// Printing found: (file, line, what).
type Prints = Vec<(PathBuf, usize, String)>;

/// One module's items: its paths, its inline children (walked here) and its out-of-line
/// children (pushed on `stack`).
fn walk(
    path: &[String],
    file: &Path,
    mod_rs: bool,
    items: &[syn::Item],
    modules: &mut Vec<Module>,
    prints: &mut Prints,
    stack: &mut Pending,
) {
    let mut v = Paths {
        at: path,
        uses: BTreeSet::new(),
        prints: Vec::new(),
    };
    for item in items {
        v.visit_item(item);
        if let syn::Item::Mod(m) = item {
            if is_test(&m.attrs) {
                continue;
            }
            let mut child = path.to_vec();
            child.push(m.ident.to_string());
            match &m.content {
                Some((_, inner)) => walk(&child, file, false, inner, modules, prints, stack),
                None => {
                    let f = child_file(file, mod_rs, &m.ident.to_string(), &m.attrs);
                    let owns = f.file_name().is_some_and(|n| n == "mod.rs");
                    stack.push((child, f, owns));
                }
            }
        }
    }
    prints.extend(v.prints.into_iter().map(|(l, w)| (file.to_owned(), l, w)));
    modules.push(Module {
        path: path.to_vec(),
        file: file.to_owned(),
        uses: v.uses,
    });
}

fn display(path: &[String]) -> String {
    if path.is_empty() {
        "crate".into()
    } else {
        path.join("::")
    }
}

/// The cycles among `modules` (each as its modules, in a stable order).
fn cycles(modules: &[Module]) -> Vec<Vec<usize>> {
    let index: BTreeMap<&[String], usize> = modules
        .iter()
        .enumerate()
        .map(|(i, m)| (m.path.as_slice(), i))
        .collect();
    let edges: Vec<BTreeSet<usize>> = modules
        .iter()
        .enumerate()
        .map(|(i, m)| {
            m.uses
                .iter()
                .filter_map(|u| {
                    (0..=u.len())
                        .rev()
                        .find_map(|k| index.get(&u[..k]).copied())
                })
                .filter(|&j| j != i)
                .collect()
        })
        .collect();
    // Tarjan's strongly connected components, iteratively.
    let n = modules.len();
    let mut order = vec![usize::MAX; n];
    let mut low = vec![0; n];
    let mut on = vec![false; n];
    let mut stack = Vec::new();
    let mut next = 0;
    let mut out = Vec::new();
    for start in 0..n {
        if order[start] != usize::MAX {
            continue;
        }
        let mut work: Vec<(usize, Vec<usize>)> = Vec::new();
        order[start] = next;
        low[start] = next;
        next += 1;
        stack.push(start);
        on[start] = true;
        work.push((start, edges[start].iter().copied().collect()));
        while let Some((v, pending)) = work.last_mut() {
            let v = *v;
            if let Some(w) = pending.pop() {
                if order[w] == usize::MAX {
                    order[w] = next;
                    low[w] = next;
                    next += 1;
                    stack.push(w);
                    on[w] = true;
                    work.push((w, edges[w].iter().copied().collect()));
                } else if on[w] {
                    low[v] = low[v].min(order[w]);
                }
                continue;
            }
            work.pop();
            if let Some((parent, _)) = work.last() {
                low[*parent] = low[*parent].min(low[v]);
            }
            if low[v] == order[v] {
                let mut comp = Vec::new();
                while let Some(w) = stack.pop() {
                    on[w] = false;
                    comp.push(w);
                    if w == v {
                        break;
                    }
                }
                if comp.len() > 1 {
                    comp.sort_by_key(|&i| display(&modules[i].path));
                    out.push(comp);
                }
            }
        }
    }
    out.sort();
    out
}

/// The rules on one target of crate `krate` rooted at `root`; `library`: printing is refused.
pub fn check_target(krate: &str, root: &Path, library: bool) -> Result<Vec<Finding>> {
    let (modules, prints) = tree(root)?;
    let mut out: Vec<Finding> = cycles(&modules)
        .into_iter()
        .map(|c| Finding::Cycle {
            krate: krate.to_owned(),
            modules: c
                .into_iter()
                .map(|i| (display(&modules[i].path), modules[i].file.clone()))
                .collect(),
        })
        .collect();
    if library {
        out.extend(
            prints
                .into_iter()
                .map(|(file, line, what)| Finding::Prints {
                    krate: krate.to_owned(),
                    file,
                    line,
                    what,
                }),
        );
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scratch crate: `files` (relative path, text) under a fresh directory.
    fn scratch(name: &str, files: &[(&str, &str)]) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("xtask-modules-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for (p, text) in files {
            let path = dir.join(p);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        dir
    }

    #[test]
    fn a_planted_cycle_is_found_with_its_files() {
        let dir = scratch(
            "cycle",
            &[
                ("src/lib.rs", "mod a;\nmod b;\nmod c;\n"),
                ("src/a.rs", "use crate::b::B;\npub struct A(B);\n"),
                ("src/b.rs", "pub struct B;\nfn f() { crate::c::g(); }\n"),
                (
                    "src/c.rs",
                    "pub fn g() { let _ = super::a::A(crate::b::B); }\n",
                ),
            ],
        );
        let f = check_target("planted", &dir.join("src/lib.rs"), true).unwrap();
        assert_eq!(f.len(), 1, "{f:#?}");
        let Finding::Cycle { modules, .. } = &f[0] else {
            panic!("{f:?}")
        };
        let names: Vec<&str> = modules.iter().map(|(m, _)| m.as_str()).collect();
        assert_eq!(names, ["a", "b", "c"]);
        assert!(modules[0].1.ends_with("src/a.rs"));
        assert!(f[0].to_string().contains("a <-> b <-> c"), "{}", f[0]);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn one_way_dependencies_and_test_code_pass() {
        let dir = scratch(
            "clean",
            &[
                (
                    "src/lib.rs",
                    "pub mod a;\nmod b;\npub use a::A;\n#[cfg(test)]\nmod tests { use crate::b::*; }\n",
                ),
                ("src/a.rs", "use crate::b::B;\npub struct A(B);\n"),
                (
                    "src/b/mod.rs",
                    "mod inner;\npub struct B;\n#[cfg(test)]\nfn t() { crate::a::A(B); }\n",
                ),
                ("src/b/inner.rs", "fn f() { let _ = super::B; }\n"),
            ],
        );
        assert_eq!(
            check_target("clean", &dir.join("src/lib.rs"), true).unwrap(),
            []
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_child_using_its_parent_while_the_parent_uses_it_is_a_cycle() {
        let dir = scratch(
            "parent",
            &[
                ("src/lib.rs", "mod p;\n"),
                (
                    "src/p.rs",
                    "mod q;\npub struct P;\nfn f() { self::q::g(); }\n",
                ),
                ("src/p/q.rs", "pub fn g() { let _ = super::P; }\n"),
            ],
        );
        let f = check_target("parent", &dir.join("src/lib.rs"), false).unwrap();
        assert_eq!(f.len(), 1, "{f:#?}");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_library_that_prints_is_named_with_the_place() {
        let dir = scratch(
            "prints",
            &[(
                "src/lib.rs",
                "use std::io::Write as _;\nfn a() { eprintln!(\"x\"); }\nfn b() { let _ = std::io::stderr().flush(); }\n#[cfg(test)]\nmod tests { fn t() { println!(\"fine\"); } }\n",
            )],
        );
        let f = check_target("prints", &dir.join("src/lib.rs"), true).unwrap();
        let what: Vec<String> = f
            .iter()
            .map(|f| match f {
                Finding::Prints { line, what, .. } => format!("{line}:{what}"),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(what, ["2:eprintln!", "3:io::stderr"]);
        // A binary may print.
        assert_eq!(
            check_target("prints", &dir.join("src/lib.rs"), false).unwrap(),
            []
        );
        std::fs::remove_dir_all(dir).unwrap();
    }
}
