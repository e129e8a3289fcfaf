//! The unified diff an approval prompt shows for a builtin file tool's call (write, edit,
//! multi_edit, notebook_edit): computed with the tool's own edit functions on the file as it
//! is now, confined to the root, read with a cap and never blocking on a FIFO, diffed with a
//! deadline (crate `similar`: Myers with a time limit), and cut to [`MAX_DIFF_BYTES`].

use std::fmt::Write as _;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::Value;
use similar::algorithms::{myers, Capture, Compact, Replace};
use similar::udiff::UnifiedHunkHeader;
use similar::DiffTag;

use crate::builtin::{load_text, RootDir};
use crate::tool::Source;

/// The longest diff shown; a longer one is cut with a marker.
pub const MAX_DIFF_BYTES: usize = 16 * 1024;
/// The largest file a diff is computed for.
pub const MAX_DIFF_FILE_BYTES: u64 = 1 << 20;
/// How long the diff algorithm may search before it settles for a coarser diff.
const DIFF_DEADLINE: Duration = Duration::from_millis(200);

/// The tools a diff is shown for.
pub const DIFF_TOOLS: [&str; 4] = ["write", "edit", "multi_edit", "notebook_edit"];

/// The diff `name`'s call would make, or a sentence saying why there is none; `None` when the
/// tool is not a builtin file tool.
pub fn change_diff(name: &str, source: Source, args: &Value, root: &Path) -> Option<String> {
    if source != Source::Builtin || !DIFF_TOOLS.contains(&name) {
        return None;
    }
    Some(match diff_of(name, args, root) {
        Ok(d) if d.is_empty() => "(no change)".to_string(),
        Ok(d) => crate::error::cut(&d, MAX_DIFF_BYTES),
        Err(why) => format!("(no diff: {why})"),
    })
}

fn diff_of(name: &str, args: &Value, root: &Path) -> Result<String, String> {
    let given = args.get("path").and_then(Value::as_str).ok_or("no path")?;
    // The same kernel-checked resolution beneath the root as the file tools (no path-based
    // check-then-open): a path that leaves the root gives no diff, and nothing outside is read.
    let dir = RootDir::open(root).map_err(|e| format!("cannot open the root: {e}"))?;
    let at = dir.locate(given).map_err(|e| e.message)?;
    let shown = at.relative().to_string_lossy().into_owned();
    let old = if at.missing.is_empty() {
        load_text(&dir, given, MAX_DIFF_FILE_BYTES).map_err(|e| e.message)?
    } else {
        String::new()
    };
    let new = match name {
        "write" => args
            .get("content")
            .and_then(Value::as_str)
            .ok_or("no content")?
            .to_string(),
        "edit" => {
            let old_s = args.get("old_string").and_then(Value::as_str).unwrap_or("");
            let new_s = args.get("new_string").and_then(Value::as_str).unwrap_or("");
            let all = args
                .get("replace_all")
                .and_then(Value::as_bool)
                .unwrap_or(false);
            crate::builtin::apply_edit(&old, old_s, new_s, all, &shown)
                .map_err(|e| format!("the edit would fail: {}", e.message))?
                .0
        }
        "multi_edit" => {
            let edits = args
                .get("edits")
                .and_then(Value::as_array)
                .ok_or("no edits")?;
            crate::builtin::apply_edits(&old, edits, &shown)
                .map_err(|e| format!("the edit would fail: {}", e.message))?
                .0
        }
        _ => {
            crate::builtin::edit_notebook(&old, args, &shown)
                .map_err(|e| format!("the edit would fail: {}", e.message))?
                .0
        }
    };
    Ok(unified_diff(&old, &new, &shown, DIFF_DEADLINE))
}

/// The unified diff (3 lines of context, headers `a/{label}` and `b/{label}`) turning `old` into
/// `new`, line by line; empty when they are equal. Myers' algorithm settles for a coarser diff
/// once `deadline` has passed, so a hostile pair of texts cannot hold the caller.
///
/// It calls Myers directly rather than through `similar::TextDiff`: the text API instantiates
/// every algorithm for several hook and string types, about 570 KB of machine code in each
/// release library for this one diff, against tens of KB this way (docs/decisions.md).
pub fn unified_diff(old: &str, new: &str, label: &str, deadline: Duration) -> String {
    let old_lines: Vec<&str> = old.split_inclusive('\n').collect();
    let new_lines: Vec<&str> = new.split_inclusive('\n').collect();
    let mut hook = Compact::new(Replace::new(Capture::new()), &old_lines, &new_lines);
    // Capture's hook cannot fail: its error type is `Infallible`.
    let Ok(()) = myers::diff_deadline(
        &mut hook,
        &old_lines,
        0..old_lines.len(),
        &new_lines,
        0..new_lines.len(),
        Some(Instant::now() + deadline),
    );
    let ops = hook.into_inner().into_inner().into_ops();
    let mut out = String::new();
    for (i, hunk) in similar::group_diff_ops(ops, 3).iter().enumerate() {
        if i == 0 {
            let _ = writeln!(out, "--- a/{label}\n+++ b/{label}");
        }
        let _ = writeln!(out, "{}", UnifiedHunkHeader::new(hunk));
        for op in hunk {
            let (tag, old_range, new_range) = op.as_tag_tuple();
            let (gone, came) = (&old_lines[old_range], &new_lines[new_range]);
            match tag {
                DiffTag::Equal => push_lines(&mut out, ' ', gone),
                DiffTag::Delete => push_lines(&mut out, '-', gone),
                DiffTag::Insert => push_lines(&mut out, '+', came),
                DiffTag::Replace => {
                    push_lines(&mut out, '-', gone);
                    push_lines(&mut out, '+', came);
                }
            }
        }
    }
    out
}

/// Lines of a hunk with their mark; a last line without its newline gets one and git's marker.
fn push_lines(out: &mut String, mark: char, lines: &[&str]) {
    for line in lines {
        out.push(mark);
        out.push_str(line);
        if !line.ends_with('\n') {
            out.push_str("\n\\ No newline at end of file\n");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn root() -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        (dir, root)
    }

    #[test]
    fn the_same_diff_as_similars_text_api() {
        let cases = [
            ("", ""),
            ("a\n", "a\n"),
            ("", "new\n"),
            ("old\n", ""),
            ("one\ntwo\nthree\n", "one\n2\nthree\n"),
            ("no newline", "no newline at all"),
            ("a\nb", "a\nb\n"),
            (
                "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n",
                "1\nX\n3\n4\n5\n6\n7\n8\n9\n10\nY\n12\n",
            ),
            ("x\ny\nz\n", "z\ny\nx\nw"),
        ];
        for (old, new) in cases {
            let theirs = similar::TextDiff::configure()
                .timeout(DIFF_DEADLINE)
                .diff_lines(old, new)
                .unified_diff()
                .context_radius(3)
                .header("a/f", "b/f")
                .to_string();
            assert_eq!(
                unified_diff(old, new, "f", DIFF_DEADLINE),
                theirs,
                "{old:?} -> {new:?}"
            );
        }
    }

    #[test]
    fn diffs_of_each_tool() {
        let (_d, root) = root();
        std::fs::write(root.join("a.txt"), "one\ntwo\nthree\n").unwrap();
        let d = change_diff(
            "edit",
            Source::Builtin,
            &json!({"path": "a.txt", "old_string": "two", "new_string": "2"}),
            &root,
        )
        .unwrap();
        assert!(
            d.contains("--- a/a.txt") && d.contains("+++ b/a.txt"),
            "{d}"
        );
        assert!(d.contains("-two\n") && d.contains("+2\n"), "{d}");
        let d = change_diff(
            "write",
            Source::Builtin,
            &json!({"path": "new.txt", "content": "hi\n"}),
            &root,
        )
        .unwrap();
        assert!(d.contains("+hi"), "{d}");
        let d = change_diff("multi_edit", Source::Builtin, &json!({"path": "a.txt", "edits": [{"old_string": "one", "new_string": "1"}, {"old_string": "three", "new_string": "3"}]}), &root).unwrap();
        assert!(d.contains("+1") && d.contains("+3"), "{d}");
        let d = change_diff(
            "edit",
            Source::Builtin,
            &json!({"path": "a.txt", "old_string": "nope", "new_string": "x"}),
            &root,
        )
        .unwrap();
        assert!(d.starts_with("(no diff: the edit would fail"), "{d}");
        assert!(change_diff("read", Source::Builtin, &json!({"path": "a.txt"}), &root).is_none());
        assert!(change_diff("write", Source::Host, &json!({"path": "a.txt"}), &root).is_none());
    }

    #[test]
    fn hostile_targets() {
        let (_d, root) = root();
        let d = change_diff(
            "write",
            Source::Builtin,
            &json!({"path": "../../etc/passwd", "content": "x"}),
            &root,
        )
        .unwrap();
        assert!(d.contains("outside the root"), "{d}");
        let fifo = root.join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        let d = change_diff(
            "write",
            Source::Builtin,
            &json!({"path": "fifo", "content": "x"}),
            &root,
        )
        .unwrap();
        assert!(d.contains("not a regular file"), "{d}");
        std::fs::write(
            root.join("big"),
            vec![b'a'; (MAX_DIFF_FILE_BYTES + 1) as usize],
        )
        .unwrap();
        let d = change_diff(
            "write",
            Source::Builtin,
            &json!({"path": "big", "content": "x"}),
            &root,
        )
        .unwrap();
        assert!(d.contains("over the 1 MiB"), "{d}");
        let huge: String = (0..20_000).map(|i| format!("line {i}\n")).collect();
        let d = change_diff(
            "write",
            Source::Builtin,
            &json!({"path": "h.txt", "content": huge}),
            &root,
        )
        .unwrap();
        assert!(
            d.len() < MAX_DIFF_BYTES + 100 && d.contains("more bytes"),
            "{}",
            d.len()
        );
    }
}
