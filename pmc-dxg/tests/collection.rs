//! A run's counters through `pmc_dxg::collection` on the built-in definitions of the simulated
//! Radeon 890M: a group planned (or refused with the split that works) before the run, and a
//! process's read-backs evaluated, estimated and turned into counter records after it.

use pmc_dxg::Error;
use pmc_dxg::collection::{
    Counted, CounterPlan, Evaluation, Gpu, Problem, all_zero, check, estimate, evaluate,
    fill_records, plan_on,
};
use pmc_dxg::defs::Definitions;
use pmc_dxg::hygiene::Discard;
use pmc_dxg::pm4::{PassBuffers, build_pass};
use pmc_dxg::{BaseEvent, Block, Topology};
use trace_records::agents::{Agent, AgentKind};
use trace_records::docs::{AgentsList, CounterSetup};
use trace_records::{
    CounterSample, CounterSampleHeader, KernelDispatchRecord, KernelSymbolRecord, ProcessTrace,
};
use wslsim_scenario::GpuNode;

mod common;
use common::agent_from;

fn defs() -> Definitions {
    Definitions::built_in().unwrap()
}

fn radeon() -> Agent {
    agent_from(&GpuNode::radeon_890m(), "gfx1150")
}

fn gpus(agents: &[Agent], defs: &Definitions) -> Vec<Gpu> {
    Gpu::all(agents, defs)
}

fn names(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| (*s).to_owned()).collect()
}

const NINE: [&str; 9] = [
    "SQ_WAVES",
    "SQ_WAVES_32",
    "SQ_WAVES_64",
    "SQ_LEVEL_WAVES",
    "SQ_WAVE_CYCLES",
    "SQ_BUSY_CYCLES",
    "SQ_CYCLES",
    "SQ_INSTS_VALU",
    "SQ_INSTS_SALU",
];

#[test]
fn a_group_that_fits_is_planned_with_its_base_counters() {
    let defs = defs();
    let gpus = gpus(&[radeon()], &defs);
    let plan = plan_on(&gpus, &names(&["GPU_UTIL", "SQ_WAVES"]), Some(300)).unwrap();
    assert_eq!(plan.requested, ["GPU_UTIL", "SQ_WAVES"]);
    let base: Vec<&str> = plan.events.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(base, ["GRBM_GUI_ACTIVE", "GRBM_COUNT", "SQ_WAVES"]);
    assert_eq!(plan.events[2].block, "SQ");
    assert_eq!(plan.discard_warmup_ms, Some(300));
    assert_eq!(plan.extra_counters, None);
    assert_eq!(plan.request().events, plan.events);

    let c = check(
        &gpus[0].counters,
        &Topology::of(&gpus[0].agent).unwrap(),
        0,
        &plan.requested,
    );
    assert!(c.one_pass, "{c}");
    assert_eq!(c.base, base);
    assert_eq!(c.passes, [base]);
    assert_eq!(c.conflict, None);
}

#[test]
fn a_group_too_large_for_one_pass_is_refused_with_groups_that_fit() {
    let defs = defs();
    let gpus = gpus(&[radeon()], &defs);
    let group = names(&NINE);
    let err = plan_on(&gpus, &group, None).unwrap_err();
    let Error::SeveralPasses {
        gpu,
        agent,
        conflict,
        passes,
    } = &err
    else {
        panic!("{err:?}");
    };
    assert_eq!((*gpu, agent.as_str()), (0, "gfx1150"));
    assert!(
        matches!(
            **conflict,
            Error::TooManyCounters { .. } | Error::FrameOverflow { .. }
        ),
        "{conflict:?}"
    );
    assert!(passes.len() >= 2, "{passes:?}");
    // Every counter once, in request order, and each group collectable as it is.
    assert_eq!(passes.concat(), group);
    for p in passes {
        plan_on(&gpus, p, None).unwrap();
    }
    let text = err.to_string();
    assert!(
        text.starts_with("these counters do not fit one pass on GPU 0 (gfx1150): "),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "Collect them in {} passes, each one run of the application: pass 1: SQ_WAVES ",
            passes.len()
        )),
        "{text}"
    );
    assert!(!text.contains("--"), "no command-line option named: {text}");

    let c = check(
        &gpus[0].counters,
        &Topology::of(&gpus[0].agent).unwrap(),
        0,
        &group,
    );
    assert!(!c.one_pass);
    assert_eq!(c.conflict.as_ref(), Some(&**conflict));
    assert!(c.passes.len() >= 2);
    assert!(c.to_string().contains("  why: "), "{c}");
}

#[test]
fn an_unknown_counter_or_no_gpu_is_refused() {
    let defs = defs();
    let gpus = gpus(&[radeon()], &defs);
    let err = plan_on(&gpus, &names(&["SQ_WAVES", "NOPE"]), None).unwrap_err();
    match &err {
        Error::CannotCollect {
            counters,
            gpu: 0,
            conflict,
            ..
        } => {
            assert_eq!(counters, &names(&["SQ_WAVES", "NOPE"]));
            assert!(
                matches!(**conflict, Error::UnknownCounter { .. }),
                "{conflict:?}"
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(
        err.to_string()
            .starts_with("cannot collect SQ_WAVES NOPE on GPU 0 (gfx1150): counter NOPE"),
        "{err}"
    );
    assert_eq!(plan_on(&[], &names(&["SQ_WAVES"]), None), Err(Error::NoGpu));
    // A GPU without a topology (no GPU properties) is skipped.
    let mut bare = radeon();
    bare.gpu = None;
    let skipped = [Gpu::new(&bare, &defs)];
    assert_eq!(
        plan_on(&skipped, &names(&["SQ_WAVES"]), None),
        Err(Error::NoGpu)
    );
}

#[test]
fn gpus_that_program_a_group_differently_are_refused() {
    let extra = Definitions::parse(
        "extra",
        "\
rocprofiler-sdk:
  counters-schema-version: 1
  counters:
    - name: MINE
      description: differs by chip
      properties: []
      definitions:
        - architectures: [gfx1150]
          expression: SQ_WAVES
        - architectures: [gfx1151]
          expression: SQ_CYCLES
",
    )
    .unwrap();
    let defs = defs().extended(&extra);
    let first = radeon();
    let mut second = agent_from(&GpuNode::radeon_890m(), "gfx1151");
    second.logical_node_type_id = 1;
    second.node_id = 2;
    let gpus = gpus(&[first, second], &defs);
    assert_eq!(gpus.len(), 2);
    let err = plan_on(&gpus, &names(&["MINE"]), None).unwrap_err();
    assert_eq!(
        err,
        Error::GpusDiffer {
            counters: names(&["MINE"]),
            gpu: 1,
            base: names(&["SQ_CYCLES"]),
        }
    );
    assert!(
        err.to_string().contains("profile one GPU at a time"),
        "{err}"
    );
}

// ---------------------------------------------------------------------------------------------
// After the run
// ---------------------------------------------------------------------------------------------

const NODE: u32 = 1;

/// What each base counter reads on every instance of a dispatch.
struct Reads {
    sq_waves: u32,
    grbm_count: u64,
    grbm_gui_active: u64,
}

fn output(layout: &PassBuffers, reads: &Reads) -> Vec<u8> {
    let mut out = vec![0u8; layout.output_bytes];
    for s in &layout.samples {
        let value = match layout.counters[s.counter].name.as_str() {
            "SQ_WAVES" => u64::from(reads.sq_waves),
            "GRBM_COUNT" => reads.grbm_count,
            "GRBM_GUI_ACTIVE" => reads.grbm_gui_active,
            other => panic!("{other}"),
        };
        out[s.offset..s.offset + 8].copy_from_slice(&value.to_le_bytes());
    }
    // The start packet ran: its proof word is in the last slot.
    let at = layout.proof_offset.expect("the tool writes the proof");
    out[at..at + 4].copy_from_slice(&pmc_dxg::pm4::PROOF_WORD.to_le_bytes());
    out
}

/// The output of a dispatch whose counter packets the thunk dropped: nothing written.
fn dropped(layout: &PassBuffers) -> Vec<u8> {
    vec![0u8; layout.output_bytes]
}

fn dispatch(id: u64, start: u64, end: u64) -> KernelDispatchRecord {
    KernelDispatchRecord {
        dispatch_id: id,
        kernel_id: 1,
        correlation_id: 100 + id,
        start,
        end,
        queue_id: 1,
        agent_node_id: NODE,
        grid: [1024, 1, 1],
        workgroup: [256, 1, 1],
        ..Default::default()
    }
}

/// A process that counted `plan` on the 890M: one dispatch per entry of `reads`, 1 ms apart.
fn trace(plan: &CounterPlan, reads: &[Reads]) -> (ProcessTrace, PassBuffers) {
    let agent = radeon();
    assert_eq!(agent.node_id, NODE);
    let events: Vec<(String, BaseEvent)> = plan.events.iter().map(BaseEvent::named).collect();
    let layout = build_pass(&Topology::of(&agent).unwrap(), &events, 0, 0).unwrap();
    let mut t = ProcessTrace::default();
    t.docs.agents = Some(AgentsList {
        agents: vec![agent],
    });
    t.docs.counter_setups.push(CounterSetup {
        agent_node_id: NODE,
        events: plan.events.clone(),
        group: 0,
        output_bytes: layout.output_bytes as u32,
        proof: true,
    });
    t.strings.insert(1, "vector_add".into());
    t.symbols.push(KernelSymbolRecord {
        kernel_id: 1,
        kernel_object: 0x1000,
        name: 1,
        ..Default::default()
    });
    for (k, r) in reads.iter().enumerate() {
        let id = k as u64 + 1;
        let start = 1_000_000_000 + k as u64 * 1_000_000;
        t.dispatches.push(dispatch(id, start, start + 10_000));
        t.counter_samples.push(CounterSample {
            header: CounterSampleHeader {
                dispatch_id: id,
                correlation_id: 100 + id,
                agent_node_id: NODE,
                group: 0,
            },
            output: output(&layout, r),
        });
    }
    (t, layout)
}

fn plan_for(defs: &Definitions, group: &[&str], warmup_ms: Option<u64>) -> CounterPlan {
    plan_on(&gpus(&[radeon()], defs), &names(group), warmup_ms).unwrap()
}

#[test]
fn read_backs_are_evaluated_cleaned_and_become_records() {
    let defs = defs();
    let plan = plan_for(&defs, &["GPU_UTIL", "SQ_WAVES"], None);
    let clean = Reads {
        sq_waves: 3,
        grbm_count: 1000,
        grbm_gui_active: 250,
    };
    let (mut t, layout) = trace(
        &plan,
        &[
            clean,
            // A GRBM zero burst spoils GPU_UTIL, not SQ_WAVES.
            Reads {
                sq_waves: 2,
                grbm_count: 0,
                grbm_gui_active: 0,
            },
            // An isolated SQ zero spoils SQ_WAVES, not GPU_UTIL.
            Reads {
                sq_waves: 0,
                grbm_count: 2000,
                grbm_gui_active: 1000,
            },
        ],
    );
    let instances = layout.counters[2].samples.len() as f64;
    let eval = evaluate(&t, &plan, &defs);
    assert!(eval.problems.is_empty(), "{:?}", eval.problems);
    let ids: Vec<u32> = eval.counters.iter().map(|(_, id)| *id).collect();
    assert_eq!(
        eval.counters
            .iter()
            .map(|(n, _)| n.as_str())
            .collect::<Vec<_>>(),
        ["GPU_UTIL", "SQ_WAVES"]
    );
    let outcomes: Vec<&[Result<f64, Discard>]> = eval
        .dispatches
        .iter()
        .map(|c| c.outcomes.as_slice())
        .collect();
    assert_eq!(
        outcomes,
        [
            &[Ok(25.0), Ok(3.0 * instances)][..],
            &[Err(Discard::GrbmZero), Ok(2.0 * instances)][..],
            &[Ok(50.0), Err(Discard::SqZero)][..],
        ]
    );
    let keys: Vec<(&str, u64)> = eval
        .dispatches
        .iter()
        .map(|c| (c.key.kernel.as_str(), c.key.ordinal))
        .collect();
    assert_eq!(
        keys,
        [("vector_add", 0), ("vector_add", 1), ("vector_add", 2)]
    );
    assert!(eval.overlapped.is_empty());
    assert!(!all_zero(&[&eval]));

    let rows = estimate(&eval, &[]);
    assert_eq!(rows.len(), 6);
    assert_eq!(
        (rows[0].counter.as_str(), rows[0].estimate.estimate),
        ("GPU_UTIL", Some(25.0))
    );
    assert_eq!(
        rows[2].estimate.estimate, None,
        "the burst's GPU_UTIL has no value"
    );
    // The isolated SQ zero of the single run: written as the 0 it read, flagged.
    assert_eq!(rows[5].counter, "SQ_WAVES");
    assert_eq!(rows[5].estimate.estimate, Some(0.0));
    assert!(pmc_dxg::hygiene::unconfirmed_zero(&rows[5].estimate));
    assert_eq!(rows[5].estimate.discarded, [(0, Discard::SqZero)]);
    fill_records(&mut t, &eval, &rows);
    assert_eq!(t.counters.len(), 5, "one record per value with an estimate");
    assert_eq!((t.counters[4].dispatch_id, t.counters[4].value), (3, 0.0));
    let first = &t.counters[0];
    assert_eq!(
        (first.dispatch_id, first.correlation_id, first.value),
        (1, 101, 25.0)
    );
    assert_eq!(t.string(first.name), "GPU_UTIL");
    assert_eq!(first.counter_id, ids[0]);
    assert_eq!(first.agent_node_id, NODE);
    assert_eq!(t.string(t.counters[1].name), "SQ_WAVES");
}

#[test]
fn repeated_runs_take_the_smallest_non_zero_value() {
    let defs = defs();
    let plan = plan_for(&defs, &["SQ_WAVES"], None);
    let reads = |waves: u32| {
        [Reads {
            sq_waves: waves,
            grbm_count: 0,
            grbm_gui_active: 0,
        }]
    };
    let runs: Vec<Evaluation> = [5, 4, 9]
        .map(|w| evaluate(&trace(&plan, &reads(w)).0, &plan, &defs))
        .into();
    let rows = estimate(&runs[0], &[&runs[1], &runs[2]]);
    assert_eq!(rows.len(), 1);
    let e = &rows[0].estimate;
    assert_eq!(e.runs, 3);
    assert_eq!(e.estimate, e.min);
    assert!(e.max.unwrap() > e.min.unwrap());
    // A dispatch missing from another run is estimated from the runs that have it.
    let empty = Evaluation::default();
    assert_eq!(estimate(&runs[0], &[&empty])[0].estimate.runs, 1);
}

#[test]
fn a_warm_up_window_discards_the_opening_dispatches() {
    let defs = defs();
    let plan = plan_for(&defs, &["SQ_WAVES"], Some(2));
    let reads: Vec<Reads> = (0..4)
        .map(|_| Reads {
            sq_waves: 1,
            grbm_count: 0,
            grbm_gui_active: 0,
        })
        .collect();
    let (t, _) = trace(&plan, &reads);
    let eval = evaluate(&t, &plan, &defs);
    let warm: Vec<bool> = eval
        .dispatches
        .iter()
        .map(|c| c.outcomes[0] == Err(Discard::Warmup))
        .collect();
    // Dispatches start 0, 1, 2 and 3 ms after the first: the first two are inside 2 ms.
    assert_eq!(warm, [true, true, false, false]);
}

#[test]
fn what_cannot_be_decoded_is_a_problem_and_all_zero_reads_are_noticed() {
    let defs = defs();
    let plan = plan_for(&defs, &["SQ_WAVES"], None);
    let zero = || Reads {
        sq_waves: 0,
        grbm_count: 0,
        grbm_gui_active: 0,
    };
    let (mut t, layout) = trace(&plan, &[zero(), zero(), zero()]);
    // Zeros with the proof word: the packets ran, so this is no gate's signature.
    assert!(!all_zero(&[&evaluate(&t, &plan, &defs)]));
    for s in &mut t.counter_samples {
        s.output = dropped(&layout);
    }
    t.counter_samples[1].output.truncate(8);
    t.counter_samples[2].header.agent_node_id = 9;
    let eval = evaluate(&t, &plan, &defs);
    assert_eq!(eval.dispatches.len(), 1);
    assert!(
        matches!(
            &eval.problems[..],
            [
                Problem::Unreadable {
                    dispatch: 2,
                    error: Error::ShortOutput { got: 8, .. }
                },
                Problem::Undecodable { node: 9, .. },
            ]
        ),
        "{:?}",
        eval.problems
    );
    assert!(eval.problems[1].to_string().contains("GPU node 9"));
    assert!(all_zero(&[&eval]), "the vendor-packet gate's signature");
    // A log of a tool that wrote no proof: all-zero values are all there is to go by.
    let (mut old, _) = trace(&plan, &[zero()]);
    old.docs.counter_setups[0].proof = false;
    assert!(all_zero(&[&evaluate(&old, &plan, &defs)]));
    let (mut old, _) = trace(
        &plan,
        &[Reads {
            sq_waves: 3,
            grbm_count: 0,
            grbm_gui_active: 0,
        }],
    );
    old.docs.counter_setups[0].proof = false;
    old.counter_samples[0].output[layout.proof_offset.unwrap()..].fill(0);
    assert!(!all_zero(&[&evaluate(&old, &plan, &defs)]));

    // Without samples there is nothing to evaluate.
    t.counter_samples.clear();
    assert_eq!(evaluate(&t, &plan, &defs), Evaluation::default());
    let nothing_ran = Evaluation {
        dispatches: vec![Counted {
            dispatch: dispatch(1, 5, 5),
            ..eval.dispatches[0].clone()
        }],
        ..Evaluation::default()
    };
    assert!(!all_zero(&[&nothing_ran]));
}

#[test]
fn gpus_are_the_gpu_agents_with_their_counters() {
    let defs = defs();
    let mut cpu = radeon();
    cpu.kind = AgentKind::Cpu;
    cpu.gpu = None;
    let mut second = radeon();
    second.logical_node_type_id = 1;
    let all = Gpu::all([&cpu, &radeon(), &second], &defs);
    let indices: Vec<u32> = all.iter().map(|g| g.index).collect();
    assert_eq!(indices, [0, 1]);
    assert_eq!(all[0].counters.gfx(), "gfx1150");
    assert_eq!(all[0].agent, radeon());
    let waves = all[0].counters.get("SQ_WAVES").unwrap();
    assert!(matches!(&waves.kind, pmc_dxg::defs::CounterKind::Base(e) if e.block == Block::Sq));
}
