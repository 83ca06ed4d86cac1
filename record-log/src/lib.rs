//! The record log's writer (format: `trace_records::log`).
//!
//! The log file is mapped `MAP_SHARED`, so a record is in the kernel's page cache the moment
//! its entry is copied in and the chunk's commit word published: `_exit`, `exec`, a fatal
//! signal, `SIGKILL` or the OOM killer lose at most the entry being written at that instant.
//!
//! Each writing thread owns one [`Chunk`] at a time and fills it without locks or system calls.
//! A background thread (`rocprof-log`, every signal blocked) does all the file work: it keeps
//! chunks allocated ahead of the writers (by writing their zeros, so a write into the mapping
//! can never fault for lack of space), maps them with every page made present and writable in advance
//! (`MADV_POPULATE_WRITE`), and unmaps segments
//! whose chunks are all sealed (so the process's memory stays bounded however long it runs).
//! When the file system is full the log stops growing: [`LogFile::take`] fails, the caller
//! counts the loss, one warning goes to the application's stderr, and growth is retried every
//! 100 ms.

mod crc;

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use trace_records::log::{
    CHUNK_CAPACITY, CHUNK_HEADER_LEN, CHUNK_SIZE, COMMIT_AT, CRC_AT, ChunkFill, FileHeader,
    HEADER_LEN, HeaderCounter, SEAL_AT, SEALED, open_chunk_header,
};
use trace_records::loss::LossCause;
use trace_records::record::{ClockEpochRecord, FixedRecord, StringId, Tag, TickCall};

/// Chunks in the first segment; each later segment doubles, up to [`MAX_SEGMENT`].
const FIRST_SEGMENT: u32 = 4;
/// Largest segment (4 MiB).
const MAX_SEGMENT: u32 = 64;
/// How long a taker waits for the grower before giving up on a chunk.
const TAKE_PATIENCE: Duration = Duration::from_secs(2);
/// How often growth is retried after the file system refused it.
const RETRY: Duration = Duration::from_millis(100);
/// Most images of one pid (`exec` chains) given logs of their own.
const MAX_IMAGES: u32 = 1000;

/// Why no chunk could be had.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoChunk {
    /// The file system refused to grow the log (full, quota, file-size limit, I/O error).
    NoSpace,
    /// The log was closed, or its grower did not answer in time.
    Unavailable,
}

impl NoChunk {
    /// The loss cause to count a record under.
    pub fn cause(self) -> LossCause {
        match self {
            Self::NoSpace => LossCause::NoSpace,
            Self::Unavailable => LossCause::NoBuffer,
        }
    }
}

struct Segment {
    first: u32,
    count: u32,
    base: usize,
    sealed: u32,
}

struct State {
    /// Next chunk index to hand out.
    next: u32,
    /// Chunks below this index are allocated and mapped.
    ready_end: u32,
    /// Mapped segments, oldest first.
    segments: Vec<Segment>,
    /// Segments whose chunks are all sealed, waiting to be unmapped (base, bytes).
    retired: Vec<(usize, usize)>,
    /// Chunks in the next segment.
    grow_by: u32,
    /// The last growth failure, while growth keeps failing.
    refused: Option<i32>,
    stop: bool,
}

impl State {
    /// Whether the chunks ready ahead of the writers have run low (under half a segment).
    fn wants_growth(&self) -> bool {
        self.ready_end - self.next < self.grow_by / 2 + 1
    }
}

/// One process image's record log, open for writing.
pub struct LogFile {
    fd: OwnedFd,
    path: PathBuf,
    header: *mut u8,
    state: Mutex<State>,
    /// The grower waits here for work.
    wake: Condvar,
    /// Takers wait here for chunks.
    grown: Condvar,
    warned: AtomicBool,
}

// SAFETY: `header` points at the file's header page, mapped for the life of the LogFile and
// only accessed through atomics; the rest of the state is behind the mutex.
unsafe impl Send for LogFile {}
// SAFETY: as above.
unsafe impl Sync for LogFile {}

impl std::fmt::Debug for LogFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogFile").field("path", &self.path).finish()
    }
}

fn errno() -> i32 {
    io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}

impl LogFile {
    /// Creates this image's log in `dir`: `<pid>.rplog`, or `<pid>.<n>.rplog` for the first
    /// free `n` when an earlier image of the same pid (before an `exec`) already has one. The
    /// file is created exclusively (never truncating another's), mode 0600, and its header is
    /// written before this returns; the grower thread is started.
    pub fn create(dir: &Path, mut header: FileHeader) -> io::Result<Arc<LogFile>> {
        let (fd, path, image) = create_exclusive(dir, header.pid)?;
        header.image = image;
        let bytes = header.encode();
        // SAFETY: writes the header's bytes from a live Vec to the descriptor just opened.
        let n = unsafe { libc::pwrite(fd.as_raw_fd(), bytes.as_ptr().cast(), bytes.len(), 0) };
        if n != bytes.len() as isize {
            let e = if n < 0 {
                io::Error::last_os_error()
            } else {
                io::Error::from_raw_os_error(libc::ENOSPC)
            };
            return Err(io::Error::new(
                e.kind(),
                format!("{}: cannot write the log header: {e}", path.display()),
            ));
        }
        // SAFETY: maps the header page of a file at least that long, shared and writable.
        let header_map = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                HEADER_LEN,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if header_map == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let log = Arc::new(LogFile {
            fd,
            path,
            header: header_map.cast(),
            state: Mutex::new(State {
                next: 0,
                ready_end: 0,
                segments: Vec::new(),
                retired: Vec::new(),
                grow_by: FIRST_SEGMENT,
                refused: None,
                stop: false,
            }),
            wake: Condvar::new(),
            grown: Condvar::new(),
            warned: AtomicBool::new(false),
        });
        // All growth happens on the grower, whose signals are blocked: a file-size limit then
        // yields EFBIG there instead of killing the application with SIGXFSZ.
        let grower = Arc::clone(&log);
        std::thread::Builder::new()
            .name("rocprof-log".into())
            .spawn(move || grower.grow_loop())?;
        Ok(log)
    }

    /// The log's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Counts `n` records lost for `cause` in the log's header (visible to the reader however
    /// the process ends). The counter carries its own check ([`HeaderCounter`]), so it is
    /// updated by compare-and-swap, one 64-bit store that a crash cannot tear; a counter found
    /// damaged is left so, for the reader to report. Out of line and cold: only the paths
    /// that lose a record call it, and the traced path must not pay for its loop.
    #[cold]
    #[inline(never)]
    pub fn lost(&self, cause: LossCause, n: u64) {
        let counter = HeaderCounter::Loss(cause);
        let word = self.header_word(counter);
        let mut old = word.load(Ordering::Relaxed);
        while let Some(new) = counter.add(old, n) {
            match word.compare_exchange_weak(old, new, Ordering::Relaxed, Ordering::Relaxed) {
                Ok(_) => return,
                Err(now) => old = now,
            }
        }
    }

    fn header_word(&self, counter: HeaderCounter) -> &AtomicU64 {
        // SAFETY: the header page is mapped for the life of `self`; the counters lie inside it
        // at 8-byte aligned offsets (HeaderCounter::offset is a multiple of 8 below HEADER_LEN,
        // the page is page-aligned), and every access to them is atomic.
        unsafe { &*self.header.add(counter.offset()).cast::<AtomicU64>() }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A fresh chunk for the calling thread (`tid` is recorded in its header).
    pub fn take(&self, tid: u32) -> Result<Chunk, NoChunk> {
        let mut s = self.lock();
        let deadline = Instant::now() + TAKE_PATIENCE;
        loop {
            if s.stop {
                return Err(NoChunk::Unavailable);
            }
            if s.next < s.ready_end {
                let index = s.next;
                s.next += 1;
                if s.wants_growth() {
                    self.wake.notify_one();
                }
                let base = chunk_address(&s.segments, index);
                let header = open_chunk_header(index, tid);
                // SAFETY: chunk `index` lies in a mapped segment (index < ready_end, and a
                // segment is unmapped only once all its chunks were handed out and sealed);
                // it was just handed out, so no one else writes it.
                unsafe { std::ptr::copy_nonoverlapping(header.as_ptr(), base, header.len()) };
                // Counted once its header is written, under the lock (so the count only grows,
                // in index order): a process killed at any instant leaves every counted chunk
                // recognisable, and the reader takes a counted chunk that is missing or all
                // zeros for damage.
                self.header_word(HeaderCounter::Chunks).store(
                    HeaderCounter::Chunks.encode(u64::from(s.next)),
                    Ordering::Release,
                );
                drop(s);
                return Ok(Chunk {
                    base,
                    fill: ChunkFill::for_thread(tid),
                    index,
                });
            }
            if s.refused.is_some() {
                return Err(NoChunk::NoSpace);
            }
            self.wake.notify_one();
            let now = Instant::now();
            if now >= deadline {
                return Err(NoChunk::Unavailable);
            }
            s = self
                .grown
                .wait_timeout(s, deadline - now)
                .map(|(g, _)| g)
                .unwrap_or_else(|p| p.into_inner().0);
        }
    }

    /// Seals `chunk` (its checksum then covers everything committed) and hands out a fresh one.
    pub fn replace(&self, chunk: Chunk, tid: u32) -> Result<Chunk, NoChunk> {
        self.seal(chunk);
        self.take(tid)
    }

    /// Seals `chunk`: writes its checksum, then marks it sealed. An empty chunk is sealed too
    /// (so its segment can be unmapped).
    pub fn seal(&self, chunk: Chunk) {
        let crc = crc::crc32c(&chunk.payload_ref()[..chunk.fill.len()]);
        // SAFETY: the chunk's header lies in its mapped segment and belongs to the caller (the
        // chunk is consumed here); the seal mark is 4-byte aligned and stored atomically after
        // the checksum, so a reader never sees the mark without the checksum.
        unsafe {
            std::ptr::copy_nonoverlapping(crc.to_le_bytes().as_ptr(), chunk.base.add(CRC_AT), 4);
            (*chunk.base.add(SEAL_AT).cast::<AtomicU32>()).store(SEALED, Ordering::Release);
        }
        let mut s = self.lock();
        let next = s.next;
        if let Some(pos) = s
            .segments
            .iter()
            .position(|g| (g.first..g.first + g.count).contains(&chunk.index))
        {
            let seg = &mut s.segments[pos];
            seg.sealed += 1;
            // Retire a segment when all its chunks were handed out and sealed, never the
            // newest (it may still have chunks to hand out).
            if seg.sealed == seg.count && seg.first + seg.count <= next {
                let seg = s.segments.remove(pos);
                s.retired.push((seg.base, seg.count as usize * CHUNK_SIZE));
                self.wake.notify_one();
            }
        }
    }

    /// Stops the grower (chunks already handed out stay writable).
    pub fn close(&self) {
        self.lock().stop = true;
        self.wake.notify_all();
        self.grown.notify_all();
    }

    fn grow_loop(&self) {
        block_all_signals();
        loop {
            let (retired, want) = {
                let mut s = self.lock();
                loop {
                    if s.stop {
                        return;
                    }
                    let want = s.wants_growth();
                    if !s.retired.is_empty() || (want && s.refused.is_none()) {
                        break (std::mem::take(&mut s.retired), want);
                    }
                    // Refused growth is retried after a while.
                    let wait = if s.refused.is_some() && want {
                        RETRY
                    } else {
                        Duration::from_secs(3600)
                    };
                    let (g, timeout) = self
                        .wake
                        .wait_timeout(s, wait)
                        .unwrap_or_else(|p| p.into_inner());
                    s = g;
                    if timeout.timed_out() && s.refused.is_some() {
                        s.refused = None;
                    }
                }
            };
            for (base, len) in retired {
                // SAFETY: a retired segment's chunks were all handed out and sealed; no writer
                // touches a sealed chunk, so nothing references the range any more.
                unsafe { libc::munmap(base as *mut libc::c_void, len) };
            }
            if want {
                self.grow_once();
            }
        }
    }

    /// Allocates and maps the next segment (or, when the file system is short of space, as
    /// little as one chunk); records the refusal when even that fails.
    fn grow_once(&self) {
        let (first, mut count) = {
            let s = self.lock();
            (s.ready_end, s.grow_by)
        };
        let result = loop {
            match self.map_segment(first, count) {
                Ok(base) => break Ok(base),
                Err(_) if count > 1 => count = 1,
                Err(e) => break Err(e),
            }
        };
        let mut s = self.lock();
        match result {
            Ok(base) => {
                s.segments.push(Segment {
                    first,
                    count,
                    base,
                    sealed: 0,
                });
                s.ready_end = first + count;
                s.grow_by = (s.grow_by * 2).min(MAX_SEGMENT);
                s.refused = None;
            }
            Err(e) => {
                s.refused = Some(e);
                drop(s);
                self.warn_no_space(e);
                self.grown.notify_all();
                return;
            }
        }
        drop(s);
        self.grown.notify_all();
    }

    fn map_segment(&self, first: u32, count: u32) -> Result<usize, i32> {
        let offset = (HEADER_LEN + first as usize * CHUNK_SIZE) as libc::off_t;
        let len = count as usize * CHUNK_SIZE;
        let fd = self.fd.as_raw_fd();
        // The segment is allocated by writing its zeros (not with `fallocate`): the pages are
        // then in the page cache, dirty and backed by reserved space, so populating the mapping
        // below only maps them. After `fallocate` each page's first write fault also had to
        // read (zero-fill) the unwritten extent and convert it, which made the grower the
        // bottleneck of a writer at full speed (`record-log` example `append_cost`:
        // 37-42 ns per record with `fallocate`, 25-29 ns this way, on this VM's ext4). A file
        // system without room refuses the write just as it refused `fallocate`.
        let zeros = vec![0u8; CHUNK_SIZE];
        for k in 0..count as usize {
            let at = offset + (k * CHUNK_SIZE) as libc::off_t;
            // SAFETY: writes CHUNK_SIZE bytes from a live buffer of that size.
            let n = unsafe { libc::pwrite(fd, zeros.as_ptr().cast(), CHUNK_SIZE, at) };
            if n != CHUNK_SIZE as isize {
                return Err(if n < 0 { errno() } else { libc::ENOSPC });
            }
        }
        // SAFETY: maps `len` bytes of the file at a page-aligned offset (HEADER_LEN and
        // CHUNK_SIZE are multiples of the page size), all of them allocated just above.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd,
                offset,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(errno());
        }
        // Make every page present and writable now, on this thread, so writers never take the
        // page faults: with one `madvise(MADV_POPULATE_WRITE)` (Linux 5.14; the kernel faults
        // the whole range in as if each page were written, without an exception per page), or,
        // where the kernel refuses it, by touching each page.
        // SAFETY: advises on the range just mapped; no memory is passed.
        if unsafe { libc::madvise(base, len, libc::MADV_POPULATE_WRITE) } == 0 {
            return Ok(base as usize);
        }
        let page = 4096;
        for at in (0..len).step_by(page) {
            // SAFETY: `at` lies inside the mapping just created; the byte is zero (the range
            // was just allocated and nothing was handed out from it), so writing zero changes
            // nothing but makes the page present and writable.
            unsafe { std::ptr::write_volatile(base.cast::<u8>().add(at), 0) };
        }
        Ok(base as usize)
    }

    fn warn_no_space(&self, e: i32) {
        if self.warned.swap(true, Ordering::Relaxed) {
            return;
        }
        let msg = format!(
            "rocprof: warning: the record log {} cannot grow ({}); from now on records are counted as lost, not written. The application keeps running; free space in the record directory's file system (TMPDIR) and run again.\n",
            self.path.display(),
            io::Error::from_raw_os_error(e)
        );
        // SAFETY: writes a live buffer to standard error.
        unsafe { libc::write(2, msg.as_ptr().cast(), msg.len()) };
    }
}

impl Drop for LogFile {
    fn drop(&mut self) {
        let s = self.state.get_mut().unwrap_or_else(|p| p.into_inner());
        for seg in s.segments.drain(..) {
            // SAFETY: the LogFile is gone, so no chunk of it is in use any more (chunks are
            // only handed out through `&self`, and their holders keep the Arc alive).
            unsafe {
                libc::munmap(
                    seg.base as *mut libc::c_void,
                    seg.count as usize * CHUNK_SIZE,
                )
            };
        }
        for (base, len) in s.retired.drain(..) {
            // SAFETY: as above.
            unsafe { libc::munmap(base as *mut libc::c_void, len) };
        }
        // SAFETY: the header page mapped in `create`.
        unsafe { libc::munmap(self.header.cast(), HEADER_LEN) };
    }
}

fn chunk_address(segments: &[Segment], index: u32) -> *mut u8 {
    let seg = segments
        .iter()
        .rev()
        .find(|g| (g.first..g.first + g.count).contains(&index))
        .expect("a chunk below ready_end lies in a mapped segment");
    (seg.base + (index - seg.first) as usize * CHUNK_SIZE) as *mut u8
}

fn create_exclusive(dir: &Path, pid: u32) -> io::Result<(OwnedFd, PathBuf, u32)> {
    use std::os::unix::ffi::OsStrExt as _;
    for image in 0..MAX_IMAGES {
        let name = if image == 0 {
            format!("{pid}.rplog")
        } else {
            format!("{pid}.{image}.rplog")
        };
        let path = dir.join(name);
        let c = CString::new(path.as_os_str().as_bytes())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path contains NUL"))?;
        // SAFETY: opens a NUL-terminated path; the flags never follow a link and never reuse
        // an existing file.
        let fd = unsafe {
            libc::open(
                c.as_ptr(),
                libc::O_RDWR | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC,
                0o600,
            )
        };
        if fd >= 0 {
            // SAFETY: `fd` was just opened and is owned by nothing else.
            return Ok((unsafe { OwnedFd::from_raw_fd(fd) }, path, image));
        }
        let e = io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EEXIST) {
            return Err(io::Error::new(e.kind(), format!("{}: {e}", path.display())));
        }
    }
    Err(io::Error::new(
        io::ErrorKind::AlreadyExists,
        format!(
            "{MAX_IMAGES} logs of pid {pid} already exist in {}",
            dir.display()
        ),
    ))
}

fn block_all_signals() {
    // SAFETY: a filled signal set applied to the calling thread only.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut set);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
    }
}

/// A chunk of the log owned by one writing thread.
pub struct Chunk {
    base: *mut u8,
    fill: ChunkFill,
    index: u32,
}

// SAFETY: a chunk is a region of a shared mapping that only its holder writes.
unsafe impl Send for Chunk {}

impl std::fmt::Debug for Chunk {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Chunk")
            .field("index", &self.index)
            .field("entries", &self.fill.entries())
            .finish()
    }
}

impl Chunk {
    fn payload_ref(&self) -> &[u8] {
        // SAFETY: the payload follows the chunk header inside the chunk's mapped segment, which
        // stays mapped while the chunk is unsealed; only this chunk's holder accesses it.
        unsafe { std::slice::from_raw_parts(self.base.add(CHUNK_HEADER_LEN), CHUNK_CAPACITY) }
    }

    #[inline]
    fn publish(&self) {
        // SAFETY: the commit word is 8-byte aligned inside the chunk header (chunks are
        // page-aligned) and written only atomically; Release orders the entry bytes before it.
        unsafe {
            (*self.base.add(COMMIT_AT).cast::<AtomicU64>())
                .store(self.fill.commit(), Ordering::Release)
        };
    }

    /// Runs one `ChunkFill` push on the payload and publishes the commit word if it succeeded.
    /// (A push leaves the fill as it was when it fails, so the fill is worked on in place: no
    /// copy of it on the traced path.)
    #[inline]
    fn append(&mut self, push: impl FnOnce(&mut ChunkFill, &mut [u8]) -> bool) -> bool {
        // SAFETY: as in `payload_ref`, and only this chunk's holder writes it (it holds `&mut
        // self`); the slice covers the mapped payload only, never the fill it is pushed with.
        let payload = unsafe {
            std::slice::from_raw_parts_mut(self.base.add(CHUNK_HEADER_LEN), CHUNK_CAPACITY)
        };
        let ok = push(&mut self.fill, payload);
        if ok {
            self.publish();
        }
        ok
    }

    /// Appends a fixed-size record; `false` (nothing written) when the chunk is full.
    #[inline]
    pub fn push<R: FixedRecord>(&mut self, record: &R) -> bool {
        self.append(|f, p| f.push(p, record))
    }

    /// The traced exit's append of a tick-timed call ([`ChunkFill::push_api_ticks`]): `false`,
    /// nothing written, unless the chunk's last clock epoch is number `sequence`, the call fits
    /// a tick-timed entry and the chunk has room.
    #[inline(always)]
    pub fn push_api_ticks(&mut self, call: &TickCall, sequence: u64) -> bool {
        self.append(|f, p| f.push_api_ticks(p, call, sequence))
    }

    /// Appends a tick-timed call whichever way it fits under `epoch` ([`ChunkFill::push_call`]);
    /// `false` when the chunk has no room.
    pub fn push_call(&mut self, call: &TickCall, epoch: &ClockEpochRecord) -> bool {
        self.append(|f, p| f.push_call(p, call, epoch))
    }

    /// Appends a string definition (one too long for an entry is cut to fit an empty chunk, and
    /// says how long it was); `false` when it does not fit.
    pub fn push_string(&mut self, id: StringId, text: &str) -> bool {
        self.append(|f, p| f.push_string(p, id, text))
    }

    /// Appends a JSON document; `false` when it does not fit (or is too long for any chunk).
    pub fn push_json(&mut self, json: &str) -> bool {
        self.append(|f, p| f.push_json(p, json))
    }

    /// Appends a variable-length entry made of `parts`; `false` when it does not fit (or is
    /// longer than an entry may be).
    pub fn push_parts(&mut self, tag: Tag, parts: &[&[u8]]) -> bool {
        self.append(|f, p| f.push_parts(p, tag, parts))
    }
}
