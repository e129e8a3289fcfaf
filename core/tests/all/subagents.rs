//! Subagents: a client as a tool of another, under both gates, cancelled with its parent.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use contenox::{
    async_trait, tool_fn, Answer, CancellationToken, Client, Conversation, Decision, Event,
    GateVerdict, Hints, Hooks, HostError, Message, Outcome, PendingRequest, ScriptEntry, Source,
    SubagentOptions, ToolCallEvent, ToolOutput, ToolSpec, Transcript, Usage, WaitFor,
};
use serde_json::json;

fn usage(input: u64, output: u64) -> Usage {
    Usage {
        input_tokens: input,
        output_tokens: output,
        ..Usage::default()
    }
}

fn with_usage(mut e: ScriptEntry, u: Usage) -> ScriptEntry {
    e.usage = Some(u);
    e
}

fn calls_sub(id: &str, name: &str, prompt: &str) -> ScriptEntry {
    ScriptEntry::tool_call(id, name, json!({ "prompt": prompt }))
}

/// Every event of a streamed turn.
async fn events_of(client: &Client, prompt: &str) -> (Vec<Event>, contenox::TurnResult) {
    let mut run = client.stream(prompt).unwrap();
    let mut events = Vec::new();
    while let Some(e) = run.next_event().await {
        events.push(e);
    }
    (events, run.result().await.unwrap())
}

fn tool_results(t: &Transcript) -> Vec<(String, bool)> {
    t.messages
        .iter()
        .filter_map(|m| match m {
            Message::Tool { is_error, .. } => Some((m.text().into_owned(), *is_error)),
            _ => None,
        })
        .collect()
}

/// Records what `before_tool` saw and answers by rule.
#[derive(Default)]
struct Recorder {
    seen: Mutex<Vec<ToolCallEvent>>,
    deny_destructive: bool,
    ask_destructive: bool,
    ask_all: bool,
}

#[async_trait]
impl Hooks for Recorder {
    async fn before_tool(&self, call: &ToolCallEvent) -> Result<Decision, HostError> {
        self.seen.lock().unwrap().push(call.clone());
        let destructive = call.hints.destructive == Some(true);
        Ok(if self.deny_destructive && destructive {
            Decision::deny("no writes from here")
        } else if self.ask_all || (self.ask_destructive && destructive) {
            Decision::Ask(PendingRequest::new(
                "approval",
                format!("run {}?", call.name),
            ))
        } else {
            Decision::Allow
        })
    }
}

/// Answers every ask with `answer`, counting them.
struct Answers {
    answer: Answer,
    asked: Mutex<Vec<PendingRequest>>,
}

impl Answers {
    fn new(answer: Answer) -> Arc<Self> {
        Arc::new(Answers {
            answer,
            asked: Mutex::new(Vec::new()),
        })
    }
}

#[async_trait]
impl WaitFor for Answers {
    async fn wait_for(
        &self,
        request: PendingRequest,
        _cancel: CancellationToken,
    ) -> Result<Answer, HostError> {
        self.asked.lock().unwrap().push(request);
        Ok(self.answer.clone())
    }
}

fn researcher(dir: &std::path::Path, script: Vec<ScriptEntry>) -> Client {
    Client::builder()
        .script(script)
        .root(dir)
        .builtins(["read", "write"])
        .build()
        .unwrap()
}

fn lead(dir: &std::path::Path, script: Vec<ScriptEntry>) -> contenox::ClientBuilder {
    Client::builder()
        .script(script)
        .root(dir)
        .builtins(Vec::<String>::new())
}

#[tokio::test]
async fn a_subagent_reads_a_file_and_answers() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "the code is 7\n").unwrap();
    let child = researcher(
        dir.path(),
        vec![
            with_usage(
                ScriptEntry::tool_call("r1", "read", json!({"path": "notes.txt"})),
                usage(100, 10),
            ),
            with_usage(ScriptEntry::text("The code is 7."), usage(150, 5)),
        ],
    );
    let hooks = Arc::new(Recorder::default());
    let parent = lead(
        dir.path(),
        vec![
            with_usage(
                calls_sub("p1", "researcher", "Find the code."),
                usage(20, 3),
            ),
            with_usage(ScriptEntry::text("It is 7."), usage(40, 2)),
        ],
    )
    .hooks(hooks.clone())
    .build()
    .unwrap();
    parent
        .register(
            child
                .as_tool_with("researcher", "Reads files.", SubagentOptions::default())
                .unwrap(),
        )
        .unwrap();
    let (events, result) = events_of(&parent, "What is the code?").await;
    assert_eq!(result.outcome, Outcome::Done);
    assert_eq!(result.final_text, "It is 7.");
    // The child's answer is the subagent call's result.
    assert_eq!(
        tool_results(&result.transcript),
        vec![("The code is 7.".to_string(), false)]
    );
    // One turn_start and one turn_end: the child's stay out of the parent's stream.
    let count = |k: &str| events.iter().filter(|e| e.kind() == k).count();
    assert_eq!((count("turn_start"), count("turn_end")), (1, 1));
    assert!(matches!(events.last(), Some(Event::TurnEnd { .. })));
    // The child's events come tagged, between the subagent call's tool_start and tool_result.
    let start = events
        .iter()
        .position(|e| matches!(e, Event::ToolStart { name, .. } if name == "researcher"))
        .unwrap();
    let end = events
        .iter()
        .position(|e| matches!(e, Event::ToolResult { name, .. } if name == "researcher"))
        .unwrap();
    let tagged: Vec<String> = events
        .iter()
        .filter(|e| e.agent() == ["researcher"])
        .map(|e| match e.tool_name() {
            Some(n) => format!("{}:{n}", e.kind()),
            None => e.kind().to_string(),
        })
        .collect();
    assert!(events[start + 1..end].iter().all(|e| !e.agent().is_empty()));
    assert!(events[..start]
        .iter()
        .chain(&events[end..])
        .all(|e| e.agent().is_empty()));
    for want in [
        "request",
        "tool_call:read",
        "gate:read",
        "tool_start:read",
        "tool_result:read",
        "usage",
        "text",
    ] {
        assert!(tagged.iter().any(|t| t == want), "{want} not in {tagged:?}");
    }
    // The parent's gate saw its own call as `subagent`, and the child's read with the chain.
    let seen = hooks.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 2);
    assert_eq!(
        (seen[0].name.as_str(), seen[0].source),
        ("researcher", Source::Subagent)
    );
    assert!(seen[0].agent.is_empty());
    assert_eq!(
        (seen[1].name.as_str(), seen[1].source),
        ("read", Source::Builtin)
    );
    assert_eq!(seen[1].agent, ["researcher"]);
    // Usage: the child's 250 + 15 in the parent's turn, and on the subagent's tool_result.
    assert_eq!(
        (result.usage.input_tokens, result.usage.output_tokens),
        (310, 20)
    );
    let reported = events.iter().find_map(|e| match e {
        Event::ToolResult { name, usage: u, .. } if name == "researcher" => Some(*u),
        _ => None,
    });
    assert_eq!(reported, Some(Some(usage(250, 15))));
}

#[tokio::test]
async fn the_parents_gate_denies_a_childs_write() {
    let dir = tempfile::tempdir().unwrap();
    let child = researcher(
        dir.path(),
        vec![
            ScriptEntry::tool_call("w1", "write", json!({"path": "out.txt", "content": "x"})),
            ScriptEntry::text("I could not write."),
        ],
    );
    // The child's own gate allows everything; the parent's denies destructive tools.
    let parent = lead(
        dir.path(),
        vec![
            calls_sub("p1", "writer", "Write x."),
            ScriptEntry::text("done"),
        ],
    )
    .hooks(Arc::new(Recorder {
        deny_destructive: true,
        ..Default::default()
    }))
    .build()
    .unwrap();
    parent
        .register(
            child
                .as_tool_with("writer", "Writes.", SubagentOptions::default())
                .unwrap(),
        )
        .unwrap();
    let (events, result) = events_of(&parent, "go").await;
    assert_eq!(result.outcome, Outcome::Done);
    assert!(!dir.path().join("out.txt").exists());
    let gate = events
        .iter()
        .find_map(|e| match e {
            Event::Gate {
                name,
                decision,
                message,
                agent,
                ..
            } if name == "write" => Some((*decision, message.clone(), agent.clone())),
            _ => None,
        })
        .unwrap();
    assert_eq!(
        gate,
        (
            GateVerdict::Deny,
            Some("no writes from here".into()),
            vec!["writer".to_string()]
        )
    );
    // The child saw the denial as its tool result.
    let child_results = tool_results(&child.transcript());
    assert_eq!(
        child_results,
        vec![("no writes from here".to_string(), true)]
    );
}

#[tokio::test]
async fn asks_from_either_gate_are_answered_by_the_parents_wait_for() {
    let dir = tempfile::tempdir().unwrap();
    // The child asks for every call and has no wait_for; the parent asks for destructive ones.
    let child = Client::builder()
        .script(vec![
            ScriptEntry::tool_call("w1", "write", json!({"path": "out.txt", "content": "x"})),
            ScriptEntry::text("written"),
        ])
        .root(dir.path())
        .builtins(["write"])
        .hooks(Arc::new(Recorder {
            ask_all: true,
            ..Default::default()
        }))
        .build()
        .unwrap();
    let answers = Answers::new(Answer::Approve);
    let parent = lead(
        dir.path(),
        vec![
            calls_sub("p1", "writer", "Write x."),
            ScriptEntry::text("done"),
        ],
    )
    .hooks(Arc::new(Recorder {
        ask_destructive: true,
        ..Default::default()
    }))
    .wait_for(answers.clone())
    .build()
    .unwrap();
    parent
        .register(
            child
                .as_tool_with("writer", "Writes.", SubagentOptions::default())
                .unwrap(),
        )
        .unwrap();
    let (events, result) = events_of(&parent, "go").await;
    assert_eq!(result.outcome, Outcome::Done);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("out.txt")).unwrap(),
        "x"
    );
    // Both gates asked (the child's first); the parent's wait_for answered both.
    let asked = answers.asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 2);
    assert!(asked.iter().all(|r| r.name == "write"));
    let pending: Vec<_> = events
        .iter()
        .filter(|e| e.kind() == "pending")
        .map(|e| e.agent().to_vec())
        .collect();
    assert_eq!(pending, vec![vec!["writer".to_string()]; 2]);

    // A denial from the parent's wait_for: the child sees it, nothing is written.
    let dir = tempfile::tempdir().unwrap();
    let child = Client::builder()
        .script(vec![
            ScriptEntry::tool_call("w1", "write", json!({"path": "out.txt", "content": "x"})),
            ScriptEntry::text("not written"),
        ])
        .root(dir.path())
        .builtins(["write"])
        .hooks(Arc::new(Recorder {
            ask_all: true,
            ..Default::default()
        }))
        .build()
        .unwrap();
    let parent = lead(
        dir.path(),
        vec![
            calls_sub("p1", "writer", "Write x."),
            ScriptEntry::text("ok"),
        ],
    )
    .wait_for(Answers::new(Answer::deny("not today")))
    .build()
    .unwrap();
    parent
        .register(
            child
                .as_tool_with("writer", "Writes.", SubagentOptions::default())
                .unwrap(),
        )
        .unwrap();
    parent.run("go").await.unwrap();
    assert!(!dir.path().join("out.txt").exists());
    assert_eq!(
        tool_results(&child.transcript()),
        vec![("not today".to_string(), true)]
    );
}

#[tokio::test]
async fn a_childs_own_wait_for_answers_its_own_asks() {
    let dir = tempfile::tempdir().unwrap();
    let own = Answers::new(Answer::result(json!("from the child's host")));
    let child = Client::builder()
        .script(vec![
            ScriptEntry::tool_call("w1", "write", json!({"path": "out.txt", "content": "x"})),
            ScriptEntry::text("fine"),
        ])
        .root(dir.path())
        .builtins(["write"])
        .hooks(Arc::new(Recorder {
            ask_all: true,
            ..Default::default()
        }))
        .wait_for(own.clone())
        .build()
        .unwrap();
    let parents = Answers::new(Answer::Approve);
    let parent = lead(
        dir.path(),
        vec![calls_sub("p1", "writer", "Write."), ScriptEntry::text("ok")],
    )
    .wait_for(parents.clone())
    .build()
    .unwrap();
    parent
        .register(
            child
                .as_tool_with("writer", "Writes.", SubagentOptions::default())
                .unwrap(),
        )
        .unwrap();
    parent.run("go").await.unwrap();
    assert_eq!(own.asked.lock().unwrap().len(), 1);
    assert!(parents.asked.lock().unwrap().is_empty());
    assert_eq!(
        tool_results(&child.transcript()),
        vec![("from the child's host".to_string(), false)]
    );
}

/// Logs `started`, then `finished` after a while, ignoring cancellation (the engine must stop
/// it by dropping it); dropped unfinished, it logs `dropped`.
fn stubborn(log: Arc<Mutex<Vec<&'static str>>>) -> Arc<contenox::FnTool> {
    /// Logs `dropped` unless the tool finished.
    struct Unfinished(Arc<Mutex<Vec<&'static str>>>);
    impl Drop for Unfinished {
        fn drop(&mut self) {
            let mut log = self.0.lock().unwrap();
            if !log.contains(&"finished") {
                log.push("dropped");
            }
        }
    }
    Arc::new(tool_fn(
        ToolSpec::new("slow", "Takes a while.", json!({"type": "object"}))
            .with_hints(Hints::read_only()),
        move |_args, _ctx| {
            let log = log.clone();
            async move {
                let _guard = Unfinished(log.clone());
                log.lock().unwrap().push("started");
                tokio::time::sleep(Duration::from_millis(400)).await;
                log.lock().unwrap().push("finished");
                Ok(ToolOutput::text("slow done"))
            }
        },
    ))
}

/// Waits (at most 10 s) until the stubborn tool's log shows it ended, dropped or finished.
async fn until_ended(log: &Mutex<Vec<&'static str>>) -> Vec<&'static str> {
    let ended = |l: &Vec<&str>| l.contains(&"dropped") || l.contains(&"finished");
    tokio::time::timeout(Duration::from_secs(10), async {
        while !ended(&log.lock().unwrap()) {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("the slow tool neither finished nor was dropped");
    log.lock().unwrap().clone()
}

fn process_alive(pid: i32) -> bool {
    // A zombie is gone for our purpose: it runs nothing.
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

#[tokio::test]
async fn cancelling_the_parent_stops_the_child_and_its_processes() {
    let dir = tempfile::tempdir().unwrap();
    let log = Arc::new(Mutex::new(Vec::new()));
    let child = Client::builder()
        .script(vec![ScriptEntry {
            tool_calls: Some(vec![
                contenox::ScriptCall {
                    id: Some("b1".into()),
                    name: "bash".into(),
                    arguments: json!({"command": "echo $$ > pid.txt; exec sleep 30"}),
                    pause_after_ms: None,
                },
                contenox::ScriptCall {
                    id: Some("s1".into()),
                    name: "slow".into(),
                    arguments: json!({}),
                    pause_after_ms: None,
                },
            ]),
            ..Default::default()
        }])
        .root(dir.path())
        .builtins(["bash"])
        .tool(stubborn(log.clone()))
        .build()
        .unwrap();
    let parent = lead(
        dir.path(),
        vec![
            calls_sub("p1", "worker", "Work."),
            ScriptEntry::text("never"),
        ],
    )
    .build()
    .unwrap();
    parent
        .register(
            child
                .as_tool_with("worker", "Works.", SubagentOptions::default())
                .unwrap(),
        )
        .unwrap();
    let before = tokio::runtime::Handle::current()
        .metrics()
        .num_alive_tasks();
    let mut run = parent.stream("go").unwrap();
    let mut events = Vec::new();
    while let Some(e) = run.next_event().await {
        // The child's bash started: cancel the parent while it runs.
        if matches!(&e, Event::ToolStart { name, agent, .. } if name == "bash" && agent == &["worker"])
        {
            // Wait until the shell wrote its pid (bounded).
            for _ in 0..200 {
                if dir.path().join("pid.txt").exists() {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            run.cancel();
        }
        events.push(e);
    }
    let result = run.result().await.unwrap();
    assert_eq!(result.outcome, Outcome::Cancelled);
    assert!(matches!(events.last(), Some(Event::TurnEnd { .. })));
    // Both transcripts stay valid: every call has a result.
    result.transcript.validate().unwrap();
    child.transcript().validate().unwrap();
    assert_eq!(
        tool_results(&result.transcript),
        vec![("cancelled".to_string(), true)]
    );
    // The shell's process is gone, and the child's slow tool never got to run or finish.
    let pid: i32 = std::fs::read_to_string(dir.path().join("pid.txt"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let mut alive = true;
    for _ in 0..200 {
        alive = process_alive(pid);
        if !alive {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(
        !alive,
        "the child's bash (pid {pid}) outlived the parent's turn"
    );
    // Every task the turn started has ended (bounded): a child turn left running on would be
    // one of them, and its slow tool would have logged `started` and `finished` before it ended.
    let tasks = || {
        tokio::runtime::Handle::current()
            .metrics()
            .num_alive_tasks()
    };
    tokio::time::timeout(Duration::from_secs(10), async {
        while tasks() > before {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("{} tasks still alive ({before} before the turn)", tasks()));
    assert_eq!(
        *log.lock().unwrap(),
        Vec::<&str>::new(),
        "a child tool ran after the parent's turn ended"
    );
}

#[tokio::test]
async fn cancelling_the_parent_mid_tool_drops_the_childs_tool() {
    let dir = tempfile::tempdir().unwrap();
    let log = Arc::new(Mutex::new(Vec::new()));
    let child = Client::builder()
        .script(vec![
            ScriptEntry::tool_call("s1", "slow", json!({})),
            ScriptEntry::text("never"),
        ])
        .root(dir.path())
        .builtins(Vec::<String>::new())
        .tool(stubborn(log.clone()))
        .build()
        .unwrap();
    let parent = lead(
        dir.path(),
        vec![calls_sub("p1", "worker", "Work."), ScriptEntry::text("x")],
    )
    .build()
    .unwrap();
    parent
        .register(
            child
                .as_tool_with("worker", "Works.", SubagentOptions::default())
                .unwrap(),
        )
        .unwrap();
    let mut run = parent.stream("go").unwrap();
    let mut after_end = 0;
    let mut ended = false;
    while let Some(e) = run.next_event().await {
        if ended {
            after_end += 1;
        }
        if matches!(&e, Event::ToolStart { name, .. } if name == "slow") {
            run.cancel();
        }
        ended |= matches!(e, Event::TurnEnd { .. });
    }
    assert!(ended);
    assert_eq!(after_end, 0);
    assert_eq!(run.result().await.unwrap().outcome, Outcome::Cancelled);
    // Nothing of the child happens once the parent's turn is over: its conversation does not
    // move any more, and its tool never finishes.
    let at_end = child.transcript();
    at_end.validate().unwrap();
    // The slow tool was dropped, not left to finish (it would log `finished` at 400 ms).
    assert_eq!(until_ended(&log).await, vec!["started", "dropped"]);
    assert_eq!(child.transcript(), at_end);
}

#[tokio::test]
async fn a_subagent_cannot_call_itself_directly_or_through_another() {
    let dir = tempfile::tempdir().unwrap();
    // Directly: a client registered as a tool of itself.
    let looper = Client::builder()
        .script(vec![
            calls_sub("l1", "looper", "again"),
            ScriptEntry::text("stopped"),
        ])
        .root(dir.path())
        .builtins(Vec::<String>::new())
        .build()
        .unwrap();
    looper
        .register(
            looper
                .as_tool_with("looper", "Loops.", SubagentOptions::default())
                .unwrap(),
        )
        .unwrap();
    let result = looper.run("go").await.unwrap();
    assert_eq!(result.outcome, Outcome::Done);
    let results = tool_results(&result.transcript);
    assert_eq!(results.len(), 1);
    assert!(results[0].1);
    assert!(results[0].0.contains("cannot call itself"), "{:?}", results);
    looper.close();

    // Through another: a -> b -> a.
    let a = Client::builder()
        .script(vec![
            calls_sub("a1", "b", "ask b"),
            ScriptEntry::text("a done"),
        ])
        .root(dir.path())
        .builtins(Vec::<String>::new())
        .build()
        .unwrap();
    let b = Client::builder()
        .script(vec![
            calls_sub("b1", "a", "ask a"),
            ScriptEntry::text("b done"),
        ])
        .root(dir.path())
        .builtins(Vec::<String>::new())
        .build()
        .unwrap();
    a.register(
        b.as_tool_with("b", "B.", SubagentOptions::default())
            .unwrap(),
    )
    .unwrap();
    b.register(
        a.as_tool_with("a", "A.", SubagentOptions::default())
            .unwrap(),
    )
    .unwrap();
    let top = lead(
        dir.path(),
        vec![calls_sub("t1", "a", "start"), ScriptEntry::text("top done")],
    )
    .build()
    .unwrap();
    top.register(
        a.as_tool_with("a", "A.", SubagentOptions::default())
            .unwrap(),
    )
    .unwrap();
    let result = top.run("go").await.unwrap();
    assert_eq!(result.outcome, Outcome::Done);
    let b_results = tool_results(&b.transcript());
    assert_eq!(b_results.len(), 1);
    assert!(b_results[0].1 && b_results[0].0.contains("cannot call itself"));
    assert!(b_results[0].0.contains("a → b → a"), "{}", b_results[0].0);
    a.close();
    b.close();
}

#[tokio::test]
async fn nesting_is_capped() {
    let dir = tempfile::tempdir().unwrap();
    // top -> s1 -> s2 -> s3 -> s4: s4 would run at depth 4.
    let names = ["s1", "s2", "s3", "s4"];
    let clients: Vec<Client> = names
        .iter()
        .enumerate()
        .map(|(i, _)| {
            let script = match names.get(i + 1) {
                Some(next) => vec![calls_sub("c", next, "deeper"), ScriptEntry::text("up")],
                None => vec![ScriptEntry::text("bottom")],
            };
            Client::builder()
                .script(script)
                .root(dir.path())
                .builtins(Vec::<String>::new())
                .build()
                .unwrap()
        })
        .collect();
    for i in 0..names.len() - 1 {
        clients[i]
            .register(
                clients[i + 1]
                    .as_tool_with(names[i + 1], "Deeper.", SubagentOptions::default())
                    .unwrap(),
            )
            .unwrap();
    }
    let top = lead(
        dir.path(),
        vec![calls_sub("t", "s1", "go"), ScriptEntry::text("top")],
    )
    .build()
    .unwrap();
    top.register(
        clients[0]
            .as_tool_with("s1", "First.", SubagentOptions::default())
            .unwrap(),
    )
    .unwrap();
    top.run("go").await.unwrap();
    let s3 = tool_results(&clients[2].transcript());
    assert_eq!(s3.len(), 1);
    assert!(s3[0].1, "{s3:?}");
    assert!(
        s3[0].0.contains("nest at most 3 deep") && s3[0].0.contains("s1 → s2 → s3 → s4"),
        "{}",
        s3[0].0
    );
    assert!(clients[3].transcript().messages.is_empty());
}

#[tokio::test]
async fn a_childs_failed_turn_is_an_error_result() {
    let dir = tempfile::tempdir().unwrap();
    // Out of script: the child's turn ends with `error`.
    let broken = Client::builder()
        .script(vec![])
        .root(dir.path())
        .builtins(Vec::<String>::new())
        .build()
        .unwrap();
    // One model response allowed, and it asks for a tool: `max_turns`.
    let looping = Client::builder()
        .script(vec![ScriptEntry::tool_call(
            "x",
            "read",
            json!({"path": "a"}),
        )])
        .root(dir.path())
        .builtins(["read"])
        .build()
        .unwrap();
    let parent = lead(
        dir.path(),
        vec![
            calls_sub("p1", "broken", "try"),
            calls_sub("p2", "looping", "try"),
            ScriptEntry::text("ok"),
        ],
    )
    .build()
    .unwrap();
    parent
        .register(
            broken
                .as_tool_with("broken", "B.", SubagentOptions::default())
                .unwrap(),
        )
        .unwrap();
    parent
        .register(
            looping
                .as_tool_with(
                    "looping",
                    "L.",
                    SubagentOptions {
                        max_turns: Some(1),
                        ..Default::default()
                    },
                )
                .unwrap(),
        )
        .unwrap();
    let result = parent.run("go").await.unwrap();
    let results = tool_results(&result.transcript);
    assert_eq!(results.len(), 2);
    assert!(results[0].1 && results[0].0.contains("the subagent broken failed: "));
    assert!(
        results[0].0.contains("script exhausted"),
        "{}",
        results[0].0
    );
    assert!(results[1].1 && results[1].0.contains("reached its max_turns"));
}

#[tokio::test]
async fn the_allowlist_narrows_and_a_host_schema_becomes_the_prompt() {
    let dir = tempfile::tempdir().unwrap();
    let child = researcher(
        dir.path(),
        vec![
            ScriptEntry::tool_call("w", "write", json!({"path": "a.txt", "content": "x"})),
            ScriptEntry::text("could not"),
        ],
    );
    let parent = lead(
        dir.path(),
        vec![
            ScriptEntry::tool_call("p1", "topical", json!({"topic": "a", "depth": 2})),
            ScriptEntry::text("done"),
        ],
    )
    .build()
    .unwrap();
    let schema = json!({
        "type": "object",
        "properties": {"topic": {"type": "string"}, "depth": {"type": "integer"}},
        "required": ["topic"]
    });
    let tool = child
        .as_tool_with(
            "topical",
            "T.",
            SubagentOptions {
                allow: Some(vec!["read".into()]),
                input_schema: Some(schema.clone()),
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(tool.spec().input_schema, schema);
    parent.register(tool).unwrap();
    let result = parent.run("go").await.unwrap();
    assert_eq!(result.outcome, Outcome::Done);
    // `write` is unknown to the child in these calls, though the child has it.
    assert!(!dir.path().join("a.txt").exists());
    let t = child.transcript();
    let child_results = tool_results(&t);
    assert!(child_results[0].1 && child_results[0].0.contains("unknown tool \"write\""));
    assert!(
        matches!(&t.messages[0], Message::User { .. }
            if serde_json::from_str::<serde_json::Value>(&t.messages[0].text()).unwrap()
                == json!({"topic": "a", "depth": 2})),
        "{:?}",
        t.messages[0]
    );
    assert_eq!(
        tool_results(&result.transcript),
        vec![("could not".to_string(), false)]
    );
}

#[tokio::test]
async fn fresh_and_kept_conversations() {
    let dir = tempfile::tempdir().unwrap();
    let script = || {
        vec![
            ScriptEntry::text("first answer"),
            ScriptEntry::text("second answer"),
        ]
    };
    let fresh = researcher(dir.path(), script());
    let kept = researcher(dir.path(), script());
    let parent = lead(
        dir.path(),
        vec![
            calls_sub("p1", "fresh", "one"),
            calls_sub("p2", "fresh", "two"),
            calls_sub("p3", "kept", "one"),
            calls_sub("p4", "kept", "two"),
            ScriptEntry::text("done"),
        ],
    )
    .build()
    .unwrap();
    parent
        .register(
            fresh
                .as_tool_with("fresh", "F.", SubagentOptions::default())
                .unwrap(),
        )
        .unwrap();
    parent
        .register(
            kept.as_tool_with(
                "kept",
                "K.",
                SubagentOptions {
                    conversation: Conversation::Kept,
                    ..Default::default()
                },
            )
            .unwrap(),
        )
        .unwrap();
    let result = parent.run("go").await.unwrap();
    assert_eq!(result.outcome, Outcome::Done);
    let users = |c: &Client| -> Vec<String> {
        c.transcript()
            .messages
            .iter()
            .filter_map(|m| match m {
                Message::User { .. } => Some(m.text().into_owned()),
                _ => None,
            })
            .collect()
    };
    assert_eq!(users(&fresh), ["two"]);
    assert_eq!(users(&kept), ["one", "two"]);
    assert_eq!(
        tool_results(&result.transcript),
        vec![
            ("first answer".to_string(), false),
            ("second answer".to_string(), false),
            ("first answer".to_string(), false),
            ("second answer".to_string(), false),
        ]
    );
}

#[tokio::test]
async fn bad_options_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let child = researcher(dir.path(), vec![]);
    let bad = |o: SubagentOptions| child.as_tool_with("x", "X.", o).is_err();
    assert!(child
        .as_tool_with("bad name!", "X.", SubagentOptions::default())
        .is_err());
    assert!(bad(SubagentOptions {
        max_turns: Some(0),
        ..Default::default()
    }));
    assert!(bad(SubagentOptions {
        max_depth: Some(0),
        ..Default::default()
    }));
    assert!(bad(SubagentOptions {
        allow: Some(vec!["[oops".into()]),
        ..Default::default()
    }));
    assert!(bad(SubagentOptions {
        input_schema: Some(json!("not a schema")),
        ..Default::default()
    }));
    assert!(SubagentOptions::from_json_value(json!({"conversaton": "kept"})).is_err());
    assert_eq!(
        SubagentOptions::from_json_value(json!({"conversation": "kept", "max_turns": 3}))
            .unwrap()
            .conversation,
        Conversation::Kept
    );
}
