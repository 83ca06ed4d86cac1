//! Thread trace (ATT): binding AMD's `librocprof-trace-decoder.so`, decoding captured SQTT
//! streams, and writing rocprofv3's ATT outputs.
//!
//! During the run, the tool inside the application only *captures*: it saves one raw stream
//! per shader engine (`<prefix>_<agent>_shader_engine_<se>_<dispatch>.att`) and every loaded
//! code object (`<prefix>_<gpu>_code_object_id_<id>.out`). **Decoding happens in the `rocprof`
//! CLI after the application has exited, never in the profiled process**: the decoder is a
//! large closed-source library that could crash or stall the application, and it is not needed
//! until the outputs are written.
//!
//! The CLI's sequence, with this crate:
//! 1. before the run, [`library::probe`] (or [`find`]) to refuse or warn early when no usable
//!    decoder exists;
//! 2. after the run, [`Decoder::load`] once;
//! 3. fill a [`CodeObjectTable`] from the saved code objects, and pick an [`Isa`]:
//!    [`ComgrIsa`] (instructions disassembled on demand by comgr: [`Comgr::open`], then
//!    [`Comgr::disassembler`] for the agent's [`comgr::isa_name`]), [`ListingIsa`] over a
//!    [`Listing`] from a [`Disassembler`], or [`ByAddress`] (warn once that instruction sizes
//!    are then guessed);
//! 4. per dispatch, [`Decoder::decode_stream`] once per SE stream (a failure returns the
//!    records received so far in [`Error::partial`]; keep the `.att` file and report);
//! 5. with comgr, [`ComgrDisassembler::list_kernels`] for the [`comgr::kernel_entries`] the
//!    records name, which fills a [`Listing`] and adds the swept kernels to the table;
//! 6. [`AttWriter::write_dispatch`] with all SE results of that dispatch (and the listing).
//!
//! Modules: [`abi`] (the C ABI), [`library`] (search and loading), [`decode`] (one
//! `parse_data` call and its callbacks), [`codeobj`] (code objects, pc resolution, ISA
//! sources), [`comgr`] (disassembly with AMD's Code Object Manager), [`outputs`] (the files
//! rocprofv3 writes).

#![deny(missing_docs)]

pub mod abi;
pub mod codeobj;
pub mod comgr;
pub mod decode;
mod error;
pub mod library;
pub mod outputs;
mod search;
mod staged_dir;

pub use abi::{DecoderInfo, DecoderStatus, Pc};
pub use codeobj::{
    ByAddress, CodeObject, CodeObjectTable, DisassembledInstruction, Disassembler, KernelSymbol,
    Listing, ListingIsa,
};
pub use comgr::{Comgr, ComgrDisassembler, ComgrIsa, ComgrStatus, KernelEntry, Sweep, SweepStop};
pub use decode::{Decoded, Info, Inst, Instruction, Isa, Occupancy, Wave, WaveState};
pub use error::Error;
pub use library::{Decoder, DecoderFns, SearchEnv, find, probe};
pub use outputs::{
    AttWriter, BackgroundWriter, DispatchSummary, DispatchTrace, OutputOptions, ShaderEngineTrace,
    Stats,
};
