//! The unified diff an approval prompt shows for a builtin file tool's call (write, edit,
//! multi_edit, notebook_edit): computed with the tool's own edit functions on the file as it
//! is now, confined to the root, read with a cap and never blocking on a FIFO, diffed with a
//! deadline (crate `similar`: Myers with a time limit), and cut to [`MAX_DIFF_BYTES`].

use std::path::Path;
use std::time::Duration;

use serde_json::Value;
use similar::TextDiff;

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
    let diff = TextDiff::configure()
        .timeout(DIFF_DEADLINE)
        .diff_lines(old.as_str(), new.as_str());
    Ok(diff
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{shown}"), &format!("b/{shown}"))
        .to_string())
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
