//! Numbers the model sends: counts, offsets, limits, line numbers, timeouts.
//!
//! Every numeric argument of a builtin is a non-negative integer, read by [`opt_u64`]: a value
//! beyond `u64` (JSON allows `18446744073709551616` and `1e300`, and JSON Schema's `integer`
//! accepts both, having no fraction) saturates at `u64::MAX`; a negative, fractional or
//! non-numeric value is an error naming the argument (the schema check refuses those first
//! when the call comes from a model). The tools then do their arithmetic saturating, so
//! `u64::MAX` means "as many as there are" and never wraps around in a release build.

use serde_json::Value;

use crate::tool::ToolError;

/// Read an optional non-negative integer argument (absent or null = `None`), saturating at
/// `u64::MAX`.
pub(crate) fn opt_u64(args: &Value, key: &str) -> Result<Option<u64>, ToolError> {
    let Some(value) = args.get(key).filter(|v| !v.is_null()) else {
        return Ok(None);
    };
    if let Some(n) = value.as_u64() {
        return Ok(Some(n));
    }
    match value.as_f64() {
        // `as` saturates: every whole number past u64::MAX is u64::MAX.
        Some(f) if f >= 0.0 && f.fract() == 0.0 => Ok(Some(f as u64)),
        _ => Err(format!("`{key}` must be a non-negative integer, not {value}").into()),
    }
}

/// [`opt_u64`] as a `usize` (saturating on targets where it is narrower).
pub(crate) fn opt_usize(args: &Value, key: &str) -> Result<Option<usize>, ToolError> {
    Ok(opt_u64(args, key)?.map(|n| usize::try_from(n).unwrap_or(usize::MAX)))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::sync::Arc;

    use async_trait::async_trait;
    use serde_json::json;
    use tokio_util::sync::CancellationToken;

    use super::*;
    use crate::builtin::{SearchRequest, SearchResult, WebSearchProvider};
    use crate::{Client, ClientBuilder, HostError, Message, ScriptEntry};

    #[test]
    fn reading() {
        let read = |v: Value| opt_u64(&json!({ "n": v }), "n");
        assert_eq!(read(json!(7)).unwrap(), Some(7));
        assert_eq!(read(json!(u64::MAX)).unwrap(), Some(u64::MAX));
        assert_eq!(read(json!(1e300)).unwrap(), Some(u64::MAX));
        assert_eq!(read(json!(18446744073709551616.0)).unwrap(), Some(u64::MAX));
        assert_eq!(read(json!(3.0)).unwrap(), Some(3));
        assert_eq!(read(Value::Null).unwrap(), None);
        assert_eq!(opt_u64(&json!({}), "n").unwrap(), None);
        for bad in [
            json!(-1),
            json!(i64::MIN),
            json!(1.5),
            json!(-0.5),
            json!("12"),
            json!(true),
        ] {
            let e = read(bad.clone()).unwrap_err().to_string();
            assert!(e.contains("`n`"), "{bad}: {e}");
        }
    }

    /// A provider that returns one result.
    struct OneResult;

    #[async_trait]
    impl WebSearchProvider for OneResult {
        async fn search(
            &self,
            _request: SearchRequest,
            _cancel: CancellationToken,
        ) -> Result<Vec<SearchResult>, HostError> {
            Ok(vec![SearchResult {
                title: "t".into(),
                url: "https://example.com/".into(),
                snippet: "s".into(),
            }])
        }
    }

    /// A loopback server answering every request with the same three-line page.
    async fn page_server() -> String {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move {
            while let Ok((mut s, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let mut buf = [0u8; 4096];
                    let _ = s.read(&mut buf).await;
                    let body = "alpha\nbeta\ngamma\n";
                    let _ = s
                        .write_all(
                            format!(
                                "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\n\
                                 content-length: {}\r\nconnection: close\r\n\r\n{body}",
                                body.len()
                            )
                            .as_bytes(),
                        )
                        .await;
                });
            }
        });
        format!("http://127.0.0.1:{port}/page.txt")
    }

    /// Every builtin, on a root holding `f.txt` (alpha, beta, gamma) and `d/e/deep.txt`.
    fn client(root: &std::path::Path, script: Vec<ScriptEntry>) -> Client {
        let mut config: crate::Config = serde_json::from_value(json!({
            "style": "scripted",
            "builtins": [
                "read", "write", "edit", "multi_edit", "glob", "grep", "list", "bash",
                "web_fetch", "todo_write", "notebook_edit", "bash_output", "kill_shell",
                "websearch"
            ],
            "background": true,
            "web_fetch_allow_private": true,
        }))
        .unwrap();
        config.script = Some(script);
        config.root = Some(root.to_path_buf());
        ClientBuilder::from_config(config)
            .websearch(Arc::new(OneResult))
            .build()
            .unwrap()
    }

    /// The result of one call: (content, is_error).
    async fn call(root: &std::path::Path, name: &str, args: Value) -> (String, bool) {
        let c = client(
            root,
            vec![
                ScriptEntry::tool_call("c1", name, args),
                ScriptEntry::text("ok"),
            ],
        );
        let r = c.run("go").await.unwrap();
        r.transcript
            .messages
            .iter()
            .find_map(|m| match m {
                Message::Tool { is_error, .. } => Some((m.text().into_owned(), *is_error)),
                _ => None,
            })
            .expect("a tool result")
    }

    /// The numeric fields of every builtin's schema, as `tool.field` (nested ones by path).
    fn numeric_fields(c: &Client) -> BTreeSet<String> {
        fn walk(at: &str, schema: &Value, out: &mut BTreeSet<String>) {
            let numeric = |t: &Value| t == "integer" || t == "number";
            let ty = schema.get("type");
            if ty.is_some_and(|t| {
                numeric(t) || t.as_array().is_some_and(|ts| ts.iter().any(numeric))
            }) {
                out.insert(at.to_string());
            }
            if let Some(props) = schema.get("properties").and_then(Value::as_object) {
                for (k, v) in props {
                    walk(&format!("{at}.{k}"), v, out);
                }
            }
            if let Some(items) = schema.get("items") {
                walk(&format!("{at}[]"), items, out);
            }
        }
        let mut out = BTreeSet::new();
        for spec in c.tools() {
            walk(&spec.name, &spec.input_schema, &mut out);
        }
        out
    }

    /// What a call with a huge value of the field must give: its arguments and a check of the
    /// result (content, is_error).
    type Case = (Value, fn(&str, bool) -> bool);

    fn case(field: &str) -> Option<Case> {
        let all_three = |out: &str, err: bool| {
            !err && out.contains("alpha") && out.contains("beta") && out.contains("gamma")
        };
        Some(match field {
            // A start past the end is an error (read) or says so (the others).
            "read.offset" => (json!({"path": "f.txt"}), |o, e| {
                e && o.contains("past the end")
            }),
            "read.limit" => (json!({"path": "f.txt"}), all_three),
            "glob.offset" => (json!({"pattern": "**/*.txt"}), |o, e| {
                !e && o.contains("past the last result")
            }),
            "glob.limit" => (json!({"pattern": "**/*.txt"}), |o, e| {
                !e && o.contains("f.txt") && o.contains("deep.txt")
            }),
            // Context around the one match reaches every line of the file.
            "grep.context" => (
                json!({"pattern": "beta", "output_mode": "content", "path": "f.txt"}),
                all_three,
            ),
            "grep.before" => (
                json!({"pattern": "gamma", "output_mode": "content", "path": "f.txt"}),
                all_three,
            ),
            "grep.after" => (
                json!({"pattern": "alpha", "output_mode": "content", "path": "f.txt"}),
                all_three,
            ),
            "grep.head_limit" => (
                json!({"pattern": "alpha", "output_mode": "content"}),
                |o, e| !e && o.contains("alpha deep") && o.contains("f.txt"),
            ),
            "grep.offset" => (json!({"pattern": "alpha"}), |o, e| {
                !e && o.contains("past the last result")
            }),
            "list.depth" => (json!({}), |o, e| !e && o.contains("deep.txt")),
            "web_fetch.offset" => (json!({}), |o, e| e && o.contains("past the end")),
            // Bounded by the schema's maximum: refused, naming the field.
            "bash.timeout_ms" => (json!({"command": "echo hi"}), |o, e| {
                e && o.contains("timeout_ms") && o.contains("maximum")
            }),
            "bash_output.wait_ms" => (json!({"shell_id": "shell_1"}), |o, e| {
                e && o.contains("wait_ms") && o.contains("maximum")
            }),
            "websearch.max_results" => (json!({"query": "rust"}), |o, e| {
                e && o.contains("max_results") && o.contains("maximum")
            }),
            _ => return None,
        })
    }

    /// Every numeric field of every builtin's schema, sent `u64::MAX` and what lies beyond it
    /// (`2^64`, `1e300`, which JSON Schema counts as integers): saturated or refused, with the
    /// result asserted (a wrap-around in a release build would give another one, and an
    /// overflow panic in a debug build an error result); sent a negative, fractional, string
    /// or boolean value: an error result naming the field.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn every_numeric_field_saturates_or_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join("f.txt"), "alpha\nbeta\ngamma\n").unwrap();
        std::fs::create_dir_all(root.join("d/e")).unwrap();
        std::fs::write(root.join("d/e/deep.txt"), "alpha deep\n").unwrap();
        let page = page_server().await;
        let fields = numeric_fields(&client(root, vec![]));
        let missing: Vec<&String> = fields.iter().filter(|f| case(f).is_none()).collect();
        assert!(
            missing.is_empty(),
            "numeric fields without a case here: {missing:?}"
        );
        assert!(fields.len() >= 13, "{fields:?}");
        for field in &fields {
            let (base, check) = case(field).unwrap();
            let (tool, key) = field.split_once('.').unwrap();
            let with = |v: Value| {
                let mut args = base.clone();
                if tool == "web_fetch" {
                    args["url"] = json!(page);
                }
                args[key] = v;
                args
            };
            for huge in [json!(u64::MAX), json!(18446744073709551616.0), json!(1e300)] {
                let (out, err) = call(root, tool, with(huge.clone())).await;
                assert!(check(&out, err), "{field} = {huge}: is_error {err}: {out}");
            }
            for bad in [
                json!(-1),
                json!(i64::MIN),
                json!(1.5),
                json!("12"),
                json!(true),
            ] {
                let (out, err) = call(root, tool, with(bad.clone())).await;
                assert!(err && out.contains(key), "{field} = {bad}: {out}");
            }
        }
    }
}
