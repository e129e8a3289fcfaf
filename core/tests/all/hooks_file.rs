//! Config `hooks_file`: a Claude Code hooks file, its command hooks run for real (bash, in the
//! sandbox) at each point, and hostile hooks (hang, flood, bad JSON, exit 1) each giving their
//! documented fallback.

use std::path::Path;
use std::time::{Duration, Instant};

use contenox::{Client, Message, Outcome, ScriptEntry, Transcript};
use serde_json::{json, Value};

/// A guard written as Claude Code users write it: reads the event on stdin, blocks `rm -rf`
/// with exit 2 and the reason on stderr.
const GUARD: &str = r#"#!/bin/sh
input=$(cat)
case "$input" in
  *'"hook_event_name":"PreToolUse"'*'rm -rf'*|*'rm -rf'*'"hook_event_name":"PreToolUse"'*)
    echo "Blocked: rm -rf is not allowed here" >&2
    exit 2;;
esac
exit 0
"#;

fn write(dir: &Path, name: &str, text: &str) {
    std::fs::write(dir.join(name), text).unwrap();
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

fn client(root: &Path, hooks: Value, script: Vec<ScriptEntry>) -> Client {
    Client::builder()
        .root(root)
        .builtins(["bash"])
        .script(script)
        .hooks_file(hooks)
        .build()
        .unwrap()
}

fn bash(command: &str) -> ScriptEntry {
    ScriptEntry::tool_call("c1", "bash", json!({"command": command}))
}

#[tokio::test]
async fn a_claude_code_hooks_file_blocks_rm_rf_through_a_command_hook() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join(".claude/hooks")).unwrap();
    write(root, ".claude/hooks/guard.sh", GUARD);
    std::fs::create_dir(root.join("victim")).unwrap();
    write(root, "victim/keep.txt", "precious");
    // The settings file as Claude Code reads it, by path.
    write(
        root,
        ".claude/settings.json",
        &json!({"permissions": {"allow": []}, "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
            {"type": "command", "command": "sh \"$CLAUDE_PROJECT_DIR\"/.claude/hooks/guard.sh", "timeout": 10}
        ]}]}})
        .to_string(),
    );
    let path = root.join(".claude/settings.json");
    let c = client(
        root,
        json!(path.display().to_string()),
        vec![
            bash("rm -rf victim"),
            bash("echo still-here > out.txt"),
            ScriptEntry::text("done"),
        ],
    );
    let r = c.run("clean up").await.unwrap();
    assert_eq!(r.outcome, Outcome::Done, "{:?}", r.error);
    assert_eq!(
        std::fs::read_to_string(root.join("victim/keep.txt")).unwrap(),
        "precious"
    );
    let results = tool_results(&r.transcript);
    assert!(
        results[0].1,
        "the blocked call is an error result: {results:?}"
    );
    assert!(
        results[0].0.contains("Blocked: rm -rf is not allowed here"),
        "the model sees the reason: {results:?}"
    );
    // A call the guard lets through runs.
    assert!(!results[1].1, "{results:?}");
    assert_eq!(
        std::fs::read_to_string(root.join("out.txt"))
            .unwrap()
            .trim(),
        "still-here"
    );
}

#[tokio::test]
async fn a_json_deny_on_stdout_blocks_and_the_matcher_reads_claude_and_contenox_names() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let deny = r#"echo '{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": "no shell today"}}'"#;
    for matcher in ["Bash", "bash", "Ba.*|Edit", "*"] {
        let hooks = json!({"PreToolUse": [{"matcher": matcher, "hooks": [{"type": "command", "command": deny}]}]});
        let c = client(
            root,
            hooks,
            vec![bash("touch made.txt"), ScriptEntry::text("ok")],
        );
        let r = c.run("go").await.unwrap();
        let results = tool_results(&r.transcript);
        assert!(
            results[0].1 && results[0].0.contains("no shell today"),
            "{matcher}: {results:?}"
        );
        assert!(!root.join("made.txt").exists(), "{matcher}");
    }
    // A matcher for another tool leaves bash alone.
    let hooks = json!({"PreToolUse": [{"matcher": "Edit|Write", "hooks": [{"type": "command", "command": deny}]}]});
    let c = client(
        root,
        hooks,
        vec![bash("touch made.txt"), ScriptEntry::text("ok")],
    );
    c.run("go").await.unwrap();
    assert!(root.join("made.txt").exists());
}

#[tokio::test]
async fn the_hook_gets_claude_codes_fields_on_stdin() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let hooks =
        json!({"PreToolUse": [{"hooks": [{"type": "command", "command": "cat > seen.json"}]}]});
    let c = client(root, hooks, vec![bash("true"), ScriptEntry::text("ok")]);
    c.run("go").await.unwrap();
    let seen: Value =
        serde_json::from_str(&std::fs::read_to_string(root.join("seen.json")).unwrap()).unwrap();
    assert_eq!(seen["hook_event_name"], "PreToolUse");
    assert_eq!(seen["tool_name"], "Bash");
    assert_eq!(seen["tool_input"]["command"], "true");
    assert_eq!(seen["tool_use_id"], "c1");
    assert!(seen["session_id"]
        .as_str()
        .unwrap()
        .starts_with("contenox-"));
    assert_eq!(
        seen["cwd"],
        std::fs::canonicalize(root).unwrap().display().to_string()
    );
}

/// A hostile hook never stops the call (the fallback is to go on, as Claude Code's non-blocking
/// error), never hangs the turn past its timeout, and leaves no process behind.
#[tokio::test]
async fn hostile_hooks_each_give_the_fallback() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let cases = [
        ("hang", "echo $$ > hook.pid; sleep 300 & sleep 300", 1),
        (
            "flood",
            "head -c 20000000 /dev/zero | tr '\\0' '{'; exit 0",
            10,
        ),
        ("bad json", "echo '{\"decision\": \"block\", '; exit 0", 10),
        ("exit 1", "echo 'Blocked!' >&2; exit 1", 10),
        ("not found", "/nonexistent/guard.sh", 10),
    ];
    for (what, command, timeout) in cases {
        let _ = std::fs::remove_file(root.join("ran.txt"));
        let hooks = json!({"PreToolUse": [{"matcher": "*", "hooks": [{"type": "command", "command": command, "timeout": timeout}]}]});
        let c = client(
            root,
            hooks,
            vec![bash("echo ran > ran.txt"), ScriptEntry::text("ok")],
        );
        let started = Instant::now();
        let r = c.run("go").await.unwrap();
        assert!(started.elapsed() < Duration::from_secs(20), "{what}");
        assert_eq!(r.outcome, Outcome::Done, "{what}");
        assert!(root.join("ran.txt").exists(), "{what}: the call ran");
        assert!(!tool_results(&r.transcript)[0].1, "{what}");
    }
    // The hanging hook's shell and its background sleep are gone.
    let pid: i32 = std::fs::read_to_string(root.join("hook.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while Path::new(&format!("/proc/{pid}")).exists() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(!Path::new(&format!("/proc/{pid}")).exists());
    // Every process of the hook's group (its background sleep too) is gone (a zombie waiting
    // for its reaper counts as gone).
    let deadline = Instant::now() + Duration::from_secs(5);
    let alive = || {
        let out = std::process::Command::new("ps")
            .args(["-o", "pid=,stat=,args=", "-g", &pid.to_string()])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| !l.split_whitespace().nth(1).unwrap_or("").starts_with('Z'))
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    while !alive().is_empty() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        alive().is_empty(),
        "left in the hook's group: {:?}",
        alive()
    );
}

#[tokio::test]
async fn prompt_stop_session_and_post_tool_points() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    // UserPromptSubmit: refuse prompts naming a secret; add context otherwise (plain stdout).
    // SessionStart: its stdout is context for the first turn only.
    // Stop: send the model back once (stop_hook_active is false the first time).
    // PostToolUse: a note for the model.
    let hooks = json!({"hooks": {
        "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "grep -q password && { echo 'no secrets in prompts' >&2; exit 2; }; echo 'today is Monday'"}]}],
        "SessionStart": [{"matcher": "startup", "hooks": [{"type": "command", "command": "echo 'project: demo'"}]}],
        "Stop": [{"hooks": [{"type": "command", "command": "grep -q '\"stop_hook_active\":false' && { echo '{\"decision\": \"block\", \"reason\": \"run the tests first\"}'; exit 0; }; exit 0"}]}],
        "PostToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "echo '{\"hookSpecificOutput\": {\"hookEventName\": \"PostToolUse\", \"additionalContext\": \"logged\"}}'"}]}]
    }});
    let c = client(
        root,
        hooks,
        vec![
            ScriptEntry::text("all done"),
            bash("echo tests pass"),
            ScriptEntry::text("now done"),
            ScriptEntry::text("second turn"),
        ],
    );
    let r = c.run("do it").await.unwrap();
    assert_eq!(r.outcome, Outcome::Done);
    assert_eq!(r.final_text, "now done");
    let texts: Vec<String> = r
        .transcript
        .messages
        .iter()
        .map(|m| m.text().into_owned())
        .collect();
    assert!(
        texts[0].contains("do it")
            && texts[0].contains("project: demo")
            && texts[0].contains("today is Monday"),
        "{texts:?}"
    );
    assert_eq!(texts[2], "run the tests first", "{texts:?}");
    let results = tool_results(&r.transcript);
    assert!(
        results[0].0.contains("tests pass") && results[0].0.contains("[PostToolUse hook] logged"),
        "{results:?}"
    );

    // The second turn: no SessionStart context again; a refused prompt ends the turn with
    // outcome error, no request made, the conversation unchanged.
    let before = c.transcript().messages.len();
    let refused = c.run("my password is hunter2").await.unwrap();
    assert_eq!(refused.outcome, Outcome::Error);
    let error = refused.error.unwrap();
    assert_eq!(
        error,
        "the prompt was refused by a hook: no secrets in prompts"
    );
    assert_eq!(c.transcript().messages.len(), before);
    let r = c.run("again").await.unwrap();
    assert_eq!(
        r.final_text, "second turn",
        "the refused prompt used no response"
    );
    let first = &r.transcript.messages[before];
    assert!(!first.text().contains("project: demo"), "{}", first.text());
}

#[tokio::test]
async fn a_stop_hook_that_always_blocks_is_bounded_by_max_turns() {
    let dir = tempfile::tempdir().unwrap();
    let hooks = json!({"Stop": [{"hooks": [{"type": "command", "command": "echo 'keep going' >&2; exit 2"}]}]});
    let c = Client::builder()
        .root(dir.path())
        .builtins(Vec::<String>::new())
        .max_turns(3)
        .script(vec![
            ScriptEntry::text("a"),
            ScriptEntry::text("b"),
            ScriptEntry::text("c"),
            ScriptEntry::text("d"),
        ])
        .hooks_file(hooks)
        .build()
        .unwrap();
    let r = c.run("go").await.unwrap();
    assert_eq!(r.outcome, Outcome::Done);
    assert_eq!(r.final_text, "c");
}

#[tokio::test]
async fn pre_compact_exit_2_vetoes_a_compaction() {
    let dir = tempfile::tempdir().unwrap();
    let hooks = json!({"PreCompact": [{"matcher": "manual", "hooks": [{"type": "command", "command": "cat > compact.json; exit 2"}]}]});
    let c = Client::builder()
        .root(dir.path())
        .builtins(Vec::<String>::new())
        .script(vec![
            ScriptEntry::text("one"),
            ScriptEntry::text("two"),
            ScriptEntry::text("summary"),
        ])
        .compaction(contenox::CompactionConfig {
            keep_recent: 1,
            ..contenox::CompactionConfig::new(100_000)
        })
        .hooks_file(hooks)
        .build()
        .unwrap();
    c.run("a").await.unwrap();
    c.run("b").await.unwrap();
    let before = c.transcript();
    assert!(c.compact().await.unwrap().is_none(), "vetoed");
    assert_eq!(c.transcript(), before);
    let seen: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("compact.json")).unwrap())
            .unwrap();
    assert_eq!(seen["hook_event_name"], "PreCompact");
    assert_eq!(seen["trigger"], "manual");
}

#[test]
fn a_hooks_file_contenox_cannot_honour_is_refused_at_creation() {
    let dir = tempfile::tempdir().unwrap();
    for (hooks, option) in [
        (
            json!({"hooks": {"SubagentStop": []}}),
            "hooks_file.hooks.SubagentStop",
        ),
        (
            json!({"PreToolUse": [{"hooks": [{"type": "http", "url": "http://127.0.0.1:1"}]}]}),
            "hooks_file.PreToolUse[0].hooks[0].type",
        ),
        (json!("{not json"), "hooks_file"),
        (
            json!(dir.path().join("missing.json").display().to_string()),
            "hooks_file",
        ),
    ] {
        let e = Client::builder()
            .root(dir.path())
            .script(vec![])
            .hooks_file(hooks.clone())
            .build()
            .err()
            .unwrap_or_else(|| panic!("{hooks} was accepted"));
        match e {
            contenox::Error::Config(c) => assert_eq!(c.option, option, "{hooks}: {c}"),
            other => panic!("{hooks}: {other}"),
        }
    }
}

#[tokio::test]
async fn continue_false_at_stop_lets_the_turn_end_whatever_another_hook_asked() {
    let dir = tempfile::tempdir().unwrap();
    let hooks = json!({"Stop": [{"hooks": [
        {"type": "command", "command": "echo 'keep going' >&2; exit 2"},
        {"type": "command", "command": "echo '{\"continue\": false, \"stopReason\": \"enough\"}'"}
    ]}]});
    let c = Client::builder()
        .root(dir.path())
        .builtins(Vec::<String>::new())
        .script(vec![ScriptEntry::text("a"), ScriptEntry::text("b")])
        .hooks_file(hooks)
        .build()
        .unwrap();
    let r = c.run("go").await.unwrap();
    assert_eq!((r.outcome, r.final_text.as_str()), (Outcome::Done, "a"));
}
