//! Unit tests: table layout against the fact file, the fat-binary parser, last-error
//! semantics, kernarg packing, packets, blit kernels and the compiler entry points (none of
//! these need the HSA runtime).

use std::ffi::{CStr, c_void};

use crate::blit::{self, CopyArgs, FillArgs, WslsimLaunch};
use crate::error;
use crate::fatbin::{self, ArgSlot, FatbinError, Wrapper};
use crate::modules::LoadedKernel;
use crate::ops::{self, Dim3, Launch};
use crate::table::{self, HipDispatchTable, idx};

const ORDER: &str = include_str!("../../../abi/hip-table-order.txt");

fn order() -> Vec<&'static str> {
    ORDER.lines().map(str::trim).collect()
}

#[test]
fn table_fields_follow_the_order_file() {
    let names = order();
    assert_eq!(names.len(), 503);
    assert_eq!(table::HIP_API_NAMES.len(), 503);
    for (i, name) in names.iter().enumerate() {
        assert_eq!(table::HIP_API_NAMES[i], *name, "index {i}");
    }
    assert_eq!(table::HIP_TABLE_FIELDS.len(), 463);
    for (i, (name, offset)) in table::HIP_TABLE_FIELDS.iter().enumerate() {
        assert_eq!(*name, names[i], "field {i}");
        assert_eq!(*offset, 8 + 8 * i, "offset of {name}");
    }
    assert_eq!(size_of::<HipDispatchTable>(), 8 + 8 * 463);
    assert_eq!(table::HIP_RUNTIME_API_TABLE_STEP_VERSION, 6);
    // hip-table.md §1.1 and "other useful ones".
    for (name, index) in [
        ("hipApiName", 0),
        ("hipDeviceGetAttribute", 41),
        ("hipMemcpy", 259),
        ("hipLaunchKernel", 214),
        ("hipGetDevicePropertiesR0600", 105),
        ("hipGetDevicePropertiesR0000", 106),
        ("hipModuleGetFunction", 303),
        ("hipMemcpy_spt", 390),
        ("hipGetProcAddress", 442),
        ("hipDeviceGetTexture1DLinearMaxWidth", 462),
        ("hipLaunchKernelExC", 474),
        ("hipOccupancyAvailableDynamicSMemPerBlock", 502),
    ] {
        assert_eq!(names.iter().position(|n| *n == name), Some(index), "{name}");
    }
    assert_eq!(idx::hipMemcpy, 259);
    assert_eq!(idx::hipLaunchKernel_spt, 419);
}

#[test]
fn every_entry_starts_as_a_stub_and_implemented_entries_exist() {
    let stubs = HipDispatchTable::stubs();
    assert_eq!(stubs.size, 3712);
    let slots: Vec<*mut c_void> = table::HIP_TABLE_FIELDS
        .iter()
        .map(|(_, offset)| {
            // SAFETY: every field offset is an AtomicPtr slot inside the table.
            unsafe {
                *(&stubs as *const HipDispatchTable)
                    .cast::<u8>()
                    .add(*offset)
                    .cast::<*mut c_void>()
            }
        })
        .collect();
    let not_supported = table::not_supported_stub as *mut c_void;
    let zero = table::zero_stub as *mut c_void;
    for (i, slot) in slots.iter().enumerate() {
        assert!(*slot == not_supported || *slot == zero, "entry {i}");
    }
    assert_eq!(slots[idx::hipGetErrorString], zero);
    assert_eq!(slots[idx::hipMalloc], not_supported);
    for name in table::IMPLEMENTED_RUNTIME {
        let i = order()
            .iter()
            .position(|n| n == name)
            .expect("implemented entry in the order file");
        assert!(i < table::HIP_TABLE_LEN, "{name} lies past the step");
    }
    assert_eq!(table::IMPLEMENTED_COMPILER, &table::HIP_COMPILER_NAMES[..]);
    // SAFETY: the stub reads no argument.
    assert_eq!(unsafe { table::not_supported_stub() }, error::NOT_SUPPORTED);
    assert_eq!(error::take_last(), error::NOT_SUPPORTED);
}

#[test]
fn register_version_is_hip_7_0() {
    assert_eq!(table::REGISTER_VERSION, 70000);
    assert_eq!(table::rocprofiler_register_import_hip(), 70000);
    assert_eq!(table::rocprofiler_register_import_hip_compiler(), 70000);
    assert_eq!(crate::api::HIP_VERSION, 70_051_831);
}

#[test]
fn last_error_is_sticky_until_taken() {
    // Each test runs on its own thread: a fresh last error.
    assert_eq!(error::peek_last(), error::SUCCESS);
    assert_eq!(
        crate::api::api(|| Err(error::INVALID_VALUE)),
        error::INVALID_VALUE
    );
    assert_eq!(crate::api::api(|| Ok(())), error::SUCCESS);
    assert_eq!(
        error::peek_last(),
        error::INVALID_VALUE,
        "a success does not clear it"
    );
    assert_eq!(
        error::peek_last(),
        error::INVALID_VALUE,
        "peek does not reset"
    );
    error::record(error::NOT_READY);
    assert_eq!(
        error::peek_last(),
        error::INVALID_VALUE,
        "hipErrorNotReady is not recorded"
    );
    error::record(error::OUT_OF_MEMORY);
    assert_eq!(
        error::take_last(),
        error::OUT_OF_MEMORY,
        "the latest error wins"
    );
    assert_eq!(error::take_last(), error::SUCCESS, "take resets");
    assert_eq!(crate::api::api(|| panic!("simulated bug")), error::UNKNOWN);
    assert_eq!(error::take_last(), error::UNKNOWN);
    let other = std::thread::spawn(error::peek_last).join().unwrap();
    assert_eq!(other, error::SUCCESS, "per thread");
}

#[test]
fn error_names_and_strings_are_static() {
    for code in error::known_codes() {
        let name = error::name(code).to_str().unwrap();
        assert!(name.starts_with("hip"), "{code}: {name}");
        assert!(!error::description(code).to_bytes().is_empty());
    }
    assert_eq!(error::name(0), c"hipSuccess");
    assert_eq!(error::name(801), c"hipErrorNotSupported");
    assert_eq!(error::name(4242), c"hipErrorUnknown");
    assert_eq!(error::description(1), c"invalid argument");
    // SAFETY: the C entry points return static strings.
    unsafe {
        let a = crate::api::hipGetErrorName(98);
        assert_eq!(CStr::from_ptr(a), c"hipErrorInvalidDeviceFunction");
        assert_eq!(
            crate::api::hipGetErrorName(98),
            a,
            "the same static string each time"
        );
        assert_eq!(
            CStr::from_ptr(crate::api::hipGetErrorString(2)),
            c"out of memory"
        );
    }
}

fn kernel(name: &str, kernarg: u32) -> wslsim_codeobj::Kernel {
    wslsim_codeobj::KernelBuilder::new(name)
        .kernarg(kernarg, 8)
        .impl_address(0x1000)
        .build()
        .unwrap()
}

fn code(kernels: &[wslsim_codeobj::Kernel]) -> Vec<u8> {
    wslsim_codeobj::encode(kernels)
}

#[test]
fn fat_binary_round_trip() {
    let kernels = [kernel("_Z4axpbPKfPfm", 24), kernel("_Z1kv", 0)];
    let layouts = vec![
        vec![
            ArgSlot { offset: 0, size: 8 },
            ArgSlot { offset: 8, size: 8 },
            ArgSlot {
                offset: 16,
                size: 8,
            },
        ],
        vec![],
    ];
    let co = code(&kernels);
    let layout = fatbin::encode_layout(&layouts);
    let parsed = fatbin::parse(&co, &layout).unwrap();
    assert_eq!(parsed.code_object, co);
    assert_eq!(parsed.kernels.len(), 2);
    assert_eq!(parsed.kernels[0].kernel.name, "_Z4axpbPKfPfm");
    assert_eq!(parsed.kernels[0].args, layouts[0]);
    assert!(parsed.kernels[1].args.is_empty());
    // Through a wrapper in memory.
    let wrapper = Wrapper {
        magic: fatbin::WRAPPER_MAGIC,
        version: 1,
        code_object: co.as_ptr(),
        code_object_size: co.len() as u64,
        kernarg_layout: layout.as_ptr(),
        kernarg_layout_size: layout.len() as u64,
        reserved: 0,
    };
    assert_eq!(&fatbin::WRAPPER_MAGIC.to_le_bytes(), b"WSFB");
    // SAFETY: a valid wrapper whose blobs outlive the call.
    let read = unsafe { fatbin::read((&wrapper as *const Wrapper).cast()) }.unwrap();
    assert_eq!(read, parsed);
}

#[test]
fn malformed_fat_binaries_are_errors() {
    let kernels = [kernel("k", 16)];
    let co = code(&kernels);
    let good = vec![vec![
        ArgSlot { offset: 0, size: 8 },
        ArgSlot { offset: 8, size: 8 },
    ]];
    let layout = fatbin::encode_layout(&good);
    assert!(fatbin::parse(&co, &layout).is_ok());
    // Bad code object.
    assert!(matches!(
        fatbin::parse(&co[..20], &layout),
        Err(FatbinError::CodeObject(_))
    ));
    // Bad layout magic, version, count, sizes, ranges.
    let mut bad = layout.clone();
    bad[0] = b'X';
    assert!(matches!(
        fatbin::parse(&co, &bad),
        Err(FatbinError::Layout(_))
    ));
    let mut bad = layout.clone();
    bad[4] = 2;
    assert!(matches!(
        fatbin::parse(&co, &bad),
        Err(FatbinError::Layout(_))
    ));
    let two = fatbin::encode_layout(&[good[0].clone(), vec![]]);
    assert!(
        matches!(fatbin::parse(&co, &two), Err(FatbinError::Layout(_))),
        "count mismatch"
    );
    let outside = fatbin::encode_layout(&[vec![ArgSlot {
        offset: 12,
        size: 8,
    }]]);
    assert!(
        matches!(fatbin::parse(&co, &outside), Err(FatbinError::Layout(_))),
        "past kernarg_size"
    );
    let zero = fatbin::encode_layout(&[vec![ArgSlot { offset: 0, size: 0 }]]);
    assert!(matches!(
        fatbin::parse(&co, &zero),
        Err(FatbinError::Layout(_))
    ));
    let huge = fatbin::encode_layout(&[vec![ArgSlot {
        offset: u32::MAX,
        size: 8,
    }]]);
    assert!(
        matches!(fatbin::parse(&co, &huge), Err(FatbinError::Layout(_))),
        "no overflow"
    );
    let many = fatbin::encode_layout(&[vec![ArgSlot { offset: 0, size: 1 }; 65]]);
    assert!(matches!(
        fatbin::parse(&co, &many),
        Err(FatbinError::Layout(_))
    ));
    // Every truncation and every single-byte corruption: an answer, never a panic.
    for len in 0..layout.len() {
        assert!(
            fatbin::parse(&co, &layout[..len]).is_err(),
            "truncated to {len}"
        );
    }
    for i in 0..layout.len() {
        for v in [0u8, 1, 0x7F, 0xFF] {
            let mut b = layout.clone();
            b[i] = v;
            let _ = fatbin::parse(&co, &b);
        }
    }
    let mut seed = 0x1234_5678u64;
    for _ in 0..2000 {
        let len = (seed % 96) as usize;
        let bytes: Vec<u8> = (0..len)
            .map(|_| {
                seed = seed
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                (seed >> 33) as u8
            })
            .collect();
        let _ = fatbin::parse(&co, &bytes);
        let _ = fatbin::parse(&bytes, &layout);
    }
    // Wrapper checks.
    // SAFETY: a null pointer is refused before any read.
    let null = unsafe { fatbin::read(std::ptr::null()) };
    assert_eq!(null, Err(FatbinError::Null));
    let mut w = Wrapper {
        magic: 0x1234,
        version: 1,
        code_object: co.as_ptr(),
        code_object_size: co.len() as u64,
        kernarg_layout: layout.as_ptr(),
        kernarg_layout_size: layout.len() as u64,
        reserved: 0,
    };
    assert_eq!(
        fatbin::check_wrapper(&w),
        Err(FatbinError::BadMagic(0x1234))
    );
    w.magic = fatbin::WRAPPER_MAGIC;
    w.version = 9;
    assert_eq!(fatbin::check_wrapper(&w), Err(FatbinError::BadVersion(9)));
    w.version = 1;
    w.code_object = std::ptr::null();
    assert!(matches!(
        fatbin::check_wrapper(&w),
        Err(FatbinError::BadBlob(_))
    ));
    w.code_object = co.as_ptr();
    w.kernarg_layout_size = u64::MAX;
    assert!(matches!(
        fatbin::check_wrapper(&w),
        Err(FatbinError::BadBlob(_))
    ));
}

#[test]
fn kernargs_are_packed_at_their_offsets() {
    let layout = [
        ArgSlot { offset: 0, size: 8 },
        ArgSlot { offset: 8, size: 4 },
        ArgSlot {
            offset: 16,
            size: 8,
        },
    ];
    let (a, b, c) = (
        0x1122_3344_5566_7788u64,
        0xAABB_CCDDu32,
        0x0102_0304_0506_0708u64,
    );
    let args: [*const u8; 3] = [
        (&raw const a).cast(),
        (&raw const b).cast(),
        (&raw const c).cast(),
    ];
    let mut kernarg = [0xEEu8; 24];
    // SAFETY: three readable arguments of the layout's sizes.
    unsafe { fatbin::pack_kernargs(&mut kernarg, &layout, args.as_ptr()) }.unwrap();
    assert_eq!(&kernarg[0..8], &a.to_le_bytes());
    assert_eq!(&kernarg[8..12], &b.to_le_bytes());
    assert_eq!(&kernarg[12..16], &[0; 4], "padding is zeroed");
    assert_eq!(&kernarg[16..24], &c.to_le_bytes());
    // Errors: null array, null argument, slot outside the segment.
    // SAFETY: the null cases are refused before reading.
    unsafe {
        assert_eq!(
            fatbin::pack_kernargs(&mut kernarg, &layout, std::ptr::null()),
            Err(error::INVALID_VALUE)
        );
        let with_null: [*const u8; 3] = [args[0], std::ptr::null(), args[2]];
        assert_eq!(
            fatbin::pack_kernargs(&mut kernarg, &layout, with_null.as_ptr()),
            Err(error::INVALID_VALUE)
        );
        let mut short = [0u8; 16];
        assert_eq!(
            fatbin::pack_kernargs(&mut short, &layout, args.as_ptr()),
            Err(error::INVALID_VALUE)
        );
        assert_eq!(
            fatbin::pack_kernargs(&mut short, &[], std::ptr::null()),
            Ok(())
        );
    }
}

#[test]
fn launch_geometry_is_checked() {
    let l = ops::launch_geometry(
        Dim3 {
            x: 1024,
            y: 1,
            z: 1,
        },
        Dim3 { x: 256, y: 1, z: 1 },
        0,
        [1024; 3],
        1024,
    )
    .unwrap();
    assert_eq!(l.grid, [262_144, 1, 1]);
    assert_eq!(l.workgroup, [256, 1, 1]);
    let bad = |b: Dim3, t: Dim3| ops::launch_geometry(b, t, 0, [1024; 3], 1024).unwrap_err();
    assert_eq!(
        bad(Dim3 { x: 0, y: 1, z: 1 }, Dim3 { x: 1, y: 1, z: 1 }),
        error::INVALID_CONFIGURATION
    );
    assert_eq!(
        bad(
            Dim3 { x: 1, y: 1, z: 1 },
            Dim3 {
                x: 2048,
                y: 1,
                z: 1
            }
        ),
        error::INVALID_CONFIGURATION
    );
    assert_eq!(
        bad(Dim3 { x: 1, y: 1, z: 1 }, Dim3 { x: 64, y: 32, z: 1 }),
        error::INVALID_CONFIGURATION
    );
    assert_eq!(
        bad(
            Dim3 {
                x: u32::MAX,
                y: 1,
                z: 1
            },
            Dim3 { x: 2, y: 1, z: 1 }
        ),
        error::INVALID_CONFIGURATION
    );
}

#[test]
fn dispatch_and_barrier_packets() {
    let kernel = LoadedKernel {
        kernel_object: 0xABCD_0000,
        kernarg_size: 24,
        group_segment_size: 256,
        private_segment_size: 16,
        args: Vec::new(),
    };
    let launch = Launch {
        grid: [262_144, 1, 1],
        workgroup: [256, 1, 1],
        dynamic_lds: 1024,
    };
    let p = ops::dispatch_packet(
        &kernel,
        &launch,
        0x7000,
        crate::hsa::Signal { handle: 0x9000 },
    );
    let u16_at = |o: usize| u16::from_le_bytes([p[o], p[o + 1]]);
    let u32_at = |o: usize| u32::from_le_bytes([p[o], p[o + 1], p[o + 2], p[o + 3]]);
    let u64_at = |o: usize| u64::from_le_bytes(p[o..o + 8].try_into().unwrap());
    // type 2, barrier, system acquire and release scopes; one dimension.
    assert_eq!(u16_at(0), 2 | 1 << 8 | 2 << 9 | 2 << 11);
    assert_eq!(u16_at(2), 1);
    assert_eq!((u16_at(4), u16_at(6), u16_at(8)), (256, 1, 1));
    assert_eq!((u32_at(12), u32_at(16), u32_at(20)), (262_144, 1, 1));
    assert_eq!(u32_at(24), 16);
    assert_eq!(u32_at(28), 256 + 1024);
    assert_eq!(u64_at(32), 0xABCD_0000);
    assert_eq!(u64_at(40), 0x7000);
    assert_eq!(u64_at(56), 0x9000);
    let launch3 = Launch {
        grid: [4, 4, 4],
        workgroup: [2, 2, 2],
        dynamic_lds: 0,
    };
    assert_eq!(
        ops::dispatch_packet(&kernel, &launch3, 0, Default::default())[2],
        3
    );
    let b = crate::runtime::barrier_packet(crate::hsa::Signal { handle: 0x5555 });
    assert_eq!(u16::from_le_bytes([b[0], b[1]]) & 0xFF, 3);
    assert_eq!(u64::from_le_bytes(b[8..16].try_into().unwrap()), 0x5555);
    assert_eq!(u64::from_le_bytes(b[56..64].try_into().unwrap()), 0);
}

#[test]
fn blit_kernels_compute_and_stay_within_16_workgroups() {
    let kernels = wslsim_codeobj::parse(&blit::program().code_object).unwrap();
    let copy = kernels
        .iter()
        .find(|k| k.name == "__amd_rocclr_copyBuffer")
        .unwrap();
    assert_eq!(copy.descriptor.kernarg_size(), size_of::<CopyArgs>() as u32);
    assert_ne!(copy.impl_address, 0);
    assert_eq!(kernels.len(), blit::kernel_names().len());
    assert_eq!(blit::blit_grid(1 << 20), (16, 16 * 512));
    assert_eq!(blit::blit_grid(100), (1, 512));
    assert_eq!(blit::blit_grid(0), (1, 512));

    let src: Vec<u8> = (0..100_003u32).map(|i| (i * 13 % 256) as u8).collect();
    let mut dst = vec![0u8; src.len()];
    let args = CopyArgs {
        src: src.as_ptr() as u64,
        dst: dst.as_mut_ptr() as u64,
        size: src.len() as u64,
    };
    let (_, grid) = blit::blit_grid(args.size);
    let launch = WslsimLaunch {
        grid: [grid, 1, 1],
        workgroup: [512, 1, 1],
        ..Default::default()
    };
    // SAFETY: valid kernargs and launch.
    unsafe { blit::copy_buffer_impl((&raw const args).cast(), &launch) };
    assert_eq!(dst, src);

    let mut buf = vec![1u8; 5000];
    let fill = FillArgs {
        dst: buf[7..].as_mut_ptr() as u64,
        size: 4000,
        value: 0x1AB,
        reserved: 0,
    };
    // SAFETY: valid kernargs and launch.
    unsafe { blit::fill_buffer_impl((&raw const fill).cast(), &launch) };
    assert!(buf[..7].iter().all(|&b| b == 1));
    assert!(buf[7..4007].iter().all(|&b| b == 0xAB));
    assert!(buf[4007..].iter().all(|&b| b == 1));
}

#[test]
fn call_configurations_are_a_per_thread_stack() {
    use crate::compiler::{__hipPopCallConfiguration, __hipPushCallConfiguration};
    let (mut g, mut b, mut s, mut st) = (
        Dim3::default(),
        Dim3::default(),
        0usize,
        std::ptr::null_mut::<c_void>(),
    );
    // SAFETY: valid out-pointers; by-value dim3s.
    unsafe {
        assert_eq!(
            __hipPopCallConfiguration(&mut g, &mut b, &mut s, &mut st),
            error::MISSING_CONFIGURATION
        );
        let d = |x| Dim3 { x, y: 1, z: 1 };
        assert_eq!(
            __hipPushCallConfiguration(d(4), d(64), 128, 0x10 as *mut c_void),
            0
        );
        assert_eq!(
            __hipPushCallConfiguration(d(8), d(32), 0, std::ptr::null_mut()),
            0
        );
        assert_eq!(
            __hipPopCallConfiguration(&mut g, &mut b, &mut s, &mut st),
            0
        );
        assert_eq!((g, b, s, st as usize), (d(8), d(32), 0, 0));
        assert_eq!(
            __hipPopCallConfiguration(&mut g, &mut b, &mut s, &mut st),
            0
        );
        assert_eq!((g, b, s, st as usize), (d(4), d(64), 128, 0x10));
    }
    let _ = error::take_last();
}

#[test]
fn fat_binary_registration_without_a_runtime() {
    use crate::compiler::{
        __hipRegisterFatBinary, __hipRegisterFunction, __hipUnregisterFatBinary,
    };
    let co = code(&[kernel("_Z4axpbPKfPfm", 24)]);
    let layout = fatbin::encode_layout(&[vec![ArgSlot { offset: 0, size: 8 }]]);
    let wrapper = Wrapper {
        magic: fatbin::WRAPPER_MAGIC,
        version: 1,
        code_object: co.as_ptr(),
        code_object_size: co.len() as u64,
        kernarg_layout: layout.as_ptr(),
        kernarg_layout_size: layout.len() as u64,
        reserved: 0,
    };
    let garbage = [0u8; 64];
    // SAFETY: a valid wrapper, a garbage one (refused by magic), and NUL-terminated names.
    unsafe {
        assert!(__hipRegisterFatBinary(garbage.as_ptr().cast()).is_null());
        assert!(__hipRegisterFatBinary(std::ptr::null()).is_null());
        let handle = __hipRegisterFatBinary((&raw const wrapper).cast());
        assert!(!handle.is_null());
        let stub = 0x4242usize as *const c_void;
        let name = c"_Z4axpbPKfPfm";
        __hipRegisterFunction(
            handle,
            stub,
            name.as_ptr().cast_mut(),
            name.as_ptr(),
            u32::MAX,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
        );
        assert_eq!(
            crate::modules::stub_name(0x4242).as_deref(),
            Some("_Z4axpbPKfPfm")
        );
        assert_eq!(
            CStr::from_ptr(crate::api::hipKernelNameRefByPtr(
                stub,
                std::ptr::null_mut()
            )),
            name
        );
        __hipUnregisterFatBinary(handle);
        assert_eq!(crate::modules::stub_name(0x4242), None);
        // Unknown handles are ignored.
        __hipUnregisterFatBinary(0x10 as *mut *mut c_void);
    }
}

#[test]
fn device_properties_layout_and_helpers() {
    use crate::props::{HipDevicePropR0600, put_string};
    assert_eq!(size_of::<HipDevicePropR0600>(), 1472);
    // SAFETY: all-zero is a valid value of the plain structure.
    let mut p: HipDevicePropR0600 = unsafe { std::mem::zeroed() };
    put_string(&mut p.name, &"x".repeat(300));
    assert_eq!(p.name[254], b'x' as std::ffi::c_char);
    assert_eq!(p.name[255], 0);
    put_string(&mut p.name, "AMD Radeon 890M Graphics");
    // SAFETY: NUL-terminated by put_string.
    let name = unsafe { CStr::from_ptr(p.name.as_ptr()) };
    assert_eq!(name, c"AMD Radeon 890M Graphics");
    assert_eq!(crate::api::arch_version("gfx1150"), (11, 5));
    assert_eq!(crate::api::arch_version("gfx90a"), (9, 0));
    assert_eq!(crate::api::arch_version("gfx942"), (9, 4));
    assert_eq!(crate::api::arch_version("cpu"), (0, 0));
}

#[test]
fn allocation_lookup_by_range() {
    use crate::memory::{Allocation, Kind, find, forget, record};
    record(Allocation {
        base: 0x10_0000,
        size: 0x1000,
        kind: Kind::Device(0),
    });
    record(Allocation {
        base: 0x20_0000,
        size: 0x100,
        kind: Kind::PinnedHost,
    });
    assert_eq!(
        find(0x10_0000, 0x1000).map(|a| a.kind),
        Some(Kind::Device(0))
    );
    assert_eq!(find(0x10_0800, 0x800).map(|a| a.base), Some(0x10_0000));
    assert_eq!(find(0x10_0800, 0x801), None, "runs past the end");
    assert_eq!(find(0x0F_FFFF, 1), None);
    assert_eq!(find(0x20_0010, 8).map(|a| a.kind), Some(Kind::PinnedHost));
    assert_eq!(find(usize::MAX, 2), None);
    forget(0x10_0000);
    forget(0x20_0000);
    assert_eq!(find(0x10_0000, 1), None);
}
