//! `roots/list`: the directories a server may work in are those of the clients its source was
//! added to: each client's root, then its `sandbox.writable` directories, as `file://` URIs.
//! Adding the source to another client (or closing one) changes them, and every connected
//! server that was offered roots is sent `notifications/roots/list_changed`.

use std::path::PathBuf;

use serde_json::{json, Value};

use super::calls::ActiveCalls;
use crate::tool::SourceShared as Shared;

/// The roots of every live client of the source (the calling client's when no client is
/// attached yet, as when a tool of the source runs by hand), without repeats, in order.
pub(crate) fn roots(shared: &Shared, calls: &ActiveCalls) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    let mut add = |p: PathBuf| {
        if !out.contains(&p) {
            out.push(p);
        }
    };
    for client in shared.live_clients() {
        client.roots().into_iter().for_each(&mut add);
    }
    if let Some(ctx) = calls.current() {
        add(PathBuf::clone(&ctx.root));
    }
    out
}

/// MCP's `ListRootsResult` for `dirs`: `{"roots": [{"uri": "file:///...", "name": "..."}]}`.
/// A path `url` cannot express (a relative one) is left out.
pub(crate) fn list_result(dirs: &[PathBuf]) -> Value {
    let roots: Vec<Value> = dirs
        .iter()
        .filter_map(|dir| {
            let uri = url::Url::from_directory_path(dir).ok()?;
            let name = dir
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| dir.display().to_string());
            // `from_directory_path` ends the URI with `/`; MCP's examples do not (but `/`
            // itself stays `file:///`).
            let uri = match uri.as_str().strip_suffix('/') {
                Some(short) if short != "file://" => short.to_string(),
                _ => uri.to_string(),
            };
            Some(json!({"uri": uri, "name": name}))
        })
        .collect();
    json!({ "roots": roots })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directories_become_file_uris_escaped() {
        let v = list_result(&[
            PathBuf::from("/work/my project"),
            PathBuf::from("/"),
            PathBuf::from("relative"),
        ]);
        assert_eq!(
            v,
            json!({"roots": [
                {"uri": "file:///work/my%20project", "name": "my project"},
                {"uri": "file:///", "name": "/"},
            ]})
        );
    }
}
