//! Counter definitions: both schemas, the upstream file, the built-in file against the
//! simulator's GPU model, resolution for agents (family fallback, properties, dimensions,
//! unresolved reasons) and the choice of source.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use pmc_dxg::defs::{
    AGENT_PROPERTIES, AgentCounters, CounterKind, DefBody, Definitions, DefsSource, Layout, Schema,
    gfx_family,
};
use pmc_dxg::expr::{AccumulateMode, BinOp, Binding, Expr, Program};
use pmc_dxg::{BaseEvent, Block, Error};
use trace_records::agents::{Agent, AgentKind};
use wslsim_scenario::GpuNode;

mod common;
use common::agent_from;

fn upstream_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/data/counter_defs.yaml")
}

/// The stock rocprofiler-sdk file, or `None` (after saying so) when it is not there.
fn upstream() -> Option<Definitions> {
    let path = upstream_path();
    let Ok(text) = std::fs::read_to_string(&path) else {
        println!(
            "SKIPPED: the upstream counter_defs.yaml is not available; expected it at {}",
            path.display()
        );
        return None;
    };
    Some(Definitions::parse(&path.display().to_string(), &text).expect("upstream file parses"))
}

fn radeon_890m() -> Agent {
    agent_from(&GpuNode::radeon_890m(), "gfx1150")
}

fn cpu_agent() -> Agent {
    Agent {
        kind: AgentKind::Cpu,
        logical_node_id: 0,
        node_id: 0,
        logical_node_type_id: 0,
        name: "AMD Ryzen AI 9 HX 370".to_owned(),
        product_name: "AMD Ryzen AI 9 HX 370".to_owned(),
        vendor_name: "CPU".to_owned(),
        model_name: String::new(),
        cpu_cores_count: 24,
        gpu: None,
    }
}

fn names(v: &[(String, BaseEvent)]) -> Vec<&str> {
    v.iter().map(|(n, _)| n.as_str()).collect()
}

fn eval_scalar(ac: &AgentCounters, name: &str) -> f64 {
    let p = ac.prepare(&[name]).expect("prepares");
    assert!(p.inputs().is_empty(), "{name} needs no hardware");
    let mut ev = p.evaluator();
    ev.evaluate(&[]).expect("evaluates");
    ev.value(0)[0]
}

// ----------------------------------------------------------------------------------------------
// The upstream file
// ----------------------------------------------------------------------------------------------

#[test]
fn every_upstream_counter_and_expression_parses() {
    let Some(defs) = upstream() else { return };
    assert_eq!(defs.schema(), Schema::Current { version: 1 });
    // The fact sheet's counts: 797 counters, 491 of them base.
    assert_eq!(defs.counters().len(), 797);
    let base = defs
        .counters()
        .iter()
        .filter(|c| {
            c.definitions
                .iter()
                .any(|d| matches!(d.body, DefBody::Base(_)))
        })
        .count();
    assert_eq!(base, 491);
    let mut expressions = 0;
    let mut failures = Vec::new();
    for c in defs.counters() {
        assert!(!c.definitions.is_empty(), "{} has definitions", c.name);
        for d in &c.definitions {
            assert!(!d.architectures.is_empty());
            assert!(d.architectures.iter().all(|a| a.starts_with("gfx")));
            if let DefBody::Derived(text) = &d.body {
                expressions += 1;
                match Expr::parse(&c.name, text) {
                    Ok(e) => {
                        let printed = e.to_string();
                        assert_eq!(
                            Expr::parse(&c.name, &printed).as_ref(),
                            Ok(&e),
                            "{} re-parses from {printed}",
                            c.name
                        );
                    }
                    Err(err) => failures.push(err.to_string()),
                }
            }
        }
    }
    assert_eq!(expressions, 323, "derived definitions in the file");
    assert!(failures.is_empty(), "{failures:#?}");
    // A few facts of the file itself.
    let grbm = defs
        .counters()
        .iter()
        .find(|c| c.name == "GRBM_COUNT")
        .unwrap();
    assert_eq!(
        grbm.definitions[0].body,
        DefBody::Base(BaseEvent {
            block: Block::Grbm,
            event: 0
        })
    );
}

#[test]
fn stock_lookup_finds_nothing_for_gfx1150_and_the_family_fallback_does() {
    let Some(defs) = upstream() else { return };
    let exact = defs
        .counters()
        .iter()
        .filter(|c| {
            c.definitions
                .iter()
                .any(|d| d.architectures.iter().any(|a| a == "gfx1150"))
        })
        .count();
    assert_eq!(exact, 0, "upstream has no gfx1150 key (verified-facts §1)");

    let ac = defs.for_agent(&radeon_890m());
    assert!(ac.family_fallback());
    assert_eq!(ac.gfx(), "gfx1150");

    // Every counter with a gfx11 definition is either resolved (under the gfx11 key) or
    // reported with its reason.
    let gfx11: Vec<&str> = defs
        .counters()
        .iter()
        .filter(|c| {
            c.definitions
                .iter()
                .any(|d| d.architectures.iter().any(|a| a == "gfx11"))
        })
        .map(|c| c.name.as_str())
        .collect();
    assert_eq!(gfx11.len(), 80);
    for name in &gfx11 {
        let resolved = ac.get(name).map(|c| c.arch.as_str());
        let unresolved = ac.unresolved().iter().find(|u| u.name == *name);
        match (resolved, unresolved) {
            (Some(arch), None) => assert_eq!(arch, "gfx11", "{name}"),
            (None, Some(u)) => {
                assert_eq!(u.arch, "gfx11");
                println!("unresolved on gfx1150: {name}: {}", u.reason);
            }
            other => panic!("{name}: {other:?}"),
        }
    }
    let from_file = ac.counters().iter().filter(|c| c.arch == "gfx11").count();
    assert_eq!(from_file + ac.unresolved().len(), gfx11.len());
    // Nothing in the stock gfx11 set is unresolvable.
    assert!(ac.unresolved().is_empty(), "{:#?}", ac.unresolved());
    // The property constants plus the file's gfx11 counters (which define the named
    // constants themselves, so nothing is added).
    assert_eq!(ac.counters().len(), 29 + 80);
    assert!(ac.counters().iter().all(|c| c.arch != "built-in"));

    // What the planner will see.
    assert_eq!(
        names(&ac.expand("GPU_UTIL").unwrap()),
        ["GRBM_GUI_ACTIVE", "GRBM_COUNT"]
    );
    assert_eq!(
        names(&ac.expand("MeanOccupancyPerCU").unwrap()),
        ["SQ_WAVE_CYCLES", "GRBM_GUI_ACTIVE"]
    );
    assert_eq!(
        names(&ac.expand("FETCH_SIZE").unwrap()),
        [
            "GL2C_EA_RDREQ_32B",
            "GL2C_EA_RDREQ_64B",
            "GL2C_EA_RDREQ_96B",
            "GL2C_EA_RDREQ_128B"
        ]
    );
    assert_eq!(
        names(&ac.expand("SQ_WAVES").unwrap()),
        ["SQ_WAVES"],
        "a base counter needs itself"
    );
    let lds = ac.inputs("LdsLatency").unwrap();
    assert_eq!(lds[0].name, "SQ_INST_LEVEL_LDS");
    assert_eq!(lds[0].accumulate, AccumulateMode::HighRes);
    assert_eq!(lds[0].accumulate.flag(), 2);
    assert_eq!(lds[1].name, "SQ_INSTS_LDS");
    assert_eq!(lds[1].accumulate, AccumulateMode::None);
    assert!(!ac.get("FETCH_SIZE").unwrap().is_collectable(), "GL2C");
    assert!(ac.get("GPU_UTIL").unwrap().is_collectable());

    // Dimensions as rocprofv3-avail prints them.
    let dims = |n: &str| ac.get(n).unwrap().dimensions.to_string();
    assert_eq!(
        dims("SQ_WAVES"),
        "DIMENSION_INSTANCE[0:0] DIMENSION_WGP[0:3] DIMENSION_SHADER_ARRAY[0:1] \
         DIMENSION_SHADER_ENGINE[0:0]"
    );
    assert_eq!(dims("GRBM_COUNT"), "DIMENSION_INSTANCE[0:0]");
    assert_eq!(dims("GPU_UTIL"), "DIMENSION_INSTANCE[0:0]");
    assert_eq!(dims("CU_NUM"), "DIMENSION_INSTANCE[0:0]");
    assert_eq!(eval_scalar(&ac, "CU_NUM"), 16.0);
    assert_eq!(eval_scalar(&ac, "SE_NUM"), 1.0);
    assert_eq!(eval_scalar(&ac, "SIMD_NUM"), 32.0);
    assert_eq!(eval_scalar(&ac, "MAX_WAVE_SIZE"), 32.0);
    match &ac.get("ALUStalledByLDS").unwrap().kind {
        CounterKind::Derived { expression, .. } => assert_eq!(
            expression,
            "400*reduce(SQ_WAIT_INST_LDS,sum)/reduce(SQ_WAVES,sum)/reduce(GRBM_GUI_ACTIVE,max)"
        ),
        other => panic!("{other:?}"),
    }
    // Ids: the 29 constants, then the file's counters in file order.
    let ids: Vec<u32> = ac.counters().iter().map(|c| c.id).collect();
    assert_eq!(ids, (0..ids.len() as u32).collect::<Vec<_>>());
    assert_eq!(ac.counters()[29].name, "ALUStalledByLDS");
}

#[test]
fn an_exact_chip_key_needs_no_fallback() {
    let Some(defs) = upstream() else { return };
    let ac = defs.for_agent(&agent_from(&GpuNode::radeon_890m(), "gfx1100"));
    assert!(!ac.family_fallback());
    assert!(ac.counters().iter().skip(29).all(|c| c.arch == "gfx1100"));
    assert!(ac.get("GPU_UTIL").is_some());
    // A target with no key and no family key has only the constants (and the named ones).
    let ac = defs.for_agent(&agent_from(&GpuNode::radeon_890m(), "gfx8034"));
    assert!(!ac.family_fallback());
    assert_eq!(ac.counters().len(), 29 + 4);
    assert_eq!(eval_scalar(&ac, "CU_NUM"), 16.0);
}

/// Upstream swaps a binary operator's operands when the left one is a single value and the
/// right one is not; this crate keeps the order. No stock gfx11 definition has that form, so
/// the difference never shows on them.
#[test]
fn no_stock_gfx11_definition_puts_a_single_value_left_of_minus_or_divide_over_a_vector() {
    let Some(defs) = upstream() else { return };
    let ac = defs.for_agent(&radeon_890m());
    let binding = |n: &str| -> Option<Binding<'_>> {
        let c = ac.get(n)?;
        Some(match &c.kind {
            CounterKind::Base(ev) => Binding::Base {
                event: ev.clone(),
                shape: c.dimensions.clone(),
            },
            CounterKind::Constant(v) => Binding::Constant(*v),
            CounterKind::Derived { parsed, .. } => Binding::Derived(parsed),
        })
    };
    let len = |e: &Expr| {
        Program::compile(&[("sub", e)], &binding).unwrap().outputs()[0]
            .shape
            .len()
    };
    fn visit(e: &Expr, f: &mut dyn FnMut(&Expr)) {
        f(e);
        match e {
            Expr::Binary { lhs, rhs, .. } => {
                visit(lhs, f);
                visit(rhs, f);
            }
            Expr::Reduce { arg, .. } | Expr::Select { arg, .. } => visit(arg, f),
            _ => {}
        }
    }
    let mut checked = 0;
    for c in ac.counters() {
        if let CounterKind::Derived { parsed, .. } = &c.kind {
            visit(parsed, &mut |e| {
                if let Expr::Binary { op, lhs, rhs } = e {
                    checked += 1;
                    if matches!(op, BinOp::Sub | BinOp::Div) {
                        assert!(
                            !(len(lhs) == 1 && len(rhs) > 1),
                            "{}: `{e}` would be evaluated swapped upstream",
                            c.name
                        );
                    }
                }
            });
        }
    }
    println!("{checked} binary operators checked");
    assert!(checked >= 40);
}

// ----------------------------------------------------------------------------------------------
// The built-in file and the simulator
// ----------------------------------------------------------------------------------------------

#[test]
fn built_in_definitions_cover_exactly_what_the_simulated_gpu_counts() {
    use rocdxg::gpu::counters::{Geometry, grbm, sq};
    let defs = Definitions::built_in().unwrap();
    assert_eq!(defs.origin(), "built-in");
    assert_eq!(defs.schema(), Schema::Current { version: 1 });
    let ac = defs.for_agent(&radeon_890m());
    assert!(ac.unresolved().is_empty(), "{:#?}", ac.unresolved());
    assert!(ac.family_fallback(), "keyed gfx11, reached from gfx1150");

    let mut base: Vec<(String, BaseEvent)> = ac
        .counters()
        .iter()
        .filter_map(|c| match &c.kind {
            CounterKind::Base(ev) => Some((c.name.clone(), ev.clone())),
            _ => None,
        })
        .collect();
    base.sort_by(|a, b| a.0.cmp(&b.0));
    let ev = |block, event| BaseEvent { block, event };
    let mut want = vec![
        ("GRBM_COUNT", ev(Block::Grbm, grbm::COUNT)),
        ("GRBM_GUI_ACTIVE", ev(Block::Grbm, grbm::GUI_ACTIVE)),
        ("GRBM_CP_BUSY", ev(Block::Grbm, grbm::CP_BUSY)),
        ("GRBM_SPI_BUSY", ev(Block::Grbm, grbm::SPI_BUSY)),
        ("SQ_CYCLES", ev(Block::Sq, sq::CYCLES)),
        ("SQ_BUSY_CYCLES", ev(Block::Sq, sq::BUSY_CYCLES)),
        ("SQ_WAVES", ev(Block::Sq, sq::WAVES)),
        ("SQ_WAVES_32", ev(Block::Sq, sq::WAVES_32)),
        ("SQ_WAVES_64", ev(Block::Sq, sq::WAVES_64)),
        ("SQ_LEVEL_WAVES", ev(Block::Sq, sq::LEVEL_WAVES)),
        ("SQ_WAVE_CYCLES", ev(Block::Sq, sq::WAVE_CYCLES)),
        ("SQ_INSTS_SALU", ev(Block::Sq, sq::INSTS_SALU)),
        ("SQ_INSTS_VALU", ev(Block::Sq, sq::INSTS_VALU)),
    ];
    want.sort_by(|a, b| a.0.cmp(b.0));
    let want: Vec<(String, BaseEvent)> = want.into_iter().map(|(n, e)| (n.to_owned(), e)).collect();
    assert_eq!(base, want);
    // The fact sheet's ids, independently of the simulator.
    assert_eq!(ac.expand("SQ_WAVE_CYCLES").unwrap()[0].1, ev(Block::Sq, 24));
    assert_eq!(
        ac.expand("GRBM_SPI_BUSY").unwrap()[0].1,
        ev(Block::Grbm, 11)
    );

    // The SQ layout is the simulator's (and aqlprofile's) instance count.
    let geometry = Geometry::radeon_890m();
    let layout = ac.layout().unwrap();
    assert_eq!(
        layout,
        Layout {
            se: 1,
            sa: 2,
            wgp: 4,
            xcc: 1
        }
    );
    assert_eq!(
        ac.get("SQ_WAVES").unwrap().dimensions.len(),
        geometry.sq_instances()
    );
    assert_eq!(layout.wgp, geometry.wgp_per_array);

    for derived in [
        "GPU_UTIL",
        "GPUBusy",
        "CP_UTIL",
        "SPI_UTIL",
        "Wavefronts",
        "SQ_WAVES_sum",
        "VALUInsts",
        "SALUInsts",
        "OccupancyPercent",
        "MeanOccupancyPerCU",
        "MeanOccupancyPerActiveCU",
    ] {
        let c = ac.get(derived).unwrap_or_else(|| panic!("{derived}"));
        assert!(matches!(c.kind, CounterKind::Derived { .. }), "{derived}");
        assert!(c.is_collectable(), "{derived}");
        assert_eq!(c.dimensions.len(), 1, "{derived}");
    }
    assert_eq!(
        names(&ac.expand("OccupancyPercent").unwrap()),
        ["SQ_WAVE_CYCLES", "GRBM_GUI_ACTIVE"]
    );
    assert_eq!(eval_scalar(&ac, "CU_NUM"), 16.0);
}

#[test]
fn built_in_definitions_match_upstream_where_both_define_a_counter() {
    let Some(up) = upstream() else { return };
    let ours = Definitions::built_in().unwrap().for_agent(&radeon_890m());
    let theirs = up.for_agent(&radeon_890m());
    let mut compared = 0;
    for c in ours.counters() {
        let Some(t) = theirs.get(&c.name) else {
            continue;
        };
        compared += 1;
        match (&c.kind, &t.kind) {
            (CounterKind::Base(a), CounterKind::Base(b)) => assert_eq!(a, b, "{}", c.name),
            (CounterKind::Derived { parsed: a, .. }, CounterKind::Derived { parsed: b, .. }) => {
                assert_eq!(a, b, "{}", c.name)
            }
            (CounterKind::Constant(a), CounterKind::Constant(b)) => assert_eq!(a, b),
            other => panic!("{}: {other:?}", c.name),
        }
        assert_eq!(c.dimensions, t.dimensions, "{}", c.name);
    }
    // Everything but the five events and three derived counters upstream has only for other
    // families.
    assert_eq!(compared, ours.counters().len() - 8);
}

// ----------------------------------------------------------------------------------------------
// The older schema, resolution details
// ----------------------------------------------------------------------------------------------

const LEGACY: &str = r#"
WAVES_LAUNCHED:
  architectures:
    gfx11/gfx1100:
      block: SQ
      event: 4
  description: Waves started on each sequencer.
PIPE_BUSY:
  architectures:
    gfx11/gfx1100:
      block: GRBM
      event: 2
    gfx90a:
      block: GRBM
      event: 2
      description: Pipeline busy cycles on an MI200.
  description: Cycles the pipeline had work.
ALL_WAVES:
  architectures:
    gfx11:
      expression: reduce(WAVES_LAUNCHED,sum)
  description: Waves started in total.
PER_CU:
  architectures:
    gfx11:
      expression: ALL_WAVES/(simd_count/simd_per_cu)
  description: Waves per compute unit.
"#;

#[test]
fn the_older_schema_parses_and_resolves() {
    let defs = Definitions::parse("legacy sample", LEGACY).unwrap();
    assert_eq!(defs.schema(), Schema::Legacy);
    let names: Vec<&str> = defs.counters().iter().map(|c| c.name.as_str()).collect();
    assert_eq!(
        names,
        ["WAVES_LAUNCHED", "PIPE_BUSY", "ALL_WAVES", "PER_CU"]
    );
    assert_eq!(
        defs.counters()[0].definitions[0].architectures,
        ["gfx11", "gfx1100"]
    );
    let busy = &defs.counters()[1];
    assert_eq!(busy.definitions.len(), 2);
    assert_eq!(
        busy.definitions[1].description.as_deref(),
        Some("Pipeline busy cycles on an MI200.")
    );

    let ac = defs.for_agent(&radeon_890m());
    assert!(ac.family_fallback());
    assert!(ac.unresolved().is_empty(), "{:#?}", ac.unresolved());
    assert_eq!(names_of(&ac.expand("PER_CU").unwrap()), ["WAVES_LAUNCHED"]);
    assert_eq!(
        ac.get("PIPE_BUSY").unwrap().description,
        "Cycles the pipeline had work."
    );
    // Built-in named constants are added, since this file lacks them.
    let cu = ac.get("CU_NUM").unwrap();
    assert_eq!(cu.arch, "built-in");
    assert_eq!(eval_scalar(&ac, "CU_NUM"), 16.0);

    // Evaluate PER_CU: 8 SQ values summing to 800 over 16 CUs.
    let p = ac.prepare(&["PER_CU"]).unwrap();
    let waves = [100.0; 8];
    let mut ev = p.evaluator();
    ev.evaluate(&[&waves]).unwrap();
    assert_eq!(ev.value(0), [50.0]);

    // On gfx90a only PIPE_BUSY exists, with its per-architecture description.
    let ac = defs.for_agent(&agent_from(&GpuNode::radeon_890m(), "gfx90a"));
    assert!(!ac.family_fallback());
    assert_eq!(
        ac.get("PIPE_BUSY").unwrap().description,
        "Pipeline busy cycles on an MI200."
    );
    assert!(ac.get("WAVES_LAUNCHED").is_none());
    assert!(matches!(
        ac.expand("WAVES_LAUNCHED"),
        Err(Error::UnknownCounter { .. })
    ));
}

fn names_of(v: &[(String, BaseEvent)]) -> Vec<&str> {
    names(v)
}

const PROBLEMS: &str = r#"
rocprofiler-sdk:
  counters-schema-version: 1
  counters:
  - name: SQ_A
    description: an SQ event
    properties: []
    definitions:
    - architectures: [gfx11]
      block: SQ
      event: 4
  - name: GRBM_B
    description: a GRBM event
    properties: []
    definitions:
    - architectures: [gfx11]
      block: GRBM
      event: 0
  - name: BROKEN
    description: does not parse
    properties: []
    definitions:
    - architectures: [gfx11]
      expression: reduce(SQ_A,sum
  - name: NEEDS_MISSING
    description: refers to nothing
    properties: []
    definitions:
    - architectures: [gfx11]
      expression: SQ_A+NOT_DEFINED
  - name: NEEDS_BROKEN
    description: refers to a counter that does not parse
    properties: []
    definitions:
    - architectures: [gfx11]
      expression: 2*BROKEN
  - name: LOOP_A
    description: refers to itself through LOOP_B
    properties: []
    definitions:
    - architectures: [gfx11]
      expression: LOOP_B+1
  - name: LOOP_B
    description: refers back to LOOP_A
    properties: []
    definitions:
    - architectures: [gfx11]
      expression: LOOP_A*2
  - name: MISMATCH
    description: two different multi-dimensional shapes
    properties: []
    definitions:
    - architectures: [gfx11]
      expression: SQ_A+reduce(SQ_A,sum,[DIMENSION_WGP])
  - name: ACCUMULATED_GRBM
    description: accumulation is for SQ counters
    properties: []
    definitions:
    - architectures: [gfx11]
      expression: accumulate(GRBM_B,HIGH_RES)
  - name: PER_ARRAY
    description: SQ_A summed per shader array
    properties: []
    definitions:
    - architectures: [gfx11]
      expression: reduce(SQ_A,sum,[DIMENSION_WGP])
  - name: SQ_A
    description: a second definition of SQ_A
    properties: []
    definitions:
    - architectures: [gfx1150]
      block: SQ
      event: 5
  - name: ELSEWHERE
    description: only on gfx90a
    properties: []
    definitions:
    - architectures: [gfx90a]
      block: SQ
      event: 4
"#;

#[test]
fn unresolvable_definitions_are_reported_with_their_reasons() {
    let defs = Definitions::parse("problems", PROBLEMS).unwrap();
    let ac = defs.for_agent(&radeon_890m());
    let reason = |n: &str| {
        let found: Vec<_> = ac.unresolved().iter().filter(|u| u.name == n).collect();
        assert_eq!(found.len(), 1, "{n}: {:#?}", ac.unresolved());
        found[0].clone().reason
    };
    assert!(matches!(
        reason("BROKEN"),
        Error::Parse { position: 15, .. }
    ));
    assert_eq!(
        reason("NEEDS_MISSING"),
        Error::UnknownInput {
            counter: "NEEDS_MISSING".into(),
            input: "NOT_DEFINED".into()
        }
    );
    let r = reason("NEEDS_BROKEN").to_string();
    assert!(r.contains("BROKEN cannot be used"), "{r}");
    let r = reason("LOOP_A").to_string();
    assert!(r.contains("LOOP_A -> LOOP_B -> LOOP_A"), "{r}");
    let r = reason("LOOP_B").to_string();
    assert!(r.contains("LOOP_B -> LOOP_A -> LOOP_B"), "{r}");
    let r = reason("MISMATCH").to_string();
    assert!(r.contains("dimension mismatch"), "{r}");
    let r = reason("ACCUMULATED_GRBM").to_string();
    assert!(r.contains("needs an SQ counter"), "{r}");
    // The second SQ_A (an exact gfx1150 key) is reported; the first stays.
    assert!(matches!(reason("SQ_A"), Error::Definitions { .. }));
    assert_eq!(ac.expand("SQ_A").unwrap()[0].1.event, 4);
    // Unresolved counters are not available, and asking for one says why.
    assert!(ac.get("BROKEN").is_none());
    assert!(matches!(ac.expand("BROKEN"), Err(Error::Parse { .. })));
    assert!(matches!(
        ac.prepare(&["GPU_UTIL"]),
        Err(Error::UnknownCounter { .. })
    ));
    assert!(ac.get("ELSEWHERE").is_none());
    assert_eq!(ac.unresolved().len(), 8);
    let ids: Vec<u32> = ac.unresolved().iter().map(|u| u.id).collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]));

    // Reducing one dimension keeps the others.
    let per = ac.get("PER_ARRAY").unwrap();
    assert_eq!(
        per.dimensions.to_string(),
        "DIMENSION_INSTANCE[0:0] DIMENSION_SHADER_ARRAY[0:1] DIMENSION_SHADER_ENGINE[0:0]"
    );
    let p = ac.prepare(&["PER_ARRAY"]).unwrap();
    let mut ev = p.evaluator();
    ev.evaluate(&[&[1.0, 2.0, 3.0, 4.0, 10.0, 20.0, 30.0, 40.0]])
        .unwrap();
    assert_eq!(ev.value(0), [10.0, 100.0]);
}

#[test]
fn malformed_files_are_rejected_naming_the_entry() {
    let cases = [
        ("", "not a mapping"),
        ("- 1\n- 2\n", "not a mapping"),
        (
            "rocprofiler-sdk: {counters: []}\n",
            "counters-schema-version",
        ),
        (
            "rocprofiler-sdk:\n  counters-schema-version: 1\n  counters:\n  - name: X\n    \
             definitions:\n    - architectures: [gfx11]\n      block: SQ\n",
            "counter X, definition #1: expected either",
        ),
        (
            "rocprofiler-sdk:\n  counters-schema-version: 1\n  counters:\n  - name: X\n    \
             definitions:\n    - architectures: [gfx11]\n      block: SQ\n      event: -1\n",
            "`event` is not an event id",
        ),
        (
            "rocprofiler-sdk:\n  counters-schema-version: 1\n  counters:\n  - name: X\n    \
             definitions:\n    - block: SQ\n      event: 1\n",
            "no `architectures`",
        ),
        (
            "X:\n  description: no architectures\n",
            "counter X has no `architectures`",
        ),
        ("X: [unclosed\n", "not valid YAML"),
        ("rocprofiler-sdk: 5\n", "`rocprofiler-sdk` is not a mapping"),
        (
            "rocprofiler-sdk:\n  counters-schema-version: one\n  counters: []\n",
            "not an integer",
        ),
        (
            "rocprofiler-sdk:\n  counters-schema-version: 1\n  counters: {}\n",
            "no `counters` list",
        ),
        (
            "rocprofiler-sdk:\n  counters-schema-version: 1\n  counters: [5]\n",
            "counter #1 is not a mapping",
        ),
        (
            "rocprofiler-sdk:\n  counters-schema-version: 1\n  counters:\n  - description: x\n",
            "counter #1 has no name",
        ),
        (
            "rocprofiler-sdk:\n  counters-schema-version: 1\n  counters:\n  - name: X\n",
            "counter X has no `definitions` list",
        ),
        (
            "rocprofiler-sdk:\n  counters-schema-version: 1\n  counters:\n  - name: X\n    \
             definitions:\n    - architectures: []\n      block: SQ\n      event: 1\n",
            "no architectures",
        ),
        (
            "rocprofiler-sdk:\n  counters-schema-version: 1\n  counters:\n  - name: X\n    \
             definitions:\n    - architectures: [{a: b}]\n      block: SQ\n      event: 1\n",
            "an architecture is not a name",
        ),
        (
            "rocprofiler-sdk:\n  counters-schema-version: 1\n  counters:\n  - name: X\n    \
             definitions:\n    - architectures: [gfx11]\n      block: SQ\n      event: 4.5\n",
            "`event` is not an event id",
        ),
        (
            "rocprofiler-sdk:\n  counters-schema-version: 1\n  counters:\n  - name: X\n    \
             definitions:\n    - architectures: [gfx11]\n      block: SQ\n      \
             event: 4294967296\n",
            "`event` is not an event id",
        ),
        (
            "rocprofiler-sdk:\n  counters-schema-version: 1\n  counters:\n  - name: X\n    \
             definitions:\n    - architectures: [gfx11]\n      block: SQ\n      event: 4\n      \
             expression: 1\n",
            "expected either",
        ),
        (
            "rocprofiler-sdk:\n  counters-schema-version: 1\n  counters:\n  - name: X\n    \
             definitions:\n    - architectures: [gfx11]\n      expression: [a]\n",
            "`expression` is not text",
        ),
        (
            "rocprofiler-sdk:\n  counters-schema-version: 1\n  counters:\n  - name: X\n    \
             definitions:\n    - architectures: [gfx11]\n      block: ''\n      event: 4\n",
            "`block` is not a name",
        ),
        (
            "X:\n  architectures:\n    gfx11: 5\n",
            "counter X, architectures gfx11 is not a mapping",
        ),
        ("X: 5\n", "counter X is not a mapping"),
        (&"[".repeat(100_000), "not valid YAML"),
    ];
    for (text, want) in cases {
        match Definitions::parse("case", text) {
            Err(Error::Definitions { origin, message }) => {
                assert_eq!(origin, "case");
                assert!(message.contains(want), "{text:?}: {message}");
            }
            other => panic!("{text:?}: {other:?}"),
        }
    }
}

/// A file of `n` counters in the 2025 schema, counter k defined by `body(k)`.
fn generated(n: usize, body: impl Fn(usize) -> String) -> String {
    let mut text = String::from("rocprofiler-sdk:\n  counters-schema-version: 1\n  counters:\n");
    for k in 0..n {
        text += &format!(
            "  - name: C{k}\n    description: generated\n    properties: []\n    definitions:\n    \
             - architectures: [gfx11]\n      {}\n",
            body(k)
        );
    }
    text
}

#[test]
fn hostile_definitions_resolve_quickly_into_reasons() {
    let started = std::time::Instant::now();
    let agent = radeon_890m();
    // A chain of 2000 derived counters, each the next plus one, ending in a base counter.
    let chain = generated(2001, |k| {
        if k == 2000 {
            "block: SQ\n      event: 4".to_owned()
        } else {
            format!("expression: C{}+1", k + 1)
        }
    });
    let ac = Definitions::parse("chain", &chain)
        .unwrap()
        .for_agent(&agent);
    // Only the counters close enough to the base one resolve; the rest say why.
    assert!(ac.get("C2000").is_some() && ac.get("C1990").is_some());
    let too_deep = ac.unresolved().iter().find(|u| u.name == "C0").unwrap();
    assert!(
        too_deep.reason.to_string().contains("levels deep"),
        "{}",
        too_deep.reason
    );
    assert_eq!(
        ac.counters().len() + ac.unresolved().len(),
        AGENT_PROPERTIES.len() + 2001 + 4
    );
    // Each using the next twice: 2^60 nodes expanded.
    let doubling = generated(61, |k| {
        if k == 60 {
            "block: GRBM\n      event: 0".to_owned()
        } else {
            format!("expression: C{0}*C{0}", k + 1)
        }
    });
    let ac = Definitions::parse("doubling", &doubling)
        .unwrap()
        .for_agent(&agent);
    let blown = ac.unresolved().iter().find(|u| u.name == "C0").unwrap();
    assert!(
        blown.reason.to_string().contains("nodes"),
        "{}",
        blown.reason
    );
    assert!(ac.get("C50").is_some());
    // One expression nested a million levels deep: a parse error, not a crash.
    let deep = format!(
        "expression: {}SQ_A{}",
        "(".repeat(1 << 20),
        ")".repeat(1 << 20)
    );
    let ac = Definitions::parse("deep", &generated(1, |_| deep.clone()))
        .unwrap()
        .for_agent(&agent);
    assert!(matches!(ac.unresolved()[0].reason, Error::Parse { .. }));
    assert!(started.elapsed().as_secs() < 30, "{:?}", started.elapsed());
}

#[test]
fn absurd_topologies_give_clamped_layouts_not_panics() {
    let mut node = GpuNode::radeon_890m();
    for (simd, per_cu, se, arrays, xcc) in [
        (u32::MAX, 1, u32::MAX, u32::MAX, 1),
        (u32::MAX, 0, 0, 0, 0),
        (0, 0, 0, 0, 0),
        (2, 2, 1, 1, 1),
        (u32::MAX, 1, 1, 1, 1),
    ] {
        node.simd_count = simd;
        node.simd_per_cu = per_cu;
        node.shader_engines = se;
        node.arrays_per_engine = arrays;
        node.num_xcc = xcc;
        let agent = agent_from(&node, "gfx1150");
        let ac = Definitions::built_in().unwrap().for_agent(&agent);
        let layout = ac.layout().unwrap();
        for extent in [layout.se, layout.sa, layout.wgp, layout.xcc] {
            assert!((1..=Layout::MAX_EXTENT).contains(&extent), "{layout:?}");
        }
        assert!(ac.get("Wavefronts").is_some(), "{layout:?}");
        // CU_NUM divides by simd_per_cu; x/0 is 0.
        let cu = eval_scalar(&ac, "CU_NUM");
        assert!(cu.is_finite());
    }
}

#[test]
fn agent_properties_are_the_29_upstream_names_with_unknowns_zero() {
    assert_eq!(AGENT_PROPERTIES.len(), 29);
    let defs = Definitions::built_in().unwrap();
    let ac = defs.for_agent(&radeon_890m());
    let value = |n: &str| match ac.get(n).unwrap().kind {
        CounterKind::Constant(v) => v,
        ref other => panic!("{n}: {other:?}"),
    };
    for (id, name) in AGENT_PROPERTIES.iter().enumerate() {
        let c = ac.get(name).unwrap();
        assert_eq!(c.id, id as u32);
        assert_eq!(
            c.description,
            format!("Constant value {name} from agent properties")
        );
        assert_eq!(c.dimensions.to_string(), "DIMENSION_INSTANCE[0:0]");
        assert!(c.inputs.is_empty());
    }
    assert_eq!(value("simd_count"), 32.0);
    assert_eq!(value("simd_per_cu"), 2.0);
    assert_eq!(value("array_count"), 2.0);
    assert_eq!(value("simd_arrays_per_engine"), 2.0);
    assert_eq!(value("cu_per_simd_array"), 8.0);
    assert_eq!(value("wave_front_size"), 32.0);
    assert_eq!(value("max_waves_per_simd"), 16.0);
    assert_eq!(value("lds_size_in_kb"), 64.0);
    assert_eq!(value("gfx_target_version"), 110500.0);
    assert_eq!(value("vendor_id"), f64::from(0x1002));
    assert_eq!(value("device_id"), f64::from(0x150E));
    assert_eq!(value("location_id"), f64::from(0xC500));
    for unknown in [
        "mem_banks_count",
        "caches_count",
        "io_links_count",
        "cpu_core_id_base",
        "simd_id_base",
        "drm_render_minor",
        "cpu_cores_count",
    ] {
        assert_eq!(value(unknown), 0.0, "{unknown}");
    }
    // A CPU agent has no counters at all.
    let cpu = defs.for_agent(&cpu_agent());
    assert!(cpu.counters().is_empty());
    assert!(cpu.unresolved().is_empty());
    assert!(cpu.layout().is_none());
}

#[test]
fn several_shader_engines_and_xccs_widen_the_sq_shape() {
    let mut node = GpuNode::radeon_890m();
    node.simd_count = 96; // 48 CUs
    node.shader_engines = 2;
    node.num_xcc = 2;
    let defs = Definitions::built_in().unwrap();
    let ac = defs.for_agent(&agent_from(&node, "gfx1100"));
    assert_eq!(
        ac.layout().unwrap(),
        Layout {
            se: 2,
            sa: 2,
            wgp: 6,
            xcc: 2
        }
    );
    assert_eq!(
        ac.get("SQ_WAVES").unwrap().dimensions.to_string(),
        "DIMENSION_INSTANCE[0:0] DIMENSION_WGP[0:5] DIMENSION_SHADER_ARRAY[0:1] \
         DIMENSION_SHADER_ENGINE[0:1] DIMENSION_XCC[0:1]"
    );
    assert_eq!(
        ac.get("GRBM_COUNT").unwrap().dimensions.to_string(),
        "DIMENSION_INSTANCE[0:0] DIMENSION_XCC[0:1]"
    );
    // GPU_UTIL takes the max over both XCCs' GRBM values.
    let p = ac.prepare(&["GPU_UTIL"]).unwrap();
    let names: Vec<&str> = p.inputs().iter().map(|i| i.name.as_str()).collect();
    assert_eq!(names, ["GRBM_GUI_ACTIVE", "GRBM_COUNT"]);
    let mut ev = p.evaluator();
    ev.evaluate(&[&[50.0, 80.0], &[100.0, 90.0]]).unwrap();
    assert_eq!(ev.value(0), [80.0]);
}

#[test]
fn families_are_gfx_and_the_major_version() {
    let cases = [
        ("gfx1150", Some("gfx11")),
        ("gfx1100", Some("gfx11")),
        ("gfx1036", Some("gfx10")),
        ("gfx1201", Some("gfx12")),
        ("gfx942", Some("gfx9")),
        ("gfx90a", Some("gfx9")),
        ("gfx90c", Some("gfx9")),
        ("gfx950", Some("gfx9")),
        ("gfx803", Some("gfx8")),
        ("gfx11", None),
        ("gfx9", None),
        ("gfx", None),
        ("gfx1a50", None),
        ("gfx11x0", None),
        ("gfx90A", None),
        ("gfx0900", None),
        ("sm_90", None),
        ("", None),
        ("gfx11ü0", None),
    ];
    for (gfx, want) in cases {
        assert_eq!(gfx_family(gfx).as_deref(), want, "{gfx}");
    }
}

// ----------------------------------------------------------------------------------------------
// Sources
// ----------------------------------------------------------------------------------------------

fn scratch_dir(name: &str) -> PathBuf {
    // Per process: another `cargo test` of this crate may run at the same time.
    let dir =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("defs-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn env_with(value: Option<&Path>) -> impl Fn(&str) -> Option<OsString> {
    let value = value.map(|p| p.as_os_str().to_owned());
    move |k: &str| {
        if k == "ROCPROFILER_METRICS_PATH" {
            value.clone()
        } else {
            None
        }
    }
}

#[test]
fn sources_are_chosen_in_order() {
    let root = scratch_dir("sources");
    let rocm = root.join("rocm");
    let lib = rocm.join("lib");
    std::fs::create_dir_all(&lib).unwrap();
    let rocm_file = rocm.join("share/rocprofiler-sdk/counter_defs.yaml");
    let metrics = root.join("metrics");
    std::fs::create_dir_all(&metrics).unwrap();
    let metrics_file = metrics.join("counter_defs.yaml");
    let custom = root.join("custom.yaml");

    // Nothing anywhere: built in.
    assert_eq!(
        DefsSource::select(env_with(None), None),
        DefsSource::BuiltIn
    );
    assert_eq!(
        DefsSource::select(env_with(None), Some(&lib)),
        DefsSource::BuiltIn
    );

    // A ROCm install beside the runtime.
    std::fs::create_dir_all(rocm_file.parent().unwrap()).unwrap();
    std::fs::write(&rocm_file, LEGACY).unwrap();
    let chosen = DefsSource::select(env_with(None), Some(&lib));
    assert_eq!(chosen, DefsSource::Rocm(rocm_file.clone()));
    assert_eq!(chosen.origin(), rocm_file.display().to_string());
    assert_eq!(Definitions::load(&chosen).unwrap().schema(), Schema::Legacy);
    // ... also from a multiarch library directory one level down.
    let multiarch = lib.join("x86_64-linux-gnu");
    assert_eq!(
        DefsSource::select(env_with(None), Some(&multiarch)),
        DefsSource::Rocm(rocm_file.clone())
    );
    // ... but not without a runtime directory.
    assert_eq!(
        DefsSource::select(env_with(None), None),
        DefsSource::BuiltIn
    );

    // ROCPROFILER_METRICS_PATH, a directory, wins over the install.
    std::fs::write(&metrics_file, PROBLEMS).unwrap();
    let chosen = DefsSource::select(env_with(Some(&metrics)), Some(&lib));
    assert_eq!(chosen, DefsSource::MetricsPath(metrics_file.clone()));
    assert!(matches!(
        Definitions::load(&chosen).unwrap().schema(),
        Schema::Current { version: 1 }
    ));
    // ... or the file itself.
    std::fs::write(&custom, LEGACY).unwrap();
    assert_eq!(
        DefsSource::select(env_with(Some(&custom)), Some(&lib)),
        DefsSource::MetricsPath(custom.clone())
    );
    // ... even when it does not exist: loading then fails naming it.
    let missing = root.join("nowhere/counter_defs.yaml");
    let chosen = DefsSource::select(env_with(Some(&missing)), Some(&lib));
    assert_eq!(chosen, DefsSource::MetricsPath(missing.clone()));
    match Definitions::load(&chosen) {
        Err(Error::Definitions { origin, message }) => {
            assert_eq!(origin, missing.display().to_string());
            assert!(message.contains("cannot be read"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    // An empty value counts as unset.
    let empty = |k: &str| (k == "ROCPROFILER_METRICS_PATH").then(OsString::new);
    assert_eq!(
        DefsSource::select(empty, Some(&lib)),
        DefsSource::Rocm(rocm_file.clone())
    );
    // Other variables are not looked at.
    let other = |k: &str| (k == "ROCM_PATH").then(|| metrics.as_os_str().to_owned());
    assert_eq!(DefsSource::select(other, None), DefsSource::BuiltIn);

    // The built-in source loads the crate's own file.
    let built = Definitions::load(&DefsSource::BuiltIn).unwrap();
    assert_eq!(built, Definitions::built_in().unwrap());
    assert_eq!(DefsSource::BuiltIn.origin(), "built-in");
    assert_eq!(DefsSource::BuiltIn.path(), None);
    let _ = std::fs::remove_dir_all(&root);
}

// ----------------------------------------------------------------------------------------------
// Extra definitions (-E/--extra-counters)
// ----------------------------------------------------------------------------------------------

#[test]
fn extra_definitions_add_counters_and_replace_same_named_ones() {
    let root = scratch_dir("extra");
    let extra_file = root.join("extra.yaml");
    // The older schema, a derived counter over a built-in base counter, and a replacement of a
    // built-in derived one.
    std::fs::write(
        &extra_file,
        "MY_WAVES_X2:\n  architectures:\n    gfx11:\n      expression: SQ_WAVES*2\n  description: twice\n\
         GPU_UTIL:\n  architectures:\n    gfx11:\n      expression: GRBM_COUNT*0+7\n  description: seven\n",
    )
    .unwrap();
    let extra = Definitions::load_extra(&extra_file).unwrap();
    let base = Definitions::built_in().unwrap();
    let before = base.counters().len();
    let had_util = base.counters().iter().any(|c| c.name == "GPU_UTIL");
    let merged = base.extended(&extra);
    assert_eq!(
        merged.counters().len(),
        before + 1 + usize::from(!had_util),
        "one counter added, a same-named one replaced"
    );
    assert!(merged.origin().ends_with(&extra_file.display().to_string()));
    let ac = merged.for_agent(&radeon_890m());
    assert_eq!(names(&ac.expand("MY_WAVES_X2").unwrap()), ["SQ_WAVES"]);
    let util = merged
        .counters()
        .iter()
        .find(|c| c.name == "GPU_UTIL")
        .unwrap();
    assert_eq!(util.description, "seven");
    assert_eq!(util.definitions.len(), 1);

    // Missing, malformed and empty files are refused naming the file.
    for (name, text) in [
        ("missing.yaml", None),
        ("bad.yaml", Some("MY: [unclosed")),
        ("empty.yaml", Some("{}")),
    ] {
        let path = root.join(name);
        if let Some(t) = text {
            std::fs::write(&path, t).unwrap();
        }
        match Definitions::load_extra(&path) {
            Err(Error::Definitions { origin, .. }) => {
                assert_eq!(origin, path.display().to_string())
            }
            other => panic!("{name}: {other:?}"),
        }
    }
    let _ = std::fs::remove_dir_all(&root);
}
