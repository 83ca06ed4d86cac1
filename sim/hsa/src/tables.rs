//! The runtime's API tables (`hsa_api_trace.h`) and the exported functions that call through
//! them.
//!
//! Each table is described once, in slot order, by [`api_table!`]: a slot is either a bare
//! name (not simulated: it points at a stub that returns `HSA_STATUS_ERROR` and says so once on
//! stderr) or a name with its C signature and implementation. From that list the macro
//! generates the `#[repr(C)]` table type (`ApiTableVersion` + one pointer per slot), the slot
//! enum (indices), the slot-name list, the static table, and — for the core and AMD-extension
//! tables — one `#[no_mangle]` export per slot that loads the slot and calls through it, so a
//! tool that rewrites the table in place intercepts the application's calls.

use std::ffi::{c_char, c_void};
use std::sync::atomic::{AtomicPtr, Ordering};

use crate::types::*;

/// `HSA_API_TABLE_MAJOR_VERSION` / `STEP`.
pub const API_TABLE_MAJOR: u32 = 3;
pub const API_TABLE_STEP: u32 = 1;
pub const CORE_MAJOR: u32 = 2;
pub const CORE_STEP: u32 = 0;
pub const AMD_EXT_MAJOR: u32 = 2;
pub const AMD_EXT_STEP: u32 = 7;
pub const FINALIZER_MAJOR: u32 = 2;
pub const FINALIZER_STEP: u32 = 0;
pub const IMAGE_MAJOR: u32 = 2;
pub const IMAGE_STEP: u32 = 1;
pub const TOOLS_MAJOR: u32 = 1;
pub const TOOLS_STEP: u32 = 0;
pub const PC_SAMPLING_MAJOR: u32 = 1;
pub const PC_SAMPLING_STEP: u32 = 0;

/// Table ids used by the stubs to name themselves.
pub const TABLE_CORE: usize = 0;
pub const TABLE_AMD_EXT: usize = 1;
pub const TABLE_FINALIZER: usize = 2;
pub const TABLE_IMAGE: usize = 3;
pub const TABLE_TOOLS: usize = 4;
pub const TABLE_PC_SAMPLING: usize = 5;

/// The stub behind every slot the simulator does not implement.
///
/// # Safety
///
/// None: it reads no argument (harmless with any caller signature on x86-64 SysV).
pub unsafe extern "C" fn stub<const TABLE: usize, const SLOT: usize>() -> Status {
    let _ = std::panic::catch_unwind(|| not_implemented(TABLE, SLOT));
    ERROR
}

fn slot_name(table: usize, slot: usize) -> &'static str {
    let names: &[&str] = match table {
        TABLE_CORE => &CORE_NAMES,
        TABLE_AMD_EXT => &AMD_EXT_NAMES,
        TABLE_FINALIZER => &FINALIZER_NAMES,
        TABLE_IMAGE => &IMAGE_NAMES,
        TABLE_TOOLS => &TOOLS_NAMES,
        _ => &PC_SAMPLING_NAMES,
    };
    names.get(slot).copied().unwrap_or("?")
}

fn not_implemented(table: usize, slot: usize) {
    crate::guard::say_once(format!(
        "libhsa-runtime64 (sim): {} is not implemented",
        slot_name(table, slot)
    ));
}

macro_rules! slot_pointer {
    ($table_id:expr, $Slot:ident, $name:ident) => {
        AtomicPtr::new(
            stub::<{ $table_id }, { $Slot::$name as usize }> as unsafe extern "C" fn() -> Status
                as *mut c_void,
        )
    };
    ($table_id:expr, $Slot:ident, $name:ident, ($($ty:ty),*) -> $ret:ty = $imp:path) => {
        AtomicPtr::new({
            let f: unsafe extern "C" fn($($ty),*) -> $ret = $imp;
            f as *mut c_void
        })
    };
}

macro_rules! slot_export {
    ($TABLE:ident, $Slot:ident, $name:ident) => {
        /// Exported entry point of a slot the simulator does not implement: calls through the
        /// table (a stub returning `HSA_STATUS_ERROR` unless a tool replaced it).
        ///
        /// # Safety
        ///
        /// None beyond those of whatever the slot holds.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name() -> Status {
            let slot = $TABLE.slots[$Slot::$name as usize].load(Ordering::Acquire);
            // SAFETY: the slot holds a function taking no argument we read and returning a
            // status (the stub), or a tool's replacement of it with the real signature, which
            // on x86-64 SysV reads at most garbage argument registers.
            let f = unsafe { std::mem::transmute::<*mut c_void, unsafe extern "C" fn() -> Status>(slot) };
            // SAFETY: see above.
            unsafe { f() }
        }
    };
    ($TABLE:ident, $Slot:ident, $name:ident, ($($arg:ident : $ty:ty),*) -> $ret:ty) => {
        /// Exported entry point: calls through the runtime's API table slot of the same name.
        ///
        /// # Safety
        ///
        /// The HSA API contract of this function (valid handles and pointers).
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name($($arg: $ty),*) -> $ret {
            let slot = $TABLE.slots[$Slot::$name as usize].load(Ordering::Acquire);
            // SAFETY: the slot holds this function's implementation (type-checked when the
            // table was built) or a tool's wrapper of it with the same C signature.
            let f = unsafe { std::mem::transmute::<*mut c_void, unsafe extern "C" fn($($ty),*) -> $ret>(slot) };
            // SAFETY: the caller upholds the API contract, forwarded unchanged.
            unsafe { f($($arg),*) }
        }
    };
}

macro_rules! slot_implemented {
    () => {
        false
    };
    ($imp:path) => {
        true
    };
}

macro_rules! no_export {
    ($($tt:tt)*) => {};
}

/// Declares one API table; see the module documentation.
macro_rules! api_table {
    (
        $(#[$meta:meta])*
        table $Table:ident : $STATIC:ident, slots $Slot:ident, names $NAMES:ident,
        id $table_id:expr, version ($major:expr, $step:expr), export $export:ident;
        $( $name:ident $( ( $($arg:ident : $ty:ty),* ) -> $ret:ty = $imp:path )? ; )*
    ) => {
        /// Slot indices, in table order.
        #[allow(non_camel_case_types, dead_code, clippy::enum_variant_names)]
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        #[repr(usize)]
        pub enum $Slot { $( $name, )* }

        /// Slot names (the function names), in table order.
        pub const $NAMES: [&str; [$( stringify!($name), )*].len()] = [$( stringify!($name), )*];

        $(#[$meta])*
        #[repr(C)]
        pub struct $Table {
            pub version: ApiTableVersion,
            pub slots: [AtomicPtr<c_void>; $NAMES.len()],
        }

        /// The runtime's instance of the table (tools may rewrite its slots in place).
        pub static $STATIC: $Table = $Table {
            version: ApiTableVersion {
                major_id: $major,
                minor_id: size_of::<$Table>() as u32,
                step_id: $step,
                reserved: 0,
            },
            slots: [ $( slot_pointer!($table_id, $Slot, $name $(, ($($ty),*) -> $ret = $imp)?), )* ],
        };

        impl $Table {
            /// Per slot: whether the simulator implements it (otherwise it is a stub).
            pub const IMPLEMENTED: [bool; $NAMES.len()] = [$( slot_implemented!($($imp)?), )*];
        }

        $( $export!($STATIC, $Slot, $name $(, ($($arg : $ty),*) -> $ret)?); )*
    };
}

type AgentCallback = Option<unsafe extern "C" fn(Agent, *mut c_void) -> Status>;
type RegionCallback = Option<unsafe extern "C" fn(Region, *mut c_void) -> Status>;
type PoolCallback = Option<unsafe extern "C" fn(MemoryPool, *mut c_void) -> Status>;
type IsaCallback = Option<unsafe extern "C" fn(Isa, *mut c_void) -> Status>;
type QueueErrorCallback = Option<unsafe extern "C" fn(Status, *mut HsaQueue, *mut c_void)>;
type SymbolCallback =
    Option<unsafe extern "C" fn(Executable, ExecutableSymbol, *mut c_void) -> Status>;
type AgentSymbolCallback =
    Option<unsafe extern "C" fn(Executable, Agent, ExecutableSymbol, *mut c_void) -> Status>;
type CacheCallback = Option<unsafe extern "C" fn(Handle, *mut c_void) -> Status>;
type SignalHandler = Option<unsafe extern "C" fn(i64, *mut c_void) -> bool>;
type AsyncFunction = Option<unsafe extern "C" fn(*mut c_void)>;
type InterceptHandler = Option<crate::intercept::HandlerFn>;

use crate::{
    executable as exe, info, intercept, memory as mem, queue, runtime, scratch, signal as sig,
};

api_table! {
    /// `CoreApiTable` (125 functions).
    table CoreApiTable: CORE_TABLE, slots CoreSlot, names CORE_NAMES,
    id TABLE_CORE, version (CORE_MAJOR, CORE_STEP), export slot_export;
    hsa_init() -> Status = runtime::hsa_init;
    hsa_shut_down() -> Status = runtime::hsa_shut_down;
    hsa_system_get_info(attribute: u32, value: *mut c_void) -> Status = info::hsa_system_get_info;
    hsa_system_extension_supported(extension: u16, major: u16, minor: u16, result: *mut bool) -> Status = info::hsa_system_extension_supported;
    hsa_system_get_extension_table;
    hsa_iterate_agents(callback: AgentCallback, data: *mut c_void) -> Status = info::hsa_iterate_agents;
    hsa_agent_get_info(agent: Agent, attribute: u32, value: *mut c_void) -> Status = info::hsa_agent_get_info;
    hsa_queue_create(agent: Agent, size: u32, type_: u32, callback: QueueErrorCallback, data: *mut c_void, private_segment_size: u32, group_segment_size: u32, queue: *mut *mut HsaQueue) -> Status = queue::hsa_queue_create;
    hsa_soft_queue_create;
    hsa_queue_destroy(queue: *mut HsaQueue) -> Status = queue::hsa_queue_destroy;
    hsa_queue_inactivate(queue: *mut HsaQueue) -> Status = queue::hsa_queue_inactivate;
    hsa_queue_load_read_index_scacquire(queue: *const HsaQueue) -> u64 = queue::hsa_queue_load_read_index;
    hsa_queue_load_read_index_relaxed(queue: *const HsaQueue) -> u64 = queue::hsa_queue_load_read_index;
    hsa_queue_load_write_index_scacquire(queue: *const HsaQueue) -> u64 = queue::hsa_queue_load_write_index;
    hsa_queue_load_write_index_relaxed(queue: *const HsaQueue) -> u64 = queue::hsa_queue_load_write_index;
    hsa_queue_store_write_index_relaxed(queue: *const HsaQueue, value: u64) -> () = queue::hsa_queue_store_write_index;
    hsa_queue_store_write_index_screlease(queue: *const HsaQueue, value: u64) -> () = queue::hsa_queue_store_write_index;
    hsa_queue_cas_write_index_scacq_screl(queue: *const HsaQueue, expected: u64, value: u64) -> u64 = queue::hsa_queue_cas_write_index;
    hsa_queue_cas_write_index_scacquire(queue: *const HsaQueue, expected: u64, value: u64) -> u64 = queue::hsa_queue_cas_write_index;
    hsa_queue_cas_write_index_relaxed(queue: *const HsaQueue, expected: u64, value: u64) -> u64 = queue::hsa_queue_cas_write_index;
    hsa_queue_cas_write_index_screlease(queue: *const HsaQueue, expected: u64, value: u64) -> u64 = queue::hsa_queue_cas_write_index;
    hsa_queue_add_write_index_scacq_screl(queue: *const HsaQueue, value: u64) -> u64 = queue::hsa_queue_add_write_index;
    hsa_queue_add_write_index_scacquire(queue: *const HsaQueue, value: u64) -> u64 = queue::hsa_queue_add_write_index;
    hsa_queue_add_write_index_relaxed(queue: *const HsaQueue, value: u64) -> u64 = queue::hsa_queue_add_write_index;
    hsa_queue_add_write_index_screlease(queue: *const HsaQueue, value: u64) -> u64 = queue::hsa_queue_add_write_index;
    hsa_queue_store_read_index_relaxed(queue: *const HsaQueue, value: u64) -> () = queue::hsa_queue_store_read_index;
    hsa_queue_store_read_index_screlease(queue: *const HsaQueue, value: u64) -> () = queue::hsa_queue_store_read_index;
    hsa_agent_iterate_regions(agent: Agent, callback: RegionCallback, data: *mut c_void) -> Status = mem::hsa_agent_iterate_regions;
    hsa_region_get_info(region: Region, attribute: u32, value: *mut c_void) -> Status = mem::hsa_region_get_info;
    hsa_agent_get_exception_policies(agent: Agent, profile: u32, mask: *mut u16) -> Status = info::hsa_agent_get_exception_policies;
    hsa_agent_extension_supported(extension: u16, agent: Agent, major: u16, minor: u16, result: *mut bool) -> Status = info::hsa_agent_extension_supported;
    hsa_memory_register(ptr: *mut c_void, size: usize) -> Status = mem::hsa_memory_register;
    hsa_memory_deregister(ptr: *mut c_void, size: usize) -> Status = mem::hsa_memory_deregister;
    hsa_memory_allocate(region: Region, size: usize, ptr: *mut *mut c_void) -> Status = mem::hsa_memory_allocate;
    hsa_memory_free(ptr: *mut c_void) -> Status = mem::hsa_memory_free;
    hsa_memory_copy(dst: *mut c_void, src: *const c_void, size: usize) -> Status = mem::hsa_memory_copy;
    hsa_memory_assign_agent(ptr: *mut c_void, agent: Agent, access: u32) -> Status = mem::hsa_memory_assign_agent;
    hsa_signal_create(initial_value: i64, num_consumers: u32, consumers: *const Agent, signal: *mut Signal) -> Status = sig::hsa_signal_create;
    hsa_signal_destroy(signal: Signal) -> Status = sig::hsa_signal_destroy;
    hsa_signal_load_relaxed(signal: Signal) -> i64 = sig::hsa_signal_load;
    hsa_signal_load_scacquire(signal: Signal) -> i64 = sig::hsa_signal_load;
    hsa_signal_store_relaxed(signal: Signal, value: i64) -> () = sig::hsa_signal_store;
    hsa_signal_store_screlease(signal: Signal, value: i64) -> () = sig::hsa_signal_store;
    hsa_signal_wait_relaxed(signal: Signal, condition: u32, compare_value: i64, timeout_hint: u64, wait_state_hint: u32) -> i64 = sig::hsa_signal_wait;
    hsa_signal_wait_scacquire(signal: Signal, condition: u32, compare_value: i64, timeout_hint: u64, wait_state_hint: u32) -> i64 = sig::hsa_signal_wait;
    hsa_signal_and_relaxed(signal: Signal, value: i64) -> () = sig::hsa_signal_and;
    hsa_signal_and_scacquire(signal: Signal, value: i64) -> () = sig::hsa_signal_and;
    hsa_signal_and_screlease(signal: Signal, value: i64) -> () = sig::hsa_signal_and;
    hsa_signal_and_scacq_screl(signal: Signal, value: i64) -> () = sig::hsa_signal_and;
    hsa_signal_or_relaxed(signal: Signal, value: i64) -> () = sig::hsa_signal_or;
    hsa_signal_or_scacquire(signal: Signal, value: i64) -> () = sig::hsa_signal_or;
    hsa_signal_or_screlease(signal: Signal, value: i64) -> () = sig::hsa_signal_or;
    hsa_signal_or_scacq_screl(signal: Signal, value: i64) -> () = sig::hsa_signal_or;
    hsa_signal_xor_relaxed(signal: Signal, value: i64) -> () = sig::hsa_signal_xor;
    hsa_signal_xor_scacquire(signal: Signal, value: i64) -> () = sig::hsa_signal_xor;
    hsa_signal_xor_screlease(signal: Signal, value: i64) -> () = sig::hsa_signal_xor;
    hsa_signal_xor_scacq_screl(signal: Signal, value: i64) -> () = sig::hsa_signal_xor;
    hsa_signal_exchange_relaxed(signal: Signal, value: i64) -> i64 = sig::hsa_signal_exchange;
    hsa_signal_exchange_scacquire(signal: Signal, value: i64) -> i64 = sig::hsa_signal_exchange;
    hsa_signal_exchange_screlease(signal: Signal, value: i64) -> i64 = sig::hsa_signal_exchange;
    hsa_signal_exchange_scacq_screl(signal: Signal, value: i64) -> i64 = sig::hsa_signal_exchange;
    hsa_signal_add_relaxed(signal: Signal, value: i64) -> () = sig::hsa_signal_add;
    hsa_signal_add_scacquire(signal: Signal, value: i64) -> () = sig::hsa_signal_add;
    hsa_signal_add_screlease(signal: Signal, value: i64) -> () = sig::hsa_signal_add;
    hsa_signal_add_scacq_screl(signal: Signal, value: i64) -> () = sig::hsa_signal_add;
    hsa_signal_subtract_relaxed(signal: Signal, value: i64) -> () = sig::hsa_signal_subtract;
    hsa_signal_subtract_scacquire(signal: Signal, value: i64) -> () = sig::hsa_signal_subtract;
    hsa_signal_subtract_screlease(signal: Signal, value: i64) -> () = sig::hsa_signal_subtract;
    hsa_signal_subtract_scacq_screl(signal: Signal, value: i64) -> () = sig::hsa_signal_subtract;
    hsa_signal_cas_relaxed(signal: Signal, expected: i64, value: i64) -> i64 = sig::hsa_signal_cas;
    hsa_signal_cas_scacquire(signal: Signal, expected: i64, value: i64) -> i64 = sig::hsa_signal_cas;
    hsa_signal_cas_screlease(signal: Signal, expected: i64, value: i64) -> i64 = sig::hsa_signal_cas;
    hsa_signal_cas_scacq_screl(signal: Signal, expected: i64, value: i64) -> i64 = sig::hsa_signal_cas;
    hsa_isa_from_name(name: *const c_char, isa: *mut Isa) -> Status = info::hsa_isa_from_name;
    hsa_isa_get_info(isa: Isa, attribute: u32, index: u32, value: *mut c_void) -> Status = info::hsa_isa_get_info;
    hsa_isa_compatible;
    hsa_code_object_serialize;
    hsa_code_object_deserialize;
    hsa_code_object_destroy;
    hsa_code_object_get_info;
    hsa_code_object_get_symbol;
    hsa_code_symbol_get_info;
    hsa_code_object_iterate_symbols;
    hsa_executable_create(profile: u32, state: u32, options: *const c_char, executable: *mut Executable) -> Status = exe::hsa_executable_create;
    hsa_executable_destroy(executable: Executable) -> Status = exe::hsa_executable_destroy;
    hsa_executable_load_code_object;
    hsa_executable_freeze(executable: Executable, options: *const c_char) -> Status = exe::hsa_executable_freeze;
    hsa_executable_get_info(executable: Executable, attribute: u32, value: *mut c_void) -> Status = exe::hsa_executable_get_info;
    hsa_executable_global_variable_define;
    hsa_executable_agent_global_variable_define;
    hsa_executable_readonly_variable_define;
    hsa_executable_validate(executable: Executable, result: *mut u32) -> Status = exe::hsa_executable_validate;
    hsa_executable_get_symbol(executable: Executable, module_name: *const c_char, symbol_name: *const c_char, agent: Agent, call_convention: i32, symbol: *mut ExecutableSymbol) -> Status = exe::hsa_executable_get_symbol;
    hsa_executable_symbol_get_info(symbol: ExecutableSymbol, attribute: u32, value: *mut c_void) -> Status = exe::hsa_executable_symbol_get_info;
    hsa_executable_iterate_symbols(executable: Executable, callback: SymbolCallback, data: *mut c_void) -> Status = exe::hsa_executable_iterate_symbols;
    hsa_status_string(status: Status, string: *mut *const c_char) -> Status = info::hsa_status_string;
    hsa_extension_get_name;
    hsa_system_major_extension_supported(extension: u16, major: u16, minor: *mut u16, result: *mut bool) -> Status = info::hsa_system_major_extension_supported;
    hsa_system_get_major_extension_table(extension: u16, version_major: u16, table_length: usize, table: *mut c_void) -> Status = crate::loader::hsa_system_get_major_extension_table;
    hsa_agent_major_extension_supported(extension: u16, agent: Agent, major: u16, minor: *mut u16, result: *mut bool) -> Status = info::hsa_agent_major_extension_supported;
    hsa_cache_get_info;
    hsa_agent_iterate_caches(agent: Agent, callback: CacheCallback, data: *mut c_void) -> Status = info::hsa_agent_iterate_caches;
    hsa_signal_silent_store_relaxed(signal: Signal, value: i64) -> () = sig::hsa_signal_store;
    hsa_signal_silent_store_screlease(signal: Signal, value: i64) -> () = sig::hsa_signal_store;
    hsa_signal_group_create;
    hsa_signal_group_destroy;
    hsa_signal_group_wait_any_scacquire;
    hsa_signal_group_wait_any_relaxed;
    hsa_agent_iterate_isas(agent: Agent, callback: IsaCallback, data: *mut c_void) -> Status = info::hsa_agent_iterate_isas;
    hsa_isa_get_info_alt(isa: Isa, attribute: u32, value: *mut c_void) -> Status = info::hsa_isa_get_info_alt;
    hsa_isa_get_exception_policies;
    hsa_isa_get_round_method;
    hsa_wavefront_get_info;
    hsa_isa_iterate_wavefronts;
    hsa_code_object_get_symbol_from_name;
    hsa_code_object_reader_create_from_file(file: i32, reader: *mut CodeObjectReader) -> Status = exe::hsa_code_object_reader_create_from_file;
    hsa_code_object_reader_create_from_memory(code_object: *const c_void, size: usize, reader: *mut CodeObjectReader) -> Status = exe::hsa_code_object_reader_create_from_memory;
    hsa_code_object_reader_destroy(reader: CodeObjectReader) -> Status = exe::hsa_code_object_reader_destroy;
    hsa_executable_create_alt(profile: u32, rounding_mode: u32, options: *const c_char, executable: *mut Executable) -> Status = exe::hsa_executable_create_alt;
    hsa_executable_load_program_code_object;
    hsa_executable_load_agent_code_object(executable: Executable, agent: Agent, reader: CodeObjectReader, options: *const c_char, loaded: *mut LoadedCodeObject) -> Status = exe::hsa_executable_load_agent_code_object;
    hsa_executable_validate_alt(executable: Executable, options: *const c_char, result: *mut u32) -> Status = exe::hsa_executable_validate_alt;
    hsa_executable_get_symbol_by_name(executable: Executable, symbol_name: *const c_char, agent: *const Agent, symbol: *mut ExecutableSymbol) -> Status = exe::hsa_executable_get_symbol_by_name;
    hsa_executable_iterate_agent_symbols(executable: Executable, agent: Agent, callback: AgentSymbolCallback, data: *mut c_void) -> Status = exe::hsa_executable_iterate_agent_symbols;
    hsa_executable_iterate_program_symbols(executable: Executable, callback: SymbolCallback, data: *mut c_void) -> Status = exe::hsa_executable_iterate_program_symbols;
}

api_table! {
    /// `AmdExtTable` (74 functions, step 7).
    table AmdExtTable: AMD_EXT_TABLE, slots AmdExtSlot, names AMD_EXT_NAMES,
    id TABLE_AMD_EXT, version (AMD_EXT_MAJOR, AMD_EXT_STEP), export slot_export;
    hsa_amd_coherency_get_type;
    hsa_amd_coherency_set_type;
    hsa_amd_profiling_set_profiler_enabled(queue: *mut HsaQueue, enable: i32) -> Status = queue::hsa_amd_profiling_set_profiler_enabled;
    hsa_amd_profiling_async_copy_enable(enable: bool) -> Status = crate::copy::hsa_amd_profiling_async_copy_enable;
    hsa_amd_profiling_get_dispatch_time(agent: Agent, signal: Signal, time: *mut ProfilingTime) -> Status = queue::hsa_amd_profiling_get_dispatch_time;
    hsa_amd_profiling_get_async_copy_time(signal: Signal, time: *mut ProfilingTime) -> Status = crate::copy::hsa_amd_profiling_get_async_copy_time;
    hsa_amd_profiling_convert_tick_to_system_domain(agent: Agent, agent_tick: u64, system_tick: *mut u64) -> Status = queue::hsa_amd_profiling_convert_tick_to_system_domain;
    hsa_amd_signal_async_handler(signal: Signal, condition: u32, value: i64, handler: SignalHandler, arg: *mut c_void) -> Status = sig::hsa_amd_signal_async_handler;
    hsa_amd_async_function(callback: AsyncFunction, arg: *mut c_void) -> Status = sig::hsa_amd_async_function;
    hsa_amd_signal_wait_any(signal_count: u32, signals: *mut Signal, conditions: *mut u32, compare_values: *mut i64, timeout_hint: u64, wait_hint: u32, satisfying_value: *mut i64) -> u32 = sig::hsa_amd_signal_wait_any;
    hsa_amd_queue_cu_set_mask;
    hsa_amd_memory_pool_get_info(pool: MemoryPool, attribute: u32, value: *mut c_void) -> Status = mem::hsa_amd_memory_pool_get_info;
    hsa_amd_agent_iterate_memory_pools(agent: Agent, callback: PoolCallback, data: *mut c_void) -> Status = mem::hsa_amd_agent_iterate_memory_pools;
    hsa_amd_memory_pool_allocate(pool: MemoryPool, size: usize, flags: u32, ptr: *mut *mut c_void) -> Status = mem::hsa_amd_memory_pool_allocate;
    hsa_amd_memory_pool_free(ptr: *mut c_void) -> Status = mem::hsa_amd_memory_pool_free;
    hsa_amd_memory_async_copy(dst: *mut c_void, dst_agent: Agent, src: *const c_void, src_agent: Agent, size: usize, num_dep_signals: u32, dep_signals: *const Signal, completion_signal: Signal) -> Status = crate::copy::hsa_amd_memory_async_copy;
    hsa_amd_memory_async_copy_on_engine(dst: *mut c_void, dst_agent: Agent, src: *const c_void, src_agent: Agent, size: usize, num_dep_signals: u32, dep_signals: *const Signal, completion_signal: Signal, engine_id: u32, force_copy_on_sdma: bool) -> Status = crate::copy::hsa_amd_memory_async_copy_on_engine;
    hsa_amd_memory_copy_engine_status(dst_agent: Agent, src_agent: Agent, engine_ids_mask: *mut u32) -> Status = crate::copy::hsa_amd_memory_copy_engine_status;
    hsa_amd_agent_memory_pool_get_info(agent: Agent, pool: MemoryPool, attribute: u32, value: *mut c_void) -> Status = mem::hsa_amd_agent_memory_pool_get_info;
    hsa_amd_agents_allow_access(num_agents: u32, agents: *const Agent, flags: *const u32, ptr: *const c_void) -> Status = mem::hsa_amd_agents_allow_access;
    hsa_amd_memory_pool_can_migrate;
    hsa_amd_memory_migrate;
    hsa_amd_memory_lock(host_ptr: *mut c_void, size: usize, agents: *mut Agent, num_agent: i32, agent_ptr: *mut *mut c_void) -> Status = mem::hsa_amd_memory_lock;
    hsa_amd_memory_unlock(host_ptr: *mut c_void) -> Status = mem::hsa_amd_memory_unlock;
    hsa_amd_memory_fill(ptr: *mut c_void, value: u32, count: usize) -> Status = mem::hsa_amd_memory_fill;
    hsa_amd_interop_map_buffer;
    hsa_amd_interop_unmap_buffer;
    hsa_amd_image_create;
    hsa_amd_pointer_info;
    hsa_amd_pointer_info_set_userdata;
    hsa_amd_ipc_memory_create;
    hsa_amd_ipc_memory_attach;
    hsa_amd_ipc_memory_detach;
    hsa_amd_signal_create(initial_value: i64, num_consumers: u32, consumers: *const Agent, attributes: u64, signal: *mut Signal) -> Status = sig::hsa_amd_signal_create;
    hsa_amd_ipc_signal_create;
    hsa_amd_ipc_signal_attach;
    hsa_amd_register_system_event_handler;
    hsa_amd_queue_intercept_create(agent: Agent, size: u32, type_: u32, callback: QueueErrorCallback, data: *mut c_void, private_segment_size: u32, group_segment_size: u32, queue: *mut *mut HsaQueue) -> Status = intercept::hsa_amd_queue_intercept_create;
    hsa_amd_queue_intercept_register(queue: *mut HsaQueue, handler: InterceptHandler, user_data: *mut c_void) -> Status = intercept::hsa_amd_queue_intercept_register;
    hsa_amd_queue_set_priority(queue: *mut HsaQueue, priority: u32) -> Status = queue::hsa_amd_queue_set_priority;
    hsa_amd_memory_async_copy_rect;
    hsa_amd_runtime_queue_create_register;
    hsa_amd_memory_lock_to_pool;
    hsa_amd_register_deallocation_callback;
    hsa_amd_deregister_deallocation_callback;
    hsa_amd_signal_value_pointer(signal: Signal, value_ptr: *mut *mut i64) -> Status = sig::hsa_amd_signal_value_pointer;
    hsa_amd_svm_attributes_set;
    hsa_amd_svm_attributes_get;
    hsa_amd_svm_prefetch_async;
    hsa_amd_spm_acquire;
    hsa_amd_spm_release;
    hsa_amd_spm_set_dest_buffer;
    hsa_amd_queue_cu_get_mask;
    hsa_amd_portable_export_dmabuf;
    hsa_amd_portable_close_dmabuf;
    hsa_amd_vmem_address_reserve;
    hsa_amd_vmem_address_free;
    hsa_amd_vmem_handle_create;
    hsa_amd_vmem_handle_release;
    hsa_amd_vmem_map;
    hsa_amd_vmem_unmap;
    hsa_amd_vmem_set_access;
    hsa_amd_vmem_get_access;
    hsa_amd_vmem_export_shareable_handle;
    hsa_amd_vmem_import_shareable_handle;
    hsa_amd_vmem_retain_alloc_handle;
    hsa_amd_vmem_get_alloc_properties_from_handle;
    hsa_amd_agent_set_async_scratch_limit;
    hsa_amd_queue_get_info(queue: *mut HsaQueue, attribute: u32, value: *mut c_void) -> Status = queue::hsa_amd_queue_get_info;
    hsa_amd_vmem_address_reserve_align;
    hsa_amd_enable_logging;
    hsa_amd_signal_wait_all;
    hsa_amd_memory_get_preferred_copy_engine;
    hsa_amd_portable_export_dmabuf_v2;
}

api_table! {
    /// `FinalizerExtTable` (not simulated).
    table FinalizerExtTable: FINALIZER_TABLE, slots FinalizerSlot, names FINALIZER_NAMES,
    id TABLE_FINALIZER, version (FINALIZER_MAJOR, FINALIZER_STEP), export no_export;
    hsa_ext_program_create;
    hsa_ext_program_destroy;
    hsa_ext_program_add_module;
    hsa_ext_program_iterate_modules;
    hsa_ext_program_get_info;
    hsa_ext_program_finalize;
}

api_table! {
    /// `ImageExtTable` (not simulated).
    table ImageExtTable: IMAGE_TABLE, slots ImageSlot, names IMAGE_NAMES,
    id TABLE_IMAGE, version (IMAGE_MAJOR, IMAGE_STEP), export no_export;
    hsa_ext_image_get_capability;
    hsa_ext_image_data_get_info;
    hsa_ext_image_create;
    hsa_ext_image_import;
    hsa_ext_image_export;
    hsa_ext_image_copy;
    hsa_ext_image_clear;
    hsa_ext_image_destroy;
    hsa_ext_sampler_create;
    hsa_ext_sampler_destroy;
    hsa_ext_image_get_capability_with_layout;
    hsa_ext_image_data_get_info_with_layout;
    hsa_ext_image_create_with_layout;
    hsa_ext_sampler_create_v2;
}

api_table! {
    /// `ToolsApiTable`: the scratch events the runtime raises (`scratch`); each slot is
    /// ROCr's no-op until a tool replaces it.
    table ToolsApiTable: TOOLS_TABLE, slots ToolsSlot, names TOOLS_NAMES,
    id TABLE_TOOLS, version (TOOLS_MAJOR, TOOLS_STEP), export no_export;
    hsa_amd_tool_scratch_event_alloc_start(event: *const c_void) -> Status = scratch::no_tool;
    hsa_amd_tool_scratch_event_alloc_end(event: *const c_void) -> Status = scratch::no_tool;
    hsa_amd_tool_scratch_event_free_start(event: *const c_void) -> Status = scratch::no_tool;
    hsa_amd_tool_scratch_event_free_end(event: *const c_void) -> Status = scratch::no_tool;
    hsa_amd_tool_scratch_event_async_reclaim_start(event: *const c_void) -> Status = scratch::no_tool;
    hsa_amd_tool_scratch_event_async_reclaim_end(event: *const c_void) -> Status = scratch::no_tool;
}

api_table! {
    /// `PcSamplingExtTable` (not simulated: PC sampling needs KFD).
    table PcSamplingExtTable: PC_SAMPLING_TABLE, slots PcSamplingSlot, names PC_SAMPLING_NAMES,
    id TABLE_PC_SAMPLING, version (PC_SAMPLING_MAJOR, PC_SAMPLING_STEP), export no_export;
    hsa_ven_amd_pcs_iterate_configuration;
    hsa_ven_amd_pcs_create;
    hsa_ven_amd_pcs_create_from_id;
    hsa_ven_amd_pcs_destroy;
    hsa_ven_amd_pcs_start;
    hsa_ven_amd_pcs_stop;
    hsa_ven_amd_pcs_flush;
}

/// The root `HsaApiTable` (64 bytes) handed to rocprofiler-register.
#[repr(C)]
pub struct HsaApiTable {
    pub version: ApiTableVersion,
    pub core: AtomicPtr<CoreApiTable>,
    pub amd_ext: AtomicPtr<AmdExtTable>,
    pub finalizer_ext: AtomicPtr<FinalizerExtTable>,
    pub image_ext: AtomicPtr<ImageExtTable>,
    pub tools: AtomicPtr<ToolsApiTable>,
    pub pc_sampling_ext: AtomicPtr<PcSamplingExtTable>,
}

/// The runtime's root table.
pub static HSA_API_TABLE: HsaApiTable = HsaApiTable {
    version: ApiTableVersion {
        major_id: API_TABLE_MAJOR,
        minor_id: size_of::<HsaApiTable>() as u32,
        step_id: API_TABLE_STEP,
        reserved: 0,
    },
    core: AtomicPtr::new(&raw const CORE_TABLE as *mut CoreApiTable),
    amd_ext: AtomicPtr::new(&raw const AMD_EXT_TABLE as *mut AmdExtTable),
    finalizer_ext: AtomicPtr::new(&raw const FINALIZER_TABLE as *mut FinalizerExtTable),
    image_ext: AtomicPtr::new(&raw const IMAGE_TABLE as *mut ImageExtTable),
    tools: AtomicPtr::new(&raw const TOOLS_TABLE as *mut ToolsApiTable),
    pc_sampling_ext: AtomicPtr::new(&raw const PC_SAMPLING_TABLE as *mut PcSamplingExtTable),
};

const _: () = {
    use std::mem::offset_of;
    assert!(size_of::<ApiTableVersion>() == 16);
    assert!(size_of::<CoreApiTable>() == 1016);
    assert!(CORE_NAMES.len() == 125);
    assert!(offset_of!(CoreApiTable, slots) == 16);
    assert!(size_of::<AmdExtTable>() == 608);
    assert!(AMD_EXT_NAMES.len() == 67 + AMD_EXT_STEP as usize);
    assert!(offset_of!(AmdExtTable, slots) == 16);
    assert!(size_of::<FinalizerExtTable>() == 64);
    assert!(size_of::<ImageExtTable>() == 128);
    assert!(size_of::<ToolsApiTable>() == 64);
    assert!(size_of::<PcSamplingExtTable>() == 72);
    assert!(size_of::<HsaApiTable>() == 64);
    assert!(offset_of!(HsaApiTable, core) == 16);
    assert!(offset_of!(HsaApiTable, amd_ext) == 24);
    assert!(offset_of!(HsaApiTable, finalizer_ext) == 32);
    assert!(offset_of!(HsaApiTable, image_ext) == 40);
    assert!(offset_of!(HsaApiTable, tools) == 48);
    assert!(offset_of!(HsaApiTable, pc_sampling_ext) == 56);
};
