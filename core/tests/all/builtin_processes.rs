//! No process outlives its owner: after `kill_shell`, `close_all` (the client's `close`), a
//! dropped client, a bash timeout, a cancelled turn and the command's own end, the process table
//! holds none of the processes the command started, also those that tried to get away (`setsid`,
//! `nohup`, a double fork). Each test gives its commands a `sleep` with a duration no
//! other process has, and scans `/proc` for it (a zombie waiting for its reaper counts as gone:
//! it runs nothing).

use std::path::Path;
use std::time::{Duration, Instant};

use contenox::{BackgroundShells, Client, Event, Outcome, ScriptEntry};
use serde_json::json;

/// A `sleep` argument unique to this call: 600 s plus a random fraction.
fn marker() -> String {
    format!("600.{:09}", rand_u32())
}

fn rand_u32() -> u32 {
    // Unique enough across the tests of one run: the clock's nanoseconds and a counter.
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    (nanos ^ (N.fetch_add(1, Ordering::SeqCst) << 20)) % 1_000_000_000
}

/// The pids of running (not zombie) processes whose command line holds `marker`.
fn running_with(marker: &str) -> Vec<u32> {
    let mut found = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return found;
    };
    for entry in dir.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if !cmdline.contains(marker) {
            continue;
        }
        let status = std::fs::read_to_string(entry.path().join("status")).unwrap_or_default();
        let zombie = status
            .lines()
            .any(|l| l.starts_with("State:") && l.contains('Z'));
        if !zombie {
            found.push(pid);
        }
    }
    found
}

/// Wait until `n` processes with `marker` run (the command started its children). Sleeps at
/// least once, so the tasks reading the commands' output (on this test's one thread) run too.
async fn wait_running(marker: &str, n: usize) {
    tokio::time::sleep(Duration::from_millis(50)).await;
    let start = Instant::now();
    while running_with(marker).len() < n {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "the command did not start its {n} processes: {:?}",
            running_with(marker)
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Assert that no process with `marker` is left (allowing a moment for the signal to land).
async fn assert_gone(marker: &str, after: &str) {
    let start = Instant::now();
    loop {
        let left = running_with(marker);
        if left.is_empty() {
            return;
        }
        if start.elapsed() > Duration::from_secs(5) {
            panic!("processes left after {after}: {left:?}");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A command with a child in the background and a grandchild in a subshell, all sleeping.
fn family(m: &str) -> String {
    format!("sleep {m} & (sleep {m}; true) & sleep {m}")
}

/// Processes that try to outlive the command: a new session (`setsid`, refused by the sandbox's
/// seccomp filter; before it, this one survived the group kill), `nohup`, and double forks.
fn escapes(m: &str) -> String {
    format!(
        "setsid sleep {m} & setsid -f sleep {m}; nohup sleep {m} >/dev/null 2>&1 & \
         (sleep {m} &) ; bash -c 'sleep {m} & disown' & true"
    )
}

fn client(root: &Path, script: Vec<ScriptEntry>, background: bool) -> Client {
    let mut config: contenox::Config = serde_json::from_value(json!({
        "style": "scripted",
        "builtins": ["bash"],
        "background": background,
    }))
    .unwrap();
    config.script = Some(script);
    config.root = Some(root.to_path_buf());
    Client::from_config(config).unwrap()
}

fn background_call(id: &str, command: &str) -> ScriptEntry {
    ScriptEntry::tool_call(
        id,
        "bash",
        json!({"command": command, "run_in_background": true}),
    )
}

fn last_result(client: &Client) -> (String, bool) {
    client
        .transcript()
        .messages
        .iter()
        .rev()
        .find_map(|m| match m {
            contenox::Message::Tool { is_error, .. } => Some((m.text().into_owned(), *is_error)),
            _ => None,
        })
        .expect("a tool result")
}

#[tokio::test]
async fn kill_shell_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let m = marker();
    let c = client(
        dir.path(),
        vec![
            background_call("c1", &format!("echo up; {}", family(&m))),
            ScriptEntry::text("started"),
            ScriptEntry::tool_call("c2", "bash_output", json!({"shell_id": "shell_1"})),
            ScriptEntry::tool_call("c3", "kill_shell", json!({"shell_id": "shell_1"})),
            ScriptEntry::tool_call("c4", "bash_output", json!({"shell_id": "shell_1"})),
            ScriptEntry::text("killed"),
        ],
        true,
    );
    let r = c.run("start").await.unwrap();
    assert_eq!(r.outcome, Outcome::Done);
    wait_running(&m, 3).await;
    let r = c.run("kill").await.unwrap();
    assert_eq!(r.outcome, Outcome::Done);
    assert_gone(&m, "kill_shell").await;
    let results: Vec<String> = c
        .transcript()
        .messages
        .iter()
        .filter_map(|m| match m {
            contenox::Message::Tool { .. } => Some(m.text().into_owned()),
            _ => None,
        })
        .collect();
    assert!(
        results[1].starts_with("up\n[status: running]"),
        "{results:?}"
    );
    assert!(
        results[2].starts_with("Killed shell shell_1"),
        "{results:?}"
    );
    assert!(results[3].starts_with("[status: killed]"), "{results:?}");
    assert_eq!(
        c.background_shells().unwrap().status("shell_1").as_deref(),
        Some("killed")
    );
}

#[tokio::test]
async fn close_all_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (m1, m2) = (marker(), marker());
    let c = client(
        dir.path(),
        vec![
            background_call("c1", &family(&m1)),
            background_call("c2", &family(&m2)),
            ScriptEntry::text("started"),
        ],
        true,
    );
    c.run("start").await.unwrap();
    wait_running(&m1, 3).await;
    wait_running(&m2, 3).await;
    c.close();
    assert_gone(&m1, "close").await;
    assert_gone(&m2, "close").await;
    assert!(c.run("again").await.is_err());
}

/// A client given host-owned shells (`ClientBuilder::background_shells`).
fn sharing_client(root: &Path, shells: &BackgroundShells, command: &str) -> Client {
    let mut config: contenox::Config =
        serde_json::from_value(json!({"style": "scripted", "builtins": ["bash"]})).unwrap();
    config.script = Some(vec![
        background_call("c1", command),
        ScriptEntry::text("started"),
    ]);
    config.root = Some(root.to_path_buf());
    contenox::ClientBuilder::from_config(config)
        .background_shells(shells.clone())
        .build()
        .unwrap()
}

#[tokio::test]
async fn host_owned_shells_outlive_one_sharing_client_and_end_with_close_all() {
    let dir = tempfile::tempdir().unwrap();
    let (ma, mb, mc) = (marker(), marker(), marker());
    let shells = BackgroundShells::new();
    let a = sharing_client(dir.path(), &shells, &family(&ma));
    let b = sharing_client(dir.path(), &shells, &family(&mb));
    let c = sharing_client(dir.path(), &shells, &family(&mc));
    a.run("start").await.unwrap();
    b.run("start").await.unwrap();
    c.run("start").await.unwrap();
    wait_running(&ma, 3).await;
    wait_running(&mb, 3).await;
    wait_running(&mc, 3).await;
    let b_running = running_with(&mb).len();
    assert_eq!(shells.ids(), ["shell_1", "shell_2", "shell_3"]);
    // Closing one client ends what its turns started, and only that.
    a.close();
    assert_gone(&ma, "closing the client that started it").await;
    // Dropping another leaves its shell to the host.
    drop(c);
    assert_eq!(shells.status("shell_3").as_deref(), Some("running"));
    assert_eq!(
        running_with(&mb).len(),
        b_running,
        "another client's shell was killed"
    );
    assert_eq!(shells.status("shell_2").as_deref(), Some("running"));
    // The host's close_all ends the rest.
    shells.close_all();
    assert_gone(&mb, "the host's close_all").await;
    assert_gone(&mc, "the host's close_all (its client was dropped)").await;
    drop(b);
}

#[tokio::test]
async fn a_dropped_client_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let m = marker();
    let c = client(
        dir.path(),
        vec![background_call("c1", &family(&m)), ScriptEntry::text("ok")],
        true,
    );
    c.run("start").await.unwrap();
    wait_running(&m, 3).await;
    drop(c);
    assert_gone(&m, "dropping the client").await;
}

#[tokio::test]
async fn a_bash_timeout_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let m = marker();
    let c = client(
        dir.path(),
        vec![
            ScriptEntry::tool_call(
                "c1",
                "bash",
                json!({"command": format!("echo go; {}", family(&m)), "timeout_ms": 700}),
            ),
            ScriptEntry::text("ok"),
        ],
        false,
    );
    let start = Instant::now();
    let r = c.run("run").await.unwrap();
    assert!(start.elapsed() < Duration::from_secs(10));
    assert_eq!(r.outcome, Outcome::Done);
    let (content, is_error) = last_result(&c);
    assert!(is_error);
    assert!(content.starts_with("go\n"), "{content}");
    assert!(content.contains("\"timedOut\":true"), "{content}");
    assert_gone(&m, "a bash timeout").await;
}

#[tokio::test]
async fn a_cancelled_turn_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (bg, fg) = (marker(), marker());
    let c = client(
        dir.path(),
        vec![
            background_call("c1", &family(&bg)),
            ScriptEntry::tool_call("c2", "bash", json!({"command": family(&fg)})),
            ScriptEntry::text("unreachable"),
        ],
        true,
    );
    let mut run = c.stream("run").unwrap();
    while let Some(event) = run.next_event().await {
        if let Event::ToolStart { call_id, .. } = &event {
            if call_id == "c2" {
                break;
            }
        }
    }
    wait_running(&bg, 3).await;
    wait_running(&fg, 3).await;
    run.cancel();
    let r = run.result().await.unwrap();
    assert_eq!(r.outcome, Outcome::Cancelled);
    assert_gone(&fg, "a cancelled turn (foreground bash)").await;
    assert_gone(&bg, "a cancelled turn (its background shell)").await;
    // The shell's status follows once its output is drained.
    let shells = c.background_shells().unwrap();
    let start = Instant::now();
    while shells.status("shell_1").as_deref() != Some("killed") {
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "{:?}",
            shells.status("shell_1")
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn a_dropped_run_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let m = marker();
    let c = client(
        dir.path(),
        vec![
            ScriptEntry::tool_call("c1", "bash", json!({"command": family(&m)})),
            ScriptEntry::text("unreachable"),
        ],
        false,
    );
    let mut run = c.stream("run").unwrap();
    while let Some(event) = run.next_event().await {
        if matches!(event, Event::ToolStart { .. }) {
            break;
        }
    }
    wait_running(&m, 3).await;
    drop(run);
    assert_gone(&m, "dropping the run handle").await;
}

#[tokio::test]
async fn escapes_leave_nothing_when_the_command_ends() {
    let dir = tempfile::tempdir().unwrap();
    let m = marker();
    let c = client(
        dir.path(),
        vec![
            ScriptEntry::tool_call(
                "c1",
                "bash",
                // The command ends once the escapes run (nohup's sleep, the double fork's and
                // bash -c's; the two setsid ones are refused).
                json!({"command": format!("{}; {}; echo done", escapes(&m), until_running(&m, 3))}),
            ),
            ScriptEntry::text("ok"),
        ],
        false,
    );
    let r = c.run("run").await.unwrap();
    assert_eq!(r.outcome, Outcome::Done);
    let (content, is_error) = last_result(&c);
    assert!(!is_error, "{content}");
    assert!(content.contains("done"), "{content}");
    assert!(content.contains("running: 3"), "{content}");
    assert!(
        content.contains("Operation not permitted"),
        "setsid was not refused: {content}"
    );
    assert_gone(&m, "the command's end").await;
}

#[tokio::test]
async fn escapes_leave_nothing_after_a_cancel() {
    let dir = tempfile::tempdir().unwrap();
    let m = marker();
    let c = client(
        dir.path(),
        vec![
            ScriptEntry::tool_call(
                "c1",
                "bash",
                json!({"command": format!("{}; sleep {m}", escapes(&m))}),
            ),
            ScriptEntry::text("unreachable"),
        ],
        false,
    );
    let mut run = c.stream("run").unwrap();
    while let Some(event) = run.next_event().await {
        if matches!(event, Event::ToolStart { .. }) {
            break;
        }
    }
    // nohup's sleep, the double fork's sleep, bash -c's sleep and the last sleep.
    wait_running(&m, 4).await;
    run.cancel();
    assert_eq!(run.result().await.unwrap().outcome, Outcome::Cancelled);
    assert_gone(&m, "a cancel").await;
}

#[tokio::test]
async fn escapes_leave_nothing_after_a_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let m = marker();
    let c = client(
        dir.path(),
        vec![
            ScriptEntry::tool_call(
                "c1",
                "bash",
                json!({
                    "command": format!("{}; {}; sleep {m}", escapes(&m), until_running(&m, 3)),
                    "timeout_ms": 3000
                }),
            ),
            ScriptEntry::text("ok"),
        ],
        false,
    );
    let r = c.run("run").await.unwrap();
    assert_eq!(r.outcome, Outcome::Done);
    let (content, is_error) = last_result(&c);
    assert!(is_error);
    assert!(content.contains("\"timedOut\":true"), "{content}");
    // The escapes ran when the timeout struck.
    assert!(content.contains("running: 3"), "{content}");
    assert_gone(&m, "a timeout").await;
}

#[tokio::test]
async fn background_escapes_leave_nothing_after_kill_shell() {
    let dir = tempfile::tempdir().unwrap();
    let m = marker();
    let c = client(
        dir.path(),
        vec![
            background_call("c1", &format!("{}; sleep {m}", escapes(&m))),
            ScriptEntry::text("started"),
            ScriptEntry::tool_call("c2", "kill_shell", json!({"shell_id": "shell_1"})),
            ScriptEntry::text("killed"),
        ],
        true,
    );
    c.run("start").await.unwrap();
    wait_running(&m, 4).await;
    c.run("kill").await.unwrap();
    assert_gone(&m, "kill_shell").await;
}

/// Shell lines that wait (at most 10 s) until `n` processes `sleep {m}` run, then print
/// `running: <how many>`: a command that goes on only once its escapes are under way.
fn until_running(m: &str, n: usize) -> String {
    format!(
        "i=0; while [ \"$(pgrep -xfc 'sleep {m}')\" -lt {n} ] && [ $i -lt 200 ]; do \
         sleep 0.05; i=$((i+1)); done; echo \"running: $(pgrep -xfc 'sleep {m}')\""
    )
}

/// A host that cancels its outside token as soon as a turn's result arrives (the Python
/// binding's `run` does, so that dropping the awaiting future cancels the turn) must not kill
/// the background shells that finished turn started: the turn is out of the token's reach once
/// it has ended. The link from the token to the turn used to pick at random between "the turn
/// ended" and "the token fired" when both were ready, killing the shell about half the time;
/// 20 rounds catch that with near certainty.
#[tokio::test]
async fn cancelling_the_outside_token_after_the_turn_keeps_its_shells() {
    let dir = tempfile::tempdir().unwrap();
    for round in 0..20 {
        let c = client(
            dir.path(),
            vec![
                background_call("c1", "sleep 30"),
                ScriptEntry::text("started"),
            ],
            true,
        );
        let outer = contenox::CancellationToken::new();
        let r = c
            .run_with(
                "start",
                contenox::RunOptions::default().cancel(outer.clone()),
            )
            .await
            .unwrap();
        assert_eq!(r.outcome, Outcome::Done);
        outer.cancel();
        // Room for a wrongly linked cancel to reach the shell and its watcher to record it.
        tokio::time::sleep(std::time::Duration::from_millis(30)).await;
        let shells = c.background_shells().expect("background shells on");
        assert_eq!(
            shells.status("shell_1").as_deref(),
            Some("running"),
            "round {round}"
        );
        c.close();
    }
}

/// kill_shell's message echoes the command the model gave with its control and bidi characters
/// escaped (a terminal showing the result is not cleared, the text not reordered).
#[tokio::test]
async fn kill_shell_shows_the_command_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let c = client(
        dir.path(),
        vec![
            background_call("c1", "sleep 30 # \u{1b}[2J\u{202e}gnp.exe"),
            ScriptEntry::tool_call("c2", "kill_shell", json!({"shell_id": "shell_1"})),
            ScriptEntry::text("ok"),
        ],
        true,
    );
    c.run("go").await.unwrap();
    let (text, is_error) = last_result(&c);
    assert!(!is_error, "{text}");
    assert!(
        text.contains(r"sleep 30 # \u{1b}[2J\u{202e}gnp.exe"),
        "{text:?}"
    );
    assert!(!text.contains(['\u{1b}', '\u{202e}']), "{text:?}");
}
