//! The derived-counter language: scanning and parsing as upstream's flex/bison grammar does,
//! printing, and evaluation over shaped per-instance values, checked against reference
//! evaluators written here independently.

use std::collections::BTreeMap;
use std::path::Path;

use pmc_dxg::expr::{
    AccumulateMode, BinOp, Binding, Dim, Expr, IndexRange, MAX_DEPTH, MAX_EXPANDED_DEPTH,
    MAX_EXPANDED_NODES, Program, ReduceOp, Selection, Shape,
};
use pmc_dxg::{BaseEvent, Block, Error};
use proptest::prelude::*;

fn parse(text: &str) -> Result<Expr, Error> {
    Expr::parse("TEST", text)
}

fn name(n: &str) -> Expr {
    Expr::Name(n.to_owned())
}

fn bin(op: BinOp, l: Expr, r: Expr) -> Expr {
    Expr::Binary {
        op,
        lhs: Box::new(l),
        rhs: Box::new(r),
    }
}

fn position(r: Result<Expr, Error>) -> (usize, String) {
    match r {
        Err(Error::Parse {
            counter,
            position,
            expected,
            ..
        }) => {
            assert_eq!(counter, "TEST");
            (position, expected)
        }
        other => panic!("expected a parse error, got {other:?}"),
    }
}

// ----------------------------------------------------------------------------------------------
// Parsing
// ----------------------------------------------------------------------------------------------

#[test]
fn operators_are_left_associative_and_multiplication_binds_tighter() {
    use BinOp::*;
    assert_eq!(
        parse("a-b-c").unwrap(),
        bin(Sub, bin(Sub, name("a"), name("b")), name("c"))
    );
    assert_eq!(
        parse("a/b/c").unwrap(),
        bin(Div, bin(Div, name("a"), name("b")), name("c"))
    );
    assert_eq!(
        parse("a-b*c").unwrap(),
        bin(Sub, name("a"), bin(Mul, name("b"), name("c")))
    );
    assert_eq!(
        parse("a*b+c/d").unwrap(),
        bin(
            Add,
            bin(Mul, name("a"), name("b")),
            bin(Div, name("c"), name("d"))
        )
    );
    assert_eq!(
        parse("a*(b+c)").unwrap(),
        bin(Mul, name("a"), bin(Add, name("b"), name("c")))
    );
    assert_eq!(parse("((a))").unwrap(), name("a"));
    assert_eq!(
        parse(" \ta +\tb // the sum").unwrap(),
        bin(Add, name("a"), name("b"))
    );
}

#[test]
fn numbers_read_as_atoi_reads_the_scanners_literal() {
    let cases = [
        ("0.5", 0),
        (".5", 0),
        ("2.5e3", 2),
        ("7.", 7),
        ("1e5", 1),
        ("12E+2", 12),
        ("3e-1", 3),
        ("007", 7),
        ("100", 100),
        ("2147483647", i32::MAX),
        ("2147483648", i32::MIN),
        ("4294967295", -1),
        ("4294967296", 0),
        ("99999999999999999999", -1),
    ];
    for (text, want) in cases {
        assert_eq!(parse(text).unwrap(), Expr::Number(want), "{text}");
    }
    // The whole literal is one token: `0.5*X` is `0*X`.
    assert_eq!(
        parse("0.5*X").unwrap(),
        bin(BinOp::Mul, Expr::Number(0), name("X"))
    );
    // A second fraction is a second number, and two operands in a row are an error.
    assert_eq!(position(parse("1.5.5")).0, 3);
    // An incomplete exponent leaves a name behind.
    assert_eq!(position(parse("1e")).0, 1);
    assert_eq!(position(parse("1e+")).0, 1);
}

#[test]
fn parse_errors_name_the_counter_the_position_and_what_was_expected() {
    let cases: &[(&str, usize, &str)] = &[
        ("", 0, "a number, a name"),
        ("-1", 0, "a number, a name"),
        ("a+", 2, "found the end"),
        ("(a", 2, "`)`"),
        ("a b", 2, "the end of the expression"),
        ("a)", 1, "the end of the expression"),
        ("a|b", 1, "found `|`"),
        ("a\nb", 1, "found a line break"),
        ("a # b", 2, "'#'"),
        ("a\r", 1, "'\\r'"),
        ("é", 0, "'é'"),
        (".", 0, "'.'"),
        ("reduce", 6, "`(` after `reduce`"),
        ("reduce(a,sum", 12, "`,` or `)`"),
        ("reduce(a,total)", 9, "sum, avr, min or max"),
        ("reduce(a)", 8, "`,`"),
        ("reduce(a,sum,DIMENSION_XCC)", 13, "`[`"),
        ("reduce(a,sum,[DIMENSION_NONE])", 14, "a dimension"),
        ("reduce(a,sum,[])", 14, "a dimension"),
        ("accumulate(a,FAST)", 13, "NONE, LOW_RES or HIGH_RES"),
        ("accumulate(reduce,NONE)", 11, "base counter"),
        ("accumulate(a+b,NONE)", 12, "`,`"),
        ("select(a,[DIMENSION_XCC=[1, 2]])", 26, "`]`"),
        ("select(a,[DIMENSION_FOO=[1]])", 10, "a dimension"),
        ("select(a,[DIMENSION_XCC=[64]])", 25, "0 to 63"),
        ("select(a,[DIMENSION_XCC=[2:70]])", 27, "0 to 63"),
        ("select(a,[DIMENSION_XCC=[3:1]])", 25, "not below its start"),
        ("select(a,[DIMENSION_XCC=[4294967295]])", 25, "0 to 63"),
        ("select(a,[DIMENSION_XCC=[]])", 25, "an index"),
        ("select(a,[DIMENSION_XCC])", 23, "`=`"),
        ("select(a)", 8, "`,`"),
        ("reduce+1", 6, "`(` after `reduce`"),
        ("sum(a)", 3, "the end"),
    ];
    for &(text, at, want) in cases {
        let (pos, expected) = position(parse(text));
        assert_eq!(pos, at, "{text:?}: {expected}");
        assert!(expected.contains(want), "{text:?}: {expected}");
    }
    let e = parse("a+").unwrap_err();
    assert_eq!(
        e.to_string(),
        "counter TEST: expression `a+` at 2: expected a number, a name, `(`, `reduce(`, \
         `select(` or `accumulate(`, found the end"
    );
}

#[test]
fn functions_parse_into_their_nodes() {
    assert_eq!(
        parse("reduce(SQ_WAVES,sum)").unwrap(),
        Expr::Reduce {
            arg: Box::new(name("SQ_WAVES")),
            op: ReduceOp::Sum,
            dims: vec![]
        }
    );
    assert_eq!(
        parse("reduce( X , avr , [ DIMENSION_WGP , DIMENSION_SHADER_ENGINE, DIMENSION_WGP ] )")
            .unwrap(),
        Expr::Reduce {
            arg: Box::new(name("X")),
            op: ReduceOp::Avr,
            dims: vec![Dim::Wgp, Dim::ShaderEngine]
        }
    );
    assert_eq!(
        parse("accumulate(SQ_LEVEL_WAVES, HIGH_RES)").unwrap(),
        Expr::Accumulate {
            name: "SQ_LEVEL_WAVES".into(),
            mode: AccumulateMode::HighRes
        }
    );
    let r = |first, last| IndexRange { first, last };
    assert_eq!(
        parse("select(X,[DIMENSION_XCC=[1],DIMENSION_SHADER_ARRAY=[0:1,3],DIMENSION_XCC=[0]])")
            .unwrap(),
        Expr::Select {
            arg: Box::new(name("X")),
            selections: vec![
                Selection {
                    dim: Dim::Xcc,
                    ranges: vec![r(1, 1)]
                },
                Selection {
                    dim: Dim::ShaderArray,
                    ranges: vec![r(0, 1), r(3, 3)]
                },
            ]
        }
    );
    // `1.9` inside a selection is read by atoi too.
    assert_eq!(
        parse("select(X,[DIMENSION_WGP=[1.9]])").unwrap(),
        parse("select(X,[DIMENSION_WGP=[1]])").unwrap()
    );
    // Keywords are not names.
    assert!(parse("reduce").is_err());
    assert_eq!(parse("reducer").unwrap(), name("reducer"));
    assert_eq!(parse("_x9").unwrap(), name("_x9"));
    assert_eq!(
        parse("reduce(a*2,max)/accumulate(b,NONE)").unwrap().names(),
        ["a", "b"]
    );
    assert_eq!(parse("x+y*x-reduce(y,sum)").unwrap().names(), ["x", "y"]);
}

#[test]
fn printing_uses_only_the_parentheses_the_tree_needs() {
    let cases = [
        ("a-(b-c)", "a-(b-c)"),
        ("(a-b)-c", "a-b-c"),
        ("a*(b/c)", "a*(b/c)"),
        ("(a*b)/c", "a*b/c"),
        ("(a+b)*c", "(a+b)*c"),
        ("a+(b*c)", "a+b*c"),
        ("a/(b*c)", "a/(b*c)"),
        ("0.5", "0"),
        ("4294967295", "4294967295"),
        ("2147483648", "2147483648"),
        (
            "reduce( X , sum , [ DIMENSION_WGP ] )",
            "reduce(X,sum,[DIMENSION_WGP])",
        ),
        (
            "accumulate(SQ_LEVEL_WAVES, HIGH_RES)",
            "accumulate(SQ_LEVEL_WAVES,HIGH_RES)",
        ),
        (
            "select(X,[DIMENSION_XCC=[1],DIMENSION_SHADER_ARRAY=[0:1,3:3]])",
            "select(X,[DIMENSION_XCC=[1],DIMENSION_SHADER_ARRAY=[0:1,3]])",
        ),
        (
            "100*reduce(GRBM_GUI_ACTIVE,max)/reduce(GRBM_COUNT,max)",
            "100*reduce(GRBM_GUI_ACTIVE,max)/reduce(GRBM_COUNT,max)",
        ),
    ];
    for (text, want) in cases {
        let e = parse(text).unwrap();
        assert_eq!(e.to_string(), want, "{text}");
        assert_eq!(parse(want).unwrap(), e, "{want}");
    }
}

#[test]
fn hostile_nesting_is_refused_not_a_stack_overflow() {
    let deep = |what: Result<Expr, Error>| {
        let (_, expected) = position(what);
        assert!(
            expected.contains(&format!("at most {MAX_DEPTH} levels")),
            "{expected}"
        );
    };
    let parens = |n: usize| format!("{}a{}", "(".repeat(n), ")".repeat(n));
    let chain = |n: usize| vec!["a"; n].join("+");
    let reduces = |n: usize| format!("{}a{}", "reduce(".repeat(n), ",sum)".repeat(n));
    let right = |n: usize| format!("{}a{}", "a-(".repeat(n), ")".repeat(n));
    deep(parse(&parens(100_000)));
    deep(parse(&chain(200_000)));
    deep(parse(&reduces(50_000)));
    deep(parse(&right(50_000)));
    deep(parse(&format!(
        "select({},[DIMENSION_XCC=[0]])",
        chain(MAX_DEPTH)
    )));
    // At the limit everything works, printing and compiling included.
    let binding = |_: &str| -> Option<Binding<'_>> {
        Some(Binding::Base {
            event: sq_event(),
            shape: Shape::single(),
        })
    };
    for text in [
        parens(MAX_DEPTH),
        chain(MAX_DEPTH),
        reduces(MAX_DEPTH - 1),
        right(MAX_DEPTH / 2 - 1),
    ] {
        let e = parse(&text).unwrap_or_else(|e| panic!("{}: {e}", &text[..20]));
        assert_eq!(parse(&e.to_string()).unwrap(), e);
        Program::compile(&[("DEEP", &e)], &binding).unwrap();
    }
    deep(parse(&parens(MAX_DEPTH + 1)));
    deep(parse(&chain(MAX_DEPTH + 1)));
    deep(parse(&reduces(MAX_DEPTH)));
}

#[test]
fn hostile_expansions_are_refused() {
    // D0 = D1+1, D1 = D2+1, ...: deeper than any expansion may go.
    let n = 2 * MAX_EXPANDED_DEPTH;
    let chain: Vec<Expr> = (0..n)
        .map(|k| parse(&format!("D{}+1", k + 1)).unwrap())
        .collect();
    let binding = |name: &str| -> Option<Binding<'_>> {
        let k: usize = name.strip_prefix('D')?.parse().ok()?;
        Some(match chain.get(k) {
            Some(e) => Binding::Derived(e),
            None => Binding::Constant(1.0),
        })
    };
    let err = Program::compile(&[("D0", &chain[0])], &binding).unwrap_err();
    assert!(
        err.to_string()
            .contains(&format!("more than {MAX_EXPANDED_DEPTH} levels")),
        "{err}"
    );
    // One shallow enough compiles, to the right value: D(n-50) .. D(n-1) each add 1 to D(n).
    let p = Program::compile(&[("D", &chain[n - 50])], &binding).unwrap();
    let mut ev = p.evaluator();
    ev.evaluate(&[]).unwrap();
    assert_eq!(ev.value(0), [51.0]);
    // E0 = E1+E1, E1 = E2+E2, ...: 2^40 nodes expanded; refused quickly.
    let doubling: Vec<Expr> = (0..40)
        .map(|k| parse(&format!("E{0}*E{0}", k + 1)).unwrap())
        .collect();
    let binding = |name: &str| -> Option<Binding<'_>> {
        let k: usize = name.strip_prefix('E')?.parse().ok()?;
        Some(match doubling.get(k) {
            Some(e) => Binding::Derived(e),
            None => Binding::Constant(1.0),
        })
    };
    let started = std::time::Instant::now();
    let err = Program::compile(&[("E0", &doubling[0])], &binding).unwrap_err();
    assert!(
        err.to_string()
            .contains(&format!("more than {MAX_EXPANDED_NODES} nodes")),
        "{err}"
    );
    assert!(started.elapsed().as_secs() < 10);
}

// ----------------------------------------------------------------------------------------------
// Evaluation
// ----------------------------------------------------------------------------------------------

fn sq_event() -> BaseEvent {
    BaseEvent {
        block: Block::Sq,
        event: 4,
    }
}

/// The 890M's SQ shape: one SE, two SAs, four WGPs.
fn sq_shape() -> Shape {
    Shape::new([
        (Dim::Instance, 1),
        (Dim::Wgp, 4),
        (Dim::ShaderArray, 2),
        (Dim::ShaderEngine, 1),
    ])
}

/// Evaluates `text` with `inputs` (name, shape, values) and constants.
fn eval(text: &str, inputs: &[(&str, Shape, Vec<f64>)]) -> Result<(Shape, Vec<f64>), Error> {
    let e = parse(text)?;
    let binding = |n: &str| -> Option<Binding<'_>> {
        if n == "K" {
            return Some(Binding::Constant(16.0));
        }
        inputs
            .iter()
            .find(|(m, _, _)| *m == n)
            .map(|(_, s, _)| Binding::Base {
                event: sq_event(),
                shape: s.clone(),
            })
    };
    let p = Program::compile(&[("TEST", &e)], &binding)?;
    let values: Vec<&[f64]> = p
        .inputs()
        .iter()
        .map(|i| {
            inputs
                .iter()
                .find(|(m, _, _)| *m == i.name)
                .map(|(_, _, v)| v.as_slice())
                .unwrap()
        })
        .collect();
    let mut ev = p.evaluator();
    ev.evaluate(&values)?;
    Ok((p.outputs()[0].shape.clone(), ev.value(0).to_vec()))
}

fn values(text: &str, inputs: &[(&str, Shape, Vec<f64>)]) -> Vec<f64> {
    eval(text, inputs).unwrap().1
}

#[test]
fn division_by_zero_is_zero() {
    let s = [(
        "S",
        sq_shape(),
        vec![1.0, 2.0, 0.0, -4.0, 5.0, 6.0, 7.0, 8.0],
    )];
    assert_eq!(values("1/0", &[]), [0.0]);
    assert_eq!(values("0/0", &[]), [0.0]);
    assert_eq!(
        values("10/S", &s),
        [10.0, 5.0, 0.0, -2.5, 2.0, 10.0 / 6.0, 10.0 / 7.0, 1.25]
    );
    assert_eq!(values("S/(K-16)", &s), [0.0; 8]);
}

#[test]
fn reductions_follow_upstream() {
    let v = vec![3.0, -1.0, 4.0, 1.0, -5.0, 9.0, 2.0, 6.0];
    let s = [("S", sq_shape(), v)];
    assert_eq!(values("reduce(S,sum)", &s), [19.0]);
    assert_eq!(values("reduce(S,avr)", &s), [19.0 / 8.0]);
    assert_eq!(values("reduce(S,min)", &s), [-5.0]);
    assert_eq!(values("reduce(S,max)", &s), [9.0]);
    // Over WGPs: one value per shader array (the first four samples are SA 0).
    let (shape, v) = eval("reduce(S,sum,[DIMENSION_WGP])", &s).unwrap();
    assert_eq!(
        shape.to_string(),
        "DIMENSION_INSTANCE[0:0] DIMENSION_SHADER_ARRAY[0:1] DIMENSION_SHADER_ENGINE[0:0]"
    );
    assert_eq!(v, [7.0, 12.0]);
    // Over shader arrays: one value per WGP.
    assert_eq!(
        values("reduce(S,max,[DIMENSION_SHADER_ARRAY])", &s),
        [3.0, 9.0, 4.0, 6.0]
    );
    // Over every dimension it has: a single value.
    let (shape, v) = eval(
        "reduce(S,sum,[DIMENSION_WGP,DIMENSION_SHADER_ARRAY,\
         DIMENSION_SHADER_ENGINE,DIMENSION_INSTANCE])",
        &s,
    )
    .unwrap();
    assert_eq!(shape, Shape::single());
    assert_eq!(v, [19.0]);
    // Over a dimension it does not have: nothing is combined.
    assert_eq!(values("reduce(S,sum,[DIMENSION_XCC])", &s), s[0].2);
    // Sums start from +0; min and max keep the first of unordered values (`<` only).
    let z = [("Z", Shape::single(), vec![-0.0])];
    assert!(values("reduce(Z,sum)", &z)[0].is_sign_positive());
    let n = [(
        "N",
        Shape::new([(Dim::Instance, 1), (Dim::Xcc, 2)]),
        vec![f64::NAN, 1.0],
    )];
    assert!(values("reduce(N,max)", &n)[0].is_nan());
    assert!(values("reduce(N,min)", &n)[0].is_nan());
    let n = [(
        "N",
        Shape::new([(Dim::Instance, 1), (Dim::Xcc, 2)]),
        vec![1.0, f64::NAN],
    )];
    assert_eq!(values("reduce(N,max)", &n), [1.0]);
    assert!(values("reduce(N,avr)", &n)[0].is_nan());
}

#[test]
fn selection_keeps_coordinates() {
    let v: Vec<f64> = (0..8).map(f64::from).collect();
    let s = [("S", sq_shape(), v)];
    let (shape, v) = eval("select(S,[DIMENSION_SHADER_ARRAY=[1]])", &s).unwrap();
    assert_eq!(
        shape.to_string(),
        "DIMENSION_INSTANCE[0:0] DIMENSION_WGP[0:3] DIMENSION_SHADER_ENGINE[0:0]"
    );
    assert_eq!(v, [4.0, 5.0, 6.0, 7.0]);
    let (shape, v) = eval(
        "select(S,[DIMENSION_WGP=[0,2:3],DIMENSION_SHADER_ARRAY=[0]])",
        &s,
    )
    .unwrap();
    assert_eq!(
        shape.to_string(),
        "DIMENSION_INSTANCE[0:0] DIMENSION_WGP[0:2] DIMENSION_SHADER_ENGINE[0:0]"
    );
    assert_eq!(v, [0.0, 2.0, 3.0]);
    // Index beyond the extent selects nothing there.
    assert_eq!(values("select(S,[DIMENSION_WGP=[1,9]])", &s), [1.0, 5.0]);
    // A dimension the value lacks has one coordinate, 0.
    assert_eq!(values("select(S,[DIMENSION_XCC=[0]])", &s), s[0].2);
    assert!(matches!(
        eval("select(S,[DIMENSION_XCC=[1]])", &s),
        Err(Error::Evaluate { .. })
    ));
    assert!(matches!(
        eval("select(S,[DIMENSION_WGP=[4:7]])", &s),
        Err(Error::Evaluate { .. })
    ));
    // Everything selected down to one value.
    let (shape, v) = eval(
        "select(S,[DIMENSION_WGP=[3],DIMENSION_SHADER_ARRAY=[1],\
         DIMENSION_INSTANCE=[0],DIMENSION_SHADER_ENGINE=[0]])",
        &s,
    )
    .unwrap();
    assert_eq!(shape, Shape::single());
    assert_eq!(v, [7.0]);
}

#[test]
fn binary_operators_broadcast_single_values_and_check_shapes() {
    let v: Vec<f64> = (1..=8).map(f64::from).collect();
    let s = [
        ("S", sq_shape(), v.clone()),
        ("T", sq_shape(), v.iter().map(|x| x * 10.0).collect()),
        ("G", Shape::single(), vec![2.0]),
        ("W", Shape::new([(Dim::Wgp, 4)]), vec![1.0, 2.0, 3.0, 4.0]),
        (
            "P",
            Shape::new([(Dim::ShaderArray, 2), (Dim::ShaderEngine, 4)]),
            vec![1.0; 8],
        ),
    ];
    assert_eq!(
        values("T-S", &s),
        v.iter().map(|x| x * 9.0).collect::<Vec<_>>()
    );
    // A single value stays on its side of `-` and `/`.
    assert_eq!(values("G-S", &s)[..3], [1.0, 0.0, -1.0]);
    assert_eq!(values("S-G", &s)[..3], [-1.0, 0.0, 1.0]);
    assert_eq!(values("G/S", &s)[..2], [2.0, 1.0]);
    let (shape, _) = eval("S*G", &s).unwrap();
    assert_eq!(shape, sq_shape());
    let (shape, _) = eval("reduce(S,sum,[DIMENSION_WGP])*G", &s).unwrap();
    assert_eq!(shape.len(), 2);
    // Two different multi-dimensional shapes.
    let e = eval("S+reduce(T,sum,[DIMENSION_WGP])", &s).unwrap_err();
    assert!(e.to_string().contains("dimension mismatch"), "{e}");
    assert!(
        eval("S+P", &s)
            .unwrap_err()
            .to_string()
            .contains("dimension mismatch")
    );
    // Equal sizes, one list short: element-wise, the longer list describes the result.
    let (shape, v) = eval("W+reduce(S,sum,[DIMENSION_SHADER_ARRAY])", &s).unwrap();
    assert_eq!(
        shape,
        Shape::new([(Dim::Instance, 1), (Dim::Wgp, 4), (Dim::ShaderEngine, 1)])
    );
    assert_eq!(
        v,
        [
            1.0 + 1.0 + 5.0,
            2.0 + 2.0 + 6.0,
            3.0 + 3.0 + 7.0,
            4.0 + 4.0 + 8.0
        ]
    );
    // Different sizes that do not broadcast.
    let e = eval("W+S", &s).unwrap_err();
    assert!(e.to_string().contains("mismatched sizes"), "{e}");
}

#[test]
fn evaluation_checks_its_inputs() {
    let e = parse("reduce(S,sum)+G").unwrap();
    let binding = |n: &str| -> Option<Binding<'_>> {
        Some(Binding::Base {
            event: sq_event(),
            shape: if n == "S" {
                sq_shape()
            } else {
                Shape::single()
            },
        })
    };
    let p = Program::compile(&[("X", &e)], &binding).unwrap();
    let names: Vec<&str> = p.inputs().iter().map(|i| i.name.as_str()).collect();
    assert_eq!(names, ["S", "G"]);
    let mut ev = p.evaluator();
    assert!(matches!(
        ev.evaluate(&[&[0.0; 8]]),
        Err(Error::Evaluate { .. })
    ));
    match ev.evaluate(&[&[0.0; 7], &[1.0]]) {
        Err(Error::Evaluate { counter, message }) => {
            assert_eq!(counter, "S");
            assert!(message.contains("7 values"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    ev.evaluate(&[&[1.0; 8], &[1.0]]).unwrap();
    assert_eq!(ev.value(0), [9.0]);
    // The same evaluator runs again with new values.
    ev.evaluate(&[&[2.0; 8], &[0.5]]).unwrap();
    assert_eq!(ev.value(0), [16.5]);
    let all: Vec<(&str, Vec<f64>)> = ev
        .values()
        .map(|(o, v)| (o.name.as_str(), v.to_vec()))
        .collect();
    assert_eq!(all, [("X", vec![16.5])]);

    // Unknown names, self-reference, accumulate on the wrong kind of counter.
    let unknown = |_: &str| -> Option<Binding<'_>> { None };
    assert_eq!(
        Program::compile(&[("X", &e)], &unknown),
        Err(Error::UnknownInput {
            counter: "X".into(),
            input: "S".into()
        })
    );
    let looped = parse("1+X").unwrap();
    let binding = |n: &str| (n == "X").then_some(Binding::Derived(&looped));
    let err = Program::compile(&[("X", &looped)], &binding).unwrap_err();
    assert!(err.to_string().contains("X -> X"), "{err}");
    let acc = parse("accumulate(G,HIGH_RES)").unwrap();
    let grbm = |_: &str| {
        Some(Binding::Base {
            event: BaseEvent {
                block: Block::Grbm,
                event: 2,
            },
            shape: Shape::single(),
        })
    };
    assert!(Program::compile(&[("X", &acc)], &grbm).is_err());
    let acc = parse("accumulate(G,NONE)+G").unwrap();
    let p = Program::compile(&[("X", &acc)], &grbm).unwrap();
    assert_eq!(p.inputs().len(), 1, "NONE is the plain counter");
    let acc = parse("accumulate(S,LOW_RES)+S").unwrap();
    let sq = |_: &str| {
        Some(Binding::Base {
            event: sq_event(),
            shape: sq_shape(),
        })
    };
    let p = Program::compile(&[("X", &acc)], &sq).unwrap();
    let modes: Vec<AccumulateMode> = p.inputs().iter().map(|i| i.accumulate).collect();
    assert_eq!(modes, [AccumulateMode::LowRes, AccumulateMode::None]);
}

// ----------------------------------------------------------------------------------------------
// Property tests
// ----------------------------------------------------------------------------------------------

fn ident() -> impl Strategy<Value = String> {
    "[a-zA-Z_][a-zA-Z0-9_]{0,10}".prop_filter("not a keyword", |s| {
        !matches!(s.as_str(), "reduce" | "select" | "accumulate")
    })
}

fn dims_subset() -> impl Strategy<Value = Vec<Dim>> {
    prop::sample::subsequence(Dim::ALL.to_vec(), 0..=3).prop_shuffle()
}

fn selections(max_index: u32) -> impl Strategy<Value = Vec<Selection>> {
    let range = (0..max_index, 0..3u32).prop_map(move |(a, w)| IndexRange {
        first: a,
        last: (a + w).min(IndexRange::LIMIT - 1),
    });
    prop::sample::subsequence(Dim::ALL.to_vec(), 1..=3)
        .prop_shuffle()
        .prop_flat_map(move |dims| {
            let n = dims.len();
            (
                Just(dims),
                prop::collection::vec(prop::collection::vec(range.clone(), 1..=3), n),
            )
        })
        .prop_map(|(dims, ranges)| {
            dims.into_iter()
                .zip(ranges)
                .map(|(dim, ranges)| Selection { dim, ranges })
                .collect()
        })
}

fn reduce_op() -> impl Strategy<Value = ReduceOp> {
    prop::sample::select(ReduceOp::ALL.to_vec())
}

fn bin_op() -> impl Strategy<Value = BinOp> {
    prop::sample::select(vec![BinOp::Add, BinOp::Sub, BinOp::Mul, BinOp::Div])
}

/// Any tree the parser can produce.
fn any_expr() -> impl Strategy<Value = Expr> {
    let leaf = prop_oneof![
        any::<i32>().prop_map(Expr::Number),
        ident().prop_map(Expr::Name),
        (ident(), prop::sample::select(AccumulateMode::ALL.to_vec()))
            .prop_map(|(name, mode)| Expr::Accumulate { name, mode }),
    ];
    leaf.prop_recursive(5, 40, 3, |inner| {
        prop_oneof![
            3 => (bin_op(), inner.clone(), inner.clone()).prop_map(|(op, l, r)| bin(op, l, r)),
            1 => (inner.clone(), reduce_op(), dims_subset()).prop_map(|(a, op, dims)| {
                Expr::Reduce { arg: Box::new(a), op, dims }
            }),
            1 => (inner, selections(64)).prop_map(|(a, selections)| Expr::Select {
                arg: Box::new(a),
                selections,
            }),
        ]
    })
}

/// Expressions to mutate: the upstream file's, or (without it) the built-in ones and a few
/// written here.
fn real_expressions() -> Vec<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/data/counter_defs.yaml");
    let mut out: Vec<String> = match std::fs::read_to_string(&path) {
        Ok(text) => text
            .lines()
            .filter_map(|l| l.trim().strip_prefix("expression: "))
            .map(str::to_owned)
            .collect(),
        Err(_) => {
            println!(
                "SKIPPED (upstream expressions): expected them at {}; mutating the built-in ones",
                path.display()
            );
            pmc_dxg::defs::BUILT_IN_YAML
                .lines()
                .filter_map(|l| l.trim().strip_prefix("expression: "))
                .map(str::to_owned)
                .collect()
        }
    };
    out.push("select(X,[DIMENSION_XCC=[1],DIMENSION_SHADER_ARRAY=[0:1,3]])".into());
    out.push("reduce(X,sum,[DIMENSION_WGP,DIMENSION_SHADER_ENGINE])".into());
    out
}

#[derive(Debug, Clone)]
enum Mutation {
    Delete(usize),
    Insert(usize, char),
    Replace(usize, char),
    Duplicate(usize, usize),
    Truncate(usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let c = prop::sample::select(
        "()[],:=+-*/|. _0123456789aeEzZ\n\t#é"
            .chars()
            .collect::<Vec<_>>(),
    );
    prop_oneof![
        any::<usize>().prop_map(Mutation::Delete),
        (any::<usize>(), c.clone()).prop_map(|(i, c)| Mutation::Insert(i, c)),
        (any::<usize>(), c).prop_map(|(i, c)| Mutation::Replace(i, c)),
        (any::<usize>(), 1..8usize).prop_map(|(i, n)| Mutation::Duplicate(i, n)),
        any::<usize>().prop_map(Mutation::Truncate),
    ]
}

fn apply(text: &str, m: &Mutation) -> String {
    let mut chars: Vec<char> = text.chars().collect();
    let n = chars.len().max(1);
    match *m {
        Mutation::Delete(i) => {
            if !chars.is_empty() {
                chars.remove(i % n);
            }
        }
        Mutation::Insert(i, c) => chars.insert(i % (chars.len() + 1), c),
        Mutation::Replace(i, c) => {
            if !chars.is_empty() {
                chars[i % n] = c;
            }
        }
        Mutation::Duplicate(i, len) => {
            let start = i % n;
            let end = (start + len).min(chars.len());
            let piece: Vec<char> = chars[start.min(chars.len())..end].to_vec();
            for (k, c) in piece.into_iter().enumerate() {
                chars.insert(end + k, c);
            }
        }
        Mutation::Truncate(i) => chars.truncate(i % n),
    }
    chars.into_iter().collect()
}

/// Whatever parses prints back to the same tree.
fn check_reparse(text: &str) -> Result<(), TestCaseError> {
    if let Ok(e) = Expr::parse("FUZZ", text) {
        let printed = e.to_string();
        prop_assert_eq!(
            Expr::parse("FUZZ", &printed),
            Ok(e),
            "{:?} -> {}",
            text,
            printed
        );
    }
    Ok(())
}

proptest! {
    #[test]
    fn printing_and_reparsing_round_trips(e in any_expr()) {
        let printed = e.to_string();
        prop_assert_eq!(Expr::parse("RT", &printed), Ok(e), "{}", printed);
    }

    #[test]
    fn no_string_panics_the_parser(s in any::<String>()) {
        check_reparse(&s)?;
    }

    #[test]
    fn no_near_grammatical_string_panics_the_parser(
        s in "[a-zA-Z0-9_ ()\\[\\],:=+*/.|eE\t\n#-]{0,60}"
    ) {
        check_reparse(&s)?;
    }

    #[test]
    fn no_mutation_of_a_real_expression_panics_the_parser(
        pick in any::<usize>(),
        mutations in prop::collection::vec(mutation(), 1..5),
    ) {
        let all = real_expressions();
        let mut text = all[pick % all.len()].clone();
        for m in &mutations {
            text = apply(&text, m);
        }
        check_reparse(&text)?;
    }
}

// --- scalars: a plain f64 reference ------------------------------------------------------------

const SCALARS: [&str; 5] = ["n0", "n1", "n2", "n3", "n4"];
const CONSTANTS: [(&str, f64); 2] = [("c0", 16.0), ("c1", 0.0)];
/// A derived counter the generated expressions may use.
const DERIVED: &str = "n0*2-n1/c1";

fn scalar_expr() -> impl Strategy<Value = Expr> {
    let leaf = prop_oneof![
        (-3i32..100).prop_map(Expr::Number),
        prop::sample::select(
            SCALARS
                .iter()
                .chain(["c0", "c1", "d0"].iter())
                .map(|s| s.to_string())
                .collect::<Vec<_>>()
        )
        .prop_map(Expr::Name),
    ];
    leaf.prop_recursive(6, 48, 2, |inner| {
        (bin_op(), inner.clone(), inner).prop_map(|(op, l, r)| bin(op, l, r))
    })
}

fn reference_scalar(e: &Expr, vals: &[f64; 5]) -> f64 {
    match e {
        Expr::Number(n) => f64::from(*n),
        Expr::Name(n) => {
            if let Some(i) = SCALARS.iter().position(|s| s == n) {
                vals[i]
            } else if let Some((_, v)) = CONSTANTS.iter().find(|(c, _)| c == n) {
                *v
            } else {
                assert_eq!(n, "d0");
                reference_scalar(&Expr::parse("d0", DERIVED).unwrap(), vals)
            }
        }
        Expr::Binary { op, lhs, rhs } => {
            let (a, b) = (reference_scalar(lhs, vals), reference_scalar(rhs, vals));
            match op {
                BinOp::Add => a + b,
                BinOp::Sub => a - b,
                BinOp::Mul => a * b,
                BinOp::Div => {
                    if b == 0.0 {
                        0.0
                    } else {
                        a / b
                    }
                }
            }
        }
        other => unreachable!("{other:?}"),
    }
}

fn same(a: f64, b: f64) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

fn value_strategy() -> impl Strategy<Value = f64> {
    prop_oneof![
        Just(0.0),
        (-5i32..50).prop_map(f64::from),
        -1e6..1e6f64,
        Just(f64::MAX),
    ]
}

proptest! {
    #[test]
    fn scalar_evaluation_matches_a_plain_reference(
        e in scalar_expr(),
        vals in prop::array::uniform5(value_strategy()),
    ) {
        let derived = Expr::parse("d0", DERIVED).unwrap();
        let binding = |n: &str| -> Option<Binding<'_>> {
            if SCALARS.contains(&n) {
                return Some(Binding::Base { event: sq_event(), shape: Shape::single() });
            }
            if let Some((_, v)) = CONSTANTS.iter().find(|(c, _)| *c == n) {
                return Some(Binding::Constant(*v));
            }
            (n == "d0").then_some(Binding::Derived(&derived))
        };
        let p = Program::compile(&[("E", &e)], &binding).unwrap();
        let inputs: Vec<&[f64]> = p
            .inputs()
            .iter()
            .map(|i| {
                let k = SCALARS.iter().position(|s| *s == i.name).unwrap();
                std::slice::from_ref(&vals[k])
            })
            .collect();
        let mut ev = p.evaluator();
        ev.evaluate(&inputs).unwrap();
        let got = ev.value(0)[0];
        let want = reference_scalar(&e, &vals);
        prop_assert!(same(got, want), "{}: got {} want {}", e, got, want);
    }
}

// --- vectors: a record-based reference ---------------------------------------------------------

/// Named inputs and their shapes (dimension lists as `Shape` keeps them).
fn vector_inputs() -> Vec<(&'static str, Vec<(Dim, u32)>)> {
    let sq = vec![
        (Dim::Instance, 1),
        (Dim::Wgp, 2),
        (Dim::ShaderArray, 2),
        (Dim::ShaderEngine, 2),
    ];
    vec![
        ("S0", sq.clone()),
        ("S1", sq),
        ("G0", vec![(Dim::Instance, 1)]),
        ("X0", vec![(Dim::Instance, 1), (Dim::Xcc, 2)]),
        ("W0", vec![(Dim::Wgp, 4)]),
    ]
}

type Coords = BTreeMap<Dim, u32>;

/// A value as upstream holds it: records with coordinates, and a dimension list.
#[derive(Debug, Clone)]
struct Records {
    dims: Vec<(Dim, u32)>,
    recs: Vec<(Coords, f64)>,
}

/// Records of an input, in read-back order: the last dimension outermost.
fn input_records(dims: &[(Dim, u32)], values: &[f64]) -> Records {
    fn walk(dims: &[(Dim, u32)], k: usize, at: &mut Coords, out: &mut Vec<Coords>) {
        if k == 0 {
            out.push(at.clone());
            return;
        }
        let (d, e) = dims[k - 1];
        for c in 0..e {
            at.insert(d, c);
            walk(dims, k - 1, at, out);
        }
    }
    let mut coords = Vec::new();
    walk(dims, dims.len(), &mut Coords::new(), &mut coords);
    // `walk` varies the first dimension slowest; read-back order varies it fastest.
    let mut by_fastest_first: Vec<Coords> = coords;
    by_fastest_first.sort_by(|a, b| {
        dims.iter()
            .rev()
            .map(|(d, _)| a[d].cmp(&b[d]))
            .find(|o| o.is_ne())
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    Records {
        dims: dims.to_vec(),
        recs: by_fastest_first
            .into_iter()
            .zip(values.iter().copied())
            .collect(),
    }
}

fn single(v: f64) -> Records {
    Records {
        dims: vec![(Dim::Instance, 1)],
        recs: vec![(Coords::from([(Dim::Instance, 0)]), v)],
    }
}

fn ref_reduce(op: ReduceOp, vals: &[f64]) -> f64 {
    match op {
        ReduceOp::Sum => vals.iter().fold(0.0, |a, v| a + v),
        ReduceOp::Avr => vals.iter().fold(0.0, |a, v| a + v) / vals.len() as f64,
        ReduceOp::Min => {
            let mut m = vals[0];
            for &v in &vals[1..] {
                if v < m {
                    m = v;
                }
            }
            m
        }
        ReduceOp::Max => {
            let mut m = vals[0];
            for &v in &vals[1..] {
                if m < v {
                    m = v;
                }
            }
            m
        }
    }
}

fn reference_vector(e: &Expr, inputs: &BTreeMap<&str, Records>) -> Result<Records, ()> {
    match e {
        Expr::Number(n) => Ok(single(f64::from(*n))),
        Expr::Name(n) => Ok(inputs[n.as_str()].clone()),
        Expr::Binary { op, lhs, rhs } => {
            let a = reference_vector(lhs, inputs)?;
            let b = reference_vector(rhs, inputs)?;
            if a.dims != b.dims && a.dims.len() > 1 && b.dims.len() > 1 {
                return Err(());
            }
            let f = |x: f64, y: f64| match op {
                BinOp::Add => x + y,
                BinOp::Sub => x - y,
                BinOp::Mul => x * y,
                BinOp::Div => {
                    if y == 0.0 {
                        0.0
                    } else {
                        x / y
                    }
                }
            };
            let (la, lb) = (a.recs.len(), b.recs.len());
            if la == lb {
                let keep = if a.dims.len() > b.dims.len() { &a } else { &b };
                let recs = (0..la)
                    .map(|i| (keep.recs[i].0.clone(), f(a.recs[i].1, b.recs[i].1)))
                    .collect();
                Ok(Records {
                    dims: keep.dims.clone(),
                    recs,
                })
            } else if lb == 1 {
                let y = b.recs[0].1;
                Ok(Records {
                    dims: a.dims.clone(),
                    recs: a.recs.iter().map(|(c, x)| (c.clone(), f(*x, y))).collect(),
                })
            } else if la == 1 {
                let x = a.recs[0].1;
                Ok(Records {
                    dims: b.dims.clone(),
                    recs: b.recs.iter().map(|(c, y)| (c.clone(), f(x, *y))).collect(),
                })
            } else {
                Err(())
            }
        }
        Expr::Reduce { arg, op, dims } => {
            let a = reference_vector(arg, inputs)?;
            let kept: Vec<(Dim, u32)> = if dims.is_empty() {
                vec![]
            } else {
                a.dims
                    .iter()
                    .copied()
                    .filter(|(d, _)| !dims.contains(d))
                    .collect()
            };
            if kept.is_empty() {
                let vals: Vec<f64> = a.recs.iter().map(|r| r.1).collect();
                return Ok(single(ref_reduce(*op, &vals)));
            }
            let mut groups: Vec<(Coords, Vec<f64>)> = Vec::new();
            for (c, v) in &a.recs {
                let key: Coords = c
                    .iter()
                    .filter(|(d, _)| !dims.contains(d))
                    .map(|(d, x)| (*d, *x))
                    .collect();
                match groups.iter_mut().find(|(k, _)| *k == key) {
                    Some(g) => g.1.push(*v),
                    None => groups.push((key, vec![*v])),
                }
            }
            Ok(Records {
                dims: kept,
                recs: groups
                    .into_iter()
                    .map(|(k, vals)| (k, ref_reduce(*op, &vals)))
                    .collect(),
            })
        }
        Expr::Select { arg, selections } => {
            let a = reference_vector(arg, inputs)?;
            let wanted =
                |s: &Selection, c: u32| s.ranges.iter().any(|r| r.first <= c && c <= r.last);
            let mut recs: Vec<(Coords, f64)> = a
                .recs
                .iter()
                .filter(|(c, _)| {
                    selections
                        .iter()
                        .all(|s| wanted(s, c.get(&s.dim).copied().unwrap_or(0)))
                })
                .cloned()
                .collect();
            if recs.is_empty() {
                return Err(());
            }
            let mut dims = Vec::new();
            for &(d, e) in &a.dims {
                let Some(s) = selections.iter().find(|s| s.dim == d) else {
                    dims.push((d, e));
                    continue;
                };
                let kept: Vec<u32> = (0..e).filter(|&c| wanted(s, c)).collect();
                if kept.len() == 1 {
                    for r in &mut recs {
                        r.0.remove(&d);
                    }
                } else {
                    dims.push((d, kept.len() as u32));
                    for r in &mut recs {
                        let rank = kept.iter().position(|&k| k == r.0[&d]).unwrap() as u32;
                        r.0.insert(d, rank);
                    }
                }
            }
            if dims.is_empty() {
                dims.push((Dim::Instance, 1));
                for r in &mut recs {
                    r.0.insert(Dim::Instance, 0);
                }
            }
            Ok(Records { dims, recs })
        }
        Expr::Accumulate { .. } => unreachable!(),
    }
}

fn vector_expr() -> impl Strategy<Value = Expr> {
    let names: Vec<String> = vector_inputs().iter().map(|(n, _)| n.to_string()).collect();
    let leaf = prop_oneof![
        1 => (0i32..10).prop_map(Expr::Number),
        3 => prop::sample::select(names).prop_map(Expr::Name),
    ];
    leaf.prop_recursive(4, 24, 2, |inner| {
        prop_oneof![
            3 => (bin_op(), inner.clone(), inner.clone()).prop_map(|(op, l, r)| bin(op, l, r)),
            2 => (inner.clone(), reduce_op(), dims_subset())
                .prop_map(|(a, op, dims)| Expr::Reduce { arg: Box::new(a), op, dims }),
            1 => (inner, selections(3)).prop_map(|(a, selections)| Expr::Select {
                arg: Box::new(a),
                selections,
            }),
        ]
    })
}

proptest! {
    #[test]
    fn vector_evaluation_matches_a_record_reference(
        e in vector_expr(),
        seed in prop::collection::vec(value_strategy(), 8 * 5),
    ) {
        let specs = vector_inputs();
        let shapes: Vec<(&str, Shape)> =
            specs.iter().map(|(n, d)| (*n, Shape::new(d.clone()))).collect();
        // Every spec's dimension list is already in shape order.
        for ((_, d), (_, s)) in specs.iter().zip(&shapes) {
            prop_assert_eq!(s.dims(), d.as_slice());
        }
        let data: Vec<Vec<f64>> = shapes
            .iter()
            .enumerate()
            .map(|(k, (_, s))| seed[k * 8..k * 8 + s.len()].to_vec())
            .collect();
        let records: BTreeMap<&str, Records> = specs
            .iter()
            .zip(&data)
            .map(|((n, d), v)| (*n, input_records(d, v)))
            .collect();
        let binding = |n: &str| -> Option<Binding<'_>> {
            shapes.iter().find(|(m, _)| *m == n).map(|(_, s)| Binding::Base {
                event: sq_event(),
                shape: s.clone(),
            })
        };
        let compiled = Program::compile(&[("E", &e)], &binding);
        let want = reference_vector(&e, &records);
        match (compiled, want) {
            (Err(err), Err(())) => {
                prop_assert!(matches!(err, Error::Evaluate { .. }), "{}", err);
            }
            (Ok(p), Ok(want)) => {
                let inputs: Vec<&[f64]> = p
                    .inputs()
                    .iter()
                    .map(|i| {
                        let k = shapes.iter().position(|(n, _)| *n == i.name).unwrap();
                        data[k].as_slice()
                    })
                    .collect();
                let mut ev = p.evaluator();
                ev.evaluate(&inputs).unwrap();
                let shape = &p.outputs()[0].shape;
                prop_assert_eq!(shape.dims(), want.dims.as_slice(), "{}", e);
                let got = ev.value(0);
                prop_assert_eq!(got.len(), want.recs.len(), "{}", e);
                for (k, &v) in got.iter().enumerate() {
                    // The coordinates of element k: the first dimension fastest.
                    let mut rest = k;
                    let mut at = Coords::new();
                    for &(d, ext) in shape.dims() {
                        at.insert(d, (rest % ext as usize) as u32);
                        rest /= ext as usize;
                    }
                    let found = want.recs.iter().find(|(c, _)| *c == at);
                    prop_assert!(found.is_some(), "{}: no reference value at {:?}", e, at);
                    let w = found.unwrap().1;
                    prop_assert!(same(v, w), "{}: at {:?} got {} want {}", e, at, v, w);
                }
            }
            (got, want) => {
                let (got, want) = (got.map(|_| ()), want.map(|_| ()));
                prop_assert!(false, "{}: compiled {:?}, reference {:?}", e, got, want);
            }
        }
    }
}
