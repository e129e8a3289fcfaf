//! What an approval prompt shows: the change a `write`, `edit` or `multi_edit` would make, as a
//! unified diff of the file under the working directory; the arguments of any other call.
//!
//! The file is read only when it resolves (symlinks followed) inside the working directory and
//! is at most [`MAX_FILE`] bytes: the preview never shows the person a file the tool itself
//! would refuse, and never reads without bound.

use std::path::Path;

use serde_json::Value;

use crate::terminal::{clean, clean_line, cut_chars};

/// The largest file a preview reads.
const MAX_FILE: u64 = 1 << 20;
/// How long the diff may search before it settles for a coarser one.
const DIFF_DEADLINE: std::time::Duration = std::time::Duration::from_millis(200);
/// The most diff lines a preview shows.
const MAX_LINES: usize = 200;

/// The question of an ask: `Approve write on "src/main.rs"?`, `Approve bash "ls"?`,
/// `Approve NAME?`.
pub fn question(tool: &str, args: &Value) -> String {
    let quoted = |s: &str| clean_line(&cut_chars(s, 200));
    if let Some(path) = args.get("path").and_then(Value::as_str) {
        return format!("Approve {tool} on \"{}\"?", quoted(path));
    }
    if let Some(command) = args.get("command").and_then(Value::as_str) {
        return format!("Approve {tool} \"{}\"?", quoted(command));
    }
    format!("Approve {tool}?")
}

/// The lines shown above the question (may be empty).
pub fn preview(root: &Path, tool: &str, args: &Value) -> String {
    let path = args.get("path").and_then(Value::as_str);
    match (tool, path) {
        ("write" | "edit" | "multi_edit", Some(path)) => match change(root, tool, path, args) {
            Ok((old, new)) => diff(path, &old, &new),
            Err(why) => format!("  ({why})\n"),
        },
        _ => {
            let shown = match args {
                Value::Object(m) if m.is_empty() => return String::new(),
                Value::Object(m)
                    if m.len() == 1 && (m.contains_key("path") || m.contains_key("command")) =>
                {
                    return String::new()
                }
                other => serde_json::to_string_pretty(other).unwrap_or_default(),
            };
            let text = clean(&cut_chars(&shown, 2000));
            text.lines().map(|l| format!("  {l}\n")).collect()
        }
    }
}

/// The file's text now and after the call, or why there is no diff to show.
fn change(root: &Path, tool: &str, path: &str, args: &Value) -> Result<(String, String), String> {
    proposed_change(root, tool, path, args).map(|(old, new)| (old.unwrap_or_default(), new))
}

/// What a `write`, `edit` or `multi_edit` of `path` would make of the file: its text now
/// (`None` when it does not exist yet) and after; or why that cannot be shown (the path is
/// outside `root`, the file is too large or not text, the edit would fail).
pub fn proposed_change(
    root: &Path,
    tool: &str,
    path: &str,
    args: &Value,
) -> Result<(Option<String>, String), String> {
    let old = read_inside(root, path)?;
    let s = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    match tool {
        "write" => Ok((old, s(args, "content"))),
        "edit" => {
            let old = old.ok_or("the file does not exist: the edit will fail")?;
            let new = apply(
                &old,
                &s(args, "old_string"),
                &s(args, "new_string"),
                flag(args),
            )?;
            Ok((Some(old), new))
        }
        _ => {
            let old = old.ok_or("the file does not exist: the edits will fail")?;
            let mut new = old.clone();
            let edits = args
                .get("edits")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            for (i, e) in edits.iter().enumerate() {
                new = apply(&new, &s(e, "old_string"), &s(e, "new_string"), flag(e))
                    .map_err(|why| format!("edit #{}: {why}", i + 1))?;
            }
            Ok((Some(old), new))
        }
    }
}

fn flag(v: &Value) -> bool {
    v.get("replace_all")
        .and_then(Value::as_bool)
        .unwrap_or(false)
}

/// One edit as the `edit` tool applies it (unique match, or every match with `replace_all`).
fn apply(text: &str, old: &str, new: &str, all: bool) -> Result<String, String> {
    if old.is_empty() {
        return Err("old_string is empty: the edit will fail".into());
    }
    match text.matches(old).count() {
        0 => Err("old_string is not in the file: the edit will fail".into()),
        1 => Ok(text.replacen(old, new, 1)),
        _ if all => Ok(text.replace(old, new)),
        n => Err(format!(
            "old_string occurs {n} times and replace_all is not set: the edit will fail"
        )),
    }
}

/// The file's text when it resolves inside `root`; `None` when it does not exist (yet).
fn read_inside(root: &Path, path: &str) -> Result<Option<String>, String> {
    let root = root
        .canonicalize()
        .map_err(|e| format!("the working directory cannot be read: {e}"))?;
    let given = Path::new(path);
    let joined = if given.is_absolute() {
        given.to_path_buf()
    } else {
        root.join(given)
    };
    let outside =
        || "the path is outside the working directory: the tool will refuse it".to_string();
    let resolved = match joined.canonicalize() {
        Ok(p) => p,
        Err(_) => {
            // A new file: its nearest existing ancestor must be inside.
            let mut dir = joined.parent();
            while let Some(d) = dir {
                if let Ok(real) = d.canonicalize() {
                    if !real.starts_with(&root) {
                        return Err(outside());
                    }
                    return Ok(None);
                }
                dir = d.parent();
            }
            return Err(outside());
        }
    };
    if !resolved.starts_with(&root) {
        return Err(outside());
    }
    let meta = std::fs::metadata(&resolved).map_err(|e| e.to_string())?;
    if !meta.is_file() {
        return Err("the path is not a file".into());
    }
    if meta.len() > MAX_FILE {
        return Err(format!(
            "the file has {} bytes: too large to show a diff",
            meta.len()
        ));
    }
    let bytes = std::fs::read(&resolved).map_err(|e| e.to_string())?;
    String::from_utf8(bytes)
        .map(Some)
        .map_err(|_| "the file is not UTF-8 text: no diff shown".into())
}

/// A unified diff, capped, with terminal hazards escaped.
fn diff(path: &str, old: &str, new: &str) -> String {
    if old == new {
        return "  (no change)\n".into();
    }
    let name = clean_line(path);
    // The engine's diff, with its deadline: a hostile pair of texts cannot hold the prompt.
    let text = contenox::policy::unified_diff(old, new, &name, DIFF_DEADLINE);
    let lines: Vec<&str> = text.lines().collect();
    let mut out: String = lines
        .iter()
        .take(MAX_LINES)
        .map(|l| format!("{}\n", clean_line(l)))
        .collect();
    if lines.len() > MAX_LINES {
        out.push_str(&format!(
            "... {} more diff lines\n",
            lines.len() - MAX_LINES
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn questions() {
        assert_eq!(
            question("write", &json!({"path": "src/main.rs", "content": "x"})),
            "Approve write on \"src/main.rs\"?"
        );
        assert_eq!(
            question("bash", &json!({"command": "ls\n-la"})),
            "Approve bash \"ls\\n-la\"?"
        );
        assert_eq!(
            question("create_ticket", &json!({"title": "t"})),
            "Approve create_ticket?"
        );
    }

    #[test]
    fn diffs_of_writes_and_edits() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "one\ntwo\nthree\n").unwrap();
        let p = preview(
            dir.path(),
            "write",
            &json!({"path": "new.txt", "content": "hello\n"}),
        );
        assert!(p.contains("+hello") && p.contains("b/new.txt"), "{p}");
        let p = preview(
            dir.path(),
            "edit",
            &json!({"path": "a.txt", "old_string": "two", "new_string": "2"}),
        );
        assert!(p.contains("-two") && p.contains("+2"), "{p}");
        let p = preview(
            dir.path(),
            "multi_edit",
            &json!({"path": "a.txt", "edits": [
                {"old_string": "one", "new_string": "1"},
                {"old_string": "three", "new_string": "3"}]}),
        );
        assert!(
            p.contains("+1") && p.contains("+3") && p.contains("-three"),
            "{p}"
        );
        let p = preview(
            dir.path(),
            "edit",
            &json!({"path": "a.txt", "old_string": "four", "new_string": "4"}),
        );
        assert!(p.contains("not in the file"), "{p}");
    }

    #[test]
    fn no_peeking_outside_the_root() {
        let outer = tempfile::tempdir().unwrap();
        let root = outer.path().join("root");
        std::fs::create_dir(&root).unwrap();
        std::fs::write(outer.path().join("secret.txt"), "TOPSECRET\n").unwrap();
        std::os::unix::fs::symlink(outer.path().join("secret.txt"), root.join("link")).unwrap();
        for path in ["../secret.txt", "link"] {
            let p = preview(&root, "write", &json!({"path": path, "content": "x"}));
            assert!(
                !p.contains("TOPSECRET") && p.contains("outside"),
                "{path}: {p}"
            );
        }
        let abs = outer.path().join("secret.txt");
        let p = preview(
            &root,
            "edit",
            &json!({"path": abs, "old_string": "T", "new_string": "t"}),
        );
        assert!(!p.contains("TOPSECRET"), "{p}");
    }

    #[test]
    fn hostile_content_is_escaped() {
        let dir = tempfile::tempdir().unwrap();
        let p = preview(
            dir.path(),
            "write",
            &json!({"path": "x.txt", "content": "ok\n\u{1b}[1A\u{1b}[2Kharmless\n"}),
        );
        assert!(!p.contains('\u{1b}'), "{p:?}");
        assert!(p.contains("\\u{1b}[1A"), "{p}");
    }
}
