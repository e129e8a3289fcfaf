//! `contenox run --mcp` asking an MCP server's question (`elicitation/create`) in a
//! pseudo-terminal: the real server-everything's form filled in field by field (a wrong answer
//! asked again) and its answer reaching the server; a decline; Esc and Ctrl-C cancelling the
//! question but not the run; no terminal declining; forms the terminal cannot ask (nested,
//! unknown types, 100 fields, 2 MB) refused with the reason, promptly.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::{both, contenox, repo_root, BIN};
use rexpect::process::WaitStatus;
use rexpect::session::{spawn_command, PtySession};
use serde_json::{json, Value};

/// server-everything's entry point (tests/mcp/node_modules, or $CONTENOX_MCP_NODE_MODULES).
fn everything_js() -> String {
    let modules = std::env::var("CONTENOX_MCP_NODE_MODULES")
        .map(PathBuf::from)
        .unwrap_or_else(|_| repo_root().join("tests/mcp/node_modules"));
    let path = modules.join("@modelcontextprotocol/server-everything/dist/index.js");
    assert!(
        path.exists(),
        "server-everything not found at {}: run tests/mcp/install.sh first",
        path.display()
    );
    path.to_string_lossy().into_owned()
}

/// The test's own server asking `form` (tests/mcp/elicit_server.py, standard library only).
fn elicit_server(form: &str) -> Value {
    let script = repo_root().join("tests/mcp/elicit_server.py");
    json!({"command": "python3", "args": [script, form]})
}

/// The work dir: an `mcpServers` file with `server` as `name`, and a script calling `tool`.
fn setup(work: &Path, name: &str, server: Value, tool: &str) -> (PathBuf, PathBuf) {
    let mcp = work.join("mcp.json");
    std::fs::write(&mcp, json!({"mcpServers": {name: server}}).to_string()).unwrap();
    let script = work.join("script.json");
    std::fs::write(
        &script,
        json!([
            {"tool_calls": [{"id": "c1", "name": tool, "arguments": {}}]},
            {"text": "All done."}
        ])
        .to_string(),
    )
    .unwrap();
    (mcp, script)
}

fn run_args(mcp: &Path, script: &Path, transcript: &Path) -> Vec<String> {
    [
        "run",
        "--mcp",
        mcp.to_str().unwrap(),
        "--script",
        script.to_str().unwrap(),
        "--builtins",
        "none",
        "--auto",
        "--transcript",
        transcript.to_str().unwrap(),
        "go",
    ]
    .map(String::from)
    .to_vec()
}

fn spawn(work: &Path, args: &[String]) -> PtySession {
    let mut cmd = Command::new(BIN);
    cmd.current_dir(work)
        .arg("--db")
        .arg(work.join("registry.db"))
        .args(args);
    spawn_command(cmd, Some(60_000)).expect("spawn contenox in a pty")
}

fn exit_code(p: &mut PtySession) -> Option<i32> {
    match p.process().wait().expect("wait for contenox") {
        WaitStatus::Exited(_, code) => Some(code),
        _ => None,
    }
}

/// The tool result saved in the transcript.
fn tool_result(transcript: &Path) -> String {
    let saved = std::fs::read_to_string(transcript).unwrap();
    contenox::Transcript::from_json(&saved).expect("a valid transcript");
    saved
}

#[test]
fn everythings_form_is_filled_in_and_the_answer_reaches_the_server() {
    let work = tempfile::tempdir().unwrap();
    let tool = "everything__trigger-elicitation-request";
    let server = json!({"command": "node", "args": [everything_js(), "stdio"]});
    let (mcp, script) = setup(work.path(), "everything", server, tool);
    let transcript = work.path().join("t.json");
    let mut p = spawn(work.path(), &run_args(&mcp, &script, &transcript));
    p.exp_string("[mcp] everything asks: Please provide inputs for the following fields:")
        .unwrap();
    p.exp_string("Fill in the form? [y = answer / n = decline]")
        .unwrap();
    p.send_line("y").unwrap();
    // Thirteen fields in the schema's order (names sorted): answer the ones the test checks,
    // keep the defaults of the others.
    let mut asked = Vec::new();
    let mut integer_tries = 0;
    while asked.len() < 13 {
        // rexpect turns the terminal's echo off: prompts follow each other on one line.
        let (_, field) = p.exp_regex(r"  [A-Za-z]+ [(\[]").unwrap();
        let field = field.trim().trim_end_matches(['(', '[']).trim().to_string();
        p.exp_regex(r"\]: ").unwrap();
        let answer = match field.as_str() {
            "name" => "Ada Lovelace",
            "check" => "y",
            "integer" => {
                integer_tries += 1;
                // Above the schema's maximum of 100 first: asked again.
                if integer_tries == 1 {
                    "500"
                } else {
                    "7"
                }
            }
            "untitledSingleSelectEnum" => "3",
            _ => "",
        };
        p.send_line(answer).unwrap();
        if field == "integer" && integer_tries == 1 {
            p.exp_string("not accepted").unwrap();
            continue;
        }
        asked.push(field);
    }
    assert!(asked.contains(&"name".to_string()), "{asked:?}");
    assert_eq!(integer_tries, 2);
    p.exp_string("[gate] everything__trigger-elicitation-request: answered")
        .unwrap();
    p.exp_string("All done.").unwrap();
    assert_eq!(exit_code(&mut p), Some(0));
    let saved = tool_result(&transcript);
    assert!(
        saved.contains("User provided the requested information"),
        "{saved}"
    );
    assert!(saved.contains("Name: Ada Lovelace"), "{saved}");
    assert!(saved.contains("Agreed to terms: true"), "{saved}");
    assert!(saved.contains("Favorite Integer: 7"), "{saved}");
    assert!(saved.contains("Joey"), "{saved}");
}

#[test]
fn a_declined_form_is_declined_at_the_server() {
    let work = tempfile::tempdir().unwrap();
    let (mcp, script) = setup(
        work.path(),
        "elicit",
        elicit_server("simple"),
        "elicit__ask",
    );
    let transcript = work.path().join("t.json");
    let mut p = spawn(work.path(), &run_args(&mcp, &script, &transcript));
    p.exp_string("[mcp] elicit asks: Who are you?").unwrap();
    p.exp_string("Fill in the form?").unwrap();
    p.send_line("n").unwrap();
    p.exp_string("All done.").unwrap();
    assert_eq!(exit_code(&mut p), Some(0));
    assert!(tool_result(&transcript).contains("action=decline"));
}

#[test]
fn a_required_field_is_asked_again_and_the_checked_answer_is_sent() {
    let work = tempfile::tempdir().unwrap();
    let (mcp, script) = setup(
        work.path(),
        "elicit",
        elicit_server("simple"),
        "elicit__ask",
    );
    let transcript = work.path().join("t.json");
    let mut p = spawn(work.path(), &run_args(&mcp, &script, &transcript));
    p.exp_string("Fill in the form?").unwrap();
    p.send_line("y").unwrap();
    // Fields sorted by name: age (optional integer 1..130), then name (required text).
    p.exp_string("age [an integer; optional]: ").unwrap();
    p.send_line("0").unwrap();
    p.exp_string("not accepted").unwrap();
    p.exp_string("age [an integer; optional]: ").unwrap();
    p.send_line("36").unwrap();
    p.exp_string("name (Your name) [text; required]: ").unwrap();
    p.send_line("").unwrap();
    p.exp_string("required: type an answer").unwrap();
    p.send_line("Ada").unwrap();
    p.exp_string("All done.").unwrap();
    assert_eq!(exit_code(&mut p), Some(0));
    let saved = tool_result(&transcript);
    assert!(
        saved.contains(r#"action=accept content={\"age\": 36, \"name\": \"Ada\"}"#),
        "{saved}"
    );
}

#[test]
fn esc_and_ctrl_c_cancel_the_question_not_the_run() {
    for how in ["esc", "ctrl-c"] {
        let work = tempfile::tempdir().unwrap();
        let (mcp, script) = setup(
            work.path(),
            "elicit",
            elicit_server("simple"),
            "elicit__ask",
        );
        let transcript = work.path().join("t.json");
        let mut p = spawn(work.path(), &run_args(&mcp, &script, &transcript));
        p.exp_string("Fill in the form?").unwrap();
        p.send_line("y").unwrap();
        p.exp_string("age [an integer; optional]: ").unwrap();
        match how {
            "esc" => {
                p.send_line("\u{1b}").unwrap();
            }
            _ => p.send_control('c').unwrap(),
        }
        p.exp_string("[mcp] question cancelled").unwrap();
        p.exp_string("All done.").unwrap();
        assert_eq!(exit_code(&mut p), Some(0), "{how}");
        assert!(tool_result(&transcript).contains("action=cancel"), "{how}");
    }
}

#[test]
fn without_a_terminal_the_question_is_declined() {
    let work = tempfile::tempdir().unwrap();
    let (mcp, script) = setup(
        work.path(),
        "elicit",
        elicit_server("simple"),
        "elicit__ask",
    );
    let transcript = work.path().join("t.json");
    let out = contenox(&work.path().join("registry.db"))
        .current_dir(work.path())
        .args(run_args(&mcp, &script, &transcript))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", both(&out));
    assert!(tool_result(&transcript).contains("action=decline"));
}

#[test]
fn forms_the_terminal_cannot_ask_are_refused_with_the_reason() {
    for (form, why) in [
        ("wide", "100 fields (at most 64 are asked)"),
        ("huge", "bytes of schema"),
    ] {
        let work = tempfile::tempdir().unwrap();
        let (mcp, script) = setup(work.path(), "elicit", elicit_server(form), "elicit__ask");
        let transcript = work.path().join("t.json");
        let started = Instant::now();
        let mut p = spawn(work.path(), &run_args(&mcp, &script, &transcript));
        p.exp_string("cannot be asked in the terminal").unwrap();
        p.exp_string(why).unwrap();
        p.exp_string("All done.").unwrap();
        assert_eq!(exit_code(&mut p), Some(0), "{form}");
        assert!(started.elapsed() < Duration::from_secs(30), "{form}");
        assert!(
            tool_result(&transcript).contains("action=decline"),
            "{form}"
        );
    }
}

#[test]
fn forms_outside_mcps_field_types_never_reach_the_person() {
    // Nested objects and unknown types are not MCP forms: the MCP layer answers the server
    // with an error before any question is shown, and the run goes on.
    for form in ["nested", "unknown"] {
        let work = tempfile::tempdir().unwrap();
        let (mcp, script) = setup(work.path(), "elicit", elicit_server(form), "elicit__ask");
        let transcript = work.path().join("t.json");
        let started = Instant::now();
        let mut p = spawn(work.path(), &run_args(&mcp, &script, &transcript));
        p.exp_string("All done.").unwrap();
        assert_eq!(exit_code(&mut p), Some(0), "{form}");
        assert!(started.elapsed() < Duration::from_secs(30), "{form}");
        let saved = tool_result(&transcript);
        assert!(saved.contains("error="), "{form}: {saved}");
        assert!(!saved.contains("action=accept"), "{form}: {saved}");
    }
}

#[test]
fn a_question_that_times_out_is_declined_and_says_so() {
    let work = tempfile::tempdir().unwrap();
    let mut server = elicit_server("simple");
    // The ask's own limit is 3/4 of the server's timeout.
    server["timeout_ms"] = json!(4000);
    let (mcp, script) = setup(work.path(), "elicit", server, "elicit__ask");
    let transcript = work.path().join("t.json");
    let mut p = spawn(work.path(), &run_args(&mcp, &script, &transcript));
    p.exp_string("Fill in the form?").unwrap();
    p.send_line("y").unwrap();
    p.exp_string("age [an integer; optional]: ").unwrap();
    // Nobody answers.
    p.exp_string("[mcp] the question is no longer asked (it timed out); declined")
        .unwrap();
    p.exp_string("All done.").unwrap();
    assert_eq!(exit_code(&mut p), Some(0));
    assert!(tool_result(&transcript).contains("action=decline"));
}
