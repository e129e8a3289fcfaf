//! The file tools cannot be steered out of the root: every hostile path a model could send
//! (`..` after a missing directory, symlinked parents and leaves, dangling symlinks, a symlink
//! or a directory swapped while the tool runs, absolute paths, NUL bytes, very long paths and
//! names, FIFOs, devices, sockets) is tried against every file tool (read, write, edit,
//! multi_edit, notebook_edit, glob, grep, list) through the tools themselves.
//!
//! Every outside file holds a sentinel string (one outside file is also named with it): no
//! result, error or metadata may ever contain it, and the outside tree must be byte for byte
//! the same after every case. Each hostile case must be an error result that names the path the
//! model gave, and come back within a bound (no hang).

use std::collections::BTreeMap;
use std::os::unix::fs::{symlink, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use contenox::builtin::builtin;
use contenox::ToolContext;
use serde_json::{json, Value};

/// In every outside file, and in one outside file's name. Never in a result.
const SENTINEL: &str = "SENTINEL-7f3a";
/// A regex that matches the sentinel without containing it (grep echoes its pattern).
const SENTINEL_RE: &str = "SENTI[N]EL-7f3a";
/// How long one tool call may take before it counts as a hang.
const BOUND: Duration = Duration::from_secs(20);

const FILE_TOOLS: [&str; 8] = [
    "read",
    "write",
    "edit",
    "multi_edit",
    "notebook_edit",
    "glob",
    "grep",
    "list",
];

/// A notebook with one cell `c1` holding `text`.
fn notebook(text: &str) -> String {
    json!({
        "cells": [{"cell_type": "markdown", "id": "c1", "metadata": {}, "source": [text]}],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5
    })
    .to_string()
}

/// A root and an outside directory side by side, and the hostile entries in the root.
struct World {
    _root_dir: tempfile::TempDir,
    _outside_dir: tempfile::TempDir,
    root: PathBuf,
    outside: PathBuf,
    /// The outside directory as a relative path from the root (`../.tmpXYZ`).
    outside_rel: String,
    /// Whether a device node could be made in the root (needs CAP_MKNOD).
    device: bool,
}

fn world() -> World {
    let root_dir = tempfile::tempdir().unwrap();
    let outside_dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(root_dir.path()).unwrap();
    let outside = std::fs::canonicalize(outside_dir.path()).unwrap();
    assert_eq!(root.parent(), outside.parent(), "side by side");
    let outside_rel = format!("../{}", outside.file_name().unwrap().to_string_lossy());
    let w = |p: &Path, s: &str| {
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, s).unwrap();
    };
    // Outside: the sentinel everywhere.
    w(&outside.join("secret.txt"), &format!("{SENTINEL} secret\n"));
    w(&outside.join("nb.ipynb"), &notebook(SENTINEL));
    w(
        &outside.join("sub/deeper.txt"),
        &format!("{SENTINEL} deeper\n"),
    );
    w(&outside.join(format!("{SENTINEL}-name.txt")), "named\n");
    w(&outside.join("hard-target.txt"), "HARDLINKED\n");
    // Inside: the same names without the sentinel.
    w(&root.join("in/secret.txt"), "inside\n");
    w(&root.join("in/nb.ipynb"), &notebook("inside"));
    w(&root.join("ok.txt"), "ok\n");
    symlink(&outside, root.join("link")).unwrap();
    symlink(&outside_rel, root.join("rel_link")).unwrap();
    symlink(outside.join("secret.txt"), root.join("leaf.txt")).unwrap();
    symlink(
        format!("{outside_rel}/secret.txt"),
        root.join("rel_leaf.txt"),
    )
    .unwrap();
    symlink(outside.join("nb.ipynb"), root.join("leaf.ipynb")).unwrap();
    symlink(outside.join("gone/x"), root.join("dangling_out")).unwrap();
    symlink("missing.txt", root.join("dangling_in")).unwrap();
    symlink("/dev/zero", root.join("devzero")).unwrap();
    let up = "../".repeat(root.components().count() + 2);
    symlink(format!("{up}dev/zero"), root.join("devzero_rel")).unwrap();
    symlink("in", root.join("alias")).unwrap();
    symlink("in/secret.txt", root.join("good.txt")).unwrap();
    nix::unistd::mkfifo(
        &root.join("fifo"),
        nix::sys::stat::Mode::from_bits_truncate(0o644),
    )
    .unwrap();
    // A device node inside the root (/dev/null's numbers: reading it ends at once, so even a
    // tool that reads it cannot run away). Only root can make one.
    let device = nix::sys::stat::mknod(
        &root.join("null-node"),
        nix::sys::stat::SFlag::S_IFCHR,
        nix::sys::stat::Mode::from_bits_truncate(0o666),
        nix::sys::stat::makedev(1, 3),
    )
    .is_ok();
    std::fs::hard_link(outside.join("hard-target.txt"), root.join("hard.txt")).unwrap();
    World {
        _root_dir: root_dir,
        _outside_dir: outside_dir,
        root,
        outside,
        outside_rel,
        device,
    }
}

/// Every entry under `dir`: kind, mode and content (files) or target (symlinks).
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, String> {
    fn walk(base: &Path, dir: &Path, out: &mut BTreeMap<PathBuf, String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let entry = entry.unwrap();
            let p = entry.path();
            let m = std::fs::symlink_metadata(&p).unwrap();
            let rel = p.strip_prefix(base).unwrap().to_path_buf();
            let mode = m.permissions().mode();
            let what = if m.file_type().is_symlink() {
                format!(
                    "link {mode:o} -> {}",
                    std::fs::read_link(&p).unwrap().display()
                )
            } else if m.is_dir() {
                walk(base, &p, out);
                format!("dir {mode:o}")
            } else {
                let bytes = std::fs::read(&p).unwrap();
                format!("file {mode:o} {}", String::from_utf8_lossy(&bytes))
            };
            out.insert(rel, what);
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

/// A tool's answer as the model would see it: the content and the metadata, and the error flag.
#[derive(Debug)]
struct Answer {
    text: String,
    is_error: bool,
}

async fn call(root: &Path, tool: &str, args: Value) -> Answer {
    let t = builtin(tool).unwrap();
    let ctx = ToolContext::detached(root, tool);
    let r = tokio::time::timeout(BOUND, t.call(args.clone(), ctx))
        .await
        .unwrap_or_else(|_| panic!("{tool} {args} did not come back within {BOUND:?}"));
    match r {
        Ok(out) => Answer {
            text: format!(
                "{}\n{}",
                out.content_text(),
                out.metadata.map(|m| m.to_string()).unwrap_or_default()
            ),
            is_error: out.is_error,
        },
        Err(e) => Answer {
            text: e.message,
            is_error: true,
        },
    }
}

/// The arguments for `tool` aimed at `path` (`{f}` in it stands for the tool's file name:
/// `nb.ipynb` for notebook_edit, `secret.txt` for the others).
fn args_for(tool: &str, path: &str) -> Vec<Value> {
    let f = if tool == "notebook_edit" {
        "nb.ipynb"
    } else {
        "secret.txt"
    };
    let p = path.replace("{f}", f);
    match tool {
        "read" | "list" => vec![json!({"path": p})],
        "write" => vec![json!({"path": p, "content": "PLANTED\n"})],
        "edit" => vec![json!({"path": p, "old_string": SENTINEL, "new_string": "EDITED"})],
        "multi_edit" => {
            vec![json!({"path": p, "edits": [{"old_string": SENTINEL, "new_string": "EDITED"}]})]
        }
        "notebook_edit" => vec![json!({"path": p, "cell_id": "c1", "new_source": "EDITED"})],
        "glob" => vec![
            json!({"pattern": "**/*", "path": p}),
            json!({"pattern": format!("{}/**/*", p.trim_end_matches('/'))}),
        ],
        "grep" => vec![json!({"pattern": SENTINEL_RE, "path": p, "output_mode": "content"})],
        _ => unreachable!(),
    }
}

/// How an error result may name a path: as given, or cut and escaped the way results show it.
fn names(text: &str, path: &str) -> bool {
    let head: String = path
        .chars()
        .take(100)
        .flat_map(|c| {
            if c.is_control() {
                c.escape_default().collect::<Vec<_>>()
            } else {
                vec![c]
            }
        })
        .collect();
    text.contains(&head)
}

/// Run every file tool on every hostile path: each an error naming the path, no sentinel, the
/// outside tree untouched.
async fn refuse_all(w: &World, paths: &[String]) {
    let before = snapshot(&w.outside);
    for tool in FILE_TOOLS {
        for path in paths {
            for args in args_for(tool, path) {
                let a = call(&w.root, tool, args.clone()).await;
                assert!(
                    !a.text.contains(SENTINEL),
                    "{tool} {args}: leaked: {}",
                    a.text
                );
                assert!(a.is_error, "{tool} {args}: not an error: {}", a.text);
                // What the model gave: the path, or glob's pattern when it has no path.
                let given = args
                    .get("path")
                    .or_else(|| args.get("pattern"))
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let named =
                    names(&a.text, given) || (given.contains('\0') && a.text.contains("NUL"));
                assert!(
                    named,
                    "{tool} {args}: the error does not name the path: {}",
                    a.text
                );
                assert_eq!(
                    snapshot(&w.outside),
                    before,
                    "{tool} {args} changed the outside"
                );
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn dot_dot_after_a_missing_directory() {
    let w = world();
    let paths = [
        "nope/../link/{f}",
        "nope/../link",
        "nope/../nope/../link/{f}",
        "nope/../../x/{f}",
        "in/nope/../../link/{f}",
        "nope/../rel_link/{f}",
        "nope/../leaf.txt",
    ]
    .map(String::from);
    refuse_all(&w, &paths).await;
    // Nothing was created on the way either.
    assert!(!w.root.join("nope").exists());
}

#[tokio::test(flavor = "multi_thread")]
async fn symlinked_parents_and_leaves() {
    let w = world();
    let paths = [
        "link/{f}",
        "link",
        "link/",
        "link/sub",
        "link/new/{f}",
        "rel_link/{f}",
        "rel_link",
        "in/../link/{f}",
        "alias/../link/{f}",
        "leaf.txt",
        "rel_leaf.txt",
        "leaf.ipynb",
    ]
    .map(String::from);
    refuse_all(&w, &paths).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn dangling_symlinks() {
    let w = world();
    let paths = ["dangling_out", "dangling_out/{f}", "dangling_in"].map(String::from);
    refuse_all(&w, &paths).await;
    assert!(!w.root.join("missing.txt").exists());
}

#[tokio::test(flavor = "multi_thread")]
async fn dot_dot_and_absolute_paths_out_of_the_root() {
    let w = world();
    let root = w.root.display().to_string();
    let outside = w.outside.display().to_string();
    let paths = vec![
        format!(
            "../{}/{{f}}",
            w.outside.file_name().unwrap().to_string_lossy()
        ),
        format!("{}/{{f}}", w.outside_rel),
        "in/../../x/{f}".to_string(),
        "..".to_string(),
        "/".to_string(),
        "/etc/passwd".to_string(),
        format!("{outside}/{{f}}"),
        outside.clone(),
        format!(
            "{root}/../{}/{{f}}",
            w.outside_rel.trim_start_matches("../")
        ),
        format!("{root}/in/../../x"),
        format!("link/{}etc/passwd", "../".repeat(40)),
    ];
    refuse_all(&w, &paths).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn glob_patterns_out_of_the_root() {
    let w = world();
    let before = snapshot(&w.outside);
    for pattern in [
        "../*/secret.txt".to_string(),
        format!("{}/**/*", w.outside_rel),
        format!("{}/*", w.outside.display()),
        "/etc/*".to_string(),
        "link/*".to_string(),
        "link/**/*".to_string(),
        "nope/../link/*".to_string(),
        "rel_link/**".to_string(),
    ] {
        let a = call(&w.root, "glob", json!({"pattern": pattern})).await;
        assert!(!a.text.contains(SENTINEL), "{pattern}: {}", a.text);
        assert!(a.is_error, "{pattern}: {}", a.text);
        assert!(names(&a.text, &pattern), "{pattern}: {}", a.text);
    }
    // Walks from inside never follow a symlink out.
    for (tool, args) in [
        ("glob", json!({"pattern": "**/*"})),
        ("glob", json!({"pattern": "**/.*"})),
        (
            "grep",
            json!({"pattern": SENTINEL_RE, "output_mode": "content"}),
        ),
        (
            "grep",
            json!({"pattern": "deepe[r]|name[d]", "output_mode": "content"}),
        ),
        ("list", json!({})),
    ] {
        let a = call(&w.root, tool, args.clone()).await;
        assert!(!a.text.contains(SENTINEL), "{tool} {args}: {}", a.text);
        assert!(!a.text.contains("deeper"), "{tool} {args}: {}", a.text);
    }
    assert_eq!(snapshot(&w.outside), before);
}

#[tokio::test(flavor = "multi_thread")]
async fn nul_bytes_unicode_and_long_paths() {
    let w = world();
    let long_name = "x".repeat(300);
    let deep = "d/".repeat(2100);
    let paths = vec![
        "in/secret.txt\0../../x".to_string(),
        "\0".to_string(),
        "link\0/{f}".to_string(),
        format!("{long_name}/{{f}}"),
        format!("in/{long_name}"),
        format!("{deep}{{f}}"),
        format!("nope/{deep}../../{{f}}"),
    ];
    refuse_all(&w, &paths).await;
    // Unicode names are names: full-width dots are not `..`, and they stay inside.
    let fancy = "\u{FF0E}\u{FF0E}/\u{FF0E}\u{FF0E}/ünï-😀\u{202e}.txt";
    let a = call(
        &w.root,
        "write",
        json!({"path": fancy, "content": "fancy\n"}),
    )
    .await;
    assert!(!a.is_error, "{}", a.text);
    assert_eq!(
        std::fs::read_to_string(w.root.join(fancy)).unwrap(),
        "fancy\n"
    );
    let a = call(&w.root, "read", json!({"path": fancy})).await;
    assert!(a.text.contains("fancy"), "{}", a.text);
    let a = call(&w.root, "glob", json!({"pattern": "**/*😀*"})).await;
    assert!(a.text.contains("ünï-😀"), "{}", a.text);
    // A deep path that fits PATH_MAX works inside the root.
    let deep_ok = format!("{}f.txt", "d/".repeat(200));
    let a = call(
        &w.root,
        "write",
        json!({"path": deep_ok, "content": "deep\n"}),
    )
    .await;
    assert!(!a.is_error, "{}", a.text);
    let a = call(&w.root, "read", json!({"path": deep_ok})).await;
    assert!(a.text.contains("deep"), "{}", a.text);
}

#[tokio::test(flavor = "multi_thread")]
async fn fifos_devices_and_sockets_never_block() {
    let w = world();
    let _listener = std::os::unix::net::UnixListener::bind(w.root.join("sock")).unwrap();
    let mut paths = vec![
        "fifo".to_string(),
        "devzero".to_string(),
        "devzero_rel".to_string(),
        "sock".to_string(),
    ];
    if w.device {
        paths.push("null-node".to_string());
    }
    let before = snapshot(&w.outside);
    for tool in [
        "read",
        "write",
        "edit",
        "multi_edit",
        "notebook_edit",
        "grep",
    ] {
        for path in &paths {
            for args in args_for(tool, path) {
                let a = call_unblocking(&w, tool, args.clone()).await;
                assert!(a.is_error, "{tool} {args}: {}", a.text);
                assert!(names(&a.text, path), "{tool} {args}: {}", a.text);
            }
        }
    }
    // They are still what they were: nothing replaced them.
    use std::os::unix::fs::FileTypeExt;
    let t = std::fs::symlink_metadata(w.root.join("fifo"))
        .unwrap()
        .file_type();
    assert!(t.is_fifo());
    if w.device {
        let t = std::fs::symlink_metadata(w.root.join("null-node"))
            .unwrap()
            .file_type();
        assert!(t.is_char_device());
    }
    assert_eq!(snapshot(&w.outside), before);
    // Walks list them but never open them.
    let a = call(&w.root, "list", json!({})).await;
    assert!(a.text.contains("fifo"), "{}", a.text);
    let a = call(&w.root, "grep", json!({"pattern": "x"})).await;
    assert!(!a.text.contains("fifo"), "{}", a.text);
}

/// [`call`], releasing a reader stuck on the FIFO when the tool blocks (so that a tool that
/// does block fails the test instead of holding the test process forever).
async fn call_unblocking(w: &World, tool: &str, args: Value) -> Answer {
    let fifo = w.root.join("fifo");
    let done = Arc::new(AtomicBool::new(false));
    let watchdog = {
        let done = done.clone();
        std::thread::spawn(move || {
            for _ in 0..100 {
                if done.load(Ordering::SeqCst) {
                    return false;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            // Still running after 5 s: open and close the write end, which ends its read.
            use std::os::unix::fs::OpenOptionsExt;
            let _ = std::fs::OpenOptions::new()
                .write(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(&fifo);
            true
        })
    };
    let a = call(&w.root, tool, args.clone()).await;
    done.store(true, Ordering::SeqCst);
    let blocked = watchdog.join().unwrap();
    assert!(!blocked, "{tool} {args} blocked on the FIFO");
    a
}

#[tokio::test(flavor = "multi_thread")]
async fn hardlinks_are_files_of_the_root_and_writes_never_reach_their_other_names() {
    let w = world();
    let target = w.outside.join("hard-target.txt");
    // An existing hardlink in the root is a file of the root: it reads.
    let a = call(&w.root, "read", json!({"path": "hard.txt"})).await;
    assert!(a.text.contains("HARDLINKED"), "{}", a.text);
    // Writes replace the root's name; the file's other name outside keeps its content.
    let a = call(
        &w.root,
        "edit",
        json!({"path": "hard.txt", "old_string": "HARDLINKED", "new_string": "EDITED"}),
    )
    .await;
    assert!(!a.is_error, "{}", a.text);
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "HARDLINKED\n");
    assert_eq!(
        std::fs::read_to_string(w.root.join("hard.txt")).unwrap(),
        "EDITED\n"
    );
    assert_eq!(std::fs::metadata(&target).unwrap().nlink(), 1);
    std::fs::remove_file(w.root.join("hard.txt")).unwrap();
    std::fs::hard_link(&target, w.root.join("hard.txt")).unwrap();
    for (tool, args) in [
        ("write", json!({"path": "hard.txt", "content": "NEW\n"})),
        (
            "multi_edit",
            json!({"path": "hard.txt", "edits": [{"old_string": "NEW", "new_string": "X"}]}),
        ),
    ] {
        let a = call(&w.root, tool, args.clone()).await;
        assert!(!a.is_error, "{tool} {args}: {}", a.text);
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "HARDLINKED\n");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn inside_paths_keep_working() {
    let w = world();
    let root = w.root.display().to_string();
    for (tool, args, want) in [
        ("read", json!({"path": "in/secret.txt"}), "inside"),
        (
            "read",
            json!({"path": format!("{root}/in/secret.txt")}),
            "inside",
        ),
        ("read", json!({"path": "alias/secret.txt"}), "inside"),
        ("read", json!({"path": "in/../alias/secret.txt"}), "inside"),
        ("read", json!({"path": "good.txt"}), "inside"),
        ("read", json!({"path": "./in/./secret.txt"}), "inside"),
        (
            "grep",
            json!({"pattern": "ins", "path": "alias"}),
            "in/secret.txt",
        ),
        (
            "grep",
            json!({"pattern": "ins", "path": "good.txt"}),
            "in/secret.txt",
        ),
        (
            "glob",
            json!({"pattern": "*.txt", "path": "alias"}),
            "in/secret.txt",
        ),
        ("glob", json!({"pattern": "alias/*.txt"}), "in/secret.txt"),
        ("list", json!({"path": "alias"}), "secret.txt"),
        ("list", json!({"path": root.clone()}), "ok.txt"),
        (
            "write",
            json!({"path": "alias/new.txt", "content": "n\n"}),
            "Created in/new.txt",
        ),
        (
            "edit",
            json!({"path": "good.txt", "old_string": "inside", "new_string": "changed"}),
            "Edited",
        ),
        (
            "notebook_edit",
            json!({"path": "alias/nb.ipynb", "cell_id": "c1", "new_source": "x"}),
            "Replaced cell c1",
        ),
    ] {
        let a = call(&w.root, tool, args.clone()).await;
        assert!(!a.is_error, "{tool} {args}: {}", a.text);
        assert!(a.text.contains(want), "{tool} {args}: {}", a.text);
    }
    // The edit went through the symlink to its target; the link stays a link.
    assert_eq!(
        std::fs::read_to_string(w.root.join("in/secret.txt")).unwrap(),
        "changed\n"
    );
    assert!(std::fs::symlink_metadata(w.root.join("good.txt"))
        .unwrap()
        .file_type()
        .is_symlink());
}

/// Atomically point the symlink `link` at `target` (a new link renamed over it).
fn repoint(dir: &Path, link: &str, target: &Path, n: u64) {
    let tmp = dir.join(format!(".flip-{n}"));
    let _ = std::fs::remove_file(&tmp);
    symlink(target, &tmp).unwrap();
    std::fs::rename(&tmp, dir.join(link)).unwrap();
}

/// Runs `flip(n)` in a loop on a thread until dropped (at most a million times).
struct Flipper {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<u64>>,
}

impl Flipper {
    fn start(flip: impl Fn(u64) + Send + 'static) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut n = 0;
            while !s.load(Ordering::SeqCst) && n < 1_000_000 {
                flip(n);
                n += 1;
                std::thread::yield_now();
            }
            n
        });
        Flipper {
            stop,
            thread: Some(thread),
        }
    }

    fn stop(mut self) -> u64 {
        self.stop.store(true, Ordering::SeqCst);
        self.thread.take().unwrap().join().unwrap()
    }
}

impl Drop for Flipper {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A symlink flipped between an inside and an outside directory while every tool runs through
/// it many times: each call sees the inside directory or fails; none reaches outside.
#[tokio::test(flavor = "multi_thread")]
async fn a_symlink_swapped_while_the_tools_run() {
    let w = world();
    let inside = PathBuf::from("in");
    let outside = w.outside.clone();
    let root = w.root.clone();
    repoint(&root, "flip", &inside, 0);
    let before = snapshot(&w.outside);
    let flipper = Flipper::start(move |n| {
        let target = if n % 2 == 0 { &outside } else { &inside };
        repoint(&root, "flip", target, n);
    });
    const ROUNDS: usize = 60;
    let mut inside_seen = 0;
    for round in 0..ROUNDS {
        for tool in FILE_TOOLS {
            for path in ["flip/{f}", "flip", "nope/../flip/{f}"] {
                for args in args_for(tool, path) {
                    let a = call(&w.root, tool, args.clone()).await;
                    assert!(!a.text.contains(SENTINEL), "{tool} {args}: {}", a.text);
                    // A call that worked could only have worked inside.
                    if !a.is_error {
                        inside_seen += 1;
                    }
                }
            }
        }
        // A write through the link lands inside or nowhere.
        let planted = format!("flip/planted-{round}.txt");
        call(&w.root, "write", json!({"path": planted, "content": "P\n"})).await;
        assert_eq!(snapshot(&w.outside), before, "round {round}");
    }
    let flips = flipper.stop();
    assert!(flips > 10, "the link flipped only {flips} times");
    assert!(inside_seen > 0, "no call ever saw the inside directory");
    assert_eq!(snapshot(&w.outside), before);
}

/// A directory of the root exchanged with a symlink to outside while walks run over it: the
/// walk may be led into the outside directory by name, but nothing from there reaches a result.
#[tokio::test(flavor = "multi_thread")]
async fn a_directory_swapped_for_a_symlink_during_walks() {
    let w = world();
    for i in 0..50 {
        std::fs::create_dir_all(w.root.join(format!("swap/d{i}"))).unwrap();
        std::fs::write(w.root.join(format!("swap/d{i}/f.txt")), "inside\n").unwrap();
    }
    for i in 0..50 {
        std::fs::create_dir_all(w.outside.join(format!("d{i}"))).unwrap();
        std::fs::write(
            w.outside.join(format!("d{i}/{SENTINEL}-{i}.txt")),
            format!("{SENTINEL}\n"),
        )
        .unwrap();
    }
    symlink(&w.outside, w.root.join("swap-alt")).unwrap();
    let before = snapshot(&w.outside);
    let root = w.root.clone();
    let flipper = Flipper::start(move |_| {
        // Exchange the directory and the symlink in one step.
        nix::fcntl::renameat2(
            nix::fcntl::AT_FDCWD,
            &root.join("swap"),
            nix::fcntl::AT_FDCWD,
            &root.join("swap-alt"),
            nix::fcntl::RenameFlags::RENAME_EXCHANGE,
        )
        .unwrap();
    });
    for _ in 0..150 {
        for (tool, args) in [
            ("glob", json!({"pattern": "**/*.txt", "limit": 0})),
            (
                "grep",
                json!({"pattern": format!("inside|{SENTINEL_RE}"), "output_mode": "content", "head_limit": 0}),
            ),
            ("list", json!({})),
        ] {
            let a = call(&w.root, tool, args.clone()).await;
            assert!(!a.text.contains(SENTINEL), "{tool} {args}: {}", a.text);
        }
    }
    flipper.stop();
    assert_eq!(snapshot(&w.outside), before);
}

/// A name with control and invisible formatting characters: ESC (a terminal's screen clear),
/// a right-to-left override, a bidi isolate, a zero-width space, a tag character, DEL.
const HOSTILE_NAME: &str = "evil\u{1b}[2J\u{202e}txt.exe\u{2066}\u{200b}\u{e0041}\u{7f}";

fn hidden_chars(text: &str) -> Vec<char> {
    text.chars()
        .filter(|c| {
            !matches!(c, '\n' | '\t')
                && (c.is_control()
                    || matches!(c, '\u{202e}' | '\u{2066}' | '\u{200b}' | '\u{e0041}'))
        })
        .collect()
}

/// The text of a tool's result or error, without its metadata (structured data for the host,
/// where a name stays as it is).
async fn message(root: &Path, tool: &str, args: Value) -> Answer {
    let out = builtin(tool)
        .unwrap()
        .call(args, ToolContext::detached(root, tool))
        .await;
    match out {
        Ok(out) => Answer {
            text: out.content_text(),
            is_error: out.is_error,
        },
        Err(e) => Answer {
            text: e.message,
            is_error: true,
        },
    }
}

/// Every message a file tool composes around a name the model gave (success or error) shows
/// its control and bidi characters escaped, never raw: write's "Created"/"Overwrote", edit's
/// and multi_edit's "Edited", notebook_edit's cell messages (with a hostile cell id too),
/// read's empty, binary and past-the-end messages, grep's, glob's and list's messages about the
/// directory given.
#[tokio::test]
async fn names_in_messages_show_control_and_bidi_characters_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let file = format!("{HOSTILE_NAME}.txt");
    let nb = format!("{HOSTILE_NAME}.ipynb");
    std::fs::create_dir(root.join(HOSTILE_NAME)).unwrap();
    std::fs::write(
        root.join(&nb),
        json!({
            "cells": [{"cell_type": "markdown", "id": HOSTILE_NAME, "metadata": {},
                       "source": ["x"]}],
            "metadata": {}, "nbformat": 4, "nbformat_minor": 5
        })
        .to_string(),
    )
    .unwrap();
    let calls: Vec<(&str, Value)> = vec![
        ("write", json!({"path": file, "content": "one\n"})),
        ("write", json!({"path": file, "content": "one\n"})),
        (
            "edit",
            json!({"path": file, "old_string": "one", "new_string": "two"}),
        ),
        (
            "edit",
            json!({"path": file, "old_string": "absent", "new_string": "x"}),
        ),
        (
            "multi_edit",
            json!({"path": file, "edits": [{"old_string": "two", "new_string": "three"}]}),
        ),
        ("read", json!({"path": file, "offset": 99})),
        (
            "notebook_edit",
            json!({"path": nb, "cell_id": HOSTILE_NAME, "new_source": "y"}),
        ),
        (
            "notebook_edit",
            json!({"path": nb, "cell_id": HOSTILE_NAME, "edit_mode": "insert",
                   "cell_type": "code", "new_source": "z"}),
        ),
        (
            "notebook_edit",
            json!({"path": nb, "cell_id": HOSTILE_NAME, "edit_mode": "delete"}),
        ),
        (
            "grep",
            json!({"pattern": "nothing-matches", "path": HOSTILE_NAME}),
        ),
        ("glob", json!({"pattern": "*.none", "path": HOSTILE_NAME})),
        ("list", json!({"path": HOSTILE_NAME})),
        (
            "write",
            json!({"path": format!("{HOSTILE_NAME}/"), "content": "x"}),
        ),
    ];
    for (tool, args) in calls {
        let a = message(&root, tool, args.clone()).await;
        let text = a.text.lines().next().unwrap_or_default().to_string();
        assert!(
            hidden_chars(&a.text).is_empty(),
            "{tool} {args}: raw {:?} in {:?}",
            hidden_chars(&a.text),
            a.text
        );
        assert!(
            text.contains(r"\u{1b}[2J\u{202e}txt.exe"),
            "{tool} {args}: the name is not shown escaped: {text:?}"
        );
    }
    // Empty and binary files say so, naming the file escaped.
    std::fs::write(root.join(&file), "").unwrap();
    let a = message(&root, "read", json!({"path": file})).await;
    assert!(hidden_chars(&a.text).is_empty(), "{:?}", a.text);
    std::fs::write(root.join(&file), b"\0\x01binary").unwrap();
    let a = message(&root, "read", json!({"path": file})).await;
    assert!(
        a.is_error && hidden_chars(&a.text).is_empty(),
        "{:?}",
        a.text
    );
}
