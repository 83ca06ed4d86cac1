//! `cargo xtask tidy`: the dependency direction of the workspace, checked on the graph cargo
//! resolved (`cargo metadata`), not on what the manifests appear to say.
//!
//! Every workspace crate outside `sim/` must have a [`Rule`] in [`RULES`]; a crate without one
//! fails the check. `sim/*` crates need no rule: they are recognised by their directory, and no
//! product crate may reach one through normal or build dependencies (dev-dependencies may).

use anyhow::{Context, Result, bail};
use serde::Deserialize;
use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// What a workspace crate is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Part of what ships: the `rocprof` binary, `librocprof_tool.so` and what they are built
    /// from. Its dependencies are checked.
    Product,
    /// Development tooling (`xtask`): may depend on anything, the simulator included.
    Dev,
}

/// What one workspace crate may depend on.
#[derive(Debug, Clone, Copy)]
pub struct Rule {
    /// The crate's package name.
    pub name: &'static str,
    /// Product or development tooling.
    pub role: Role,
    /// Workspace crates it may name as normal or build dependencies.
    pub may_use: &'static [&'static str],
    /// Workspace crates it must not reach through any chain of normal or build dependencies.
    pub never_reaches: &'static [&'static str],
    /// Crates (from anywhere) that must not be linked into it: not reachable through normal
    /// dependencies (proc-macro crates run in the compiler and are not followed).
    pub never_links: &'static [&'static str],
    /// Whether its library may print (only the tool library the application loads: its one
    /// warning line goes to the application's stderr). Binaries always may.
    pub prints: bool,
}

/// A product crate that may use the workspace crates `may_use` and nothing else is forbidden.
const fn product(name: &'static str, may_use: &'static [&'static str]) -> Rule {
    Rule {
        name,
        role: Role::Product,
        may_use,
        never_reaches: &[],
        never_links: &[],
        prints: false,
    }
}

/// A development crate: no restriction.
const fn dev(name: &'static str) -> Rule {
    Rule {
        name,
        role: Role::Dev,
        may_use: &[],
        never_reaches: &[],
        never_links: &[],
        prints: true,
    }
}

/// Dependencies only the exporters and the CLI need: never inside the profiled application.
/// (Counter collection selects kernels in the application by demangled name with `regex-lite`,
/// so `cpp_demangle` and `regex-lite` may be there; the full `regex` may not.)
pub const CLI_ONLY: &[&str] = &["anyhow", "clap", "csv", "prost", "regex", "rusqlite"];

/// The dependency table, lowest layer first. A crate that does not exist yet may have a rule.
pub const RULES: &[Rule] = &[
    product("c-layout", &[]),
    product("dxcore-sys", &["c-layout"]),
    product("rocdxg-sys", &["c-layout"]),
    product("atomic-file", &[]),
    product("terminal-text", &[]),
    product("trace-records", &[]),
    product("api-signatures", &[]),
    product("sqlite-pages", &[]),
    product(
        "trace-export",
        &[
            "trace-records",
            "atomic-file",
            "api-signatures",
            "sqlite-pages",
        ],
    ),
    product("otf2-sys", &["c-layout"]),
    product(
        "otf2-export",
        &["otf2-sys", "trace-records", "trace-export"],
    ),
    product("record-log", &["trace-records"]),
    product(
        "wsl-topology",
        &["c-layout", "dxcore-sys", "rocdxg-sys", "trace-records"],
    ),
    product(
        "hsa-intercept",
        &[
            "c-layout",
            "trace-records",
            "record-log",
            "pmc-dxg",
            "api-signatures",
        ],
    ),
    product("pmc-dxg", &["trace-records"]),
    product("att", &["trace-records", "atomic-file"]),
    Rule {
        never_links: CLI_ONLY,
        never_reaches: &["trace-export", "otf2-export"],
        prints: true,
        ..product(
            "rocprof-tool",
            &[
                "c-layout",
                "dxcore-sys",
                "rocdxg-sys",
                "trace-records",
                "record-log",
                "wsl-topology",
                "hsa-intercept",
                "pmc-dxg",
                "att",
            ],
        )
    },
    Rule {
        never_reaches: &["hsa-intercept", "rocprof-tool"],
        ..product(
            "rocprof-runner",
            &[
                "wsl-topology",
                "trace-records",
                "trace-export",
                "otf2-export",
                "pmc-dxg",
                "att",
                "atomic-file",
                "terminal-text",
            ],
        )
    },
    product(
        "rocprof-doctor",
        &[
            "wsl-topology",
            "trace-records",
            "pmc-dxg",
            "att",
            "rocprof-runner",
            "terminal-text",
        ],
    ),
    product(
        "trace-analysis",
        &[
            "trace-records",
            "trace-export",
            "pmc-dxg",
            "rocprof-runner",
            "terminal-text",
        ],
    ),
    Rule {
        never_reaches: &["hsa-intercept", "rocprof-tool"],
        ..product("run-diff", &["trace-analysis", "pmc-dxg", "terminal-text"])
    },
    Rule {
        never_reaches: &["hsa-intercept", "rocprof-tool"],
        ..product(
            "html-report",
            &["run-diff", "trace-analysis", "atomic-file", "terminal-text"],
        )
    },
    Rule {
        never_reaches: &["hsa-intercept", "rocprof-tool"],
        ..product(
            "rocprof-cli",
            &[
                "wsl-topology",
                "trace-records",
                "trace-export",
                "pmc-dxg",
                "att",
                "rocprof-runner",
                "rocprof-doctor",
                "trace-analysis",
                "run-diff",
                "html-report",
                "terminal-text",
            ],
        )
    },
    dev("xtask"),
];

/// Where a crate comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// A workspace member outside `sim/`.
    Workspace,
    /// A workspace member under `sim/`.
    Sim,
    /// Anything else (crates.io, git, a path outside the workspace).
    External,
}

/// The kinds of one dependency edge (an edge can be several at once).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Kinds {
    /// `[dependencies]`.
    pub normal: bool,
    /// `[build-dependencies]`.
    pub build: bool,
    /// `[dev-dependencies]`.
    pub dev: bool,
}

/// One crate of the resolved graph.
#[derive(Debug, Clone)]
pub struct Crate {
    /// Package name.
    pub name: String,
    /// Where it comes from.
    pub origin: Origin,
    /// Whether its library is a proc-macro (compiled for the host, not linked).
    pub proc_macro: bool,
}

/// The resolved dependency graph: crates and their edges, by index.
#[derive(Debug, Clone, Default)]
pub struct Graph {
    crates: Vec<Crate>,
    edges: Vec<Vec<(usize, Kinds)>>,
}

impl Graph {
    /// Adds a crate; returns its index.
    pub fn add(&mut self, name: &str, origin: Origin, proc_macro: bool) -> usize {
        self.crates.push(Crate {
            name: name.to_owned(),
            origin,
            proc_macro,
        });
        self.edges.push(Vec::new());
        self.crates.len() - 1
    }

    /// Records that `from` depends on `to` with `kinds`.
    pub fn depend(&mut self, from: usize, to: usize, kinds: Kinds) {
        self.edges[from].push((to, kinds));
    }

    /// The shortest path from `from` to every crate reachable over edges `follow` accepts,
    /// entering no crate `enter` refuses (which is still reached, but not gone through).
    /// `paths[i]` is `None` when `i` is unreachable; `from` itself is not reported.
    fn paths(
        &self,
        from: usize,
        follow: impl Fn(Kinds) -> bool,
        through: impl Fn(&Crate) -> bool,
    ) -> Vec<Option<Vec<usize>>> {
        let mut parent: Vec<Option<usize>> = vec![None; self.crates.len()];
        let mut seen = vec![false; self.crates.len()];
        seen[from] = true;
        let mut queue = VecDeque::from([from]);
        while let Some(c) = queue.pop_front() {
            if c != from && !through(&self.crates[c]) {
                continue;
            }
            for &(to, kinds) in &self.edges[c] {
                if follow(kinds) && !seen[to] {
                    seen[to] = true;
                    parent[to] = Some(c);
                    queue.push_back(to);
                }
            }
        }
        (0..self.crates.len())
            .map(|target| {
                let mut at = parent[target]?;
                let mut path = vec![target];
                while at != from {
                    path.push(at);
                    at = parent[at].expect("every reached crate has a parent chain");
                }
                path.push(from);
                path.reverse();
                Some(path)
            })
            .collect()
    }

    fn names(&self, path: &[usize]) -> Vec<String> {
        path.iter().map(|&i| self.crates[i].name.clone()).collect()
    }
}

/// One broken rule, with the chain of crates that breaks it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// What is wrong.
    pub message: String,
    /// The dependency chain, from the crate whose rule is broken (empty when not about an edge).
    pub path: Vec<String>,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)?;
        if !self.path.is_empty() {
            write!(f, "\n    path: {}", self.path.join(" -> "))?;
        }
        Ok(())
    }
}

/// Names in a rule that are not themselves in the table (a typo would silently allow or forbid
/// nothing).
pub fn table_problems(rules: &[Rule]) -> Vec<String> {
    let known = |n: &str| rules.iter().any(|r| r.name == n);
    let mut problems = Vec::new();
    for (i, r) in rules.iter().enumerate() {
        if rules[..i].iter().any(|o| o.name == r.name) {
            problems.push(format!("`{}` has two rules", r.name));
        }
        for n in r.may_use.iter().chain(r.never_reaches) {
            if !known(n) {
                problems.push(format!(
                    "the rule of `{}` names `{n}`, which has no rule itself",
                    r.name
                ));
            }
        }
    }
    problems
}

/// Every violation of `rules` in `graph`.
pub fn check(graph: &Graph, rules: &[Rule]) -> Vec<Violation> {
    let rule = |name: &str| rules.iter().find(|r| r.name == name);
    let compiled = |k: Kinds| k.normal || k.build;
    let mut out = Vec::new();
    for (i, c) in graph.crates.iter().enumerate() {
        if c.origin != Origin::Workspace {
            continue;
        }
        let Some(r) = rule(&c.name) else {
            out.push(Violation {
                message: format!(
                    "workspace crate `{}` is not in the dependency table: add a rule for it to RULES in xtask/src/tidy.rs (what it may depend on) and a line to the crate table of docs/ARCHITECTURE.md",
                    c.name
                ),
                path: Vec::new(),
            });
            continue;
        };
        if r.role != Role::Product {
            continue;
        }
        let mut direct: Vec<(usize, &str)> = graph.edges[i]
            .iter()
            .filter(|&&(to, k)| compiled(k) && graph.crates[to].origin == Origin::Workspace)
            .map(|&(to, _)| (to, graph.crates[to].name.as_str()))
            .filter(|(_, n)| !r.may_use.contains(n))
            .collect();
        direct.sort_unstable();
        direct.dedup();
        for (to, name) in direct {
            let allowed = if r.may_use.is_empty() {
                "no workspace crate".to_owned()
            } else {
                r.may_use.join(", ")
            };
            out.push(Violation {
                message: format!(
                    "`{}` depends on `{name}`, which its rule does not allow (it may use: {allowed})",
                    c.name
                ),
                path: graph.names(&[i, to]),
            });
        }
        let built = graph.paths(i, compiled, |_| true);
        for (target, path) in built.iter().enumerate() {
            let Some(path) = path else { continue };
            let t = &graph.crates[target];
            if t.origin == Origin::Sim {
                out.push(Violation {
                    message: format!(
                        "product crate `{}` depends on the simulator crate `{}` (only dev-dependencies may)",
                        c.name, t.name
                    ),
                    path: graph.names(path),
                });
            } else if t.origin == Origin::Workspace && r.never_reaches.contains(&t.name.as_str()) {
                out.push(Violation {
                    message: format!("`{}` must never depend on `{}`", c.name, t.name),
                    path: graph.names(path),
                });
            }
        }
        if !r.never_links.is_empty() {
            let linked = graph.paths(i, |k| k.normal, |c| !c.proc_macro);
            for (target, path) in linked.iter().enumerate() {
                let Some(path) = path else { continue };
                let t = &graph.crates[target];
                if r.never_links.contains(&t.name.as_str()) {
                    out.push(Violation {
                        message: format!(
                            "`{}` links `{}`, which it must not (forbidden in its normal dependency graph: {})",
                            c.name,
                            t.name,
                            r.never_links.join(", ")
                        ),
                        path: graph.names(path),
                    });
                }
            }
        }
    }
    out
}

/// The parts of `cargo metadata --format-version 1` the check reads.
#[derive(Debug, Deserialize)]
pub struct Metadata {
    packages: Vec<Package>,
    workspace_members: Vec<String>,
    workspace_root: PathBuf,
    resolve: Option<Resolve>,
}

#[derive(Debug, Deserialize)]
struct Package {
    id: String,
    name: String,
    manifest_path: PathBuf,
    targets: Vec<Target>,
}

#[derive(Debug, Deserialize)]
struct Target {
    kind: Vec<String>,
    #[serde(default)]
    src_path: PathBuf,
}

#[derive(Debug, Deserialize)]
struct Resolve {
    nodes: Vec<Node>,
}

#[derive(Debug, Deserialize)]
struct Node {
    id: String,
    deps: Vec<NodeDep>,
}

#[derive(Debug, Deserialize)]
struct NodeDep {
    pkg: String,
    dep_kinds: Vec<DepKindInfo>,
}

#[derive(Debug, Deserialize)]
struct DepKindInfo {
    /// `null` for a normal dependency.
    kind: Option<DepKind>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
enum DepKind {
    Dev,
    Build,
}

impl Metadata {
    /// The resolved graph.
    pub fn graph(&self) -> Result<Graph> {
        let resolve = self
            .resolve
            .as_ref()
            .context("cargo metadata printed no resolved graph")?;
        let sim = self.workspace_root.join("sim");
        let mut graph = Graph::default();
        let mut index = HashMap::new();
        for p in &self.packages {
            let origin = if !self.workspace_members.contains(&p.id) {
                Origin::External
            } else if p.manifest_path.starts_with(&sim) {
                Origin::Sim
            } else {
                Origin::Workspace
            };
            let proc_macro = p
                .targets
                .iter()
                .any(|t| t.kind.iter().any(|k| k == "proc-macro"));
            index.insert(p.id.as_str(), graph.add(&p.name, origin, proc_macro));
        }
        let find = |id: &str| {
            index
                .get(id)
                .copied()
                .with_context(|| format!("cargo metadata resolved an unlisted package {id}"))
        };
        for node in &resolve.nodes {
            let from = find(&node.id)?;
            for d in &node.deps {
                let mut kinds = Kinds::default();
                for k in &d.dep_kinds {
                    match k.kind {
                        None => kinds.normal = true,
                        Some(DepKind::Build) => kinds.build = true,
                        Some(DepKind::Dev) => kinds.dev = true,
                    }
                }
                graph.depend(from, find(&d.pkg)?, kinds);
            }
        }
        Ok(graph)
    }
}

/// The host's target triple (`rustc -vV`).
fn host_triple() -> Result<String> {
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let out = Command::new(rustc).arg("-vV").output()?;
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("host: "))
        .map(str::to_owned)
        .context("`rustc -vV` printed no host triple")
}

/// Reads the resolved graph of the workspace at `root` for the host platform (the platform the
/// product is built for; other platforms' dependencies are never compiled into it).
pub fn metadata(root: &Path) -> Result<Metadata> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let out = Command::new(cargo)
        .current_dir(root)
        .args(["metadata", "--format-version", "1", "--filter-platform"])
        .arg(host_triple()?)
        .output()
        .context("cannot run cargo metadata")?;
    if !out.status.success() {
        bail!(
            "cargo metadata failed ({}):\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    serde_json::from_slice(&out.stdout).context("cannot parse the output of cargo metadata")
}

impl Metadata {
    /// The source rules ([`crate::modules`]) on every target of every product crate: library
    /// targets must not print (unless their rule allows it), no target may have a module cycle.
    /// Tests, examples, benches and build scripts are not checked.
    pub fn source_findings(&self, rules: &[Rule]) -> Result<(usize, Vec<crate::modules::Finding>)> {
        let sim = self.workspace_root.join("sim");
        let mut checked = 0;
        let mut out = Vec::new();
        for p in &self.packages {
            if !self.workspace_members.contains(&p.id) || p.manifest_path.starts_with(&sim) {
                continue;
            }
            let Some(rule) = rules.iter().find(|r| r.name == p.name) else {
                continue;
            };
            if rule.role != Role::Product {
                continue;
            }
            for t in &p.targets {
                let library = t
                    .kind
                    .iter()
                    .any(|k| matches!(k.as_str(), "lib" | "rlib" | "cdylib" | "staticlib"));
                let binary = t.kind.iter().any(|k| k == "bin");
                if !library && !binary {
                    continue;
                }
                checked += 1;
                out.extend(crate::modules::check_target(
                    &p.name,
                    &t.src_path,
                    library && !rule.prints,
                )?);
            }
        }
        Ok((checked, out))
    }
}

/// Runs the check on the workspace at `root`; fails listing every violation.
pub fn tidy(root: &Path) -> Result<()> {
    let problems = table_problems(RULES);
    if !problems.is_empty() {
        bail!(
            "tidy: the dependency table in xtask/src/tidy.rs is inconsistent:\n  {}",
            problems.join("\n  ")
        );
    }
    let metadata = metadata(root)?;
    let graph = metadata.graph()?;
    let violations = check(&graph, RULES);
    let (targets, findings) = metadata.source_findings(RULES)?;
    if !findings.is_empty() {
        let mut text = format!("tidy: {} source rule violation(s):", findings.len());
        for f in &findings {
            text.push_str("\n  - ");
            text.push_str(&f.to_string().replace('\n', "\n  "));
        }
        if !violations.is_empty() {
            text.push_str(&format!(
                "\n(and {} dependency rule violation(s))",
                violations.len()
            ));
        }
        bail!("{text}");
    }
    eprintln!("tidy: no module cycles in {targets} product targets, and no library prints");
    if violations.is_empty() {
        let count = |o: Origin| graph.crates.iter().filter(|c| c.origin == o).count();
        eprintln!(
            "tidy: the dependency rules hold ({} workspace crates checked, {} simulator crates kept out of the product)",
            count(Origin::Workspace),
            count(Origin::Sim)
        );
        return Ok(());
    }
    let mut text = format!("tidy: {} dependency rule violation(s):", violations.len());
    for v in &violations {
        text.push_str("\n  - ");
        text.push_str(&v.to_string().replace('\n', "\n  "));
    }
    bail!("{text}")
}

#[cfg(test)]
mod tests {
    use super::*;

    const NORMAL: Kinds = Kinds {
        normal: true,
        build: false,
        dev: false,
    };
    const BUILD: Kinds = Kinds {
        normal: false,
        build: true,
        dev: false,
    };
    const DEV: Kinds = Kinds {
        normal: false,
        build: false,
        dev: true,
    };

    /// A graph of `crates` (`name`, origin, proc-macro) and `edges` (`from`, `to`, kinds).
    fn graph(crates: &[(&str, Origin, bool)], edges: &[(&str, &str, Kinds)]) -> Graph {
        let mut g = Graph::default();
        for &(name, origin, pm) in crates {
            g.add(name, origin, pm);
        }
        let at = |n: &str| g.crates.iter().position(|c| c.name == n).unwrap();
        let edges: Vec<_> = edges.iter().map(|&(a, b, k)| (at(a), at(b), k)).collect();
        for (a, b, k) in edges {
            g.depend(a, b, k);
        }
        g
    }

    use Origin::{External as Ext, Sim, Workspace as Ws};

    /// The workspace as it is meant to be, with the external crates that matter.
    fn clean() -> Vec<(&'static str, &'static str, Kinds)> {
        vec![
            ("dxcore-sys", "c-layout", NORMAL),
            ("rocdxg-sys", "c-layout", NORMAL),
            ("dxcore-sys", "libloading", NORMAL),
            ("trace-records", "serde", NORMAL),
            ("serde", "serde_derive", NORMAL),
            ("wsl-topology", "dxcore-sys", NORMAL),
            ("wsl-topology", "rocdxg-sys", NORMAL),
            ("wsl-topology", "trace-records", NORMAL),
            ("hsa-intercept", "trace-records", NORMAL),
            ("hsa-intercept", "c-layout", NORMAL),
            ("rocprof-tool", "hsa-intercept", NORMAL),
            ("rocprof-tool", "wsl-topology", NORMAL),
            ("rocprof-tool", "trace-records", NORMAL),
            ("rocprof-tool", "sim-hsa", DEV),
            ("rocprof-cli", "wsl-topology", NORMAL),
            ("rocprof-cli", "trace-records", NORMAL),
            ("rocprof-cli", "trace-export", NORMAL),
            ("trace-export", "trace-records", NORMAL),
            ("trace-export", "csv", DEV),
            ("rocprof-cli", "clap", NORMAL),
            ("rocprof-cli", "regex", NORMAL),
            ("rocprof-cli", "wslsim-scenario", DEV),
            ("trace-records", "csv", DEV),
            ("xtask", "hsa-intercept", NORMAL),
            ("xtask", "wslsim-scenario", NORMAL),
            ("sim-hsa", "wslsim-scenario", NORMAL),
        ]
    }

    fn crates() -> Vec<(&'static str, Origin, bool)> {
        let mut c: Vec<_> = [
            "c-layout",
            "dxcore-sys",
            "rocdxg-sys",
            "trace-records",
            "trace-export",
            "wsl-topology",
            "hsa-intercept",
            "rocprof-tool",
            "rocprof-cli",
            "xtask",
        ]
        .map(|n| (n, Ws, false))
        .into();
        c.extend([("sim-hsa", Sim, false), ("wslsim-scenario", Sim, false)]);
        c.extend(["libloading", "serde", "csv", "clap", "regex", "quote"].map(|n| (n, Ext, false)));
        c.push(("serde_derive", Ext, true));
        c
    }

    fn violations(extra: &[(&str, &str, Kinds)]) -> Vec<Violation> {
        let mut edges = clean();
        edges.extend_from_slice(extra);
        check(&graph(&crates(), &edges), RULES)
    }

    #[test]
    fn the_table_names_only_crates_it_has_rules_for() {
        assert_eq!(table_problems(RULES), Vec::<String>::new());
        let typo = [product("a", &["b"]), product("a", &[])];
        assert_eq!(
            table_problems(&typo),
            [
                "the rule of `a` names `b`, which has no rule itself",
                "`a` has two rules"
            ]
        );
    }

    #[test]
    fn the_intended_shape_passes() {
        assert_eq!(violations(&[]), []);
    }

    #[test]
    fn the_exporters_never_reach_the_injected_library() {
        // Through hsa-intercept: the tool's own rule and the intercept crate's both break.
        let v = violations(&[("hsa-intercept", "trace-export", NORMAL)]);
        assert!(
            v.iter()
                .any(|v| v.path == ["rocprof-tool", "hsa-intercept", "trace-export"]),
            "{v:#?}"
        );
        assert!(
            v.iter().any(|v| v
                .message
                .starts_with("`hsa-intercept` depends on `trace-export`")),
            "{v:#?}"
        );
    }

    #[test]
    fn a_forbidden_direct_dependency_is_named_with_what_is_allowed() {
        let v = violations(&[("rocprof-cli", "hsa-intercept", NORMAL)]);
        assert_eq!(v.len(), 2, "{v:#?}");
        assert_eq!(
            v[0].message,
            "`rocprof-cli` depends on `hsa-intercept`, which its rule does not allow (it may use: wsl-topology, trace-records, trace-export, pmc-dxg, att, rocprof-runner, rocprof-doctor, trace-analysis, run-diff, html-report, terminal-text)"
        );
        assert_eq!(v[0].path, ["rocprof-cli", "hsa-intercept"]);
        assert_eq!(
            v[1].message,
            "`rocprof-cli` must never depend on `hsa-intercept`"
        );
    }

    #[test]
    fn trace_records_may_use_no_workspace_crate_not_even_through_a_build_dependency() {
        let v = violations(&[("trace-records", "c-layout", BUILD)]);
        assert_eq!(v.len(), 1, "{v:#?}");
        assert!(
            v[0].message.contains("it may use: no workspace crate"),
            "{v:#?}"
        );
    }

    #[test]
    fn a_transitive_never_reaches_is_reported_with_its_path() {
        // wsl-topology wrongly uses hsa-intercept: its own rule fails, and the CLI's, with the chain.
        let v = violations(&[("wsl-topology", "hsa-intercept", NORMAL)]);
        let cli = v
            .iter()
            .find(|v| v.message.starts_with("`rocprof-cli` must never"))
            .unwrap();
        assert_eq!(cli.path, ["rocprof-cli", "wsl-topology", "hsa-intercept"]);
        assert!(
            v.iter()
                .any(|v| v.path == ["wsl-topology", "hsa-intercept"])
        );
    }

    #[test]
    fn cli_only_crates_are_found_deep_in_the_tools_graph() {
        let v = violations(&[
            ("trace-records", "serde", NORMAL),
            ("serde", "regex", NORMAL),
        ]);
        assert_eq!(v.len(), 1, "{v:#?}");
        assert!(v[0].message.starts_with("`rocprof-tool` links `regex`"));
        assert_eq!(
            v[0].path,
            ["rocprof-tool", "trace-records", "serde", "regex"]
        );
        // As a dev- or build-dependency, or behind a proc-macro, it is not linked.
        for extra in [
            [("rocprof-tool", "csv", DEV)],
            [("rocprof-tool", "csv", BUILD)],
            [("serde_derive", "regex", NORMAL)],
        ] {
            assert_eq!(violations(&extra), [], "{extra:?}");
        }
    }

    #[test]
    fn no_product_crate_reaches_the_simulator_even_through_build_dependencies() {
        let v = violations(&[("regex", "wslsim-scenario", BUILD)]);
        // Only the CLI uses regex.
        assert_eq!(v.len(), 1, "{v:#?}");
        assert_eq!(
            v[0].message,
            "product crate `rocprof-cli` depends on the simulator crate `wslsim-scenario` (only dev-dependencies may)"
        );
        assert_eq!(v[0].path, ["rocprof-cli", "regex", "wslsim-scenario"]);
        let v = violations(&[("c-layout", "sim-hsa", NORMAL)]);
        // Everything above c-layout reaches sim-hsa and, through it, wslsim-scenario.
        let paths: Vec<_> = v.iter().map(|v| v.path.join(" -> ")).collect();
        assert!(paths.contains(&"c-layout -> sim-hsa -> wslsim-scenario".to_owned()));
        assert!(paths.contains(&"rocprof-tool -> hsa-intercept -> c-layout -> sim-hsa".to_owned()));
        assert_eq!(v.len(), 2 * 7, "{paths:#?}");
    }

    #[test]
    fn an_unknown_workspace_crate_must_be_added_to_the_table() {
        let mut c = crates();
        c.push(("new-thing", Ws, false));
        let v = check(&graph(&c, &clean()), RULES);
        assert_eq!(v.len(), 1);
        assert!(
            v[0].message.starts_with(
                "workspace crate `new-thing` is not in the dependency table: add a rule"
            ),
            "{v:?}"
        );
        // A new simulator crate needs none.
        let mut c = crates();
        c.push(("sim-att", Sim, false));
        assert_eq!(check(&graph(&c, &clean()), RULES), []);
    }

    #[test]
    fn every_violation_is_printed_with_its_path() {
        let v = Violation {
            message: "m".into(),
            path: vec!["a".into(), "b".into()],
        };
        assert_eq!(v.to_string(), "m\n    path: a -> b");
    }

    #[test]
    fn metadata_is_read_into_the_graph() {
        let json = r#"{
            "packages": [
                {"id": "p1", "name": "rocprof-tool", "manifest_path": "/w/rocprof-tool/Cargo.toml",
                 "targets": [{"kind": ["cdylib", "rlib"]}], "version": "0.1.0"},
                {"id": "p2", "name": "sim-hsa", "manifest_path": "/w/sim/hsa/Cargo.toml",
                 "targets": [{"kind": ["cdylib"]}]},
                {"id": "p3", "name": "anyhow", "manifest_path": "/r/anyhow/Cargo.toml",
                 "targets": [{"kind": ["lib"]}]},
                {"id": "p4", "name": "serde_derive", "manifest_path": "/r/sd/Cargo.toml",
                 "targets": [{"kind": ["proc-macro"]}]}
            ],
            "workspace_members": ["p1", "p2"],
            "workspace_root": "/w",
            "resolve": {"nodes": [
                {"id": "p1", "deps": [
                    {"name": "sim_hsa", "pkg": "p2", "dep_kinds": [{"kind": "dev", "target": null}]},
                    {"name": "anyhow", "pkg": "p3", "dep_kinds": [{"kind": null, "target": null}, {"kind": "build", "target": null}]},
                    {"name": "serde_derive", "pkg": "p4", "dep_kinds": [{"kind": null, "target": null}]}
                ]},
                {"id": "p2", "deps": []}, {"id": "p3", "deps": []}, {"id": "p4", "deps": []}
            ], "root": null}
        }"#;
        let m: Metadata = serde_json::from_str(json).unwrap();
        let g = m.graph().unwrap();
        let origins: Vec<_> = g.crates.iter().map(|c| (c.origin, c.proc_macro)).collect();
        assert_eq!(
            origins,
            [(Ws, false), (Sim, false), (Ext, false), (Ext, true)]
        );
        assert_eq!(
            g.edges[0],
            [
                (1, DEV),
                (
                    2,
                    Kinds {
                        normal: true,
                        build: true,
                        dev: false
                    }
                ),
                (3, NORMAL)
            ]
        );
        let v = check(&g, RULES);
        assert_eq!(v.len(), 1, "{v:#?}");
        assert_eq!(v[0].path, ["rocprof-tool", "anyhow"]);
    }
}
