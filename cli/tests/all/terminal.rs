//! `contenox run` in a pseudo-terminal (rexpect): an approval answered `y` and one answered
//! `n`, Ctrl-C during a running tool (nothing left running, the transcript saved and valid),
//! and asks denied when there is no terminal.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::{both, contenox, BIN};
use rexpect::process::WaitStatus;
use rexpect::session::{spawn_command, PtySession};
use serde_json::json;

fn write_script(dir: &Path, entries: serde_json::Value) -> std::path::PathBuf {
    let path = dir.join("script.json");
    std::fs::write(&path, entries.to_string()).unwrap();
    path
}

/// `contenox run` in a pty, in `work`.
fn spawn_run(work: &Path, args: &[&str]) -> PtySession {
    let mut cmd = Command::new(BIN);
    cmd.current_dir(work)
        .arg("--db")
        .arg(work.join("registry.db"))
        .arg("run")
        .args(args);
    spawn_command(cmd, Some(30_000)).expect("spawn contenox in a pty")
}

fn exit_code(p: &mut PtySession) -> Option<i32> {
    match p.process().wait().expect("wait for contenox") {
        WaitStatus::Exited(_, code) => Some(code),
        _ => None,
    }
}

fn write_call(dir: &Path) -> std::path::PathBuf {
    write_script(
        dir,
        json!([
            {"tool_calls": [{"id": "c1", "name": "write",
                "arguments": {"path": "src/main.rs", "content": "fn main() {}\n"}}]},
            {"text": "All done."}
        ]),
    )
}

#[test]
fn an_approval_answered_y_runs_the_write() {
    let work = tempfile::tempdir().unwrap();
    std::fs::create_dir(work.path().join("src")).unwrap();
    std::fs::write(work.path().join("src/main.rs"), "old line\n").unwrap();
    let script = write_call(work.path());
    let mut p = spawn_run(
        work.path(),
        &[
            "--script",
            script.to_str().unwrap(),
            "--builtins",
            "write",
            "write it",
        ],
    );
    // The diff comes before the question.
    p.exp_string("-old line").unwrap();
    p.exp_string("+fn main() {}").unwrap();
    p.exp_string("Approve write on \"src/main.rs\"? [y/N]")
        .unwrap();
    p.send_line("y").unwrap();
    p.exp_string("[gate] write: approved").unwrap();
    p.exp_string("All done.").unwrap();
    assert_eq!(exit_code(&mut p), Some(0));
    assert_eq!(
        std::fs::read_to_string(work.path().join("src/main.rs")).unwrap(),
        "fn main() {}\n"
    );
}

#[test]
fn an_approval_answered_n_leaves_the_file() {
    let work = tempfile::tempdir().unwrap();
    std::fs::create_dir(work.path().join("src")).unwrap();
    std::fs::write(work.path().join("src/main.rs"), "old line\n").unwrap();
    let script = write_call(work.path());
    let mut p = spawn_run(
        work.path(),
        &[
            "--script",
            script.to_str().unwrap(),
            "--builtins",
            "write",
            "write it",
        ],
    );
    p.exp_string("Approve write on \"src/main.rs\"? [y/N]")
        .unwrap();
    p.send_line("n").unwrap();
    p.exp_string("[gate] write: denied").unwrap();
    p.exp_string("All done.").unwrap();
    assert_eq!(exit_code(&mut p), Some(0));
    assert_eq!(
        std::fs::read_to_string(work.path().join("src/main.rs")).unwrap(),
        "old line\n"
    );
}

/// Processes whose command line holds `marker`.
fn processes_with(marker: &str) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) {
            if String::from_utf8_lossy(&cmdline).contains(marker) {
                found.push(pid);
            }
        }
    }
    found
}

#[test]
fn ctrl_c_during_a_running_tool_cancels_and_leaves_nothing_running() {
    let work = tempfile::tempdir().unwrap();
    // A sleep no other process runs: its duration is the marker.
    let seconds = 400_000 + std::process::id() % 100_000;
    let marker = format!("sleep {seconds}");
    let script = write_script(
        work.path(),
        json!([
            {"tool_calls": [{"id": "c1", "name": "bash",
                "arguments": {"command": format!("echo started; {marker}; echo never")}}]},
            {"text": "not reached"}
        ]),
    );
    let transcript = work.path().join("conversation.json");
    let mut p = spawn_run(
        work.path(),
        &[
            "--script",
            script.to_str().unwrap(),
            "--builtins",
            "bash",
            "--auto",
            "--transcript",
            transcript.to_str().unwrap(),
            "sleep a while",
        ],
    );
    p.exp_string("[tool] bash").unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while processes_with(&marker).is_empty() {
        assert!(Instant::now() < deadline, "the tool's sleep never started");
        std::thread::sleep(Duration::from_millis(50));
    }
    p.send_control('c').unwrap();
    p.exp_string("cancelling").unwrap();
    p.exp_string("cancelled").unwrap();
    assert_eq!(exit_code(&mut p), Some(130));
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let left = processes_with(&marker);
        if left.is_empty() {
            break;
        }
        assert!(Instant::now() < deadline, "left running: {left:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
    // The conversation was saved, valid: the call has its (cancelled) result.
    let saved = std::fs::read_to_string(&transcript).unwrap();
    let t = contenox::Transcript::from_json(&saved).expect("a valid transcript");
    assert!(t.to_json().contains("sleep a while"));
    assert!(saved.contains("cancelled"), "{saved}");
    assert!(!saved.contains("not reached"));
}

#[test]
fn without_a_terminal_asks_are_denied() {
    let work = tempfile::tempdir().unwrap();
    let script = write_call(work.path());
    let out = contenox(&work.path().join("registry.db"))
        .current_dir(work.path())
        .args([
            "run",
            "--script",
            script.to_str().unwrap(),
            "--builtins",
            "write",
            "go",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", both(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "All done.");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("[gate] write: denied: Not approved: contenox runs without a terminal"),
        "{err}"
    );
    assert!(!work.path().join("src/main.rs").exists());
}

#[test]
fn the_policy_decides_and_auto_cannot_widen_a_deny() {
    let work = tempfile::tempdir().unwrap();
    std::fs::create_dir(work.path().join(".ssh")).unwrap();
    std::fs::write(work.path().join(".ssh/id_ed25519"), "KEY").unwrap();
    let script = write_script(
        work.path(),
        json!([
            {"tool_calls": [
                {"id": "r1", "name": "read", "arguments": {"path": ".ssh/id_ed25519"}},
                {"id": "w1", "name": "write", "arguments": {"path": "a.txt", "content": "x"}}]},
            {"text": "All done."}
        ]),
    );
    let run = |policy: &str| {
        contenox(&work.path().join("registry.db"))
            .current_dir(work.path())
            .args(["run", "--script", script.to_str().unwrap(), "--auto"])
            .args(["--policy", policy, "go"])
            .output()
            .unwrap()
    };
    // The default preset: the key is quarantined even with --auto; the write is approved.
    let out = run("default");
    assert!(out.status.success(), "{}", both(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("[gate] read: deny: The approval policy denied read"),
        "{err}"
    );
    assert!(err.contains("[gate] write: approved"), "{err}");
    assert_eq!(
        std::fs::read_to_string(work.path().join("a.txt")).unwrap(),
        "x"
    );
    // A policy file that denies writes.
    let file = work.path().join("no-writes.json");
    std::fs::write(
        &file,
        json!({"version": 1, "default_action": "allow",
               "rules": [{"tool": "write", "action": "deny"}]})
        .to_string(),
    )
    .unwrap();
    std::fs::remove_file(work.path().join("a.txt")).unwrap();
    let out = run(file.to_str().unwrap());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("[gate] write: deny: The approval policy denied write"),
        "{err}"
    );
    assert!(!work.path().join("a.txt").exists());
}

#[test]
fn run_refuses_bad_input_with_exit_2() {
    let work = tempfile::tempdir().unwrap();
    let db = work.path().join("registry.db");
    let script = write_call(work.path());
    std::fs::write(work.path().join("bad.json"), "[{\"texx\": 1}]").unwrap();
    std::fs::write(
        work.path().join("chain.json"),
        "{\"id\": \"c\", \"tasks\": [{\"id\": \"a\"}]}",
    )
    .unwrap();
    let bad = work.path().join("bad.json");
    let chain = work.path().join("chain.json");
    let cases: Vec<Vec<&str>> = vec![
        vec!["run"],
        vec!["run", "--script", "/no/such/file", "x"],
        vec!["run", "--script", bad.to_str().unwrap(), "x"],
        vec![
            "run",
            "--script",
            script.to_str().unwrap(),
            "--builtins",
            "nosuch",
            "x",
        ],
        vec![
            "run",
            "--script",
            script.to_str().unwrap(),
            "--hooks",
            "unregistered",
            "x",
        ],
        vec![
            "run",
            "--script",
            script.to_str().unwrap(),
            "--chain",
            chain.to_str().unwrap(),
        ],
        vec!["run", "--style", "openai", "x"],
        vec![
            "run",
            "--script",
            script.to_str().unwrap(),
            "--policy",
            "no-such-preset-or-file",
            "x",
        ],
    ];
    for args in cases {
        let out = contenox(&db)
            .current_dir(work.path())
            .args(&args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", both(&out));
        assert!(!out.stderr.is_empty());
    }
    // The chain's error names the field.
    let out = contenox(&db)
        .current_dir(work.path())
        .args(["run", "--script", script.to_str().unwrap(), "--chain"])
        .arg(work.path().join("chain.json"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("/tasks/0") && err.contains("\"handler\""),
        "{}",
        both(&out)
    );
}

/// The issue's probe through the CLI: `contenox run --auto ... 7>>FILE` from a shell. The
/// descriptor the shell gave `contenox` never reaches the command bash runs: the file outside
/// the root stays empty and the command's shell holds only 0, 1 and 2.
#[test]
fn a_descriptor_the_shell_passes_never_reaches_a_command() {
    let work = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let victim = outside.path().join("victim");
    std::fs::write(&victim, "").unwrap();
    let script = write_script(
        work.path(),
        json!([
            {"tool_calls": [{"id": "c1", "name": "bash", "arguments": {
                "command": "echo INJECTED >&7; echo fds:; ls /proc/$$/fd; echo end"}}]},
            {"text": "done"}
        ]),
    );
    let out = Command::new("bash")
        .arg("-c")
        .arg(r#"exec 7>>"$1"; shift; exec "$@""#)
        .arg("probe")
        .arg(&victim)
        .arg(BIN)
        .arg("--db")
        .arg(work.path().join("registry.db"))
        .args(["run", "--auto", "--builtins", "bash", "--script"])
        .arg(&script)
        .arg("--transcript")
        .arg(work.path().join("t.json"))
        .arg("go")
        .current_dir(work.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", both(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    // The printer shows the result's first line and counts the rest.
    assert!(err.contains("7: Bad file descriptor"), "{err}");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "");
    // The transcript holds the whole result.
    let transcript = std::fs::read_to_string(work.path().join("t.json")).unwrap();
    assert!(transcript.contains(r"fds:\n0\n1\n2\nend\n"), "{transcript}");
}

/// A Claude Code settings file whose PreToolUse command hook blocks `rm -rf`, given with
/// `--hooks-file`: the call never runs, the model sees the hook's reason; a harmless call runs.
#[test]
fn a_claude_code_hooks_file_blocks_rm_rf() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path();
    std::fs::create_dir_all(dir.join(".claude/hooks")).unwrap();
    std::fs::write(
        dir.join(".claude/hooks/guard.sh"),
        "#!/bin/sh\ninput=$(cat)\ncase \"$input\" in *'rm -rf'*) echo 'Blocked: rm -rf is not allowed' >&2; exit 2;; esac\nexit 0\n",
    )
    .unwrap();
    std::fs::write(
        dir.join(".claude/settings.json"),
        json!({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
            {"type": "command", "command": "sh \"$CLAUDE_PROJECT_DIR\"/.claude/hooks/guard.sh"}]}]}})
        .to_string(),
    )
    .unwrap();
    std::fs::create_dir(dir.join("victim")).unwrap();
    std::fs::write(dir.join("victim/keep.txt"), "precious").unwrap();
    let script = write_script(
        dir,
        json!([
            {"tool_calls": [{"id": "c1", "name": "bash", "arguments": {"command": "rm -rf victim"}}]},
            {"tool_calls": [{"id": "c2", "name": "bash", "arguments": {"command": "echo ok > out.txt"}}]},
            {"text": "Done."}
        ]),
    );
    let out = contenox(&dir.join("registry.db"))
        .current_dir(dir)
        .args([
            "run",
            "--script",
            script.to_str().unwrap(),
            "--builtins",
            "bash",
        ])
        .args([
            "--hooks-file",
            ".claude/settings.json",
            "--auto",
            "clean up",
        ])
        .output()
        .unwrap();
    let text = both(&out);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("Blocked: rm -rf is not allowed"), "{text}");
    assert_eq!(
        std::fs::read_to_string(dir.join("victim/keep.txt")).unwrap(),
        "precious"
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("out.txt")).unwrap(),
        "ok\n"
    );
    // A hooks file that cannot be honoured is a usage error naming where.
    std::fs::write(
        dir.join("bad.json"),
        json!({"hooks": {"Stop": [{"hooks": [{"type": "prompt", "prompt": "done?"}]}]}})
            .to_string(),
    )
    .unwrap();
    let out = contenox(&dir.join("registry.db"))
        .current_dir(dir)
        .args([
            "run",
            "--script",
            script.to_str().unwrap(),
            "--hooks-file",
            "bad.json",
            "x",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        both(&out).contains("hooks_file.hooks.Stop[0].hooks[0].type"),
        "{}",
        both(&out)
    );
}
