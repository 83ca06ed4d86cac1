//! The signature-agnostic trampolines forward every kind of System V argument and return value
//! unchanged, and call the hooks around the original, nested calls included.

use hsa_intercept::wrap::{
    Forwarding, Hooks, set_hooks, wrap_entry, wrap_entry_capturing, wrap_entry_forwarding,
};
use std::cell::RefCell;
use std::ffi::c_void;

thread_local! {
    static EVENTS: RefCell<Vec<(char, u32)>> = const { RefCell::new(Vec::new()) };
}

struct Recorder;

impl Hooks for Recorder {
    fn enter(&self, tag: u32) {
        EVENTS.with(|e| e.borrow_mut().push(('>', tag)));
    }
    fn exit(&self, tag: u32) {
        EVENTS.with(|e| e.borrow_mut().push(('<', tag)));
    }
}

static RECORDER: Recorder = Recorder;

fn events() -> Vec<(char, u32)> {
    EVENTS.with(|e| std::mem::take(&mut *e.borrow_mut()))
}

/// Wraps `f` and returns the trampoline to call instead.
fn wrap<F: Copy>(f: F, tag: u32) -> F {
    assert_eq!(size_of::<F>(), size_of::<*const c_void>());
    set_hooks(&RECORDER);
    // SAFETY: `F` is a function pointer type (checked by size; the tests only pass fn items cast
    // to extern "C" fn pointers).
    let mut slot: *const c_void = unsafe { std::mem::transmute_copy(&f) };
    // SAFETY: `slot` is a local, writable pointer-sized cell; the functions use the C ABI.
    let original = unsafe { wrap_entry(&mut slot, tag) }.unwrap();
    // SAFETY: as above.
    assert_eq!(original, unsafe {
        std::mem::transmute_copy::<F, *const c_void>(&f)
    });
    // SAFETY: `slot` now holds the trampoline, which has `F`'s ABI.
    unsafe { std::mem::transmute_copy(&slot) }
}

/// Wraps `f` through the trampoline `how` names (a forwarding kind, or capturing with a shape).
fn wrap_through<F: Copy>(f: F, tag: u32, how: Result<Forwarding, api_signatures::Shape>) -> F {
    assert_eq!(size_of::<F>(), size_of::<*const c_void>());
    set_hooks(&RECORDER);
    // SAFETY: `F` is a function pointer type (checked by size).
    let mut slot: *const c_void = unsafe { std::mem::transmute_copy(&f) };
    // SAFETY: `slot` is a local pointer-sized cell; the tests pick a trampoline that forwards
    // the function's signature.
    unsafe {
        match how {
            Ok(forwarding) => wrap_entry_forwarding(&mut slot, tag, forwarding),
            Err(shape) => wrap_entry_capturing(&mut slot, tag, shape),
        }
    }
    .unwrap();
    // SAFETY: `slot` now holds the stub, which has `F`'s ABI.
    unsafe { std::mem::transmute_copy(&slot) }
}

extern "C" fn sum14(
    a: u64,
    b: u64,
    c: u64,
    d: u64,
    e: u64,
    f: u64,
    g: u64,
    h: u64,
    i: u64,
    j: u64,
    k: u64,
    l: u64,
    m: u64,
    n: u64,
) -> u64 {
    a + 2 * b
        + 3 * c
        + 4 * d
        + 5 * e
        + 6 * f
        + 7 * g
        + 8 * h
        + 9 * i
        + 10 * j
        + 11 * k
        + 12 * l
        + 13 * m
        + 14 * n
}

extern "C" fn floats(
    a: f64,
    b: i32,
    c: f32,
    d: f64,
    e: f32,
    f: f64,
    g: f64,
    h: f64,
    i: f64,
    j: f64,
) -> f64 {
    a + f64::from(b) * 2.0
        + f64::from(c) * 3.0
        + d * 4.0
        + f64::from(e) * 5.0
        + f * 6.0
        + g * 7.0
        + h * 8.0
        + i * 9.0
        + j * 10.0
}

#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
struct Dim3 {
    x: u32,
    y: u32,
    z: u32,
}

#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
struct Big {
    v: [u64; 6],
}

#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
struct Pair {
    a: u64,
    b: u64,
}

extern "C" fn launch(
    f: *const c_void,
    grid: Dim3,
    block: Dim3,
    args: *mut *mut c_void,
    shm: usize,
    s: u64,
) -> u32 {
    (f as usize as u32)
        ^ grid.x
        ^ (grid.y << 4)
        ^ (grid.z << 8)
        ^ (block.x << 12)
        ^ (block.y << 16)
        ^ (block.z << 20)
        ^ (args as usize as u32)
        ^ shm as u32
        ^ s as u32
}

extern "C" fn big(x: Big, k: u64) -> Big {
    Big {
        v: x.v.map(|e| e * k),
    }
}

extern "C" fn pair(a: u64, b: u64) -> Pair {
    Pair { a: b, b: a }
}

extern "C" fn ret_f32(x: f32) -> f32 {
    x * 0.5
}

#[test]
fn integer_arguments_on_registers_and_stack() {
    let f = wrap(
        sum14
            as extern "C" fn(
                u64,
                u64,
                u64,
                u64,
                u64,
                u64,
                u64,
                u64,
                u64,
                u64,
                u64,
                u64,
                u64,
                u64,
            ) -> u64,
        1,
    );
    let args: [u64; 14] = core::array::from_fn(|i| (i as u64 + 1) * 1000 + 7);
    let want = sum14(
        args[0], args[1], args[2], args[3], args[4], args[5], args[6], args[7], args[8], args[9],
        args[10], args[11], args[12], args[13],
    );
    let got = f(
        args[0], args[1], args[2], args[3], args[4], args[5], args[6], args[7], args[8], args[9],
        args[10], args[11], args[12], args[13],
    );
    assert_eq!(got, want);
    assert_eq!(events(), [('>', 1), ('<', 1)]);
}

#[test]
fn vector_registers_and_float_returns() {
    let f = wrap(
        floats as extern "C" fn(f64, i32, f32, f64, f32, f64, f64, f64, f64, f64) -> f64,
        2,
    );
    let want = floats(1.5, -3, 2.25, 4.0, 0.5, 6.0, 7.0, 8.0, 9.5, 10.25);
    assert_eq!(f(1.5, -3, 2.25, 4.0, 0.5, 6.0, 7.0, 8.0, 9.5, 10.25), want);
    let g = wrap(ret_f32 as extern "C" fn(f32) -> f32, 3);
    assert_eq!(g(3.0), 1.5);
    assert_eq!(events(), [('>', 2), ('<', 2), ('>', 3), ('<', 3)]);
}

#[test]
fn structs_by_value_and_hidden_return_pointers() {
    let l = wrap(
        launch as extern "C" fn(*const c_void, Dim3, Dim3, *mut *mut c_void, usize, u64) -> u32,
        4,
    );
    let (g, b) = (
        Dim3 {
            x: 4096,
            y: 3,
            z: 2,
        },
        Dim3 { x: 256, y: 1, z: 7 },
    );
    let fp = 0x1234_5678usize as *const c_void;
    let ap = 0x9abc_def0usize as *mut *mut c_void;
    assert_eq!(l(fp, g, b, ap, 99, 5), launch(fp, g, b, ap, 99, 5));
    let b6 = wrap(big as extern "C" fn(Big, u64) -> Big, 5);
    let x = Big {
        v: [1, 2, 3, 4, 5, 6],
    };
    assert_eq!(
        b6(x, 3),
        Big {
            v: [3, 6, 9, 12, 15, 18]
        }
    );
    let p = wrap(pair as extern "C" fn(u64, u64) -> Pair, 6);
    assert_eq!(p(1, 2), Pair { a: 2, b: 1 });
    assert_eq!(
        events(),
        [('>', 4), ('<', 4), ('>', 5), ('<', 5), ('>', 6), ('<', 6)]
    );
}

static INNER: std::sync::OnceLock<usize> = std::sync::OnceLock::new();

extern "C" fn outer(x: u64) -> u64 {
    // SAFETY: INNER holds a wrapped `extern "C" fn(u64) -> u64`.
    let inner: extern "C" fn(u64) -> u64 = unsafe { std::mem::transmute(*INNER.get().unwrap()) };
    inner(x) + 1
}

extern "C" fn inner(x: u64) -> u64 {
    x * 10
}

#[test]
fn nested_wrapped_calls_nest_their_hooks() {
    let i = wrap(inner as extern "C" fn(u64) -> u64, 8);
    INNER.set(i as usize).unwrap();
    let o = wrap(outer as extern "C" fn(u64) -> u64, 7);
    assert_eq!(o(4), 41);
    assert_eq!(events(), [('>', 7), ('>', 8), ('<', 8), ('<', 7)]);
}

#[test]
fn many_threads_call_through_trampolines_concurrently() {
    let f = wrap(pair as extern "C" fn(u64, u64) -> Pair, 9);
    let handles: Vec<_> = (0..4u64)
        .map(|t| {
            std::thread::spawn(move || {
                for i in 0..10_000u64 {
                    assert_eq!(f(t, i), Pair { a: i, b: t });
                }
                events().len()
            })
        })
        .collect();
    for h in handles {
        assert_eq!(h.join().unwrap(), 20_000);
    }
}

#[test]
fn null_entries_are_left_alone() {
    let mut slot: *const c_void = std::ptr::null();
    // SAFETY: a local pointer-sized cell.
    let r = unsafe { wrap_entry(&mut slot, 1) };
    assert_eq!(r, Err(hsa_intercept::wrap::WrapError::Null));
    assert!(slot.is_null());
}

static DEEP: std::sync::OnceLock<usize> = std::sync::OnceLock::new();

/// Recurses through its own trampoline, each level with arguments on the stack.
extern "C" fn deep(n: u64, a: u64, b: u64, c: u64, d: u64, e: u64, f: u64, g: u64) -> u64 {
    if n == 0 {
        return a + b + c + d + e + f + g;
    }
    // SAFETY: DEEP holds the wrapped `deep`.
    let me: extern "C" fn(u64, u64, u64, u64, u64, u64, u64, u64) -> u64 =
        unsafe { std::mem::transmute(*DEEP.get().unwrap()) };
    me(n - 1, a, b, c, d, e, f, g + 1) + 1
}

#[test]
fn deep_recursion_through_one_trampoline_keeps_arguments_and_hooks() {
    let f = wrap(
        deep as extern "C" fn(u64, u64, u64, u64, u64, u64, u64, u64) -> u64,
        10,
    );
    DEEP.set(f as usize).unwrap();
    let std_stack = std::thread::Builder::new().stack_size(64 << 20);
    let r = std_stack
        .spawn(move || (f(400, 1, 2, 3, 4, 5, 6, 7), events()))
        .unwrap()
        .join()
        .unwrap();
    assert_eq!(r.0, 400 + (1 + 2 + 3 + 4 + 5 + 6 + 7 + 400));
    assert_eq!(r.1.len(), 2 * 401);
    assert!(r.1[..401].iter().all(|e| *e == ('>', 10)));
    assert!(r.1[401..].iter().all(|e| *e == ('<', 10)));
}

/// Vector arguments among integer ones, no stack arguments, an integer result.
extern "C" fn vectors(a: u64, x: f64, b: u32, y: f32, c: u64, z: f64, w: f64) -> u64 {
    a + 2 * u64::from(b)
        + 3 * c
        + (x * 10.0) as u64
        + (f64::from(y) * 100.0) as u64
        + (z * 1000.0) as u64
        + (w * 10_000.0) as u64
}

/// Integer and vector arguments spilling to the stack: 8 integer (2 on the stack), 9 vector (1
/// on the stack), and a struct by value in memory.
#[allow(clippy::too_many_arguments)]
extern "C" fn spilled(
    a: u64,
    b: u64,
    c: u64,
    d: u64,
    e: u64,
    f: u64,
    g: u64,
    x0: f64,
    x1: f64,
    x2: f64,
    x3: f64,
    x4: f64,
    x5: f64,
    x6: f64,
    x7: f64,
    x8: f64,
    big: Big,
    h: u64,
) -> u64 {
    let ints = a + 2 * b + 3 * c + 4 * d + 5 * e + 6 * f + 7 * g + 8 * h;
    let floats =
        x0 + 2.0 * x1 + 3.0 * x2 + 4.0 * x3 + 5.0 * x4 + 6.0 * x5 + 7.0 * x6 + 8.0 * x7 + 9.0 * x8;
    ints + (floats * 16.0) as u64
        + big
            .v
            .iter()
            .enumerate()
            .map(|(k, v)| (k as u64 + 1) * v)
            .sum::<u64>()
}

type Vectors = extern "C" fn(u64, f64, u32, f32, u64, f64, f64) -> u64;
type Spilled = extern "C" fn(
    u64,
    u64,
    u64,
    u64,
    u64,
    u64,
    u64,
    f64,
    f64,
    f64,
    f64,
    f64,
    f64,
    f64,
    f64,
    f64,
    Big,
    u64,
) -> u64;

fn call_spilled(f: Spilled, n: u64) -> u64 {
    let big = Big {
        v: [n, 2, 3, 5, 7, 11],
    };
    f(
        n, 2, 3, 4, 5, 6, 7, 0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5, 8.25, big, 99,
    )
}

#[test]
fn vector_arguments_pass_through_every_trampoline() {
    let shape = api_signatures::Shape(3 | 4 << 3);
    let through = [
        (
            wrap_through(vectors as Vectors, 21, Ok(Forwarding::Registers)),
            21,
        ),
        (
            wrap_through(vectors as Vectors, 22, Ok(Forwarding::Stack)),
            22,
        ),
        (
            wrap_through(vectors as Vectors, 23, Ok(Forwarding::Any)),
            23,
        ),
        (wrap_through(vectors as Vectors, 24, Err(shape)), 24),
    ];
    for (f, tag) in through {
        for n in 0..3u64 {
            assert_eq!(
                f(n, 1.5, 7, 0.25, 9, 2.125, 0.5),
                vectors(n, 1.5, 7, 0.25, 9, 2.125, 0.5),
                "tag {tag}"
            );
        }
        assert_eq!(events(), [('>', tag), ('<', tag)].repeat(3));
    }
}

#[test]
fn stack_arguments_pass_through_every_trampoline_that_copies_them() {
    // 7 + 1 integer words (2 on the stack), 9 vector (1 on the stack), 6 words of struct.
    let shape = api_signatures::Shape(6 | 8 << 3 | 9 << 7);
    let through = [
        (
            wrap_through(spilled as Spilled, 31, Ok(Forwarding::Stack)),
            31,
        ),
        (
            wrap_through(spilled as Spilled, 32, Ok(Forwarding::Any)),
            32,
        ),
        (wrap_through(spilled as Spilled, 33, Err(shape)), 33),
    ];
    for (f, tag) in through {
        for n in 0..3u64 {
            assert_eq!(call_spilled(f, n), call_spilled(spilled, n), "tag {tag}");
        }
        assert_eq!(events(), [('>', tag), ('<', tag)].repeat(3));
    }
}
