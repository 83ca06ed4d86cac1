//! Asynchronous copies (`hsa_amd_memory_async_copy`, `_on_engine`): a runtime worker waits for
//! the dependency signals (the caller never blocks), runs the copy on the simulated SDMA engine
//! (`wslsim_gpu_copy`: real bytes, modelled time), writes the GPU ticks into the completion
//! signal when async-copy profiling is on, then decrements the completion signal.

use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Sender, channel};
use std::sync::{Arc, OnceLock};

use crate::guard::{guard, write_out};
use crate::runtime::{self, Runtime};
use crate::signal;
use crate::types::*;

static PROFILING: AtomicBool = AtomicBool::new(false);

struct Job {
    runtime: Arc<Runtime>,
    node: u32,
    dst: usize,
    src: usize,
    size: usize,
    deps: Vec<Signal>,
    completion: Signal,
}

fn worker() -> &'static Sender<Job> {
    static WORKER: OnceLock<Sender<Job>> = OnceLock::new();
    WORKER.get_or_init(|| {
        let (sender, receiver) = channel::<Job>();
        let _ = std::thread::Builder::new()
            .name("hsa-sdma".to_owned())
            .spawn(move || {
                while let Ok(job) = receiver.recv() {
                    let _ = std::panic::catch_unwind(|| run(&job));
                }
            });
        sender
    })
}

fn run(job: &Job) {
    for dep in &job.deps {
        while signal::load(*dep) >= 1 {
            signal::wait(*dep, CONDITION_LT, 1, 100_000_000);
        }
    }
    // SAFETY: the application guarantees both buffers for `size` bytes until completion.
    let result = unsafe {
        job.runtime.thunk.copy(
            job.node,
            job.dst as *mut c_void,
            job.src as *const c_void,
            job.size as u64,
        )
    };
    match result {
        Ok(timing) => {
            if PROFILING.load(Ordering::Acquire) {
                signal::store_timestamps(job.completion, &timing);
            }
        }
        Err(status) => {
            eprintln!("libhsa-runtime64 (sim): wslsim_gpu_copy failed: {status}");
        }
    }
    signal::complete(job.completion);
}

fn submit(
    dst: *mut c_void,
    dst_agent: Agent,
    src: *const c_void,
    src_agent: Agent,
    size: usize,
    num_deps: u32,
    deps: *const Signal,
    completion: Signal,
) -> Result<(), Status> {
    let rt = runtime::require()?;
    if dst.is_null() || src.is_null() || (num_deps > 0 && deps.is_null()) {
        return Err(ERROR_INVALID_ARGUMENT);
    }
    let dst_info = rt.agent(dst_agent).ok_or(ERROR_INVALID_AGENT)?;
    let src_info = rt.agent(src_agent).ok_or(ERROR_INVALID_AGENT)?;
    if completion.handle == 0 || !signal::is_live(completion) {
        return Err(ERROR_INVALID_SIGNAL);
    }
    // The copy runs on the SDMA engine of the GPU involved (either side).
    let engine = [dst_info, src_info]
        .into_iter()
        .find(|a| a.kind == runtime::AgentKind::Gpu)
        .or_else(|| rt.first_gpu())
        .ok_or(ERROR_INVALID_AGENT)?;
    let deps = if num_deps == 0 {
        Vec::new()
    } else {
        // SAFETY: an array of `num_deps` signals per the API.
        unsafe { std::slice::from_raw_parts(deps, num_deps as usize) }.to_vec()
    };
    let job = Job {
        node: engine.node,
        runtime: rt.clone(),
        dst: dst as usize,
        src: src as usize,
        size,
        deps,
        completion,
    };
    worker().send(job).map_err(|_| ERROR_OUT_OF_RESOURCES)
}

/// `hsa_amd_memory_async_copy`.
pub unsafe extern "C" fn hsa_amd_memory_async_copy(
    dst: *mut c_void,
    dst_agent: Agent,
    src: *const c_void,
    src_agent: Agent,
    size: usize,
    num_dep_signals: u32,
    dep_signals: *const Signal,
    completion_signal: Signal,
) -> Status {
    guard(|| {
        submit(
            dst,
            dst_agent,
            src,
            src_agent,
            size,
            num_dep_signals,
            dep_signals,
            completion_signal,
        )
    })
}

/// `hsa_amd_memory_async_copy_on_engine` (the engine choice does not change the model).
pub unsafe extern "C" fn hsa_amd_memory_async_copy_on_engine(
    dst: *mut c_void,
    dst_agent: Agent,
    src: *const c_void,
    src_agent: Agent,
    size: usize,
    num_dep_signals: u32,
    dep_signals: *const Signal,
    completion_signal: Signal,
    _engine_id: u32,
    _force_copy_on_sdma: bool,
) -> Status {
    guard(|| {
        submit(
            dst,
            dst_agent,
            src,
            src_agent,
            size,
            num_dep_signals,
            dep_signals,
            completion_signal,
        )
    })
}

/// `hsa_amd_memory_copy_engine_status`: both SDMA engines are always free.
pub unsafe extern "C" fn hsa_amd_memory_copy_engine_status(
    dst_agent: Agent,
    src_agent: Agent,
    engine_ids_mask: *mut u32,
) -> Status {
    guard(|| {
        let rt = runtime::require()?;
        rt.agent(dst_agent).ok_or(ERROR_INVALID_AGENT)?;
        rt.agent(src_agent).ok_or(ERROR_INVALID_AGENT)?;
        // SAFETY: checked for null by write_out; writable per the API.
        unsafe { write_out(engine_ids_mask, 0x3) }
    })
}

/// `hsa_amd_profiling_async_copy_enable`.
pub unsafe extern "C" fn hsa_amd_profiling_async_copy_enable(enable: bool) -> Status {
    guard(|| {
        runtime::require()?;
        PROFILING.store(enable, Ordering::Release);
        Ok(())
    })
}

/// `hsa_amd_profiling_get_async_copy_time`: the completion signal's ticks in system ns
/// (`[faults] copy_time_fail_calls` make chosen calls fail with `HSA_STATUS_ERROR`).
pub unsafe extern "C" fn hsa_amd_profiling_get_async_copy_time(
    signal: Signal,
    time: *mut ProfilingTime,
) -> Status {
    guard(|| {
        static CALLS: AtomicU64 = AtomicU64::new(0);
        let call = CALLS.fetch_add(1, Ordering::Relaxed) + 1;
        if wslsim_scenario::current()
            .faults
            .copy_time_fail_calls
            .contains(&call)
        {
            return Err(ERROR);
        }
        let rt = runtime::require()?;
        let obj = signal::live_object(signal).ok_or(ERROR_INVALID_SIGNAL)?;
        let gpu = rt.first_gpu().ok_or(ERROR_INVALID_AGENT)?;
        let profiled = rt.profiling_time(gpu, obj);
        // SAFETY: checked for null by write_out; writable per the API.
        unsafe { write_out(time, profiled) }
    })
}
