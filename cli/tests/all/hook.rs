//! `contenox hook add | show | list | update | remove` through the real binary, against a real
//! FastAPI service: round trips, replace-all `--header` / `--inject`, secrets never printed,
//! every bad input refused with exit code 2 and the registry unchanged, concurrent writers.

use std::os::unix::fs::PermissionsExt;

use crate::common::{both, contenox, dump, free_port, Service};

const H1: &str = "SECRET-HEADER-1f2e";
const H2: &str = "SECRET-HEADER-2a9c";
const I1: &str = "SECRET-INJECT-77b1";
const I2: &str = "SECRET-INJECT-33d0";

fn no_secrets(text: &str) {
    for s in [H1, H2, I1, I2] {
        assert!(!text.contains(s), "a secret value was printed:\n{text}");
    }
}

#[test]
fn add_show_list_update_remove_round_trip() {
    let mut service = Service::start("quickstart", &[]);
    let dir = tempfile::tempdir().unwrap();
    // The folder does not exist yet: it is created (0700), the file 0600.
    let db = dir.path().join("nested/.contenox/local.db");
    let mut printed = String::new();

    let out = contenox(&db)
        .args(["hook", "add", "myapp", "--url", &service.url])
        .args(["--header", &format!("Authorization: Bearer {H1}")])
        .args(["--header", "X-Team:  core "])
        .args(["--inject", &format!("tenant={I1}")])
        .args(["--timeout", "15000"])
        .output()
        .unwrap();
    printed += &both(&out);
    assert!(out.status.success(), "{}", both(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "Registered hook \"myapp\" — 1 tool(s) discovered."
    );
    let mode = std::fs::metadata(&db).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let dir_mode = std::fs::metadata(db.parent().unwrap())
        .unwrap()
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(dir_mode, 0o700);

    let out = contenox(&db)
        .args(["hook", "show", "myapp"])
        .output()
        .unwrap();
    printed += &both(&out);
    assert!(out.status.success(), "{}", both(&out));
    let show = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        show.contains(&format!("URL:        {}", service.url)),
        "{show}"
    );
    assert!(show.contains("Timeout:    15000ms"), "{show}");
    assert!(show.contains("Registered: 20"), "{show}");
    assert!(
        show.contains("Headers:    Authorization, X-Team (values hidden)"),
        "{show}"
    );
    assert!(
        show.contains("Inject:     tenant (values hidden)"),
        "{show}"
    );
    assert!(show.contains("  summarize_text  Summarize"), "{show}");

    let out = contenox(&db).args(["hook", "list"]).output().unwrap();
    printed += &both(&out);
    let list = String::from_utf8_lossy(&out.stdout).to_string();
    let lines: Vec<&str> = list.lines().collect();
    assert_eq!(lines.len(), 2, "{list}");
    let cols: Vec<&str> = lines[0].split_whitespace().collect();
    assert_eq!(cols, ["NAME", "URL", "TIMEOUT", "PROTOCOL"]);
    let cols: Vec<&str> = lines[1].split_whitespace().collect();
    assert_eq!(cols, ["myapp", service.url.as_str(), "15000ms", "openapi"]);

    // --header replaces the whole header set; the inject map and the rest stay.
    let out = contenox(&db)
        .args([
            "hook",
            "update",
            "myapp",
            "--header",
            &format!("X-New: {H2}"),
        ])
        .output()
        .unwrap();
    printed += &both(&out);
    assert!(out.status.success(), "{}", both(&out));
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("Updated hook \"myapp\""));
    let show = String::from_utf8_lossy(
        &contenox(&db)
            .args(["hook", "show", "myapp"])
            .output()
            .unwrap()
            .stdout,
    )
    .to_string();
    printed += &show;
    assert!(show.contains("Headers:    X-New (values hidden)"), "{show}");
    assert!(
        show.contains("Inject:     tenant (values hidden)"),
        "{show}"
    );
    assert!(show.contains("Timeout:    15000ms"), "{show}");

    // --inject replaces the whole inject map; the headers stay.
    let out = contenox(&db)
        .args([
            "hook",
            "update",
            "myapp",
            "--inject",
            &format!("region={I2}"),
        ])
        .args(["--inject", "plan=pro", "--timeout", "5000"])
        .output()
        .unwrap();
    printed += &both(&out);
    assert!(out.status.success(), "{}", both(&out));
    let show = String::from_utf8_lossy(
        &contenox(&db)
            .args(["hook", "show", "myapp"])
            .output()
            .unwrap()
            .stdout,
    )
    .to_string();
    printed += &show;
    assert!(
        show.contains("Inject:     plan, region (values hidden)"),
        "{show}"
    );
    assert!(show.contains("Headers:    X-New (values hidden)"), "{show}");
    assert!(show.contains("Timeout:    5000ms"), "{show}");
    // The stored values are the new ones (read from the file, not printed).
    let (rows, _) = dump(&db);
    assert!(rows.contains(H2) && rows.contains(I2) && !rows.contains(H1) && !rows.contains(I1));

    // Unreachable now: show says why instead of listing tools.
    service.stop();
    let out = contenox(&db)
        .args(["hook", "show", "myapp"])
        .output()
        .unwrap();
    printed += &both(&out);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("Tools:      not reachable:"));

    let out = contenox(&db)
        .args(["hook", "remove", "myapp"])
        .output()
        .unwrap();
    printed += &both(&out);
    assert!(out.status.success(), "{}", both(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "Removed hook \"myapp\"."
    );
    let out = contenox(&db).args(["hook", "list"]).output().unwrap();
    printed += &both(&out);
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("No hooks registered."));
    no_secrets(&printed);
}

#[test]
fn an_unreachable_hook_is_registered_and_a_taken_name_refused() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("local.db");
    let url = format!("http://127.0.0.1:{}", free_port());
    let out = contenox(&db)
        .args([
            "hook",
            "add",
            "later",
            "--url",
            &url,
            "--header",
            &format!("K: {H1}"),
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", both(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.starts_with("Registered hook \"later\" — not reachable now ("),
        "{stdout}"
    );
    assert!(
        stdout
            .trim_end()
            .ends_with("it will be probed again when used."),
        "{stdout}"
    );
    no_secrets(&both(&out));

    let before = dump(&db);
    let out = contenox(&db)
        .args(["hook", "add", "later", "--url", &url])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("contenox hook update later"));
    assert_eq!(dump(&db), before);
}

#[test]
fn every_bad_input_exits_2_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("local.db");
    let url = format!("http://127.0.0.1:{}", free_port());
    let out = contenox(&db)
        .args([
            "hook",
            "add",
            "app",
            "--url",
            &url,
            "--header",
            &format!("A: {H1}"),
        ])
        .args(["--inject", &format!("t={I1}")])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", both(&out));
    let before = dump(&db);
    let bad: Vec<Vec<String>> = vec![
        // Header: no separator, empty name, the same name twice.
        vec![
            "add",
            "b",
            "--url",
            &url,
            "--header",
            &format!("NoColon {H2}"),
        ],
        vec!["add", "b", "--url", &url, "--header", &format!(": {H2}")],
        vec![
            "add", "b", "--url", &url, "--header", "X: 1", "--header", "x: 2",
        ],
        // Inject: no separator, empty key.
        vec!["add", "b", "--url", &url, "--inject", I2],
        vec!["add", "b", "--url", &url, "--inject", &format!(" ={I2}")],
        // Timeouts that are not a positive number.
        vec!["add", "b", "--url", &url, "--timeout", "0"],
        vec!["add", "b", "--url", &url, "--timeout", "-5"],
        vec!["add", "b", "--url", &url, "--timeout", "soon"],
        vec!["add", "b", "--url", &url, "--timeout", "1.5"],
        // URLs.
        vec!["add", "b", "--url", "not a url"],
        vec!["add", "b", "--url", "ftp://127.0.0.1/x"],
        vec!["add", "b"],
        // Names.
        vec!["add", "bad name", "--url", &url],
        vec!["add", "x/y", "--url", &url],
        vec!["add", "app", "--url", &url],
        // Protocol, spec.
        vec!["add", "b", "--url", &url, "--protocol", "gopher"],
        vec!["add", "b", "--url", &url, "--spec", "/no/such/openapi.json"],
        // Update: unknown name, bad values, nothing to change.
        vec!["update", "nope", "--timeout", "100"],
        vec!["update", "app", "--timeout", "0"],
        vec!["update", "app", "--url", "::"],
        vec!["update", "app", "--header", &format!("broken{H2}")],
        vec!["update", "app", "--inject", "=x"],
        vec!["update", "app"],
        // Show / remove of an unknown name; an unknown flag.
        vec!["show", "nope"],
        vec!["remove", "nope"],
        vec!["add", "b", "--url", &url, "--frobnicate"],
    ]
    .into_iter()
    .map(|v| v.into_iter().map(String::from).collect())
    .collect();
    for args in &bad {
        let out = contenox(&db).arg("hook").args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", both(&out));
        assert!(!out.stderr.is_empty(), "{args:?}: no message");
        no_secrets(&both(&out));
        assert_eq!(dump(&db), before, "{args:?} changed the registry");
    }
}

#[test]
fn a_registry_of_a_newer_version_or_another_program_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("local.db");
    let out = contenox(&db)
        .args(["hook", "add", "a", "--url", "http://127.0.0.1:9"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", both(&out));
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.pragma_update(None, "user_version", 99).unwrap();
    drop(conn);
    let before = dump(&db);
    for args in [
        &["hook", "list"][..],
        &["hook", "add", "b", "--url", "http://127.0.0.1:9"],
    ] {
        let out = contenox(&db).args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{}", both(&out));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("newer contenox") && err.contains("99"),
            "{err}"
        );
        assert_eq!(dump(&db), before);
    }

    let other = dir.path().join("other.db");
    let conn = rusqlite::Connection::open(&other).unwrap();
    conn.execute_batch("CREATE TABLE notes (body TEXT)")
        .unwrap();
    drop(conn);
    let before = dump_bytes(&other);
    let out = contenox(&other)
        .args(["hook", "add", "b", "--url", "http://127.0.0.1:9"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", both(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("another program"));
    assert_eq!(dump_bytes(&other), before);
}

fn dump_bytes(path: &std::path::Path) -> Vec<u8> {
    std::fs::read(path).unwrap()
}

#[test]
fn concurrent_adds_both_land() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("local.db");
    let url = format!("http://127.0.0.1:{}", free_port());
    // Several rounds, each with two processes started together on a fresh registry (the
    // schema is created by whichever comes first).
    for round in 0..3 {
        let db = dir.path().join(format!("r{round}.db"));
        let spawn = |name: &str| {
            std::process::Command::new(crate::common::BIN)
                .args(["--db"])
                .arg(&db)
                .args(["hook", "add", name, "--url", &url])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        };
        let (a, b) = (spawn("first"), spawn("second"));
        for child in [a, b] {
            let out = child.wait_with_output().unwrap();
            assert!(out.status.success(), "{}", both(&out));
        }
        let out = contenox(&db).args(["hook", "list"]).output().unwrap();
        let list = String::from_utf8_lossy(&out.stdout);
        assert!(list.contains("first") && list.contains("second"), "{list}");
    }
    drop(db);
}

/// Everything about a file and its folder that a command could change: the bytes, the mode, the
/// change time (a chmod moves it too) and the names beside it (a journal file).
fn untouched_state(path: &std::path::Path) -> (Vec<u8>, u32, (i64, i64), Vec<String>) {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::symlink_metadata(path).unwrap();
    let target = std::fs::metadata(path).unwrap();
    let mut names: Vec<String> = std::fs::read_dir(path.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    (
        std::fs::read(path).unwrap(),
        target.mode() ^ meta.mode(),
        (target.ctime(), target.ctime_nsec()),
        names,
    )
}

/// Every hook command (and `run --hooks`) on a file that is not a registry: refused with code 2
/// before anything touches it (no chmod, no write, no journal beside it), whatever it holds.
#[test]
fn a_file_that_is_not_a_registry_is_refused_and_left_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let files = dir.path().join("files");
    std::fs::create_dir(&files).unwrap();
    let text = files.join("notes.txt");
    std::fs::write(&text, "my notes, not a database\n").unwrap();
    let junk = files.join("junk.db");
    std::fs::write(&junk, [b'x'; 300]).unwrap();
    let header_only = files.join("header.db");
    let mut bytes = b"SQLite format 3\0".to_vec();
    bytes.resize(100, 0xff);
    std::fs::write(&header_only, bytes).unwrap();
    let other = files.join("other.db");
    let conn = rusqlite::Connection::open(&other).unwrap();
    conn.execute_batch("CREATE TABLE notes (body TEXT)")
        .unwrap();
    drop(conn);
    // An SQLite file with no table and no application id: a blank database of someone else.
    let blank = files.join("blank.db");
    let conn = rusqlite::Connection::open(&blank).unwrap();
    conn.execute_batch("CREATE TABLE t (x); DROP TABLE t;")
        .unwrap();
    drop(conn);
    let script = dir.path().join("script.json");
    std::fs::write(&script, r#"[{"text": "hi"}]"#).unwrap();
    for file in [&text, &junk, &header_only, &other, &blank] {
        std::fs::set_permissions(file, std::fs::Permissions::from_mode(0o644)).unwrap();
        let before = untouched_state(file);
        for args in [
            &["hook", "list"][..],
            &["hook", "show", "a"],
            &["hook", "add", "a", "--url", "http://127.0.0.1:9"],
            &["hook", "update", "a", "--timeout", "5"],
            &["hook", "remove", "a"],
            &[
                "run",
                "--script",
                script.to_str().unwrap(),
                "--builtins",
                "none",
                "--hooks",
                "a",
                "hi",
            ],
        ] {
            let out = contenox(file).args(args).output().unwrap();
            assert_eq!(
                out.status.code(),
                Some(2),
                "{} {args:?}: {}",
                file.display(),
                both(&out)
            );
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(
                err.contains("not a contenox registry") || err.contains("another program"),
                "{} {args:?}: {err}",
                file.display()
            );
            assert_eq!(
                untouched_state(file),
                before,
                "{} {args:?} touched the file",
                file.display()
            );
        }
    }
}

/// `--db` that is a symbolic link is refused, naming where it points; neither the link nor its
/// target (here a real registry with a wide mode) is changed.
#[test]
fn a_symlinked_db_is_refused_not_followed() {
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().join("real.db");
    let out = contenox(&real)
        .args(["hook", "add", "a", "--url", "http://127.0.0.1:9"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", both(&out));
    std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o644)).unwrap();
    let text = dir.path().join("notes.txt");
    std::fs::write(&text, "notes\n").unwrap();
    std::fs::set_permissions(&text, std::fs::Permissions::from_mode(0o644)).unwrap();
    for target in [&real, &text, &dir.path().join("missing.db")] {
        let link = dir.path().join("link.db");
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(target, &link).unwrap();
        let before = target.exists().then(|| untouched_state(target));
        for args in [
            &["hook", "list"][..],
            &["hook", "show", "a"],
            &["hook", "add", "b", "--url", "http://127.0.0.1:9"],
            &["hook", "remove", "a"],
        ] {
            let out = contenox(&link).args(args).output().unwrap();
            assert_eq!(out.status.code(), Some(2), "{args:?}: {}", both(&out));
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(
                err.contains("symbolic link") && err.contains(&target.display().to_string()),
                "{args:?}: {err}"
            );
            assert_eq!(target.exists().then(|| untouched_state(target)), before);
            assert!(std::fs::symlink_metadata(&link).unwrap().is_symlink());
        }
    }
}

/// A closed stdout (`contenox hook show NAME | head -1` once head has gone) ends the command
/// quietly as SIGPIPE does for other tools: killed by the signal (a shell shows 141), no panic,
/// nothing on stderr.
#[test]
fn a_closed_stdout_ends_the_command_quietly() {
    use std::os::unix::process::ExitStatusExt;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("local.db");
    let out = contenox(&db)
        .args(["hook", "add", "a", "--url", "http://127.0.0.1:9"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", both(&out));
    let script = dir.path().join("script.json");
    std::fs::write(&script, r#"[{"text": "a long answer\nof two lines"}]"#).unwrap();
    for args in [
        &["hook", "show", "a"][..],
        &["hook", "list"],
        &[
            "run",
            "--script",
            script.to_str().unwrap(),
            "--builtins",
            "none",
            "hi",
        ],
    ] {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let out = std::process::Command::new(crate::common::BIN)
            .arg("--db")
            .arg(&db)
            .args(args)
            .stdin(std::process::Stdio::null())
            .stdout(writer)
            .stderr(std::process::Stdio::piped())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            out.status.signal(),
            Some(13),
            "{args:?}: {:?} {err}",
            out.status
        );
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert_eq!(err, "", "{args:?}");
    }
}
