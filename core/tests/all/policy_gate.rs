//! The approval policy in the gate, end to end on the scripted style: the order policy ->
//! before_tool -> wait_for, set_policy, and the compute ceilings.

use std::sync::{Arc, Mutex};

use contenox::policy::{presets, Policy};
use contenox::{
    async_trait, tool_fn, Answer, CancellationToken, Client, Decision, Event, Hints, Hooks,
    HostError, Message, Outcome, PendingRequest, ScriptEntry, ToolCallEvent, ToolOutput, ToolSpec,
    Transcript, WaitFor,
};
use serde_json::{json, Value};

fn echo() -> Arc<contenox::FnTool> {
    Arc::new(tool_fn(
        ToolSpec::new("echo", "Echo.", json!({"type": "object"})).with_hints(Hints::read_only()),
        |args, _ctx| async move { Ok(ToolOutput::text(args.to_string())) },
    ))
}

fn results(t: &Transcript) -> Vec<(String, bool)> {
    t.messages
        .iter()
        .filter_map(|m| match m {
            Message::Tool { is_error, .. } => Some((m.text().into_owned(), *is_error)),
            _ => None,
        })
        .collect()
}

fn calls(n: usize, name: &str) -> ScriptEntry {
    let mut e = ScriptEntry::tool_call("c0", name, json!({"text": "x"}));
    let call = e.tool_calls.as_ref().unwrap()[0].clone();
    e.tool_calls = Some(
        (0..n)
            .map(|i| {
                let mut c = call.clone();
                c.id = Some(format!("c{i}"));
                c
            })
            .collect(),
    );
    e
}

/// Records the requests it gets and answers from a list.
struct Answers {
    answers: Mutex<Vec<Answer>>,
    seen: Mutex<Vec<PendingRequest>>,
}

impl Answers {
    fn new(answers: Vec<Answer>) -> Arc<Self> {
        Arc::new(Answers {
            answers: Mutex::new(answers),
            seen: Mutex::new(Vec::new()),
        })
    }
}

#[async_trait]
impl WaitFor for Answers {
    async fn wait_for(
        &self,
        request: PendingRequest,
        cancel: CancellationToken,
    ) -> Result<Answer, HostError> {
        self.seen.lock().unwrap().push(request);
        let next = self.answers.lock().unwrap().pop();
        match next {
            Some(a) => Ok(a),
            None => {
                cancel.cancelled().await;
                Err(HostError::new("cancelled"))
            }
        }
    }
}

struct HostSays(Decision, Mutex<u32>);
#[async_trait]
impl Hooks for HostSays {
    async fn before_tool(&self, _call: &ToolCallEvent) -> Result<Decision, HostError> {
        *self.1.lock().unwrap() += 1;
        Ok(self.0.clone())
    }
}

fn policy(doc: Value) -> Policy {
    Policy::from_value(&doc).unwrap()
}

#[tokio::test]
async fn deny_is_an_error_result_and_the_host_is_not_asked() {
    let hooks = Arc::new(HostSays(Decision::Allow, Mutex::new(0)));
    let client = Client::builder()
        .script(vec![calls(1, "echo"), ScriptEntry::text("ok")])
        .tool(echo())
        .hooks(hooks.clone())
        .policy(policy(
            json!({"rules": [{"tool": "echo", "action": "deny", "name": "no echo"}]}),
        ))
        .build()
        .unwrap();
    let mut run = client.stream("go").unwrap();
    let mut gate = None;
    while let Some(e) = run.next_event().await {
        if let Event::Gate { decision, rule, .. } = e {
            gate = Some((decision, rule));
        }
    }
    let r = run.result().await.unwrap();
    assert_eq!(r.outcome, Outcome::Done);
    let (content, is_error) = &results(&r.transcript)[0];
    assert!(*is_error);
    assert!(content.contains("rules[0] (\"no echo\")"), "{content}");
    assert!(
        content.ends_with(contenox::policy::POLICY_DENIAL_TAIL),
        "{content}"
    );
    assert_eq!(*hooks.1.lock().unwrap(), 0, "a policy deny is final");
    let (decision, rule) = gate.unwrap();
    assert_eq!(decision, contenox::GateVerdict::Deny);
    assert_eq!(rule.as_deref(), Some("rules[0] (\"no echo\")"));
}

#[tokio::test]
async fn approve_asks_and_the_answer_decides() {
    for (answer, ran) in [(Answer::Approve, true), (Answer::deny("no thanks"), false)] {
        let answers = Answers::new(vec![answer]);
        let client = Client::builder()
            .script(vec![calls(1, "echo"), ScriptEntry::text("ok")])
            .tool(echo())
            .wait_for(answers.clone())
            .policy(policy(
                json!({"rules": [{"tool": "echo", "action": "approve", "timeout_s": 30}]}),
            ))
            .build()
            .unwrap();
        let r = client.run("go").await.unwrap();
        let (content, is_error) = &results(&r.transcript)[0];
        assert_eq!(!*is_error, ran, "{content}");
        let seen = answers.seen.lock().unwrap();
        assert_eq!(seen[0].kind, "approval");
        assert_eq!(seen[0].timeout_ms, Some(30_000));
        assert!(seen[0].prompt.as_deref().unwrap().contains("Approve echo?"));
    }
    // No wait_for: denied.
    let client = Client::builder()
        .script(vec![calls(1, "echo"), ScriptEntry::text("ok")])
        .tool(echo())
        .policy(policy(json!({"default_action": "approve"})))
        .build()
        .unwrap();
    let r = client.run("go").await.unwrap();
    assert!(results(&r.transcript)[0].1);
}

#[tokio::test]
async fn the_host_narrows_a_policy_allow() {
    let hooks = Arc::new(HostSays(Decision::deny("host says no"), Mutex::new(0)));
    let client = Client::builder()
        .script(vec![calls(1, "echo"), ScriptEntry::text("ok")])
        .tool(echo())
        .hooks(hooks)
        .policy(policy(json!({"default_action": "allow"})))
        .build()
        .unwrap();
    let r = client.run("go").await.unwrap();
    assert_eq!(results(&r.transcript)[0], ("host says no".into(), true));
}

#[tokio::test]
async fn set_policy_applies_to_the_next_call_and_a_bad_one_is_refused() {
    let client = Client::builder()
        .script(vec![
            calls(1, "echo"),
            calls(1, "echo"),
            ScriptEntry::text("ok"),
        ])
        .tool(echo())
        .policy(policy(json!({"default_action": "allow"})))
        .build()
        .unwrap();
    let bad = client.set_policy_source(&json!({"rules": [{"action": "maybe"}]}));
    let e = bad.unwrap_err().to_string();
    assert!(e.contains("rules[0].action"), "{e}");
    assert_eq!(
        client.policy().unwrap().default_action(),
        contenox::policy::Action::Allow,
        "the old policy stays"
    );
    client
        .set_policy_source(&json!("{\"default_action\": \"deny\"}"))
        .unwrap();
    let r = client.run("go").await.unwrap();
    assert!(results(&r.transcript).iter().all(|(_, err)| *err));
    client.set_policy_source(&Value::Null).unwrap();
    assert!(client.policy().is_none());
}

#[test]
fn an_invalid_policy_is_refused_at_creation() {
    let config: contenox::Config = serde_json::from_value(json!({
        "style": "scripted", "script": [],
        "policy": {"version": 2}
    }))
    .unwrap();
    let e = Client::from_config(config).err().unwrap().to_string();
    assert!(
        e.contains("invalid configuration") && e.contains("version"),
        "{e}"
    );
    let config: contenox::Config = serde_json::from_value(json!({
        "style": "scripted", "script": [], "max_tool_calls": 0
    }))
    .unwrap();
    assert!(Client::from_config(config).is_err());
    // A preset as a file path.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("policy.json");
    std::fs::write(&path, presets::STRICT_JSON).unwrap();
    let config: contenox::Config = serde_json::from_value(json!({
        "style": "scripted", "script": [], "policy": path
    }))
    .unwrap();
    let client = Client::from_config(config).unwrap();
    assert_eq!(
        client.policy().unwrap().document(),
        presets::strict().document()
    );
}

#[tokio::test]
async fn max_tool_calls_ends_the_turn_with_a_valid_transcript() {
    let client = Client::builder()
        .script(vec![
            calls(2, "echo"),
            calls(2, "echo"),
            ScriptEntry::text("never"),
        ])
        .tool(echo())
        .max_tool_calls(3)
        .build()
        .unwrap();
    let r = client.run("go").await.unwrap();
    assert_eq!(r.outcome, Outcome::Budget);
    assert_eq!(r.error.as_deref(), Some("max_tool_calls (3 per turn)"));
    let res = results(&r.transcript);
    assert_eq!(res.len(), 4, "every call has a result");
    assert!(!res[2].1 && res[3].1);
    assert!(res[3].0.contains(contenox::BUDGET_RESULT));
    r.transcript.validate().unwrap();
}

#[tokio::test]
async fn the_policy_token_ceiling() {
    let mut first = calls(1, "echo");
    first.usage = Some(contenox::Usage {
        input_tokens: 60,
        output_tokens: 50,
        ..Default::default()
    });
    let client = Client::builder()
        .script(vec![first, ScriptEntry::text("never")])
        .tool(echo())
        .policy(policy(
            json!({"default_action": "allow", "compute": {"maxTokens": 100}}),
        ))
        .build()
        .unwrap();
    let r = client.run("go").await.unwrap();
    assert_eq!(r.outcome, Outcome::Budget);
    assert!(results(&r.transcript)[0].1);
}
