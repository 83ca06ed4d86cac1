//! Writing the archive: the layout of each process, its events lane by lane, then the
//! definitions (see the crate text).

use crate::Error;
use crate::archive::{Archive, EvtWriter};
use crate::lane::{Event, Lane};
use crate::layout::{LocationKind, ProcessLayout};
use otf2_sys::{
    OTF2_PARADIGM_HIP, OTF2_PARADIGM_USER, OTF2_Paradigm, OTF2_REGION_ROLE_ALLOCATE,
    OTF2_REGION_ROLE_DATA_TRANSFER, OTF2_REGION_ROLE_FUNCTION, OTF2_RegionRole, Otf2,
};
use std::cmp::Reverse;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use trace_export::view::{ProcessView, RunInfo};
use trace_records::record::{AllocationOperation, ApiDomain, CopyDirection, MarkerKind};

/// Whether the OTF2 library loads (with every entry point): `Ok` where `-f otf2` can be
/// written, else the error saying what to install.
pub fn available() -> Result<(), Error> {
    // SAFETY: the library loaded is OTF2 3.0 by its soname (or the one the user names);
    // loading runs only its initialisers, and it is closed again at once.
    unsafe { Otf2::open() }.map(drop).map_err(Error::from)
}

/// The files and directory of the archive `archive` (`<prefix>_results`): the anchor
/// `<archive>.otf2`, the global definitions `<archive>.def` and the directory `<archive>/`.
pub fn archive_files(archive: &Path) -> [PathBuf; 3] {
    let with = |ext: &str| {
        let mut s = archive.as_os_str().to_owned();
        s.push(ext);
        PathBuf::from(s)
    };
    [with(".otf2"), with(".def"), archive.to_owned()]
}

/// The category strings of the `category` attribute (upstream's Perfetto category names).
const CATEGORIES: [&str; 6] = [
    "hip_api",
    "hsa_api",
    "marker_api",
    "kernel_dispatch",
    "memory_copy",
    "memory_allocation",
];
const HIP: usize = 0;
const HSA: usize = 1;
const MARKER: usize = 2;
const KERNEL: usize = 3;
const COPY: usize = 4;
const ALLOCATION: usize = 5;

/// The archive's strings (0 is ""), numbered densely.
#[derive(Default)]
struct Strings {
    ids: HashMap<String, u32>,
    texts: Vec<String>,
}

impl Strings {
    fn new() -> Self {
        let mut s = Self::default();
        s.id("");
        s
    }

    fn id(&mut self, text: &str) -> u32 {
        if let Some(&id) = self.ids.get(text) {
            return id;
        }
        let id = self.texts.len() as u32;
        self.ids.insert(text.to_owned(), id);
        self.texts.push(text.to_owned());
        id
    }
}

/// The archive's regions, one per name (the first record of a name gives role and paradigm).
#[derive(Default)]
struct Regions {
    by_name: HashMap<u32, u32>,
    defs: Vec<(u32, OTF2_RegionRole, OTF2_Paradigm)>,
}

impl Regions {
    fn id(&mut self, name: u32, role: OTF2_RegionRole, paradigm: OTF2_Paradigm) -> u32 {
        *self.by_name.entry(name).or_insert_with(|| {
            self.defs.push((name, role, paradigm));
            (self.defs.len() - 1) as u32
        })
    }
}

/// What is known of the archive while its events are written.
struct Defs {
    strings: Strings,
    regions: Regions,
    categories: [u32; 6],
}

impl Defs {
    fn region(&mut self, name: &str, role: OTF2_RegionRole, paradigm: OTF2_Paradigm) -> u32 {
        let name = self.strings.id(name);
        self.regions.id(name, role, paradigm)
    }
}

/// One process, laid out, with the events counted per location.
struct Written {
    layout: ProcessLayout,
    exe: String,
    events: Vec<u64>,
}

/// Writes the OTF2 archive `archive` (`<prefix>_results`, see [`archive_files`]) for
/// `processes` (one archive may hold several, each kept distinct); returns the paths written.
/// None of them may exist. On failure whatever was written is removed again.
pub fn write_otf2(
    archive: &Path,
    run: &RunInfo,
    processes: &[ProcessView<'_>],
) -> Result<Vec<PathBuf>, Error> {
    let files = archive_files(archive);
    if let Some(f) = files.iter().find(|f| f.symlink_metadata().is_ok()) {
        return Err(Error::Exists(f.clone()));
    }
    // SAFETY: as in `available`; the library stays loaded while the archive is written.
    let otf2 = unsafe { Otf2::open() }?;
    let written = write_archive(otf2.fns(), archive, run, processes);
    if written.is_err() {
        for f in &files {
            let _ = if f.is_dir() {
                std::fs::remove_dir_all(f)
            } else {
                std::fs::remove_file(f)
            };
        }
    }
    written.map(|()| files.to_vec())
}

fn write_archive(
    lib: &otf2_sys::Otf2Fns,
    archive: &Path,
    run: &RunInfo,
    processes: &[ProcessView<'_>],
) -> Result<(), Error> {
    let dir = match archive.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_owned(),
        _ => PathBuf::from("."),
    };
    let name = archive
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let anchor = archive_files(archive)[0].clone();
    std::fs::create_dir_all(&dir).map_err(|source| Error::Io {
        path: dir.clone(),
        source,
    })?;
    let mut a = Archive::create(lib, &dir, &name, &anchor)?;
    let mut strings = Strings::new();
    let categories = CATEGORIES.map(|c| strings.id(c));
    let mut defs = Defs {
        strings,
        regions: Regions::default(),
        categories,
    };
    let pids: Vec<u32> = processes.iter().map(|v| v.trace.pid).collect();
    let (mut next_group, mut next_location) = (0u32, 1u64);
    let mut done = Vec::with_capacity(processes.len());
    for view in processes {
        let launched = view.trace.image == 0 && !pids.contains(&view.trace.ppid);
        let exe = match run.command.first() {
            Some(c) if launched => c.clone(),
            _ => "??".to_owned(),
        };
        let layout = ProcessLayout::new(view, &exe, &mut next_group, &mut next_location);
        let events = write_events(&mut a, &mut defs, view, &layout)?;
        view.check().map_err(|e| Error::Records {
            path: anchor.clone(),
            message: e.to_string(),
        })?;
        done.push(Written {
            layout,
            exe,
            events,
        });
    }
    let locations: Vec<u64> = done
        .iter()
        .flat_map(|w| w.layout.locations.iter().map(|l| l.id))
        .collect();
    a.local_definitions(&locations)?;

    // The names the definitions use, then the definitions.
    let hostname = if run.hostname.is_empty() {
        "node"
    } else {
        &run.hostname
    };
    let host = defs.strings.id(hostname);
    let attr_name = defs.strings.id("category");
    let attr_description = defs.strings.id("tracing category");
    let mut named = Vec::with_capacity(done.len());
    for w in &done {
        let exe = defs.strings.id(&w.exe);
        let groups: Vec<u32> = w
            .layout
            .groups
            .iter()
            .map(|g| defs.strings.id(&g.name))
            .collect();
        let locations: Vec<u32> = w
            .layout
            .locations
            .iter()
            .map(|l| defs.strings.id(&l.name))
            .collect();
        named.push((exe, groups, locations));
    }
    let span = processes
        .iter()
        .map(|v| v.span)
        .reduce(|a, b| (a.0.min(b.0), a.1.max(b.1)))
        .unwrap_or((0, 0));
    let mut g = a.global()?;
    g.clock(
        1_000_000_000,
        span.0,
        span.1.saturating_sub(span.0),
        u64::MAX,
    )?;
    for (id, text) in defs.strings.texts.iter().enumerate() {
        g.string(id as u32, text)?;
    }
    for (id, &(name, role, paradigm)) in defs.regions.defs.iter().enumerate() {
        g.region(id as u32, name, role, paradigm)?;
    }
    g.attribute(0, attr_name, attr_description)?;
    for (node, (w, (exe, groups, locations))) in done.iter().zip(&named).enumerate() {
        let node = node as u32;
        g.system_tree_node(node, *exe, host)?;
        for (group, &name) in w.layout.groups.iter().zip(groups) {
            g.location_group(group.id, name, group.accelerator, node)?;
        }
        for ((l, &name), &events) in w.layout.locations.iter().zip(locations).zip(&w.events) {
            g.location(l.id, name, l.kind == LocationKind::Thread, events, l.group)?;
        }
    }
    a.close()
}

/// A record's place and name, ready for its lane.
struct Item {
    start: u64,
    end: u64,
    lane: usize,
    region: u32,
    category: usize,
}

/// Writes one process's events; returns the event count of each of its locations.
fn write_events(
    a: &mut Archive<'_>,
    defs: &mut Defs,
    view: &ProcessView<'_>,
    layout: &ProcessLayout,
) -> Result<Vec<u64>, Error> {
    let mut writers: Vec<EvtWriter> = Vec::with_capacity(layout.locations.len());
    for l in &layout.locations {
        writers.push(a.evt_writer(l.id)?);
    }
    let mut lanes: Vec<Lane> = layout.locations.iter().map(|_| Lane::new()).collect();
    let valid = |s: u64, e: u64| s > 0 && e >= s;
    let t = view.trace;

    // The category ids are fixed once the archive's strings start.
    let category_ids = defs.categories;
    let put = |a: &mut Archive<'_>, lanes: &mut [Lane], it: Item| -> Result<(), Error> {
        let w = writers[it.lane];
        let category = category_ids[it.category];
        let mut out = |e: Event| match e {
            Event::Enter { ts, region } => a.enter(w, ts, region, category),
            Event::Leave { ts, region } => a.leave(w, ts, region),
        };
        lanes[it.lane].enter(it.start, it.end, it.region, &mut out)
    };

    // Host events: the API calls (streamed) and the ROCTx ranges, merged per thread in
    // (start, longest first) order.
    let mut markers: Vec<usize> = (0..view.markers.len())
        .filter(|&k| {
            let m = view.markers[k];
            MarkerKind::from_u8(m.kind).is_some_and(|k| k != MarkerKind::Mark)
                && valid(m.start, m.end)
        })
        .collect();
    markers.sort_by_key(|&k| (view.markers[k].start, Reverse(view.markers[k].end)));
    let mut markers = markers.into_iter().peekable();
    let mut marker_regions: HashMap<u32, u32> = HashMap::new();
    let mut api_regions: HashMap<(u8, u16), Option<u32>> = HashMap::new();
    let mut marker_item = |defs: &mut Defs, k: usize| -> Option<Item> {
        let m = view.markers[k];
        let region = *marker_regions.entry(m.message).or_insert_with(|| {
            defs.region(
                view.string(m.message),
                OTF2_REGION_ROLE_FUNCTION,
                OTF2_PARADIGM_USER,
            )
        });
        Some(Item {
            start: m.start,
            end: m.end,
            lane: layout.thread(m.thread_id)?,
            region,
            category: MARKER,
        })
    };
    for call in view.api() {
        let r = call.record;
        if !valid(r.start, r.end) {
            continue;
        }
        while let Some(&k) = markers.peek() {
            let m = view.markers[k];
            if (m.start, Reverse(m.end)) < (r.start, Reverse(r.end)) {
                markers.next();
                if let Some(it) = marker_item(defs, k) {
                    put(a, &mut lanes, it)?;
                }
            } else {
                break;
            }
        }
        let region = *api_regions
            .entry((r.domain, r.operation))
            .or_insert_with(|| {
                let name = view.api_name(&call);
                let marker = !call.domain.is_hip() && !call.domain.is_hsa();
                // ROCTx marks are instants, which upstream leaves out.
                if marker && name == "roctxMarkA" {
                    return None;
                }
                let paradigm = if marker {
                    OTF2_PARADIGM_USER
                } else {
                    OTF2_PARADIGM_HIP
                };
                Some(defs.region(&name, OTF2_REGION_ROLE_FUNCTION, paradigm))
            });
        let (Some(region), Some(lane)) = (region, layout.thread(r.thread_id)) else {
            continue;
        };
        let category = match call.domain {
            d if d.is_hip() => HIP,
            d if d.is_hsa() => HSA,
            ApiDomain::MarkerCore | ApiDomain::MarkerControl | ApiDomain::MarkerName => MARKER,
            _ => MARKER,
        };
        put(
            a,
            &mut lanes,
            Item {
                start: r.start,
                end: r.end,
                lane,
                region,
                category,
            },
        )?;
    }
    for k in markers {
        if let Some(it) = marker_item(defs, k) {
            put(a, &mut lanes, it)?;
        }
    }

    // Device events, each kind in (start, longest first) order.
    let mut copies: Vec<_> = t.copies.iter().filter(|c| valid(c.start, c.end)).collect();
    copies.sort_by_key(|c| (c.start, Reverse(c.end), c.correlation_id));
    let mut copy_regions: HashMap<u8, u32> = HashMap::new();
    for c in copies {
        let Some(lane) = layout.copy(c.thread_id, c.dst_node_id) else {
            continue;
        };
        let region = *copy_regions.entry(c.direction).or_insert_with(|| {
            defs.region(
                CopyDirection::label(c.direction),
                OTF2_REGION_ROLE_DATA_TRANSFER,
                OTF2_PARADIGM_HIP,
            )
        });
        let it = Item {
            start: c.start,
            end: c.end,
            lane,
            region,
            category: COPY,
        };
        put(a, &mut lanes, it)?;
    }
    let mut allocations: Vec<_> = t
        .allocations
        .iter()
        .filter(|m| valid(m.start, m.end))
        .collect();
    allocations.sort_by_key(|m| (m.start, Reverse(m.end), m.correlation_id));
    let mut allocation_regions: HashMap<u8, u32> = HashMap::new();
    for m in allocations {
        let node = (m.has_agent != 0).then_some(m.agent_node_id);
        let Some(lane) = layout.allocation(m.thread_id, node) else {
            continue;
        };
        let region = *allocation_regions.entry(m.operation).or_insert_with(|| {
            defs.region(
                AllocationOperation::label(m.operation),
                OTF2_REGION_ROLE_ALLOCATE,
                OTF2_PARADIGM_HIP,
            )
        });
        let it = Item {
            start: m.start,
            end: m.end,
            lane,
            region,
            category: ALLOCATION,
        };
        put(a, &mut lanes, it)?;
    }
    let mut dispatches: Vec<_> = view
        .dispatches
        .iter()
        .filter(|d| valid(d.start, d.end))
        .collect();
    dispatches.sort_by_key(|d| (d.start, Reverse(d.end), d.dispatch_id));
    let mut kernel_regions: HashMap<(u64, u32), u32> = HashMap::new();
    for d in dispatches {
        let Some(lane) = layout.dispatch(d.thread_id, d.agent_node_id, d.queue_id) else {
            continue;
        };
        let region = *kernel_regions
            .entry((d.kernel_id, d.region))
            .or_insert_with(|| {
                let name = trace_export::rename::dispatch_name(t, d, view.kernel_name(d.kernel_id));
                defs.region(name, OTF2_REGION_ROLE_FUNCTION, OTF2_PARADIGM_HIP)
            });
        let it = Item {
            start: d.start,
            end: d.end,
            lane,
            region,
            category: KERNEL,
        };
        put(a, &mut lanes, it)?;
    }

    let mut counts = Vec::with_capacity(lanes.len());
    for (lane, &w) in lanes.iter_mut().zip(&writers) {
        let mut out = |e: Event| match e {
            Event::Enter { .. } => Ok(()),
            Event::Leave { ts, region } => a.leave(w, ts, region),
        };
        lane.finish(&mut out)?;
        a.close_evt_writer(w)?;
        counts.push(lane.events());
    }
    Ok(counts)
}
