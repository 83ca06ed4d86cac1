//! Upstream's JSON Schema for rocprofv3's results file and exactly the documented places
//! where upstream's own writer departs from it (verified-facts §3), for the JSON tests of
//! trace-export and of rocprof-cli (included by path: both crates sit one level below the
//! workspace, so the shared data is found the same way).
#![allow(dead_code)]

use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::path::Path;

/// Upstream's schema, from the project's shared data next to the workspace
/// (`<workspace>/../shared/data/rocprofv3-schema.json`), or `None` after saying on stderr that
/// the validation is skipped.
pub fn upstream_schema() -> Option<Value> {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let path = crate_dir
        .parent()
        .and_then(Path::parent)
        .unwrap_or(crate_dir)
        .join("shared/data/rocprofv3-schema.json");
    match std::fs::read_to_string(&path) {
        Ok(text) => Some(serde_json::from_str(&text).expect("the schema is JSON")),
        Err(e) => {
            eprintln!(
                "SKIPPED: schema validation; upstream's schema is absent ({}: {e})",
                path.display()
            );
            None
        }
    }
}

/// The places where upstream's writer departs from its schema, as (instance path with `#` for
/// any index, the schema's required properties the writer does not write there). An empty
/// list stands for a type mismatch (`code_object_snapshot_filenames` holds strings).
pub const DEVIATIONS: [(&str, &[&str]); 6] = [
    ("/rocprofiler-sdk-tool/#/agents/#/capability", &["Reserved"]),
    (
        "/rocprofiler-sdk-tool/#/code_objects/#",
        &["rocp_agent", "hsa_agent", "memory_base", "memory_size"],
    ),
    (
        "/rocprofiler-sdk-tool/#/host_functions/#",
        &[
            "host_function_address",
            "modules_address",
            "thread_id_address",
            "block_id_address",
            "block_dim_address",
            "grid_dim_address",
            "workgroup_size_address",
        ],
    ),
    (
        "/rocprofiler-sdk-tool/#/strings/code_object_snapshot_filenames/#",
        &[],
    ),
    ("/rocprofiler-sdk-tool/#/counters/#", &["dimension_ids"]),
    (
        "/rocprofiler-sdk-tool/#/callback_records/counter_collection/#",
        &["arch_vgpr_count", "sgpr_count", "lds_block_size_v"],
    ),
];

/// The host-function members upstream writes under other names than its schema's.
pub const HOST_FUNCTION_NAMES: [(&str, &str); 7] = [
    ("host_function_address", "host_function"),
    ("modules_address", "modules"),
    ("thread_id_address", "thread_ids"),
    ("block_id_address", "block_ids"),
    ("block_dim_address", "block_dims"),
    ("grid_dim_address", "grid_dims"),
    ("workgroup_size_address", "workgroup_size"),
];

pub fn drop_required(node: &mut Value, names: &[&str]) {
    let required = node["required"].as_array_mut().expect("a required list");
    let before = required.len();
    required.retain(|r| !names.contains(&r.as_str().unwrap()));
    assert_eq!(
        before - required.len(),
        names.len(),
        "{names:?} were required"
    );
}

pub fn add_required(node: &mut Value, names: &[&str]) {
    let required = node["required"].as_array_mut().expect("a required list");
    required.extend(names.iter().map(|n| json!(n)));
}

/// `schema` with exactly the documented deviations of upstream's writer accepted: each
/// departure is written into the schema as the writer's actual layout (and
/// `counter_collection` entries are held to that layout strictly).
pub fn patched(schema: &Value) -> Value {
    let mut s = schema.clone();
    let tool = &mut s["properties"]["rocprofiler-sdk-tool"]["items"]["properties"];

    drop_required(
        &mut tool["agents"]["items"]["properties"]["capability"],
        &["Reserved"],
    );

    let code_object = &mut tool["code_objects"]["items"];
    drop_required(
        code_object,
        &["rocp_agent", "hsa_agent", "memory_base", "memory_size"],
    );
    add_required(code_object, &["agent_id"]);
    code_object["if"] = json!({"properties": {"storage_type": {"const": 2}}});
    code_object["then"] = json!({"required": ["memory_base", "memory_size"]});

    let host_function = &mut tool["host_functions"]["items"];
    for (old, new) in HOST_FUNCTION_NAMES {
        drop_required(host_function, &[old]);
        add_required(host_function, &[new]);
        let properties = host_function["properties"].as_object_mut().unwrap();
        properties.remove(old).expect("a schema property");
        properties.insert(new.into(), json!({}));
    }

    tool["strings"]["properties"]["code_object_snapshot_filenames"]["items"] =
        json!({"type": "string"});

    let counter = &mut tool["counters"]["items"];
    drop_required(counter, &["dimension_ids"]);
    add_required(counter, &["dimensions", "instances"]);
    let properties = counter["properties"].as_object_mut().unwrap();
    properties.remove("dimension_ids");
    properties.insert("dimensions".into(), json!({"type": "array"}));
    properties.insert("instances".into(), json!({"type": "array"}));

    let entry = &mut tool["callback_records"]["properties"]["counter_collection"]["items"];
    entry["required"] = json!(["thread_id", "dispatch_data", "records", "stream_id"]);
    let properties = entry["properties"].as_object_mut().unwrap();
    for gone in ["arch_vgpr_count", "sgpr_count", "lds_block_size_v"] {
        properties.remove(gone).expect("a schema property");
    }
    properties.insert(
        "stream_id".into(),
        json!({"type": "object", "required": ["handle"]}),
    );
    entry["additionalProperties"] = json!(false);
    s
}

/// Whether a JSON pointer matches a [`DEVIATIONS`] pattern (`#` = an array index).
pub fn path_matches(path: &str, pattern: &str) -> bool {
    let (a, b): (Vec<&str>, Vec<&str>) = (path.split('/').collect(), pattern.split('/').collect());
    a.len() == b.len()
        && a.iter().zip(&b).all(|(x, p)| {
            x == p || (*p == "#" && !x.is_empty() && x.bytes().all(|c| c.is_ascii_digit()))
        })
}

/// Validates `doc`: no error against the patched schema, and against upstream's schema as it
/// is, errors only at documented deviations. Returns the deviation patterns met (`None` when
/// the schema is absent).
pub fn validate(doc: &Value) -> Option<BTreeSet<&'static str>> {
    let schema = upstream_schema()?;
    let strict = jsonschema::draft7::new(&patched(&schema)).expect("the patched schema compiles");
    let errors: Vec<String> = strict
        .iter_errors(doc)
        .map(|e| format!("{}: {e}", e.instance_path.as_str()))
        .collect();
    assert!(
        errors.is_empty(),
        "invalid against the patched schema:\n{errors:#?}"
    );

    let as_is = jsonschema::draft7::new(&schema).expect("upstream's schema compiles");
    let mut met = BTreeSet::new();
    for e in as_is.iter_errors(doc) {
        let path = e.instance_path.as_str();
        let deviation = DEVIATIONS
            .iter()
            .find(|(pattern, _)| path_matches(path, pattern));
        let documented = deviation.is_some_and(|(_, missing)| match &e.kind {
            jsonschema::error::ValidationErrorKind::Required { property } => {
                missing.contains(&property.as_str().unwrap_or(""))
            }
            jsonschema::error::ValidationErrorKind::Type { .. } => missing.is_empty(),
            _ => false,
        });
        assert!(documented, "undocumented schema error at {path}: {e}");
        met.insert(deviation.unwrap().0);
    }
    Some(met)
}
