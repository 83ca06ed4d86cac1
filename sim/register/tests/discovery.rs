//! Tool discovery with real shared objects (`harness = false`).
//!
//! The parent:
//! 1. compiles `tests/support/mini_tool.rs` into `libmini_tool.so` with rustc;
//! 2. finds cargo's `librocprofiler_register.so` next to this test binary;
//! 3. re-executes this binary as `--child <lib> <ops...>` once per case, with
//!    the case's environment (LD_PRELOAD, ROCP_TOOL_LIBRARIES, ...), and
//!    checks the child's report, stderr and the mini tool's log file.
//!
//! The child plays the runtime: it dlopens the register library
//! (`RTLD_NOW | RTLD_GLOBAL`) and registers fake tables whose slot 0 starts
//! out as a known value, then prints what came back.
//!
//! Child ops:
//! - `reg:<name>:<count>[:<ntables>]`: register `count` times; per call
//!   `reg <name> i=<i> rc=<rc> handle=<h> slot0=<marker|original|0x..>`
//!   (`handle=unset` if the id was not written);
//! - `badargs`: `badargs null_name=<rc> null_tables=<rc> null_id=<rc> zero_len=<rc>`;
//! - `iterate` / `iterate_first`: `info name=<n> version=<v> len=<k>` per
//!   registration (the second stops after the first), then `iterate rc=<rc>`;
//! - `invoke_all`: `invoke_all rc=<rc>`;
//! - `errstr:<code>`: `errstr <code> <message>`.

use std::ffi::{CStr, CString, OsStr, OsString, c_char, c_int, c_void};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant, SystemTime};

/// Must equal `MARKER` in `tests/support/mini_tool.rs`.
const MARKER: usize = 0x7001_5EED_0000_0001;
/// Slot 0 of every fake table before registration.
const ORIGINAL: usize = 0x0123_4567_89AB_CDEF;
/// `register_id.handle` before registration.
const UNSET_HANDLE: u64 = 0xDEAD_BEEF;
/// Version every child registration passes.
const VERSION: u32 = 11800;
const CHILD_TIMEOUT: Duration = Duration::from_secs(60);

/// Every variable that influences the register library or the mini tool;
/// cleared in each child before the case's own settings are applied.
const CONTROLLED_VARS: &[&str] = &[
    "LD_PRELOAD",
    "ROCP_TOOL_LIBRARIES",
    "ROCPROFILER_REGISTER_LIBRARY",
    "ROCPROFILER_REGISTER_ENABLED",
    "ROCPROFILER_REGISTER_FORCE_LOAD",
    "ROCPROFILER_REGISTER_VERBOSE",
    "MINI_TOOL_LOG",
    "MINI_TOOL_FAIL",
    "MINI_TOOL_REENTER",
];

fn main() -> ExitCode {
    let args: Vec<OsString> = std::env::args_os().collect();
    if args.get(1).map(OsString::as_os_str) == Some(OsStr::new("--child")) {
        return child::run(&args[2..]);
    }
    parent::run()
}

mod child {
    use super::*;

    type RegisterFn = unsafe extern "C" fn(
        *const c_char,
        Option<unsafe extern "C" fn() -> u32>,
        u32,
        *mut *mut c_void,
        u64,
        *mut u64,
    ) -> c_int;
    type ErrorStringFn = unsafe extern "C" fn(c_int) -> *const c_char;
    #[repr(C)]
    struct Info {
        size: usize,
        common_name: *const c_char,
        lib_version: u32,
        api_table_length: u64,
    }
    type InfoCb = unsafe extern "C" fn(*mut Info, *mut c_void) -> c_int;
    type IterateFn = unsafe extern "C" fn(Option<InfoCb>, *mut c_void) -> c_int;
    type InvokeFn = unsafe extern "C" fn() -> c_int;

    struct Lib {
        register: RegisterFn,
        error_string: ErrorStringFn,
        iterate: IterateFn,
        invoke_all: InvokeFn,
    }

    fn symbol(handle: *mut c_void, name: &CStr) -> Result<*mut c_void, String> {
        // SAFETY: `handle` is a live dlopen handle and `name` is NUL-terminated.
        let sym = unsafe { libc::dlsym(handle, name.as_ptr()) };
        if sym.is_null() {
            Err(format!("missing export {}", name.to_string_lossy()))
        } else {
            Ok(sym)
        }
    }

    fn open(path: &OsStr) -> Result<Lib, String> {
        use std::os::unix::ffi::OsStrExt;
        let c_path = CString::new(path.as_bytes()).map_err(|e| e.to_string())?;
        // SAFETY: NUL-terminated path; loading the register library is the
        // point of the test.
        let handle = unsafe { libc::dlopen(c_path.as_ptr(), libc::RTLD_NOW | libc::RTLD_GLOBAL) };
        if handle.is_null() {
            // SAFETY: dlerror returns null or a NUL-terminated string, copied at once.
            let err = unsafe { libc::dlerror() };
            let msg = if err.is_null() {
                "unknown error".into()
            } else {
                // SAFETY: non-null NUL-terminated string from dlerror.
                unsafe { CStr::from_ptr(err) }
                    .to_string_lossy()
                    .into_owned()
            };
            return Err(format!("dlopen {}: {msg}", path.to_string_lossy()));
        }
        let register = symbol(handle, c"rocprofiler_register_library_api_table")?;
        let error_string = symbol(handle, c"rocprofiler_register_error_string")?;
        let iterate = symbol(handle, c"rocprofiler_register_iterate_registration_info")?;
        let invoke_all = symbol(handle, c"rocprofiler_register_invoke_all_registrations")?;
        // SAFETY: each symbol is the export of that name, whose C signature
        // the corresponding type mirrors.
        unsafe {
            Ok(Lib {
                register: std::mem::transmute::<*mut c_void, RegisterFn>(register),
                error_string: std::mem::transmute::<*mut c_void, ErrorStringFn>(error_string),
                iterate: std::mem::transmute::<*mut c_void, IterateFn>(iterate),
                invoke_all: std::mem::transmute::<*mut c_void, InvokeFn>(invoke_all),
            })
        }
    }

    /// A fake runtime table set: `ntables` tables of 2 slots each, leaked so
    /// the stored pointers stay valid for `invoke_all`.
    fn fake_tables(ntables: usize) -> (&'static mut [usize; 2], &'static mut [*mut c_void]) {
        let first: &'static mut [usize; 2] = Box::leak(Box::new([ORIGINAL, 0x2222]));
        let mut ptrs: Vec<*mut c_void> = vec![first.as_mut_ptr().cast()];
        for _ in 1..ntables {
            let other: &'static mut [usize; 2] = Box::leak(Box::new([0x3333, 0x4444]));
            ptrs.push(other.as_mut_ptr().cast());
        }
        (first, Box::leak(ptrs.into_boxed_slice()))
    }

    fn slot0_text(value: usize) -> String {
        match value {
            MARKER => "marker".into(),
            ORIGINAL => "original".into(),
            other => format!("{other:#x}"),
        }
    }

    fn register(lib: &Lib, name: &str, count: usize, ntables: usize) -> Result<(), String> {
        let c_name = CString::new(name).map_err(|e| e.to_string())?;
        for i in 0..count {
            let (first, tables) = fake_tables(ntables);
            let mut id = UNSET_HANDLE;
            // SAFETY: valid name, table array of `tables.len()` pointers, and id.
            let rc = unsafe {
                (lib.register)(
                    c_name.as_ptr(),
                    None,
                    VERSION,
                    tables.as_mut_ptr(),
                    tables.len() as u64,
                    &mut id,
                )
            };
            let handle = if id == UNSET_HANDLE {
                "unset".to_owned()
            } else {
                id.to_string()
            };
            // SAFETY: `first` is a live leaked table; read volatile because the
            // tool wrote it through a raw pointer.
            let slot0 = unsafe { std::ptr::read_volatile(first.as_ptr()) };
            println!(
                "reg {name} i={i} rc={rc} handle={handle} slot0={}",
                slot0_text(slot0)
            );
        }
        Ok(())
    }

    fn bad_args(lib: &Lib) {
        let (_, tables) = fake_tables(1);
        let mut id = UNSET_HANDLE;
        let name = c"hsa".as_ptr();
        let null_tables: *mut *mut c_void = std::ptr::null_mut();
        // SAFETY: every pointer is null or valid; null ones must be rejected.
        let rcs = unsafe {
            [
                (lib.register)(
                    std::ptr::null(),
                    None,
                    VERSION,
                    tables.as_mut_ptr(),
                    1,
                    &mut id,
                ),
                (lib.register)(name, None, VERSION, null_tables, 1, &mut id),
                (lib.register)(
                    name,
                    None,
                    VERSION,
                    tables.as_mut_ptr(),
                    1,
                    std::ptr::null_mut(),
                ),
                (lib.register)(name, None, VERSION, tables.as_mut_ptr(), 0, &mut id),
            ]
        };
        println!(
            "badargs null_name={} null_tables={} null_id={} zero_len={} handle={}",
            rcs[0],
            rcs[1],
            rcs[2],
            rcs[3],
            if id == UNSET_HANDLE {
                "unset".to_owned()
            } else {
                id.to_string()
            }
        );
    }

    unsafe extern "C" fn print_info(info: *mut Info, data: *mut c_void) -> c_int {
        // SAFETY: the library passes a valid info pointer for the call.
        let info = unsafe { &*info };
        // SAFETY: common_name is a NUL-terminated static string.
        let name = unsafe { CStr::from_ptr(info.common_name) }.to_string_lossy();
        println!(
            "info name={name} version={} len={} size={}",
            info.lib_version, info.api_table_length, info.size
        );
        // `data` is non-null when the caller wants to stop after the first.
        c_int::from(!data.is_null())
    }

    fn iterate(lib: &Lib, stop_after_first: bool) {
        let mut flag = 0u8;
        let data: *mut c_void = if stop_after_first {
            (&raw mut flag).cast()
        } else {
            std::ptr::null_mut()
        };
        // SAFETY: valid callback; `data` is only compared with null.
        let rc = unsafe { (lib.iterate)(Some(print_info), data) };
        println!("iterate rc={rc}");
    }

    fn error_string(lib: &Lib, code: &str) -> Result<(), String> {
        let code: c_int = code.parse().map_err(|e| format!("{code}: {e}"))?;
        // SAFETY: error_string accepts any value.
        let msg = unsafe { (lib.error_string)(code) };
        if msg.is_null() {
            return Err("error_string returned NULL".into());
        }
        // SAFETY: non-null static NUL-terminated string.
        let msg = unsafe { CStr::from_ptr(msg) }.to_string_lossy();
        println!("errstr {code} {msg}");
        Ok(())
    }

    fn run_ops(args: &[OsString]) -> Result<(), String> {
        let (lib_path, ops) = args.split_first().ok_or("usage: --child <lib> <ops...>")?;
        let lib = open(lib_path)?;
        for op in ops {
            let op = op.to_str().ok_or("non-UTF-8 op")?;
            let parts: Vec<&str> = op.split(':').collect();
            match parts.as_slice() {
                ["reg", name, count] => register(&lib, name, parse(count)?, 1)?,
                ["reg", name, count, ntables] => {
                    register(&lib, name, parse(count)?, parse(ntables)?)?
                }
                ["badargs"] => bad_args(&lib),
                ["iterate"] => iterate(&lib, false),
                ["iterate_first"] => iterate(&lib, true),
                ["invoke_all"] => {
                    // SAFETY: no arguments; stored tables are leaked, so valid.
                    let rc = unsafe { (lib.invoke_all)() };
                    println!("invoke_all rc={rc}");
                }
                ["errstr", code] => error_string(&lib, code)?,
                _ => return Err(format!("unknown op {op}")),
            }
        }
        Ok(())
    }

    fn parse(text: &str) -> Result<usize, String> {
        text.parse().map_err(|e| format!("{text}: {e}"))
    }

    pub fn run(args: &[OsString]) -> ExitCode {
        match run_ops(args) {
            Ok(()) => ExitCode::SUCCESS,
            Err(err) => {
                eprintln!("child error: {err}");
                ExitCode::from(3)
            }
        }
    }
}

mod parent {
    use super::*;

    struct Ctx {
        exe: PathBuf,
        lib: PathBuf,
        tool: PathBuf,
        dir: PathBuf,
    }

    struct Run {
        ok: bool,
        stdout: Vec<String>,
        stderr: String,
        log: Option<Vec<String>>,
    }

    impl Run {
        fn lines(&self, prefix: &str) -> Vec<&str> {
            self.stdout
                .iter()
                .map(String::as_str)
                .filter(|l| l.starts_with(prefix))
                .collect()
        }
        fn log_lines(&self) -> Vec<&str> {
            self.log
                .as_deref()
                .unwrap_or_default()
                .iter()
                .map(String::as_str)
                .collect()
        }
    }

    fn rustc() -> OsString {
        std::env::var_os("RUSTC")
            .filter(|v| !v.is_empty())
            .unwrap_or_else(|| OsString::from(env!("SIM_REGISTER_RUSTC")))
    }

    fn build_mini_tool(dir: &Path) -> Result<PathBuf, String> {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/mini_tool.rs");
        let out = dir.join("libmini_tool.so");
        let rustc = rustc();
        let output = Command::new(&rustc)
            .args([
                "--crate-type",
                "cdylib",
                "--edition",
                "2024",
                "-C",
                "debuginfo=0",
            ])
            .arg("-o")
            .arg(&out)
            .arg(&src)
            .output()
            .map_err(|e| format!("cannot run {}: {e}", rustc.to_string_lossy()))?;
        if !output.status.success() {
            return Err(format!(
                "compiling {} failed:\n{}",
                src.display(),
                String::from_utf8_lossy(&output.stderr)
            ));
        }
        Ok(out)
    }

    fn modified(path: &Path) -> Option<SystemTime> {
        std::fs::metadata(path).and_then(|m| m.modified()).ok()
    }

    fn find_register_lib(exe: &Path) -> Result<PathBuf, String> {
        const NAME: &str = "librocprofiler_register.so";
        let deps = exe.parent().ok_or("test binary has no parent directory")?;
        let mut candidates = vec![deps.join(NAME)];
        if let Some(profile) = deps.parent() {
            candidates.insert(0, profile.join(NAME));
        }
        candidates
            .iter()
            .filter_map(|p| modified(p).map(|t| (t, p)))
            .max_by_key(|(t, _)| *t)
            .map(|(_, p)| p.clone())
            .ok_or_else(|| {
                format!(
                    "{NAME} not found in {}; run `cargo build -p sim-register`",
                    candidates
                        .iter()
                        .map(|p| p.display().to_string())
                        .collect::<Vec<_>>()
                        .join(" or ")
                )
            })
    }

    fn run_child(ctx: &Ctx, case: &str, env: &[(&str, OsString)], ops: &[&str]) -> Run {
        let log = ctx.dir.join(format!("{case}.log"));
        let out_path = ctx.dir.join(format!("{case}.stdout"));
        let err_path = ctx.dir.join(format!("{case}.stderr"));
        let _ = std::fs::remove_file(&log);
        let failed = |why: String| Run {
            ok: false,
            stdout: Vec::new(),
            stderr: why,
            log: None,
        };
        let (Ok(out_file), Ok(err_file)) = (
            std::fs::File::create(&out_path),
            std::fs::File::create(&err_path),
        ) else {
            return failed(format!(
                "cannot create output files in {}",
                ctx.dir.display()
            ));
        };
        let mut cmd = Command::new(&ctx.exe);
        cmd.arg("--child").arg(&ctx.lib).args(ops);
        for var in CONTROLLED_VARS {
            cmd.env_remove(var);
        }
        cmd.env("MINI_TOOL_LOG", &log);
        for (key, value) in env {
            cmd.env(key, value);
        }
        cmd.stdin(Stdio::null()).stdout(out_file).stderr(err_file);
        let mut child = match cmd.spawn() {
            Ok(child) => child,
            Err(e) => return failed(format!("spawn: {e}")),
        };
        let start = Instant::now();
        let status = loop {
            match child.try_wait() {
                Ok(Some(status)) => break Some(status),
                Ok(None) if start.elapsed() > CHILD_TIMEOUT => {
                    let _ = child.kill();
                    let _ = child.wait();
                    break None;
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(10)),
                Err(_) => break None,
            }
        };
        let stdout = std::fs::read_to_string(&out_path).unwrap_or_default();
        let mut stderr = std::fs::read_to_string(&err_path).unwrap_or_default();
        match status {
            None => stderr.push_str("\n[child timed out or could not be waited for]"),
            Some(s) if !s.success() => stderr.push_str(&format!("\n[child exited with {s}]")),
            Some(_) => {}
        }
        Run {
            ok: status.is_some_and(|s| s.success()),
            stdout: stdout.lines().map(str::to_owned).collect(),
            stderr,
            log: std::fs::read_to_string(&log)
                .ok()
                .map(|t| t.lines().map(str::to_owned).collect()),
        }
    }

    /// Collects failed expectations for one case.
    struct Case<'a> {
        name: &'a str,
        run: Run,
        problems: Vec<String>,
    }

    impl Case<'_> {
        fn expect(&mut self, cond: bool, what: impl Into<String>) -> &mut Self {
            if !cond {
                self.problems.push(what.into());
            }
            self
        }
        fn expect_stdout(&mut self, prefix: &str, expected: &[&str]) -> &mut Self {
            let got: Vec<String> = self
                .run
                .lines(prefix)
                .iter()
                .map(|s| s.to_string())
                .collect();
            let cond = got == expected;
            self.expect(
                cond,
                format!("stdout {prefix:?}*: expected {expected:?}, got {got:?}"),
            )
        }
        fn expect_log(&mut self, expected: &[&str]) -> &mut Self {
            let got: Vec<String> = self.run.log_lines().iter().map(|s| s.to_string()).collect();
            let cond = got == expected;
            self.expect(
                cond,
                format!("tool log: expected {expected:?}, got {got:?}"),
            )
        }
        fn expect_no_log(&mut self) -> &mut Self {
            let cond = self.run.log.is_none();
            let got = self.run.log.clone();
            self.expect(cond, format!("tool must not be called, log: {got:?}"))
        }
        fn expect_stderr_has(&mut self, needle: &str) -> &mut Self {
            let cond = self.run.stderr.contains(needle);
            self.expect(cond, format!("stderr lacks {needle:?}"))
        }
        fn expect_stderr_lacks(&mut self, needle: &str) -> &mut Self {
            let cond = !self.run.stderr.contains(needle);
            self.expect(cond, format!("stderr unexpectedly has {needle:?}"))
        }
    }

    struct Tally {
        passed: usize,
        failed: usize,
    }

    impl Tally {
        fn case(
            &mut self,
            ctx: &Ctx,
            name: &str,
            env: &[(&str, OsString)],
            ops: &[&str],
            checks: impl FnOnce(&mut Case<'_>),
        ) {
            let run = run_child(ctx, name, env, ops);
            let mut case = Case {
                name,
                run,
                problems: Vec::new(),
            };
            let ok = case.run.ok;
            case.expect(ok, "child did not exit successfully");
            checks(&mut case);
            if case.problems.is_empty() {
                self.passed += 1;
                println!("ok     {}", case.name);
            } else {
                self.failed += 1;
                println!("FAILED {}", case.name);
                for p in &case.problems {
                    println!("    - {p}");
                }
                println!("    child stdout: {:?}", case.run.stdout);
                println!("    child stderr: {}", case.run.stderr.trim_end());
            }
        }
    }

    fn log_line(name: &str, instance: u64, num_tables: u64) -> String {
        format!(
            "set_api_table name={name} version={VERSION} instance={instance} num_tables={num_tables}"
        )
    }

    fn cases(ctx: &Ctx, t: &mut Tally) {
        let tool = ctx.tool.clone().into_os_string();
        let preload = || ("LD_PRELOAD", tool.clone());
        let hsa_ok = "reg hsa i=0 rc=0 handle=0 slot0=marker";
        let hsa_no_tools = "reg hsa i=0 rc=1 handle=0 slot0=original";
        let hsa0_line = log_line("hsa", 0, 1);
        let hsa0 = hsa0_line.as_str();

        t.case(ctx, "preloaded_tool", &[preload()], &["reg:hsa:1"], |c| {
            c.expect_stdout("reg ", &[hsa_ok])
                .expect_log(&[hsa0])
                .expect_stderr_lacks("rocprofiler-register:");
        });

        t.case(
            ctx,
            "rocp_tool_libraries",
            &[("ROCP_TOOL_LIBRARIES", tool.clone())],
            &["reg:hsa:1"],
            |c| {
                c.expect_stdout("reg ", &[hsa_ok]).expect_log(&[hsa0]);
            },
        );

        let mut multi = OsString::from("/nonexistent/libnotool.so::");
        multi.push(&tool);
        t.case(
            ctx,
            "rocp_tool_libraries_list_last_entry",
            &[("ROCP_TOOL_LIBRARIES", multi)],
            &["reg:hsa:1"],
            |c| {
                c.expect_stdout("reg ", &[hsa_ok]).expect_log(&[hsa0]);
            },
        );

        t.case(
            ctx,
            "register_library",
            &[("ROCPROFILER_REGISTER_LIBRARY", tool.clone())],
            &["reg:hsa:1"],
            |c| {
                c.expect_stdout("reg ", &[hsa_ok]).expect_log(&[hsa0]);
            },
        );

        t.case(ctx, "no_tool", &[], &["reg:hsa:1"], |c| {
            c.expect_stdout("reg ", &[hsa_no_tools]).expect_no_log();
        });

        t.case(
            ctx,
            "unsupported_name",
            &[preload()],
            &["reg:cuda:1", "reg:HSA:1"],
            |c| {
                c.expect_stdout(
                    "reg ",
                    &[
                        "reg cuda i=0 rc=4 handle=unset slot0=original",
                        "reg HSA i=0 rc=4 handle=unset slot0=original",
                    ],
                )
                .expect_no_log();
            },
        );

        t.case(
            ctx,
            "ninth_instance",
            &[preload()],
            &["reg:hsa:9", "reg:hip:1"],
            |c| {
                let mut expected: Vec<String> = (0..8)
                    .map(|i| format!("reg hsa i={i} rc=0 handle={i} slot0=marker"))
                    .collect();
                expected.push("reg hsa i=8 rc=7 handle=unset slot0=original".into());
                let expected_refs: Vec<&str> = expected.iter().map(String::as_str).collect();
                c.expect_stdout("reg hsa", &expected_refs)
                    .expect_stdout("reg hip", &["reg hip i=0 rc=0 handle=8 slot0=marker"]);
                let mut log: Vec<String> = (0..8).map(|i| log_line("hsa", i, 1)).collect();
                log.push(log_line("hip", 0, 1));
                let log_refs: Vec<&str> = log.iter().map(String::as_str).collect();
                c.expect_log(&log_refs);
            },
        );

        for (case, value) in [
            ("disabled_0", "0"),
            ("disabled_off", "OFF"),
            ("disabled_no", "no"),
        ] {
            t.case(
                ctx,
                case,
                &[preload(), ("ROCPROFILER_REGISTER_ENABLED", value.into())],
                &["reg:hsa:1"],
                |c| {
                    c.expect_stdout("reg ", &["reg hsa i=0 rc=1 handle=unset slot0=original"])
                        .expect_no_log();
                },
            );
        }

        t.case(
            ctx,
            "enabled_explicitly",
            &[preload(), ("ROCPROFILER_REGISTER_ENABLED", "1".into())],
            &["reg:hsa:1"],
            |c| {
                c.expect_stdout("reg ", &[hsa_ok]).expect_log(&[hsa0]);
            },
        );

        t.case(
            ctx,
            "force_load_off_overrides_tool_libraries",
            &[
                ("ROCP_TOOL_LIBRARIES", tool.clone()),
                ("ROCPROFILER_REGISTER_FORCE_LOAD", "0".into()),
            ],
            &["reg:hsa:1"],
            |c| {
                c.expect_stdout("reg ", &[hsa_no_tools]).expect_no_log();
            },
        );

        t.case(
            ctx,
            "tool_rejects_tables",
            &[preload(), ("MINI_TOOL_FAIL", "1".into())],
            &["reg:hsa:1"],
            |c| {
                // The tool ran (and wrapped) but returned non-zero.
                c.expect_stdout("reg ", &["reg hsa i=0 rc=6 handle=0 slot0=marker"])
                    .expect_log(&[hsa0]);
            },
        );

        t.case(
            ctx,
            "reentry_from_tool_is_deadlock",
            &[preload(), ("MINI_TOOL_REENTER", "1".into())],
            &["reg:hsa:1", "iterate"],
            |c| {
                let line = format!("{hsa0} reenter=2");
                c.expect_stdout("reg ", &[hsa_ok])
                    .expect_log(&[line.as_str()])
                    // The refused inner "hip" call stored nothing.
                    .expect_stdout("info ", &["info name=hsa version=11800 len=1 size=32"]);
            },
        );

        t.case(
            ctx,
            "missing_tool_library_verbose",
            &[
                ("ROCP_TOOL_LIBRARIES", "/nonexistent/libnotool.so".into()),
                ("ROCPROFILER_REGISTER_VERBOSE", "1".into()),
            ],
            &["reg:hsa:1"],
            |c| {
                c.expect_stdout("reg ", &[hsa_no_tools])
                    .expect_no_log()
                    .expect_stderr_has(
                        "rocprofiler-register: cannot load tool /nonexistent/libnotool.so",
                    )
                    .expect_stderr_has(
                        "rocprofiler-register: hsa v11800 instance 0: ROCP_REG_NO_TOOLS",
                    );
            },
        );

        t.case(
            ctx,
            "verbose_lines",
            &[preload(), ("ROCPROFILER_REGISTER_VERBOSE", "1".into())],
            &["reg:hsa:1", "reg:cuda:1"],
            |c| {
                c.expect_stderr_has(
                    "rocprofiler-register: hsa v11800 instance 0: ROCP_REG_SUCCESS\n",
                )
                .expect_stderr_has(
                    "rocprofiler-register: cuda v11800 instance -: ROCP_REG_UNSUPPORTED_API\n",
                );
                let lines = c.run.stderr.matches("rocprofiler-register:").count();
                c.expect(lines == 2, format!("expected 2 verbose lines, got {lines}"));
            },
        );

        t.case(
            ctx,
            "registration_info_and_invoke_all",
            &[preload()],
            &[
                "reg:hsa:1",
                "reg:roctx:1:3",
                "reg:hip_compiler:1",
                "iterate",
                "iterate_first",
                "invoke_all",
            ],
            |c| {
                c.expect_stdout(
                    "reg ",
                    &[
                        hsa_ok,
                        "reg roctx i=0 rc=0 handle=16 slot0=marker",
                        "reg hip_compiler i=0 rc=0 handle=24 slot0=marker",
                    ],
                )
                .expect_stdout(
                    "info ",
                    &[
                        "info name=hsa version=11800 len=1 size=32",
                        "info name=roctx version=11800 len=3 size=32",
                        "info name=hip_compiler version=11800 len=1 size=32",
                        "info name=hsa version=11800 len=1 size=32",
                    ],
                )
                .expect_stdout("iterate ", &["iterate rc=0", "iterate rc=0"])
                .expect_stdout("invoke_all ", &["invoke_all rc=0"]);
                let first = [
                    log_line("hsa", 0, 1),
                    log_line("roctx", 0, 3),
                    log_line("hip_compiler", 0, 1),
                ];
                let all: Vec<&str> = first
                    .iter()
                    .chain(first.iter())
                    .map(String::as_str)
                    .collect();
                c.expect_log(&all);
            },
        );

        t.case(
            ctx,
            "invoke_all_without_tool",
            &[],
            &["reg:hsa:1", "invoke_all"],
            |c| {
                c.expect_stdout("reg ", &[hsa_no_tools])
                    .expect_stdout("invoke_all ", &["invoke_all rc=0"])
                    .expect_no_log();
            },
        );

        t.case(
            ctx,
            "bad_arguments",
            &[preload()],
            &["badargs", "iterate"],
            |c| {
                c.expect_stdout(
                    "badargs ",
                    &["badargs null_name=8 null_tables=8 null_id=8 zero_len=3 handle=unset"],
                )
                .expect_no_log()
                .expect_stdout("info ", &[]);
            },
        );

        t.case(
            ctx,
            "error_strings",
            &[],
            &["errstr:0", "errstr:1", "errstr:7", "errstr:10", "errstr:-1"],
            |c| {
                c.expect_stdout(
                    "errstr ",
                    &[
                        "errstr 0 Success",
                        "errstr 1 rocprofiler-register found no tools",
                        "errstr 7 Too many instances of the same library API were registered",
                        "errstr 10 rocprofiler_register_unknown_error",
                        "errstr -1 rocprofiler_register_unknown_error",
                    ],
                );
            },
        );
    }

    fn setup() -> Result<Ctx, String> {
        let exe = std::env::current_exe().map_err(|e| format!("current_exe: {e}"))?;
        let lib = find_register_lib(&exe)?;
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("sim-register-discovery-{}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(|e| format!("create {}: {e}", dir.display()))?;
        let tool = build_mini_tool(&dir)?;
        Ok(Ctx {
            exe,
            lib,
            tool,
            dir,
        })
    }

    pub fn run() -> ExitCode {
        let ctx = match setup() {
            Ok(ctx) => ctx,
            Err(err) => {
                println!("setup failed: {err}");
                println!("0 passed, 1 failed");
                return ExitCode::FAILURE;
            }
        };
        println!("register library: {}", ctx.lib.display());
        println!("mini tool:        {}", ctx.tool.display());
        let mut tally = Tally {
            passed: 0,
            failed: 0,
        };
        cases(&ctx, &mut tally);
        println!("{} passed, {} failed", tally.passed, tally.failed);
        if tally.failed == 0 {
            let _ = std::fs::remove_dir_all(&ctx.dir);
            ExitCode::SUCCESS
        } else {
            println!("artifacts kept in {}", ctx.dir.display());
            ExitCode::FAILURE
        }
    }
}
