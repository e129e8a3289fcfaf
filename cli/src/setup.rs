//! What `contenox run` and `contenox acp` share: the client's config from the flags (model,
//! builtins, approval policy), the registered hooks `--hooks` selects, the tool sources a client
//! starts (hooks, MCP servers), and the files flags name.

use std::io::Read;
use std::path::Path;
use std::sync::Arc;

use contenox::policy::{presets, Policy};
use contenox::remote::{load_remote, HookState, RemoteSource};
use contenox::{
    load_mcp_with, Allowlist, Client, Config, McpAuth, McpConfig, McpSource, ServerState, Spelling,
};
use serde_json::{json, Map, Value};

use crate::args::ClientArgs;
use crate::db::{Access, Registry};
use crate::error::{CliError, CliResult};
use crate::terminal::{clean_line, cut_chars};

/// The largest file `--script`, `--chain`, `--mcp` and `--transcript` read.
pub const MAX_INPUT_FILE: u64 = 16 << 20;

/// The client's config from the flags, rooted at `root`; checked whole by the engine.
pub fn client_config(flags: &ClientArgs, root: &Path) -> CliResult<Config> {
    let mut config = Map::new();
    config.insert("root".into(), json!(root));
    let model = &flags.model;
    if let Some(path) = &model.script {
        let text = read_text(path, "--script")?;
        let entries: Value = serde_json::from_str(&text)
            .map_err(|e| CliError::usage(format!("--script {}: not JSON: {e}", path.display())))?;
        config.insert("style".into(), json!("scripted"));
        config.insert("script".into(), entries);
    } else {
        let style = model.style.as_deref().unwrap_or("openai").trim();
        config.insert("style".into(), json!(style));
        if let Some(url) = &model.base_url {
            config.insert("base_url".into(), json!(url));
        }
        match &model.model {
            Some(m) => config.insert("model".into(), json!(m)),
            None => {
                return Err(CliError::usage(
                    "give the model with --model (or CONTENOX_MODEL), or run offline with \
                     --script FILE",
                ))
            }
        };
    }
    if let Some(list) = flags.builtins.as_deref() {
        let names: Vec<&str> = match list.trim() {
            "none" | "" => Vec::new(),
            l => l
                .split(',')
                .map(str::trim)
                .filter(|n| !n.is_empty())
                .collect(),
        };
        config.insert("builtins".into(), json!(names));
    }
    if let Some(system) = &flags.system {
        config.insert("system".into(), json!(system));
    }
    if let Some(n) = flags.max_turns {
        config.insert("max_turns".into(), json!(n));
    }
    if let Some(path) = &flags.hooks_file {
        config.insert("hooks_file".into(), json!(path.display().to_string()));
    }
    config.insert(
        "policy".into(),
        policy(&flags.gate.policy)?.document().clone(),
    );
    Config::from_value(&Value::Object(config), Spelling::default())
        .map_err(|e| CliError::usage(plain(&e)))
}

/// `--policy`: a preset by name, else a policy file. A preset's name wins over a file of the
/// same name in the working directory (`./default` names the file).
pub fn policy(given: &str) -> CliResult<Policy> {
    if let Some(p) = presets::by_name(given) {
        return Ok(p);
    }
    Policy::load(given).map_err(|e| {
        CliError::usage(format!(
            "--policy {}: not a preset ({}) and not a policy file: {e}",
            clean_line(&cut_chars(given, 200)),
            presets::NAMES.join(", ")
        ))
    })
}

/// The registered hooks `--hooks` selects (an allowlist over hook names). A plain name that is
/// not registered is an error: a typo would otherwise run without the hook.
pub fn selected_hooks(db: &Path, list: &str) -> CliResult<Vec<contenox::RemoteHook>> {
    let patterns: Vec<&str> = list
        .split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .collect();
    if patterns.is_empty() {
        return Ok(Vec::new());
    }
    // Only exclusions ("!x") mean every hook but those.
    let mut patterns: Vec<String> = patterns.iter().map(|p| p.to_string()).collect();
    if patterns.iter().all(|p| p.starts_with('!')) {
        patterns.insert(0, "*".into());
    }
    let allow = Allowlist::new(&patterns)
        .map_err(|e| CliError::usage(format!("--hooks: {}", plain(&e))))?;
    let stored = match Registry::open(db, Access::Read)? {
        Some(registry) => registry.list()?,
        None => Vec::new(),
    };
    for p in &patterns {
        let literal = !p.starts_with('!') && !p.contains(['*', '?', '[', '{']);
        if literal && !stored.iter().any(|s| &s.hook.name == p) {
            return Err(CliError::usage(format!(
                "--hooks: no hook named {:?} is registered (see `contenox hook list`)",
                clean_line(&cut_chars(p, 70))
            )));
        }
    }
    Ok(stored
        .into_iter()
        .map(|s| s.hook)
        .filter(|h| allow.allows(&h.name))
        .collect())
}

/// The tool sources a client started; closed before the client goes.
#[derive(Default)]
pub struct Sources {
    remote: Option<RemoteSource>,
    mcp: Option<McpSource>,
}

impl Sources {
    /// Load the hooks and MCP servers and register their tools into `client`; `note` gets one
    /// line per hook or server (ready, failed). `auth` authorizes MCP servers that ask for
    /// OAuth (without it they fail with their 401).
    pub async fn start(
        client: &Client,
        hooks: Vec<contenox::RemoteHook>,
        mcp: Option<McpConfig>,
        auth: Option<Arc<dyn McpAuth>>,
        note: Arc<dyn Fn(String) + Send + Sync>,
    ) -> CliResult<Sources> {
        let mut sources = Sources::default();
        if !hooks.is_empty() {
            let n = note.clone();
            let remote = load_remote(hooks, move |name, state| match state {
                HookState::Ready { tools } => n(format!("[hook] {name}: {tools} tool(s)")),
                HookState::Unavailable { error } => n(format!(
                    "[hook] {name}: not reachable ({}); probed again before the turn",
                    clean_line(&cut_chars(error, 200))
                )),
            })
            .await
            .map_err(|e| CliError::usage(plain(&e)))?;
            let registered = remote.register_into(client);
            sources.remote = Some(remote);
            if let Err(e) = registered {
                sources.close().await;
                return Err(CliError::usage(plain(&e)));
            }
        }
        if let Some(config) = mcp {
            let n = note.clone();
            let source = load_mcp_with(config, auth, move |name, state| match state {
                ServerState::Ready { tools } => n(format!("[mcp] {name}: {tools} tool(s)")),
                ServerState::Failed { error } => n(format!(
                    "[mcp] {name}: failed: {}",
                    clean_line(&cut_chars(error, 300))
                )),
            })
            .await;
            let registered = source.register_into(client);
            sources.mcp = Some(source);
            if let Err(e) = registered {
                sources.close().await;
                return Err(CliError::usage(plain(&e)));
            }
        }
        Ok(sources)
    }

    /// Close every source (MCP servers end, remote probes stop).
    pub async fn close(&self) {
        if let Some(r) = &self.remote {
            r.close().await;
        }
        if let Some(m) = &self.mcp {
            m.close().await;
        }
    }
}

/// A file a flag names, as UTF-8 text, at most [`MAX_INPUT_FILE`] bytes.
pub fn read_text(path: &Path, flag: &str) -> CliResult<String> {
    let bad = |why: String| CliError::usage(format!("{flag} {}: {why}", path.display()));
    let file = std::fs::File::open(path).map_err(|e| bad(e.to_string()))?;
    let mut bytes = Vec::new();
    file.take(MAX_INPUT_FILE + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| bad(e.to_string()))?;
    if bytes.len() as u64 > MAX_INPUT_FILE {
        return Err(bad(format!("larger than {MAX_INPUT_FILE} bytes")));
    }
    String::from_utf8(bytes).map_err(|_| bad("not UTF-8 text".into()))
}

/// An engine error without its kind's prefix ("invalid configuration: ").
pub fn plain(e: &contenox::Error) -> String {
    let text = e.to_string();
    text.strip_prefix("invalid configuration: ")
        .unwrap_or(&text)
        .to_string()
}

/// Write `bytes` to `path` through a file beside it renamed over it: a crash mid-write leaves
/// the old file whole.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".contenox-tmp");
    let tmp = path.with_file_name(name);
    let written = std::fs::write(&tmp, bytes).and_then(|()| std::fs::rename(&tmp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}
