//! The README's walk-through, as written there: a FastAPI service (tests/remote/app.py's
//! `quickstart`, the seed's example), `contenox hook add myapp --url ...`, `contenox hook show
//! myapp` -> `summarize_text`, a run that calls it and a chain (the seed's weather shape:
//! chat_completion <-> execute_tool_calls) that calls it; then a hook whose stored
//! `Authorization` header is what lets the call through, never printed.

use crate::common::{both, contenox, Service};
use serde_json::json;

#[test]
fn the_fastapi_walk_through() {
    let service = Service::start("quickstart", &[]);
    let work = tempfile::tempdir().unwrap();
    let db = work.path().join(".contenox/local.db");
    let run = |args: &[&str]| {
        contenox(&db)
            .current_dir(work.path())
            .args(args)
            .output()
            .unwrap()
    };

    let out = run(&["hook", "add", "myapp", "--url", &service.url]);
    assert!(out.status.success(), "{}", both(&out));
    assert!(String::from_utf8_lossy(&out.stdout)
        .contains("Registered hook \"myapp\" — 1 tool(s) discovered."));
    let out = run(&["hook", "show", "myapp"]);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("summarize_text"),
        "{}",
        both(&out)
    );

    // A plain run: the (scripted) model calls summarize_text; the service answers.
    let script = work.path().join("script.json");
    std::fs::write(
        &script,
        json!([
            {"tool_calls": [{"id": "c1", "name": "summarize_text",
                "arguments": {"text": "contenox registers internal APIs as tools once", "max_words": 3}}]},
            {"text": "Summary: contenox registers internal."}
        ])
        .to_string(),
    )
    .unwrap();
    let out = run(&[
        "run",
        "--script",
        script.to_str().unwrap(),
        "--builtins",
        "none",
        "--hooks",
        "myapp",
        "Summarize: contenox registers internal APIs as tools once",
    ]);
    assert!(out.status.success(), "{}", both(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "Summary: contenox registers internal."
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("[hook] myapp: 1 tool(s)"), "{err}");
    assert!(
        err.contains("[tool] summarize_text: ok: {\"summary\":\"contenox registers internal\"}"),
        "{err}"
    );

    // The same through a chain file naming the hook.
    let chain = work.path().join("chain.json");
    std::fs::write(
        &chain,
        json!({
            "id": "summarize",
            "tasks": [
                {"id": "chat", "handler": "chat_completion",
                 "system_instruction": "Tools: {{hookservice:list}}",
                 "execute_config": {"hooks": ["myapp"]},
                 "transition": {"branches": [
                     {"operator": "equals", "when": "tool-call", "goto": "run_tools"},
                     {"operator": "default", "when": "", "goto": "end"}]}},
                {"id": "run_tools", "handler": "execute_tool_calls", "input_var": "chat",
                 "transition": {"branches": [{"operator": "default", "when": "", "goto": "chat"}]}}
            ]
        })
        .to_string(),
    )
    .unwrap();
    let out = run(&[
        "run",
        "--script",
        script.to_str().unwrap(),
        "--builtins",
        "none",
        "--chain",
        chain.to_str().unwrap(),
        "--input",
        "contenox registers internal APIs",
    ]);
    assert!(out.status.success(), "{}", both(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "Summary: contenox registers internal."
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("[chain] chat (chat_completion)"), "{err}");
    assert!(err.contains("[chain] run_tools -> chat"), "{err}");
    assert!(err.contains("[tool] summarize_text: ok"), "{err}");
}

#[test]
fn a_stored_header_authorizes_calls_and_is_never_printed() {
    const TOKEN: &str = "tok-SECRET-5e1d";
    let service = Service::start("tickets", &[TOKEN]);
    let work = tempfile::tempdir().unwrap();
    let db = work.path().join("local.db");
    let out = contenox(&db)
        .args(["hook", "add", "tix", "--url", &service.url])
        .args(["--header", &format!("Authorization: Bearer {TOKEN}")])
        .args(["--inject", "tenant_id=acme"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", both(&out));
    let mut printed = both(&out);
    let script = work.path().join("script.json");
    std::fs::write(
        &script,
        json!([
            {"tool_calls": [{"id": "c1", "name": "get_ticket",
                "arguments": {"project_id": "p1", "ticket_id": 7}}]},
            {"text": "Ticket 7 found."}
        ])
        .to_string(),
    )
    .unwrap();
    let out = contenox(&db)
        .current_dir(work.path())
        .args([
            "run",
            "--script",
            script.to_str().unwrap(),
            "--builtins",
            "none",
            "--hooks",
            "*",
            "get 7",
        ])
        .output()
        .unwrap();
    printed += &both(&out);
    assert!(out.status.success(), "{}", both(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    // 200 with the injected tenant: the header went with the call.
    assert!(err.contains("[tool] get_ticket: ok: {"), "{err}");
    assert!(
        err.contains("\"tenant_id\":\"acme\",\"ticket_id\":7"),
        "{err}"
    );
    for args in [&["hook", "show", "tix"][..], &["hook", "list"]] {
        printed += &both(&contenox(&db).args(args).output().unwrap());
    }
    assert!(
        !printed.contains(TOKEN),
        "the header value was printed:\n{printed}"
    );
}
