//! Chains run on the scripted model: loops, limits, failures, narrowing, cancel, timeouts.
//! (Request bodies are checked by the conformance scenarios, which run on the fake server.)

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use super::{Chain, NOT_EXECUTED_RESULT};
use crate::{
    tool_fn, Client, Event, HostError, Message, Outcome, ScriptEntry, ToolOutput, ToolSpec,
    CANCELLED_RESULT,
};

fn chain(v: Value) -> Chain {
    Chain::from_value(v).unwrap()
}

/// chat <-> execute_tool_calls, as the seed's weather chain.
fn agent_loop(tools: Value) -> Chain {
    chain(json!({"id": "loop", "tasks": [
        {"id": "chat", "handler": "chat_completion",
         "execute_config": {"tools": tools},
         "transition": {"branches": [
            {"operator": "equals", "when": "tool-call", "goto": "run_tools"},
            {"operator": "default", "when": "", "goto": "end"}]}},
        {"id": "run_tools", "handler": "execute_tool_calls", "input_var": "chat",
         "transition": {"branches": [{"operator": "default", "when": "", "goto": "chat"}]}}
    ]}))
}

fn echo(name: &str) -> Arc<dyn crate::Tool> {
    Arc::new(tool_fn(
        ToolSpec::new(name, "Echo.", json!({"type": "object"})),
        |args, _ctx| async move { Ok(ToolOutput::text(format!("echo {args}"))) },
    ))
}

fn client(script: Vec<ScriptEntry>, tools: Vec<Arc<dyn crate::Tool>>) -> Client {
    let mut b = Client::builder()
        .script(script)
        .builtins(Vec::<String>::new());
    for t in tools {
        b = b.tool(t);
    }
    b.build().unwrap()
}

async fn events_of(client: &Client, chain: &Chain, input: &str) -> (Vec<Event>, crate::TurnResult) {
    let mut run = client.stream_chain(chain, input).unwrap();
    let mut events = Vec::new();
    while let Some(e) = run.next_event().await {
        events.push(e);
    }
    (events, run.result().await.unwrap())
}

fn tool_results(result: &crate::TurnResult) -> Vec<(String, bool)> {
    result
        .transcript
        .messages
        .iter()
        .filter_map(|m| match m {
            Message::Tool { is_error, .. } => Some((m.text().into_owned(), *is_error)),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn the_agent_loop_runs_calls_and_ends_on_text() {
    let c = client(
        vec![
            ScriptEntry::tool_call("c1", "echo", json!({"x": 1})),
            ScriptEntry::text("done"),
        ],
        vec![echo("echo")],
    );
    let (events, result) = events_of(&c, &agent_loop(json!(["*"])), "go").await;
    assert_eq!(result.outcome, Outcome::Done, "{:?}", result.error);
    assert_eq!(result.final_text, "done");
    result.transcript.validate().unwrap();
    assert_eq!(
        tool_results(&result),
        [("echo {\"x\":1}".to_string(), false)]
    );
    let steps: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            Event::ChainTaskEnd {
                task_id,
                value,
                next,
                ..
            } => Some(format!(
                "{task_id}:{}:{}",
                value.clone().unwrap_or_default(),
                next.clone().unwrap_or("end".into())
            )),
            _ => None,
        })
        .collect();
    assert_eq!(
        steps,
        [
            "chat:tool-call:run_tools",
            "run_tools:tools_executed:chat",
            "chat:stop:end"
        ]
    );
    assert!(matches!(events.first(), Some(Event::TurnStart { prompt }) if prompt == "go"));
    assert!(matches!(events.last(), Some(Event::TurnEnd { .. })));
    // The input was the prompt of the first request; the loop continued the conversation.
    let users = result
        .transcript
        .messages
        .iter()
        .filter(|m| matches!(m, Message::User { .. }))
        .count();
    assert_eq!(users, 1);
}

#[tokio::test]
async fn a_task_allowlist_narrows_and_never_widens() {
    // The task allows only `echo`: a call to `other` is an unknown tool.
    let c = client(
        vec![
            ScriptEntry::tool_call("c1", "other", json!({})),
            ScriptEntry::text("ok"),
        ],
        vec![echo("echo"), echo("other")],
    );
    let result = c
        .run_chain(&agent_loop(json!(["echo"])), "go")
        .await
        .unwrap();
    let results = tool_results(&result);
    assert!(
        results[0].1 && results[0].0.contains("unknown tool"),
        "{results:?}"
    );
    // The caller allowed only `other`; the task's `*` does not bring `echo` back.
    let c = client(
        vec![
            ScriptEntry::tool_call("c1", "echo", json!({})),
            ScriptEntry::text("ok"),
        ],
        vec![echo("echo"), echo("other")],
    );
    let options = crate::RunOptions::default().allow(&["other"]).unwrap();
    let result = c
        .run_chain_with(&agent_loop(json!(["*"])), "go", options)
        .await
        .unwrap();
    let results = tool_results(&result);
    assert!(
        results[0].1 && results[0].0.contains("unknown tool"),
        "{results:?}"
    );
}

#[tokio::test]
async fn a_loop_is_stopped_by_the_step_limit() {
    let looping = chain(json!({"id": "spin", "max_steps": 7, "tasks": [
        {"id": "a", "handler": "noop", "transition": {"branches": [
            {"operator": "default", "when": "", "goto": "b"}]}},
        {"id": "b", "handler": "noop", "transition": {"branches": [
            {"operator": "default", "when": "", "goto": "a"}]}}
    ]}));
    let c = client(vec![], vec![]);
    let (events, result) = events_of(&c, &looping, "x").await;
    assert_eq!(result.outcome, Outcome::Error);
    let error = result.error.unwrap();
    assert!(
        error.contains("7 tasks") && error.contains("step limit"),
        "{error}"
    );
    assert!(error.contains("a -> b"), "{error}");
    let starts = events
        .iter()
        .filter(|e| matches!(e, Event::ChainTaskStart { .. }))
        .count();
    assert_eq!(starts, 7);
    // The same chain with another limit.
    let result = c.run_chain(&looping.with_max_steps(3), "x").await.unwrap();
    assert!(result.error.unwrap().contains("3 tasks"));
}

#[tokio::test]
async fn branches_by_contains_and_numbers() {
    let router = chain(json!({"id": "route", "tasks": [
        {"id": "look", "handler": "noop", "transition": {"branches": [
            {"operator": "contains", "when": "weather", "goto": "weather"},
            {"operator": "gt", "when": "100", "goto": "big"},
            {"operator": "in_range", "when": "1-100", "goto": "small"},
            {"operator": "default", "when": "", "goto": "other"}]}},
        {"id": "weather", "handler": "prompt_to_string", "prompt_template": "W: {{.input}}"},
        {"id": "big", "handler": "prompt_to_string", "prompt_template": "big"},
        {"id": "small", "handler": "prompt_to_string", "prompt_template": "small"},
        {"id": "other", "handler": "prompt_to_string", "prompt_template": "other {{.look}}"}
    ]}));
    let c = client(vec![], vec![]);
    for (input, out) in [
        ("the weather in Paris", "W: the weather in Paris"),
        ("1000", "big"),
        ("42", "small"),
        ("hello", "other hello"),
    ] {
        let r = c.run_chain(&router, input).await.unwrap();
        assert_eq!(r.outcome, Outcome::Done, "{:?}", r.error);
        assert_eq!(r.final_text, out);
    }
}

#[tokio::test]
async fn on_failure_hands_the_error_to_its_task() {
    let fail = Arc::new(tool_fn(
        ToolSpec::new("fail", "Fails.", json!({"type": "object"})),
        |_args, _ctx| async move { Err(HostError::new("the service is down")) },
    ));
    let guarded = chain(json!({"id": "guarded", "tasks": [
        {"id": "call", "handler": "tools", "tools": {"name": "fail"},
         "transition": {"on_failure": "report",
                        "branches": [{"operator": "default", "when": "", "goto": "end"}]}},
        {"id": "report", "handler": "raise_error"}
    ]}));
    let c = client(vec![], vec![fail.clone()]);
    let (events, result) = events_of(&c, &guarded, "x").await;
    assert_eq!(result.outcome, Outcome::Error);
    assert_eq!(result.error.as_deref(), Some("the service is down"));
    assert!(events.iter().any(|e| matches!(e,
        Event::ChainTaskEnd { task_id, next: Some(n), error: Some(_), .. }
            if task_id == "call" && n == "report")));
    // Without on_failure the chain ends naming the task.
    let bare = chain(json!({"id": "bare", "tasks": [
        {"id": "call", "handler": "tools", "tools": {"name": "fail"}}]}));
    let result = c.run_chain(&bare, "x").await.unwrap();
    assert_eq!(result.outcome, Outcome::Error);
    let e = result.error.unwrap();
    assert!(
        e.contains("task \"call\" failed") && e.contains("the service is down"),
        "{e}"
    );
}

#[tokio::test]
async fn a_direct_call_renders_its_arguments_and_passes_the_gate() {
    let chain = chain(json!({"id": "direct", "tasks": [
        {"id": "call", "handler": "tools",
         "tools": {"name": "echo", "args": {"q": "{{.input}}!", "n": "3", "s": "4"}},
         "transition": {"branches": [
            {"operator": "contains", "when": "\"n\":3", "goto": "end"}]}}
    ]}));
    struct DenyAll;
    #[async_trait::async_trait]
    impl crate::Hooks for DenyAll {
        async fn before_tool(
            &self,
            _call: &crate::ToolCallEvent,
        ) -> Result<crate::Decision, HostError> {
            Ok(crate::Decision::deny("no"))
        }
    }
    let typed = Arc::new(tool_fn(
        ToolSpec::new(
            "echo",
            "Echo.",
            json!({"type": "object", "properties": {
            "n": {"type": "integer"}, "s": {"type": "string"}, "q": {"type": "string"}}}),
        ),
        |args, _ctx| async move { Ok(ToolOutput::text(format!("echo {args}"))) },
    ));
    let c = client(vec![], vec![typed]);
    let r = c.run_chain(&chain, "hi").await.unwrap();
    assert_eq!(r.outcome, Outcome::Done, "{:?}", r.error);
    // `n` is an integer parameter: its string became a number; `s` is a string parameter.
    assert_eq!(r.final_text, "echo {\"n\":3,\"q\":\"hi!\",\"s\":\"4\"}");
    let denied = Client::builder()
        .script(vec![])
        .builtins(Vec::<String>::new())
        .tool(echo("echo"))
        .hooks(Arc::new(DenyAll))
        .build()
        .unwrap();
    let r = denied.run_chain(&chain, "hi").await.unwrap();
    assert_eq!(r.outcome, Outcome::Error);
    assert!(r.error.unwrap().contains("no"));
}

#[tokio::test]
async fn calls_nobody_runs_get_a_result() {
    let talk_only = chain(json!({"id": "talk", "tasks": [
        {"id": "chat", "handler": "chat_completion"}]}));
    let c = client(
        vec![ScriptEntry::tool_call("c1", "echo", json!({}))],
        vec![echo("echo")],
    );
    let r = c.run_chain(&talk_only, "go").await.unwrap();
    assert_eq!(r.outcome, Outcome::Done);
    r.transcript.validate().unwrap();
    assert_eq!(tool_results(&r), [(NOT_EXECUTED_RESULT.to_string(), true)]);
    // The next turn of the client continues a valid conversation.
    assert!(c.transcript().validate().is_ok());
}

#[tokio::test]
async fn cancel_during_a_tool_keeps_the_transcript_valid() {
    let sleep = Arc::new(tool_fn(
        ToolSpec::new("sleep", "Sleeps.", json!({"type": "object"})),
        |_args, ctx| async move {
            ctx.cancel.cancelled().await;
            Ok(ToolOutput::text("woke"))
        },
    ));
    let c = client(
        vec![ScriptEntry::tool_call("c1", "sleep", json!({}))],
        vec![sleep],
    );
    let mut run = c.stream_chain(&agent_loop(json!(["*"])), "go").unwrap();
    while let Some(e) = run.next_event().await {
        if matches!(e, Event::ToolStart { .. }) {
            run.cancel();
        }
    }
    let r = run.result().await.unwrap();
    assert_eq!(r.outcome, Outcome::Cancelled);
    r.transcript.validate().unwrap();
    assert_eq!(tool_results(&r), [(CANCELLED_RESULT.to_string(), true)]);
}

#[tokio::test]
async fn a_timeout_fails_the_task_and_retries_run_it_again() {
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = calls.clone();
    let slow = Arc::new(tool_fn(
        ToolSpec::new("slow", "Slow.", json!({"type": "object"})),
        move |_args, ctx| {
            counted.fetch_add(1, Ordering::SeqCst);
            async move {
                tokio::select! {
                    _ = ctx.cancel.cancelled() => Err(HostError::new("stopped")),
                    _ = tokio::time::sleep(Duration::from_secs(30)) => Ok(ToolOutput::text("late")),
                }
            }
        },
    ));
    let timed = chain(json!({"id": "timed", "tasks": [
        {"id": "call", "handler": "tools", "tools": {"name": "slow"},
         "timeout": "50ms", "retry_on_failure": 1}]}));
    let c = client(vec![], vec![slow]);
    let r = c.run_chain(&timed, "x").await.unwrap();
    assert_eq!(r.outcome, Outcome::Error);
    assert!(r.error.unwrap().contains("timed out after 50 ms"));
    assert_eq!(calls.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn model_responses_count_against_max_turns() {
    let c = Client::builder()
        .script(vec![
            ScriptEntry::tool_call("c1", "echo", json!({})),
            ScriptEntry::tool_call("c2", "echo", json!({})),
            ScriptEntry::text("never"),
        ])
        .builtins(Vec::<String>::new())
        .tool(echo("echo"))
        .max_turns(2)
        .build()
        .unwrap();
    let r = c.run_chain(&agent_loop(json!(["*"])), "go").await.unwrap();
    assert_eq!(r.outcome, Outcome::MaxTurns);
    r.transcript.validate().unwrap();
}

#[tokio::test]
async fn the_runs_max_turns_bounds_a_chain_below_the_clients() {
    let c = Client::builder()
        .script(vec![
            ScriptEntry::tool_call("c1", "echo", json!({})),
            ScriptEntry::text("never asked for"),
        ])
        .builtins(Vec::<String>::new())
        .tool(echo("echo"))
        .max_turns(10)
        .build()
        .unwrap();
    let options = crate::RunOptions::default().max_turns(1);
    let r = c
        .run_chain_with(&agent_loop(json!(["*"])), "go", options)
        .await
        .unwrap();
    assert_eq!(r.outcome, Outcome::MaxTurns);
    // The one response's call ran; the second chat task never asked the model.
    assert_eq!(tool_results(&r), vec![("echo {}".to_string(), false)]);
    r.transcript.validate().unwrap();
}

#[tokio::test]
async fn a_model_failure_is_a_task_failure() {
    let c = client(vec![], vec![]);
    let r = c.run_chain(&agent_loop(json!(["*"])), "go").await.unwrap();
    assert_eq!(r.outcome, Outcome::Error);
    let e = r.error.unwrap();
    assert!(
        e.contains("task \"chat\" failed") && e.contains("script exhausted"),
        "{e}"
    );
}

/// A task that renders its own output twice, looping to itself: without a cap its text
/// doubles each step (a gigabyte in 30 of the default 100 steps).
fn doubling(extra: Value) -> Chain {
    let mut v = json!({"id": "doubling", "tasks": [
        {"id": "t1", "handler": "prompt_to_string", "prompt_template": "x{{.t1}}{{.t1}}",
         "retry_on_failure": 3,
         "transition": {"on_failure": "caught",
                        "branches": [{"operator": "default", "when": "", "goto": "t1"}]}},
        {"id": "caught", "handler": "noop"}
    ]});
    for (k, val) in extra.as_object().unwrap() {
        v[k] = val.clone();
    }
    chain(v)
}

fn starts_of(events: &[Event], id: &str) -> usize {
    events
        .iter()
        .filter(|e| matches!(e, Event::ChainTaskStart { task_id, .. } if task_id == id))
        .count()
}

#[tokio::test]
async fn a_doubling_template_ends_at_its_cap_naming_the_task() {
    let c = client(vec![], vec![]);
    let (events, result) = events_of(&c, &doubling(json!({})), "").await;
    assert_eq!(result.outcome, Outcome::Error);
    let e = result.error.unwrap();
    assert!(
        e.contains("task \"t1\"")
            && e.contains("prompt_template")
            && e.contains("max_template_bytes")
            && e.contains(&super::DEFAULT_MAX_TEMPLATE_BYTES.to_string()),
        "{e}"
    );
    // 2^k - 1 bytes after k steps: the 21st render would pass 1 MiB. Neither retried nor
    // handed to on_failure: the same render would pass the cap again.
    assert_eq!(starts_of(&events, "t1"), 21);
    assert_eq!(starts_of(&events, "caught"), 0);
    // The last text kept is the biggest under the cap.
    assert_eq!(result.final_text.len(), (1 << 20) - 1);

    // A chain's own cap.
    let small = doubling(json!({"max_template_bytes": 100}));
    let (events, result) = events_of(&c, &small, "").await;
    assert_eq!(starts_of(&events, "t1"), 7, "{:?}", result.error);
    assert!(result
        .error
        .unwrap()
        .contains("limit of 100 (max_template_bytes)"));
}

#[tokio::test]
async fn variables_are_capped_the_chains_input_and_every_tasks_output() {
    let c = client(vec![], vec![echo("echo")]);
    let pass = chain(json!({"id": "pass", "max_variable_bytes": 10, "tasks": [
        {"id": "a", "handler": "noop"}]}));
    let r = c.run_chain(&pass, "0123456789").await.unwrap();
    assert_eq!(r.outcome, Outcome::Done, "{:?}", r.error);
    let r = c.run_chain(&pass, "0123456789!").await.unwrap();
    assert_eq!(r.outcome, Outcome::Error);
    let e = r.error.unwrap();
    assert!(
        e.contains("the chain's input is 11 bytes") && e.contains("max_variable_bytes"),
        "{e}"
    );
    // A tool's result is the output of its task: over the cap, the task is named, and
    // on_failure does not catch it.
    let call = chain(json!({"id": "call", "max_variable_bytes": 20, "tasks": [
        {"id": "big", "handler": "tools", "tools": {"name": "echo",
                                                    "args": {"text": "{{.input}}"}},
         "transition": {"on_failure": "caught",
                        "branches": [{"operator": "default", "when": "", "goto": "end"}]}},
        {"id": "caught", "handler": "noop"}]}));
    let (events, r) = events_of(&c, &call, "a long enough input").await;
    assert_eq!(r.outcome, Outcome::Error);
    let e = r.error.unwrap();
    assert!(
        e.contains("task \"big\": its output is") && e.contains("limit of 20 (max_variable_bytes)"),
        "{e}"
    );
    assert_eq!(starts_of(&events, "caught"), 0);
}

#[tokio::test]
async fn what_a_run_adds_to_the_conversation_is_capped() {
    let talk = chain(json!({"id": "talk", "max_history_bytes": 400, "tasks": [
        {"id": "chat", "handler": "chat_completion", "prompt_template": "again {{.input}}",
         "transition": {"branches": [{"operator": "default", "when": "", "goto": "chat"}]}}]}));
    let reply = "r".repeat(60);
    let c = client(
        (0..20).map(|_| ScriptEntry::text(reply.clone())).collect(),
        vec![],
    );
    let (events, r) = events_of(&c, &talk, "go").await;
    assert_eq!(r.outcome, Outcome::Error);
    let e = r.error.unwrap();
    assert!(
        e.contains("task \"chat\"")
            && e.contains("added to the conversation")
            && e.contains("limit of 400 (max_history_bytes)"),
        "{e}"
    );
    // Each round adds a prompt and a reply of about 100 bytes (4 tokens of framing each):
    // a few rounds, not the 20 the script holds.
    let rounds = starts_of(&events, "chat");
    assert!((2..=5).contains(&rounds), "{rounds}");
    let added: usize = r
        .transcript
        .messages
        .iter()
        .map(|m| super::limits::history_bytes(std::slice::from_ref(m)))
        .sum();
    assert!(added <= 400, "{added}");
}

#[test]
fn the_caps_have_defaults_and_are_checked_when_read() {
    let plain = chain(json!({"id": "x", "tasks": [{"id": "a", "handler": "noop"}]}));
    assert_eq!(plain.limits(), super::Limits::default());
    assert_eq!(plain.limits().template_bytes, 1 << 20);
    assert_eq!(plain.limits().variable_bytes, 4 << 20);
    assert_eq!(plain.limits().history_bytes, 16 << 20);
    for key in [
        "max_template_bytes",
        "max_variable_bytes",
        "max_history_bytes",
    ] {
        for bad in [json!(0), json!(-1), json!(1_u64 << 31), json!("1000")] {
            let v = json!({"id": "x", key: bad, "tasks": [{"id": "a", "handler": "noop"}]});
            let e = Chain::from_value(v).unwrap_err().to_string();
            assert!(e.contains(key), "{key} {bad}: {e}");
        }
        let v = json!({"id": "x", key: 1 << 30, "tasks": [{"id": "a", "handler": "noop"}]});
        assert!(Chain::from_value(v).is_ok(), "{key}");
    }
    let tight = plain.with_limits(super::Limits {
        template_bytes: 0,
        variable_bytes: usize::MAX,
        history_bytes: 7,
    });
    assert_eq!(
        tight.limits(),
        super::Limits {
            template_bytes: 1,
            variable_bytes: 1 << 30,
            history_bytes: 7,
        }
    );
}
