//! What the fake-runtime tests share: API tables of a runtime's layout built in memory, and a
//! record log installed as the process's sink.

use hsa_intercept::sink;
use hsa_intercept::tables::{AMD_EXT, ApiTable, CORE};
use std::ffi::c_void;
use std::path::PathBuf;
use trace_records::log::FileHeader;

/// A table of `table`'s layout with every entry null (8-byte aligned storage).
pub fn empty_table(table: &ApiTable) -> Vec<u64> {
    let mut t = vec![0u64; table.size() / 8];
    t[0] = u64::from(table.size() as u32) << 32;
    t
}

/// Sets entry `name` of `t` (a table of `table`'s layout) to `f`.
pub fn set(t: &mut [u64], table: &ApiTable, name: &str, f: *const c_void) {
    let k = table.operation(name).unwrap() as usize;
    t[table.offset(k) / 8] = f as u64;
}

/// Entry `name` of `t` (a table of `table`'s layout).
pub fn get(t: &[u64], table: &ApiTable, name: &str) -> u64 {
    t[table.offset(table.operation(name).unwrap() as usize) / 8]
}

/// What every entry a test does not replace points at.
pub unsafe extern "C" fn placeholder() -> u32 {
    0x1000
}

/// The HSA core and AMD extension tables with every entry at a placeholder.
pub fn runtime_tables() -> (Vec<u64>, Vec<u64>) {
    let mut core = empty_table(&CORE);
    let mut amd = empty_table(&AMD_EXT);
    for (t, table) in [(&mut core, &CORE), (&mut amd, &AMD_EXT)] {
        for name in table.names {
            set(t, table, name, placeholder as *const c_void);
        }
    }
    (core, amd)
}

/// A record log for process `pid` in a fresh directory named after `test`, installed as the
/// sink; its path.
pub fn install_log(test: &str, pid: u32) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("hsa-intercept-{test}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let _ = std::fs::remove_file(dir.join(format!("{pid}.rplog")));
    let log = record_log::LogFile::create(
        &dir,
        FileHeader {
            pid,
            ..Default::default()
        },
    )
    .unwrap();
    let path = log.path().to_owned();
    assert!(sink::install(log));
    path
}
