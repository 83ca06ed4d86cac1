//! Thread trace around a run: finding the decoder before it ([`plan`]), asking the tool to
//! capture ([`request`]), and after it giving the tool's raw data rocprofv3's names beside the
//! other outputs and decoding every dispatch (one `parse_data` per engine) into rocprofv3's
//! `ui_output_agent_<agent>_dispatch_<id>/` directories and stats CSV ([`write_outputs`]).
//!
//! Unlike rocprofv3 a missing or broken decoder does not stop the run (nor abort the
//! application at its end): it is said before the run, and the raw `.att` and `.out` files are
//! written undecoded.

use crate::notice::{LaunchNotice, Progress, Report, Task};
use crate::plan::{AttConfig, AttPlan};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use trace_export::output::OutputPrefix;
use trace_records::ProcessTrace;
use trace_records::docs::ThreadTraceRequest;

/// Subdirectory of the record directory where the tool saves the raw data.
pub const RAW_DIR: &str = "att";

/// Finds and loads the decoder as rocprofv3 would (see the module text); a problem is said now,
/// and the run goes on.
pub fn plan(config: &AttConfig, report: &mut dyn Report) -> AttPlan {
    let env = att::library::SearchEnv::from_process();
    let decoder = match att::library::probe_trusted(&config.library_path, &env) {
        Ok(path) => Some(path),
        Err(e) => {
            report.notice(
                LaunchNotice::NoDecoder {
                    reason: e.to_string(),
                    library: e.is_decoder_library(),
                }
                .into(),
            );
            None
        }
    };
    AttPlan {
        config: config.clone(),
        decoder,
    }
}

/// What the tool is asked to capture, with the raw data going to `record_dir/att`.
pub fn request(plan: &AttPlan, record_dir: &Path) -> ThreadTraceRequest {
    let c = &plan.config;
    ThreadTraceRequest {
        target_cu: c.target_cu,
        se_mask: c.shader_engine_mask,
        simd_select: c.simd_select,
        buffer_size: c.buffer_size,
        gpu_index: c.gpu_index.clone(),
        serialize_all: c.serialize_all,
        dir: record_dir.join(RAW_DIR).display().to_string(),
    }
}

/// rocprofv3's agent handle of a driver node in file names (the JSON's handle: node id + 1).
fn agent_handle(node: u32) -> u64 {
    u64::from(node) + 1
}

/// The name (gfx target) of the agent on driver node `node`, if process `t` recorded it.
fn agent_name(t: &ProcessTrace, node: u32) -> Option<&str> {
    t.docs
        .agents()
        .iter()
        .find(|a| a.node_id == node)
        .map(|a| a.name.as_str())
}

/// What [`write_outputs`] did for one process.
#[derive(Debug, Default)]
pub struct Written {
    /// Raw files staged beside the other outputs (committed with them).
    pub staged: Vec<PathBuf>,
    /// Decoded dispatch directories and stats files, written in place.
    pub decoded: Vec<PathBuf>,
    /// What the user should know.
    pub warnings: Vec<String>,
}

/// The thread-trace outputs of process `t`: its raw files staged under `staged` (rocprofv3's
/// names), then, with a decoder, every traced dispatch decoded into `final_dir`.
pub fn write_outputs(
    t: &ProcessTrace,
    plan: &AttPlan,
    record_dir: &Path,
    staged: &OutputPrefix,
    final_dir: &Path,
    report: &mut dyn Report,
) -> Written {
    let mut w = Written::default();
    let raw = record_dir.join(RAW_DIR);
    let prefix = staged
        .0
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stage_dir = staged.0.parent().unwrap_or(Path::new("."));
    let gpu_name =
        |node: u32| agent_name(t, node).map_or_else(|| format!("node{node}"), str::to_owned);
    let copy = |from: &str, to: String, w: &mut Written| {
        let target = stage_dir.join(to);
        match std::fs::copy(raw.join(from), &target) {
            Ok(_) => w.staged.push(target),
            Err(e) => w.warnings.push(format!(
                "thread trace: cannot copy {} ({e})",
                raw.join(from).display()
            )),
        }
    };
    for c in &t.docs.code_objects {
        if !c.file.is_empty() {
            let name =
                att::outputs::code_object_file_name(&prefix, &gpu_name(c.agent_node_id), c.id);
            copy(&c.file, name, &mut w);
        }
    }
    for d in &t.docs.thread_traces {
        for se in &d.shader_engines {
            if se.file.is_empty() {
                continue;
            }
            let name = att::outputs::se_stream_file_name(
                &prefix,
                agent_handle(d.agent_node_id),
                se.se,
                d.dispatch_id,
            );
            let target = stage_dir.join(name);
            match engine_data(&raw, se).and_then(|data| std::fs::write(&target, data)) {
                Ok(()) => w.staged.push(target),
                Err(e) => w.warnings.push(format!(
                    "thread trace: cannot save dispatch {} shader engine {} ({e})",
                    d.dispatch_id, se.se
                )),
            }
            if se.full {
                w.warnings.push(format!(
                    "thread trace: dispatch {} filled the buffer of shader engine {} ({} bytes): \
                     its trace is cut short; give a larger --att-buffer-size (now {:#x})",
                    d.dispatch_id, se.se, se.bytes, plan.config.buffer_size
                ));
            }
        }
    }
    // A dispatch whose packets did not run has nothing to decode (`convert` explains it).
    if !t
        .docs
        .thread_traces
        .iter()
        .any(|d| d.packets_ran != Some(false))
    {
        return w;
    }
    let Some(path) = &plan.decoder else {
        return w;
    };
    let decoder = match att::Decoder::load_trusted(path) {
        Ok(d) => d,
        Err(e) => {
            w.warnings.push(format!("thread trace: not decoded: {e}"));
            return w;
        }
    };
    decode_all(t, &decoder, &raw, final_dir, &mut w, report);
    w
}

/// One engine's data from the process's data file in `raw`.
fn engine_data(
    raw: &Path,
    se: &trace_records::docs::ShaderEngineCapture,
) -> std::io::Result<Vec<u8>> {
    use std::os::unix::fs::FileExt as _;
    // The tool names a file of its own in `raw`: anything else (a path, `..`) is refused.
    if se.file.is_empty() || se.file.contains('/') || se.file == "." || se.file == ".." {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("the log names {:?}, which is not a file name", se.file),
        ));
    }
    let file = std::fs::File::open(raw.join(&se.file))?;
    // The document names the range; the file decides what exists (a damaged or hostile
    // document must not size the allocation).
    let size = file.metadata()?.len();
    if se.offset.checked_add(se.bytes).is_none_or(|end| end > size) {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!(
                "the log names {} bytes at offset {} of {}, which holds {size}",
                se.bytes, se.offset, se.file
            ),
        ));
    }
    let len = usize::try_from(se.bytes).map_err(std::io::Error::other)?;
    let mut data = vec![0u8; len];
    file.read_exact_at(&mut data, se.offset)?;
    Ok(data)
}

/// Decodes every traced dispatch of `t` into `final_dir`. Instructions are disassembled with
/// comgr (found by its soname, as rocprofv3 finds it) when it loads: the decoder then learns each
/// instruction's real size and text, and the code view lists every instruction of each hit
/// kernel (swept from its entry to `s_endpgm`). Without comgr they are named by address, with
/// one warning.
fn decode_all(
    t: &ProcessTrace,
    decoder: &att::Decoder,
    raw: &Path,
    final_dir: &Path,
    w: &mut Written,
    report: &mut dyn Report,
) {
    use att::codeobj::{ByAddress, CodeObject, CodeObjectTable, Listing};
    let mut base = CodeObjectTable::new();
    for c in &t.docs.code_objects {
        base.insert(CodeObject {
            id: c.id,
            load_base: c.load_base,
            load_size: c.load_size,
            file: raw.join(&c.file),
            kernels: Vec::new(),
        });
    }
    let names: HashMap<u64, &str> = t
        .symbols
        .iter()
        .map(|s| (s.kernel_id, t.string(s.name)))
        .collect();
    let comgr = match att::comgr::Comgr::open_trusted() {
        Ok(c) => Some(c),
        Err(e) => {
            w.warnings.push(format!("thread trace: {e}"));
            None
        }
    };
    // Each dispatch's files are written on the writer thread while the next one decodes; its
    // warnings are kept per dispatch and told in dispatch order once all are written.
    let writer = att::outputs::AttWriter::new(final_dir, att::outputs::OutputOptions::default());
    let mut writer = match att::outputs::BackgroundWriter::spawn(writer, 1) {
        Ok(writer) => writer,
        Err(e) => {
            w.warnings.push(format!("thread trace: not decoded: {e}"));
            return;
        }
    };
    let mut said = std::collections::HashSet::new();
    // Per submitted dispatch: its id and the warnings of its decoding.
    let mut submitted: Vec<(u64, Vec<String>)> = Vec::new();
    let traced: Vec<_> = t
        .docs
        .thread_traces
        .iter()
        .filter(|d| d.packets_ran != Some(false))
        .collect();
    // Progress: one step per traced dispatch.
    let (mut done, total) = (0, traced.len());
    for d in traced {
        let item = format!("dispatch {}", d.dispatch_id);
        report.progress(Progress::new(Task::Decode, done, total, item));
        done += 1;
        let mut warnings = Vec::new();
        let gfx = agent_name(t, d.agent_node_id).unwrap_or("gfx1150");
        let disassembler = comgr.as_ref().and_then(|c| {
            c.disassembler(&att::comgr::isa_name(gfx))
                .map_err(|e| {
                    if said.insert(e.to_string()) {
                        warnings.push(format!("thread trace: {e}"));
                    }
                })
                .ok()
        });
        let comgr_isa = disassembler
            .as_ref()
            .map(|dis| att::comgr::ComgrIsa::new(dis, &base));
        let by_address = ByAddress::new(&base);
        let isa: &dyn att::Isa = match &comgr_isa {
            Some(i) => i,
            None => &by_address,
        };
        let mut ses = Vec::new();
        for se in d.shader_engines.iter().filter(|s| !s.file.is_empty()) {
            let data = match engine_data(raw, se) {
                Ok(b) => b,
                Err(e) => {
                    warnings.push(format!("thread trace: cannot read {} ({e})", se.file));
                    continue;
                }
            };
            let decoded = match decoder.decode_stream(&data, isa) {
                Ok(decoded) => decoded,
                Err(e) => {
                    warnings.push(format!(
                        "thread trace: dispatch {} shader engine {}: {e}; the raw data is kept",
                        d.dispatch_id, se.se
                    ));
                    match e.into_partial() {
                        Some(p) => p,
                        None => continue,
                    }
                }
            };
            for info in &decoded.infos {
                warnings.push(format!(
                    "thread trace: dispatch {} shader engine {}: the decoder says: {}",
                    d.dispatch_id,
                    se.se,
                    info.text.as_deref().unwrap_or("(no text)")
                ));
            }
            ses.push(att::outputs::ShaderEngineTrace { se: se.se, decoded });
        }
        if let Some(i) = &comgr_isa {
            for e in i.take_errors() {
                if said.insert(e.to_string()) {
                    warnings.push(format!("thread trace: {e}"));
                }
            }
        }
        let name = names.get(&d.kernel_id).copied().unwrap_or("");
        let mut table = base.clone();
        let listing = match &disassembler {
            Some(dis) => {
                let entries: Vec<att::comgr::KernelEntry> =
                    att::comgr::kernel_entries(ses.iter().map(|s| &s.decoded), &base)
                        .into_iter()
                        .map(|(id, vaddr)| att::comgr::KernelEntry {
                            id,
                            vaddr,
                            name: name.to_owned(),
                            demangled: name.to_owned(),
                        })
                        .collect();
                let mut listing = Listing::new();
                for e in dis.list_kernels(&mut table, &mut listing, &entries) {
                    warnings.push(format!("thread trace: dispatch {}: {e}", d.dispatch_id));
                }
                Some(listing)
            }
            None => {
                // The dispatched kernel's code as far as its hits show it.
                add_hit_ranges(&mut table, &ses, name);
                None
            }
        };
        let trace = att::outputs::DispatchTrace {
            agent_handle: agent_handle(d.agent_node_id),
            dispatch_id: d.dispatch_id,
            shader_engines: ses,
        };
        writer.submit(trace, table, listing);
        submitted.push((d.dispatch_id, warnings));
    }
    let (_, results) = writer.finish();
    for ((dispatch_id, warnings), result) in submitted.into_iter().zip(results) {
        w.warnings.extend(warnings);
        match result {
            Ok(summary) => {
                if summary.fallback_rows > 0 && said.insert("fallback".into()) {
                    w.warnings.push(
                        "thread trace: no disassembler (libamd_comgr) was used: instructions are \
                         named by address and their sizes assumed to be 4 bytes"
                            .into(),
                    );
                }
                w.decoded.push(summary.dir);
                w.decoded.extend(summary.stats_csv);
            }
            Err(e) => w
                .warnings
                .push(format!("thread trace: dispatch {dispatch_id}: {e}")),
        }
    }
    report.progress(Progress::new(Task::Decode, total, total, ""));
}

/// Without a disassembler: a kernel symbol per code object covering the instructions the
/// dispatch hit.
fn add_hit_ranges(
    table: &mut att::codeobj::CodeObjectTable,
    ses: &[att::outputs::ShaderEngineTrace],
    name: &str,
) {
    let mut ranges: HashMap<u64, (u64, u64)> = HashMap::new();
    for s in ses {
        for wave in &s.decoded.waves {
            for i in &wave.instructions {
                if let Some((id, vaddr)) = table.resolve(i.pc) {
                    let r = ranges.entry(id).or_insert((vaddr, vaddr));
                    r.0 = r.0.min(vaddr);
                    r.1 = r.1.max(vaddr);
                }
            }
        }
    }
    for (id, (lo, hi)) in ranges {
        table.add_kernel(
            id,
            att::codeobj::KernelSymbol {
                name: name.to_owned(),
                demangled: name.to_owned(),
                vaddr: lo..hi + att::codeobj::FALLBACK_INSTRUCTION_SIZE,
            },
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use trace_records::docs::ShaderEngineCapture;

    fn capture(file: &str, offset: u64, bytes: u64) -> ShaderEngineCapture {
        ShaderEngineCapture {
            file: file.into(),
            offset,
            bytes,
            ..Default::default()
        }
    }

    #[test]
    fn engine_data_is_read_only_from_the_raw_directory_and_only_what_the_file_holds() {
        let raw = std::env::temp_dir().join(format!("rocprof-runner-att-{}", std::process::id()));
        std::fs::create_dir_all(&raw).unwrap();
        std::fs::write(raw.join("se.att"), b"0123456789").unwrap();
        assert_eq!(engine_data(&raw, &capture("se.att", 2, 3)).unwrap(), b"234");
        // A hostile or damaged document: more than the file holds, an offset past its end,
        // an overflowing range, a path out of the directory.
        for bad in [
            capture("se.att", 0, 11),
            capture("se.att", 11, 0),
            capture("se.att", u64::MAX, 2),
            capture("se.att", 0, u64::MAX),
            capture("../se.att", 0, 1),
            capture("..", 0, 1),
            capture("", 0, 1),
        ] {
            let e = engine_data(&raw, &bad).unwrap_err();
            assert!(e.kind() == std::io::ErrorKind::InvalidData, "{bad:?}: {e}");
        }
        std::fs::remove_dir_all(&raw).unwrap();
    }
}
