//! The JSON `code_objects` and `host_functions` arrays and the code-object snapshot names, as
//! upstream's writer lays them out: each array indexed by id, so entry 0 (and any id the log
//! holds no load of) is an all-zero placeholder; a code object's members are
//! `rocprofiler_callback_tracing_code_object_load_data_t`'s (`memory_base`/`memory_size` only
//! for memory storage), a host function's
//! `rocprofiler_callback_tracing_code_object_host_kernel_symbol_register_data_t`'s plus the
//! formatted, demangled and truncated names (see [`crate::code_objects`] for how a host
//! function finds its kernel).

use super::{Dim3, Handle};
use crate::code_objects::{CodeObject, HostFunction, code_objects, host_functions};
use serde::Serialize;
use serde::ser::{SerializeSeq, Serializer};
use trace_records::ProcessTrace;

/// `sizeof(rocprofiler_callback_tracing_code_object_load_data_t)`.
const CODE_OBJECT_SIZE: u64 = 88;
/// `sizeof(rocprofiler_callback_tracing_code_object_host_kernel_symbol_register_data_t)`.
const HOST_FUNCTION_SIZE: u64 = 120;
/// `ROCPROFILER_CODE_OBJECT_STORAGE_TYPE_MEMORY`.
const STORAGE_MEMORY: u32 = 2;

#[derive(Serialize)]
struct CodeObjectOut<'t> {
    size: u64,
    code_object_id: u64,
    agent_id: Handle,
    uri: &'t str,
    load_base: u64,
    load_size: u64,
    load_delta: i64,
    storage_type: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    memory_base: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    memory_size: Option<u64>,
}

impl<'t> CodeObjectOut<'t> {
    fn placeholder() -> Self {
        Self {
            size: 0,
            code_object_id: 0,
            agent_id: Handle::of(0),
            uri: "",
            load_base: 0,
            load_size: 0,
            load_delta: 0,
            storage_type: 0,
            memory_base: None,
            memory_size: None,
        }
    }

    fn of(trace: &'t ProcessTrace, c: &CodeObject) -> Self {
        let l = &c.load;
        let memory = l.storage_type == STORAGE_MEMORY;
        Self {
            size: CODE_OBJECT_SIZE,
            code_object_id: l.code_object_id,
            agent_id: Handle::agent(l.agent_node_id),
            uri: trace.string(l.uri),
            load_base: l.load_base,
            load_size: l.load_size,
            load_delta: l.load_delta as i64,
            storage_type: l.storage_type,
            memory_base: memory.then_some(l.memory_base),
            memory_size: memory.then_some(l.memory_size),
        }
    }
}

/// The `code_objects` array of `trace`.
pub(super) struct CodeObjects<'t>(pub &'t ProcessTrace);

impl Serialize for CodeObjects<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let objects = code_objects(self.0);
        let mut seq = s.serialize_seq(None)?;
        seq.serialize_element(&CodeObjectOut::placeholder())?;
        let mut next = 1;
        for c in &objects {
            // Ids the log holds no load of are placeholders, so entry i is code object i.
            while next < c.load.code_object_id {
                seq.serialize_element(&CodeObjectOut::placeholder())?;
                next += 1;
            }
            seq.serialize_element(&CodeObjectOut::of(self.0, c))?;
            next = c.load.code_object_id + 1;
        }
        seq.end()
    }
}

#[derive(Serialize)]
struct HostFunctionOut<'t> {
    size: u64,
    host_function_id: u64,
    kernel_id: u64,
    code_object_id: u64,
    host_function: Handle,
    modules: Handle,
    device_function: &'t str,
    thread_limit: u32,
    thread_ids: Dim3,
    block_ids: Dim3,
    block_dims: Dim3,
    grid_dims: Dim3,
    workgroup_size: u64,
    formatted_host_function_name: &'t str,
    demangled_host_function_name: String,
    truncated_host_function_name: String,
}

impl<'t> HostFunctionOut<'t> {
    fn placeholder() -> Self {
        Self {
            size: 0,
            host_function_id: 0,
            kernel_id: 0,
            code_object_id: 0,
            host_function: Handle::of(0),
            modules: Handle::of(0),
            device_function: "",
            thread_limit: 0,
            thread_ids: Dim3::of([0; 3]),
            block_ids: Dim3::of([0; 3]),
            block_dims: Dim3::of([0; 3]),
            grid_dims: Dim3::of([0; 3]),
            workgroup_size: 0,
            formatted_host_function_name: "",
            demangled_host_function_name: String::new(),
            truncated_host_function_name: String::new(),
        }
    }

    fn of(trace: &'t ProcessTrace, h: &HostFunction<'_>) -> Self {
        let r = h.record;
        // The name as the reader left it (demangled unless -M, like the kernel symbols').
        let name = trace.string(r.device_function);
        let demangled = crate::rename::demangled(name);
        let truncated = crate::rename::truncate_name(&demangled);
        Self {
            size: HOST_FUNCTION_SIZE,
            host_function_id: h.id,
            kernel_id: h.symbol.kernel_id,
            code_object_id: h.symbol.code_object_id.into(),
            host_function: Handle::of(r.host_function),
            modules: Handle::of(r.modules),
            device_function: name,
            thread_limit: r.thread_limit,
            thread_ids: Dim3::of(r.thread_ids),
            block_ids: Dim3::of(r.block_ids),
            block_dims: Dim3::of(r.block_dims),
            grid_dims: Dim3::of(r.grid_dims),
            workgroup_size: r.workgroup_size.into(),
            formatted_host_function_name: name,
            demangled_host_function_name: demangled,
            truncated_host_function_name: truncated,
        }
    }
}

/// The `host_functions` array of `trace`.
pub(super) struct HostFunctions<'t>(pub &'t ProcessTrace);

impl Serialize for HostFunctions<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(None)?;
        seq.serialize_element(&HostFunctionOut::placeholder())?;
        for h in &host_functions(self.0) {
            seq.serialize_element(&HostFunctionOut::of(self.0, h))?;
        }
        seq.end()
    }
}

/// `strings.code_object_snapshot_filenames`: the file name of each code object the thread
/// trace saved, at its id's index (`""` for the others), as upstream's writer fills it.
pub(super) fn snapshot_filenames(trace: &ProcessTrace) -> Vec<&str> {
    let mut names: Vec<&str> = Vec::new();
    for c in &trace.docs.code_objects {
        if !c.file.is_empty()
            && let Ok(id) = usize::try_from(c.id)
            && id < 1 << 20
        {
            if names.len() <= id {
                names.resize(id + 1, "");
            }
            names[id] = c.file.rsplit('/').next().unwrap_or(&c.file);
        }
    }
    names
}
