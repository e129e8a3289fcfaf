//! The host's lifecycle hooks (`on_prompt`, `on_stop`, `before_compact`, `on_tool_error`,
//! `on_turn_start` / `on_turn_end`, `on_notification`) at their points, and their fallbacks
//! when a hook fails, panics or hangs.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use contenox::{
    async_trait, tool_fn, Answer, CancellationToken, Client, CompactAction, CompactRequest,
    CompactionConfig, Decision, Hints, Hooks, HostError, Notification, NotificationKind, Outcome,
    PendingRequest, PromptAction, ScriptEntry, StopAction, ToolCallEvent, ToolOutput, ToolSpec,
    TurnEndInfo, WaitFor,
};
use serde_json::json;

/// How each hook behaves.
#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Answer,
    Fail,
    Panic,
    Hang,
}

struct Recorder {
    mode: Mode,
    prompt: PromptAction,
    stop_first: StopAction,
    compact: CompactAction,
    ask: bool,
    log: Mutex<Vec<String>>,
}

impl Recorder {
    fn new(mode: Mode) -> Self {
        Recorder {
            mode,
            prompt: PromptAction::Continue,
            stop_first: StopAction::Stop,
            compact: CompactAction::Proceed,
            ask: false,
            log: Mutex::default(),
        }
    }
    fn log(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }
    async fn act<T>(&self, entry: String, answer: T) -> Result<T, HostError> {
        self.log.lock().unwrap().push(entry);
        match self.mode {
            Mode::Answer => Ok(answer),
            Mode::Fail => Err(HostError::new("hook failed on purpose")),
            Mode::Panic => panic!("hook panicked on purpose"),
            Mode::Hang => {
                tokio::time::sleep(Duration::from_secs(3600)).await;
                Ok(answer)
            }
        }
    }
}

#[async_trait]
impl Hooks for Recorder {
    async fn before_tool(&self, call: &ToolCallEvent) -> Result<Decision, HostError> {
        Ok(if self.ask && call.name == "fail" {
            Decision::Ask(PendingRequest::new("approval", "may it fail?"))
        } else {
            Decision::Allow
        })
    }
    async fn on_prompt(&self, prompt: &str) -> Result<PromptAction, HostError> {
        self.act(format!("prompt {prompt}"), self.prompt.clone())
            .await
    }
    async fn on_stop(&self, final_text: &str) -> Result<StopAction, HostError> {
        let first = !self.log().iter().any(|l| l.starts_with("stop"));
        let answer = if first {
            self.stop_first.clone()
        } else {
            StopAction::Stop
        };
        self.act(format!("stop {final_text}"), answer).await
    }
    async fn before_compact(&self, r: &CompactRequest) -> Result<CompactAction, HostError> {
        self.act(format!("compact {:?}", r.trigger), self.compact.clone())
            .await
    }
    async fn on_tool_error(
        &self,
        call: &ToolCallEvent,
        result: &ToolOutput,
    ) -> Result<(), HostError> {
        self.act(
            format!("tool_error {} {}", call.name, result.content_text()),
            (),
        )
        .await
    }
    async fn on_turn_start(&self, prompt: &str) -> Result<(), HostError> {
        self.act(format!("turn_start {prompt}"), ()).await
    }
    async fn on_turn_end(&self, end: &TurnEndInfo) -> Result<(), HostError> {
        self.act(
            format!("turn_end {} {}", end.outcome.as_str(), end.final_text),
            (),
        )
        .await
    }
    async fn on_notification(&self, n: &Notification) -> Result<(), HostError> {
        self.act(
            format!("notification {} {}", n.kind.as_str(), n.message),
            (),
        )
        .await
    }
}

struct Approve;

#[async_trait]
impl WaitFor for Approve {
    async fn wait_for(&self, _: PendingRequest, _: CancellationToken) -> Result<Answer, HostError> {
        Ok(Answer::approve())
    }
}

fn failing_tool() -> Arc<contenox::FnTool> {
    Arc::new(tool_fn(
        ToolSpec::new("fail", "Fails.", json!({"type": "object"})).with_hints(Hints::read_only()),
        |_args, _ctx| async move { Err("it broke".into()) },
    ))
}

fn client(hooks: Arc<Recorder>, script: Vec<ScriptEntry>, max_turns: u32) -> Client {
    Client::builder()
        .builtins(Vec::<String>::new())
        .tool(failing_tool())
        .script(script)
        .max_turns(max_turns)
        .hooks(hooks)
        .wait_for(Arc::new(Approve))
        .hook_timeout(Duration::from_millis(200))
        .compaction(CompactionConfig {
            keep_recent: 1,
            ..CompactionConfig::new(1_000_000)
        })
        .build()
        .unwrap()
}

#[tokio::test]
async fn every_point_is_called_in_order() {
    let mut rec = Recorder::new(Mode::Answer);
    rec.ask = true;
    rec.stop_first = StopAction::Continue("check again".into());
    rec.prompt = PromptAction::AddContext("(from the hook)".into());
    let rec = Arc::new(rec);
    let c = client(
        rec.clone(),
        vec![
            ScriptEntry::tool_call("c1", "fail", json!({})),
            ScriptEntry::text("first answer"),
            ScriptEntry::text("second answer"),
        ],
        3,
    );
    let r = c.run("hello").await.unwrap();
    assert_eq!(r.outcome, Outcome::Done);
    assert_eq!(r.final_text, "second answer");
    assert_eq!(
        rec.log(),
        [
            "turn_start hello",
            "prompt hello",
            "notification ask fail needs approval: may it fail?",
            "tool_error fail it broke",
            "stop first answer",
            "notification budget_near the next model response is the last max_turns (3) allows",
            "turn_end done second answer",
        ]
    );
    let first = r.transcript.messages[0].text().into_owned();
    assert!(
        first.contains("hello") && first.contains("(from the hook)"),
        "{first}"
    );
    assert_eq!(r.transcript.messages[4].text(), "check again");
}

#[tokio::test]
async fn on_prompt_replaces_or_refuses() {
    let mut rec = Recorder::new(Mode::Answer);
    rec.prompt = PromptAction::Replace("tidy".into());
    let c = client(Arc::new(rec), vec![ScriptEntry::text("ok")], 5);
    let r = c.run("messy").await.unwrap();
    assert_eq!(r.transcript.messages[0].text(), "tidy");

    let mut rec = Recorder::new(Mode::Answer);
    rec.prompt = PromptAction::Refuse("not that".into());
    let rec = Arc::new(rec);
    let c = client(rec.clone(), vec![ScriptEntry::text("never")], 5);
    let r = c.run("bad").await.unwrap();
    assert_eq!(r.outcome, Outcome::Error);
    assert_eq!(
        r.error.as_deref(),
        Some("the prompt was refused by a hook: not that")
    );
    assert!(r.transcript.messages.is_empty());
    assert_eq!(rec.log().last().unwrap(), "turn_end error ");
}

#[tokio::test]
async fn before_compact_vetoes_or_sets_instructions() {
    let mut rec = Recorder::new(Mode::Answer);
    rec.compact = CompactAction::Veto("not now".into());
    let c = client(
        Arc::new(rec),
        vec![ScriptEntry::text("a"), ScriptEntry::text("b")],
        5,
    );
    c.run("one").await.unwrap();
    c.run("two").await.unwrap();
    assert!(c.compact().await.unwrap().is_none());
    assert_eq!(c.transcript().messages.len(), 4);

    let mut rec = Recorder::new(Mode::Answer);
    rec.compact = CompactAction::Instructions("keep names".into());
    let c = client(
        Arc::new(rec),
        vec![
            ScriptEntry::text("a"),
            ScriptEntry::text("b"),
            ScriptEntry::text("the summary"),
        ],
        5,
    );
    c.run("one").await.unwrap();
    c.run("two").await.unwrap();
    let notice = c.compact().await.unwrap().expect("compacted");
    assert_eq!(notice.summary.as_deref(), Some("the summary"));
}

/// A lifecycle hook that fails, panics or hangs past the hook timeout: the turn goes on as if
/// it had said nothing (each point's fallback), never crashes.
#[tokio::test]
async fn failing_panicking_and_hanging_hooks_fall_back() {
    for mode in [Mode::Fail, Mode::Panic, Mode::Hang] {
        let rec = Arc::new(Recorder::new(mode));
        let c = client(
            rec.clone(),
            vec![
                ScriptEntry::tool_call("c1", "fail", json!({})),
                ScriptEntry::text("fine"),
            ],
            5,
        );
        let started = std::time::Instant::now();
        let r = c.run("hi").await.unwrap();
        assert_eq!(r.outcome, Outcome::Done);
        assert_eq!(r.final_text, "fine");
        assert_eq!(r.transcript.messages[0].text(), "hi");
        // turn_start, prompt, tool_error, stop, turn_end: each given up on after 200 ms.
        assert!(started.elapsed() < Duration::from_secs(5));
        assert_eq!(rec.log().len(), 5, "{:?}", rec.log());
    }
}

#[tokio::test]
async fn a_budget_near_its_ceiling_is_notified_once() {
    let rec = Arc::new(Recorder::new(Mode::Answer));
    let c = Client::builder()
        .builtins(Vec::<String>::new())
        .tool(failing_tool())
        .script(vec![
            ScriptEntry::tool_call("c1", "fail", json!({})),
            ScriptEntry::tool_call("c2", "fail", json!({})),
            ScriptEntry::text("done"),
        ])
        .max_tool_calls(2)
        .hooks(rec.clone())
        .build()
        .unwrap();
    c.run("go").await.unwrap();
    let notes: Vec<String> = rec
        .log()
        .into_iter()
        .filter(|l| l.starts_with("notification"))
        .collect();
    assert_eq!(
        notes,
        ["notification budget_near 2 of 2 tool calls (max_tool_calls) made"]
    );
    let _ = NotificationKind::BudgetNear;
}
