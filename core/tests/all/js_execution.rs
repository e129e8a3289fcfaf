//! `js_execution` end to end on the scripted style: hostile programs end as error results with
//! the host whole, and the code's tool calls pass the same gate as the model's own.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use contenox::{
    async_trait, tool_fn, ClientBuilder, CodeExecutionConfig, Config, Decision, Event, Hints,
    Hooks, HostError, Message, Outcome, ScriptEntry, Style, ToolCallEvent, ToolOutput, ToolSpec,
    Transcript,
};
use serde_json::json;

/// The `echo` host tool, counting its runs.
fn echo(runs: Arc<AtomicUsize>) -> Arc<contenox::FnTool> {
    Arc::new(tool_fn(
        ToolSpec::new("echo", "Echo.", json!({"type": "object"})).with_hints(Hints::read_only()),
        move |args, _ctx| {
            let runs = runs.clone();
            async move {
                runs.fetch_add(1, Ordering::SeqCst);
                Ok(ToolOutput::text(
                    args["text"].as_str().unwrap_or("").to_string(),
                ))
            }
        },
    ))
}

fn config(limits: CodeExecutionConfig, code: &str) -> Config {
    Config {
        style: Style::Scripted,
        builtins: Some(vec![]),
        code_execution: Some(limits),
        script: Some(vec![
            ScriptEntry::tool_call("c0", "js_execution", json!({ "code": code })),
            ScriptEntry::text("over"),
        ]),
        ..Config::default()
    }
}

/// The js_execution result (content, is_error) of a turn.
fn js_result(t: &Transcript) -> (String, bool) {
    t.messages
        .iter()
        .find_map(|m| match m {
            Message::Tool { name, is_error, .. } if name == "js_execution" => {
                Some((m.text().into_owned(), *is_error))
            }
            _ => None,
        })
        .expect("a js_execution result")
}

fn limits() -> CodeExecutionConfig {
    CodeExecutionConfig {
        timeout_ms: 1000,
        memory_mb: 32,
        max_tool_calls: 10,
        ..CodeExecutionConfig::default()
    }
}

#[tokio::test]
async fn hostile_programs_end_as_error_results_within_their_limits() {
    let programs: &[(&str, &str)] = &[
        ("for (;;) {}", "time limit hit"),
        (
            "while (true) { try { for (;;) {} } catch (e) {} }",
            "time limit hit",
        ),
        (
            "const a = []; for (;;) a.push(new Float64Array(1 << 16));",
            "memory limit hit",
        ),
        (
            "let s = 'x'; for (;;) s += s + '.';",
            "InternalError: string too long",
        ),
        (
            "function f() { return f() + 1 } f()",
            "RangeError: Maximum call stack size exceeded",
        ),
        ("'x'.repeat(2 ** 31)", "RangeError"),
        ("await new Promise(() => {})", "never settles"),
        (
            "await Promise.all(Array.from({length: 1000}, (_, i) => tools.echo({text: 'n' + i})))",
            "max_tool_calls reached: a run may make 10 tool calls",
        ),
        (
            "JSON.parse('['.repeat(1e6))",
            "Maximum call stack size exceeded",
        ),
        ("new ArrayBuffer(2 ** 40)", "RangeError"),
    ];
    for (code, want) in programs {
        let runs = Arc::new(AtomicUsize::new(0));
        let client = ClientBuilder::from_config(config(limits(), code))
            .tool(echo(runs.clone()))
            .build()
            .unwrap();
        let started = Instant::now();
        let result = client.run("go").await.unwrap();
        let took = started.elapsed();
        assert_eq!(result.outcome, Outcome::Done, "{code}");
        let (content, is_error) = js_result(&result.transcript);
        assert!(is_error, "{code}: {content}");
        assert!(content.contains(want), "{code}: {content}");
        // Within the limit (1 s), with room for a slow machine's thread start and teardown.
        assert!(took < Duration::from_secs(5), "{code} took {took:?}");
        assert!(
            runs.load(Ordering::SeqCst) <= 10,
            "{code}: the storm passed the cap"
        );
    }
}

#[tokio::test]
async fn a_tool_call_storm_runs_exactly_max_tool_calls() {
    let runs = Arc::new(AtomicUsize::new(0));
    let code = "let ok = 0, refused = 0;\n\
                for (let i = 0; i < 50; i++) {\n\
                  try { await tools.echo({text: 'x'}); ok++ } catch (e) { refused++ }\n\
                }\n\
                ({ok, refused})";
    let client = ClientBuilder::from_config(config(limits(), code))
        .tool(echo(runs.clone()))
        .build()
        .unwrap();
    let result = client.run("go").await.unwrap();
    let (content, is_error) = js_result(&result.transcript);
    assert!(!is_error, "{content}");
    assert!(
        content.starts_with("{\"ok\":10,\"refused\":40}"),
        "{content}"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 10);
}

/// Denies `echo`; records every call it sees.
struct DenyEcho(Mutex<Vec<String>>);

#[async_trait]
impl Hooks for DenyEcho {
    async fn before_tool(&self, call: &ToolCallEvent) -> Result<Decision, HostError> {
        self.0.lock().unwrap().push(call.call_id.clone());
        Ok(if call.name == "echo" {
            Decision::deny("no echo from anywhere")
        } else {
            Decision::Allow
        })
    }
}

#[tokio::test]
async fn before_tool_sees_and_denies_inner_calls() {
    let runs = Arc::new(AtomicUsize::new(0));
    let hooks = Arc::new(DenyEcho(Mutex::new(Vec::new())));
    let code = "try { await tools.echo({text: 'x'}) } catch (e) { 'rejected: ' + e.message }";
    let client = ClientBuilder::from_config(config(limits(), code))
        .tool(echo(runs.clone()))
        .hooks(hooks.clone())
        .build()
        .unwrap();
    let mut run = client.stream("go").unwrap();
    let mut events = Vec::new();
    while let Some(e) = run.next_event().await {
        events.push(e);
    }
    let result = run.result().await.unwrap();
    let (content, is_error) = js_result(&result.transcript);
    assert!(!is_error, "{content}");
    assert!(
        content.starts_with("\"rejected: no echo from anywhere\""),
        "{content}"
    );
    assert_eq!(
        runs.load(Ordering::SeqCst),
        0,
        "a denied inner call never runs"
    );
    assert_eq!(*hooks.0.lock().unwrap(), vec!["c0", "c0/js0"]);
    assert!(
        events.iter().any(|e| matches!(e,
        Event::Gate { call_id, decision: contenox::GateVerdict::Deny, .. } if call_id == "c0/js0"))
    );
    assert!(!events
        .iter()
        .any(|e| matches!(e, Event::ToolStart { name, .. } if name == "echo")));
}

#[tokio::test]
async fn the_code_reaches_only_the_tools_the_model_could_call() {
    let runs = Arc::new(AtomicUsize::new(0));
    let code = "const names = Object.keys(tools);\n\
                let hidden;\n\
                try { await tools.js_execution({code: '1'}) } catch (e) { hidden = e.message }\n\
                ({names, hidden})";
    let mut cfg = config(limits(), code);
    cfg.builtins = Some(vec!["read".into(), "write".into()]);
    cfg.allow = Some(vec!["js_execution".into(), "read".into(), "echo".into()]);
    let client = ClientBuilder::from_config(cfg)
        .tool(echo(runs))
        .build()
        .unwrap();
    let result = client.run("go").await.unwrap();
    let (content, is_error) = js_result(&result.transcript);
    assert!(!is_error, "{content}");
    assert!(
        content.starts_with("{\"names\":[\"echo\",\"read\"],\"hidden\":\"not a function\"}"),
        "write is not allowed, js_execution never reaches itself: {content}"
    );
}

#[tokio::test]
async fn without_the_option_the_builtin_is_refused_by_name() {
    let cfg = Config {
        style: Style::Scripted,
        builtins: Some(vec!["js_execution".into()]),
        script: Some(vec![ScriptEntry::text("x")]),
        ..Config::default()
    };
    let err = ClientBuilder::from_config(cfg).build().err().unwrap();
    assert!(err.to_string().contains("code_execution"), "{err}");
    let bad = Config::from_json(r#"{"code_execution": {"memory_mb": 0}}"#)
        .and_then(|c| ClientBuilder::from_config(c).build());
    assert!(
        bad.err()
            .unwrap()
            .to_string()
            .contains("code_execution.memory_mb"),
        "a limit out of range names its key"
    );
}

#[tokio::test]
async fn inner_calls_count_in_the_turns_budget() {
    let runs = Arc::new(AtomicUsize::new(0));
    let code = "for (let i = 0; i < 8; i++) await tools.echo({text: 'x'}); 'done'";
    let mut cfg = config(limits(), code);
    cfg.max_tool_calls = Some(5);
    let client = ClientBuilder::from_config(cfg)
        .tool(echo(runs.clone()))
        .build()
        .unwrap();
    let result = client.run("go").await.unwrap();
    let (content, is_error) = js_result(&result.transcript);
    assert!(!is_error, "{content}");
    assert_eq!(
        runs.load(Ordering::SeqCst),
        8,
        "the run's own cap is code_execution's"
    );
    assert_eq!(
        result.outcome,
        Outcome::Budget,
        "1 direct + 8 inner calls are over max_tool_calls 5: the turn ends after the step"
    );
}

#[tokio::test]
async fn a_call_the_code_did_not_wait_for_still_ends_and_is_listed() {
    let runs = Arc::new(AtomicUsize::new(0));
    // The code starts two calls and ends at once, waiting for neither.
    let code = "tools.echo({text: 'a'}); tools.echo({text: 'b'}); 'left'";
    let client = ClientBuilder::from_config(config(limits(), code))
        .tool(echo(runs.clone()))
        .build()
        .unwrap();
    let result = client.run("go").await.unwrap();
    let (content, is_error) = js_result(&result.transcript);
    assert!(!is_error, "{content}");
    assert!(content.starts_with("\"left\""), "{content}");
    // How many calls start before the turn sees the run's end is a race; what holds either
    // way: every call that ran ended and is listed, none is listed that did not run.
    let ran = runs.load(Ordering::SeqCst);
    assert!(ran <= 2, "{ran}");
    let listed = content.matches("\"call_id\":\"c0/js").count();
    assert_eq!(listed, ran, "{content}");
}
