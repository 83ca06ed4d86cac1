//! Helpers the record-log tests share: an API record and a log header.
#![allow(dead_code)]

use trace_records::log::FileHeader;
use trace_records::{ApiDomain, ApiRecord};

/// API record `i` (times and operation derived from it).
pub fn api(i: u64) -> ApiRecord {
    ApiRecord {
        correlation_id: i,
        start: 1000 + i * 10,
        end: 1005 + i * 10,
        thread_id: 7,
        operation: (i % 100) as u16,
        domain: ApiDomain::HsaCore as u8,
        reserved: 0,
    }
}

/// The header of the tests' logs.
pub fn header() -> FileHeader {
    FileHeader {
        pid: 42,
        image: 1,
        ppid: 41,
        created_ns: 9,
    }
}
