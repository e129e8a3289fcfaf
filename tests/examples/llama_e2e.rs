//! Turns with model settings against a real llama.cpp `llama-server`, through the openai style
//! (`/v1/chat/completions`) and the anthropic style (`/v1/messages`). Run by
//! `scripts/llama-server/check.sh`, which builds and starts the server; by hand:
//!
//! ```sh
//! cargo run -p contenox-conformance --example llama_e2e -- http://127.0.0.1:8080
//! ```
//!
//! Per style: two fresh clients at temperature 0 (and a seed on openai, `top_k` 1 on anthropic)
//! give the same non-empty answer with usage; a stop sequence of one space cuts the answer at
//! its first word (the setting reached the server and it obeyed); the anthropic requests carry
//! prompt caching's breakpoints, which the server takes. Exits 1 on the first failure.

use contenox::{Client, Config, Outcome, TurnResult};
use serde_json::{json, Value};

const PROMPT: &str = "Name the capital of France in one short sentence.";

async fn turn(root: &std::path::Path, options: Value) -> Result<TurnResult, String> {
    let mut v = json!({
        "model": "smollm2",
        "api_key": "none",
        "builtins": [],
        "root": root,
        "max_tokens": 48,
        "max_turns": 1,
        "system": "You are a terse assistant.",
        "request_timeout_ms": 120_000,
    });
    v.as_object_mut()
        .expect("object")
        .extend(options.as_object().expect("object").clone());
    let config: Config = serde_json::from_value(v).map_err(|e| e.to_string())?;
    let client = Client::from_config(config).map_err(|e| e.to_string())?;
    let result = client.run(PROMPT).await.map_err(|e| e.to_string())?;
    if result.outcome != Outcome::Done {
        return Err(format!("outcome {:?}: {:?}", result.outcome, result.error));
    }
    Ok(result)
}

async fn check(
    root: &std::path::Path,
    style: &str,
    base: &str,
    sampling: Value,
) -> Result<(), String> {
    let mut options = json!({"style": style, "base_url": base});
    options
        .as_object_mut()
        .expect("object")
        .extend(sampling.as_object().expect("object").clone());
    let one = turn(root, options.clone()).await?;
    let two = turn(root, options.clone()).await?;
    let text = one.final_text.trim();
    if text.is_empty() {
        return Err(format!("{style}: an empty answer"));
    }
    if one.final_text != two.final_text {
        return Err(format!(
            "{style}: temperature 0 gave two answers: {:?} / {:?}",
            one.final_text, two.final_text
        ));
    }
    if one.usage.input_tokens == 0 || one.usage.output_tokens == 0 {
        return Err(format!("{style}: no usage reported: {:?}", one.usage));
    }
    println!(
        "{}",
        json!({"style": style, "settings": sampling, "answer": one.final_text,
            "usage": one.usage, "same_answer_twice": true})
    );
    let mut stopped = options;
    stopped["stop"] = json!([" "]);
    let cut = turn(root, stopped).await?;
    let cut_text = cut.final_text.trim_start();
    if cut_text.contains(' ') || cut_text.is_empty() || !text.starts_with(cut_text.trim_end()) {
        return Err(format!(
            "{style}: stop [\" \"] did not cut the answer at its first word: {:?} (whole: {text:?})",
            cut.final_text
        ));
    }
    println!(
        "{}",
        json!({"style": style, "stop": [" "], "answer": cut.final_text})
    );
    Ok(())
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let root_url = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "http://127.0.0.1:8080".into());
    let root_url = root_url.trim_end_matches('/').to_string();
    let dir = tempfile::tempdir().expect("tempdir");
    let checks = [
        (
            "openai",
            format!("{root_url}/v1"),
            json!({"temperature": 0, "seed": 42, "top_p": 1}),
        ),
        (
            "anthropic",
            root_url.clone(),
            json!({"temperature": 0, "top_k": 1}),
        ),
    ];
    for (style, base, sampling) in checks {
        if let Err(e) = check(dir.path(), style, &base, sampling).await {
            eprintln!("llama_e2e: {e}");
            std::process::exit(1);
        }
    }
    println!("llama_e2e: 2 passed, 0 failed");
}
