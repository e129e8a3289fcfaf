//! `contenox hook add | show | list | update | remove`.
//!
//! Every input is checked before the registry is touched; a bad one exits with code 2 and
//! changes nothing. No command prints a header value or an injected value, nor a URL's
//! userinfo or query.

use std::path::Path;

use contenox::remote::{load_remote, redact_url, HookState, Protocol, RemoteHook};
use serde_json::Value;

use crate::args::{HookCommand, HookFields};
use crate::db::{already_registered, not_registered, Access, Registry, StoredHook};
use crate::error::{CliError, CliResult};
use crate::hook_args::{check_name, parse_headers, parse_inject, parse_timeout};
use crate::stdout;
use crate::terminal::{clean_line, cut_chars};

/// Run one `hook` command; what it prints goes to stdout.
pub async fn run(db: &Path, command: HookCommand) -> CliResult<()> {
    match command {
        HookCommand::Add { name, fields } => add(db, name, fields).await,
        HookCommand::Show { name } => show(db, &name).await,
        HookCommand::List => list(db),
        HookCommand::Update {
            name,
            fields,
            clear_headers,
            clear_inject,
            clear_spec,
        } => {
            update(
                db,
                &name,
                fields,
                Clears {
                    headers: clear_headers,
                    inject: clear_inject,
                    spec: clear_spec,
                },
            )
            .await
        }
        HookCommand::Remove { name } => remove(db, &name),
    }
}

/// The `--clear-*` flags of `hook update`.
struct Clears {
    headers: bool,
    inject: bool,
    spec: bool,
}

/// The settings given on the command line, read and checked.
struct Given {
    url: Option<String>,
    headers: Option<std::collections::BTreeMap<String, String>>,
    inject: Option<serde_json::Map<String, Value>>,
    timeout_ms: Option<u64>,
    protocol: Option<Protocol>,
    spec: Option<String>,
}

impl Given {
    fn read(fields: HookFields) -> CliResult<Given> {
        let protocol = fields
            .protocol
            .as_deref()
            .map(|p| {
                serde_json::from_value::<Protocol>(Value::String(p.trim().to_string())).map_err(
                    |_| {
                        CliError::usage(format!(
                            "--protocol {:?}: use openapi, openai, openai-object, ollama, \
                             langserve-openai or langserve",
                            clean_line(&cut_chars(p, 40))
                        ))
                    },
                )
            })
            .transpose()?;
        Ok(Given {
            url: fields.url.map(|u| u.trim().to_string()),
            headers: (!fields.headers.is_empty())
                .then(|| parse_headers(&fields.headers))
                .transpose()?,
            inject: (!fields.inject.is_empty())
                .then(|| parse_inject(&fields.inject))
                .transpose()?,
            timeout_ms: fields.timeout.as_deref().map(parse_timeout).transpose()?,
            protocol,
            spec: fields.spec.as_deref().map(spec_location).transpose()?,
        })
    }

    fn is_empty(&self) -> bool {
        self.url.is_none()
            && self.headers.is_none()
            && self.inject.is_none()
            && self.timeout_ms.is_none()
            && self.protocol.is_none()
            && self.spec.is_none()
    }

    /// Apply to `hook`: given fields replace (headers and inject as a whole).
    fn apply(self, hook: &mut RemoteHook) {
        if let Some(url) = self.url {
            hook.url = url;
        }
        if let Some(h) = self.headers {
            hook.headers = h;
        }
        if let Some(i) = self.inject {
            hook.inject = i;
        }
        if let Some(t) = self.timeout_ms {
            hook.timeout_ms = t;
        }
        if let Some(p) = self.protocol {
            hook.protocol = p;
        }
        if let Some(s) = self.spec {
            hook.spec_url = Some(s);
        }
    }
}

/// `--spec`: a URL as given; a file as its absolute path, which must exist now (the hook is
/// used from other directories later).
fn spec_location(spec: &str) -> CliResult<String> {
    let spec = spec.trim();
    if spec.contains("://") {
        return Ok(spec.to_string());
    }
    let path = Path::new(spec);
    let abs = std::path::absolute(path)
        .map_err(|e| CliError::usage(format!("--spec {}: {e}", path.display())))?;
    if !abs.is_file() {
        return Err(CliError::usage(format!(
            "--spec {}: no such file (give a URL or an existing OpenAPI document)",
            clean_line(&path.display().to_string())
        )));
    }
    Ok(abs.to_string_lossy().into_owned())
}

/// The engine's own checks of a hook (URL, header names and values, timeout, spec).
fn check(hook: &RemoteHook) -> CliResult<()> {
    hook.check().map_err(|e| {
        let text = e.to_string();
        CliError::usage(
            text.strip_prefix("invalid configuration: ")
                .unwrap_or(&text)
                .to_string(),
        )
    })
}

/// What a probe found: the tools (name, description), or why the hook could not be read.
type Probe = Result<Vec<(String, String)>, String>;

async fn probe(hook: &RemoteHook) -> Probe {
    let source = match load_remote(vec![hook.clone()], |_, _| {}).await {
        Ok(s) => s,
        Err(e) => return Err(e.to_string()),
    };
    let state =
        source
            .hooks()
            .into_iter()
            .next()
            .map(|(_, s)| s)
            .unwrap_or(HookState::Unavailable {
                error: "not read".into(),
            });
    let found = match state {
        HookState::Ready { .. } => Ok(source
            .tools()
            .iter()
            .map(|t| {
                let spec = t.spec();
                (spec.name, spec.description)
            })
            .collect()),
        HookState::Unavailable { error } => Err(error),
    };
    source.close().await;
    found
}

fn probe_sentence(verb: &str, name: &str, probe: &Probe) -> String {
    match probe {
        Ok(tools) => format!(
            "{verb} hook \"{name}\" — {} tool(s) discovered.",
            tools.len()
        ),
        Err(error) => format!(
            "{verb} hook \"{name}\" — not reachable now ({}); it will be probed again when used.",
            reason(name, error)
        ),
    }
}

async fn add(db: &Path, name: String, fields: HookFields) -> CliResult<()> {
    check_name(&name)?;
    let Some(url) = fields.url.clone() else {
        return Err(CliError::usage("hook add needs --url <endpoint>"));
    };
    let given = Given::read(fields)?;
    let mut hook = RemoteHook::new(name.clone(), url);
    given.apply(&mut hook);
    check(&hook)?;
    // Cannot fail: with `Access::Create`, `open` makes the file when it is missing or empty.
    let mut registry = Registry::open(db, Access::Create)?.expect("created");
    if registry.get(&name)?.is_some() {
        return Err(already_registered(&name));
    }
    // Probed outside any transaction: a slow service must not hold the registry's lock.
    let found = probe(&hook).await;
    registry.insert(&hook)?;
    stdout::line(&probe_sentence("Registered", &name, &found))?;
    Ok(())
}

async fn update(db: &Path, name: &str, fields: HookFields, clears: Clears) -> CliResult<()> {
    check_name(name)?;
    let given = Given::read(fields)?;
    if given.is_empty() && !clears.headers && !clears.inject && !clears.spec {
        return Err(CliError::usage(
            "nothing to change: give --url, --header, --inject, --timeout, --protocol, --spec \
             or a --clear-* flag",
        ));
    }
    let mut registry = Registry::open(db, Access::Write)?.ok_or_else(|| not_registered(name))?;
    let stored = registry.update(name, |hook| {
        given.apply(hook);
        if clears.headers {
            hook.headers.clear();
        }
        if clears.inject {
            hook.inject.clear();
        }
        if clears.spec {
            hook.spec_url = None;
        }
        check(hook)
    })?;
    let found = probe(&stored.hook).await;
    stdout::line(&probe_sentence("Updated", name, &found))?;
    Ok(())
}

fn remove(db: &Path, name: &str) -> CliResult<()> {
    let mut registry = Registry::open(db, Access::Write)?.ok_or_else(|| not_registered(name))?;
    registry.remove(name)?;
    stdout::line(&format!("Removed hook \"{name}\"."))?;
    Ok(())
}

/// A URL as the user gave it, unless it may carry a secret (userinfo, a query, a fragment):
/// then the engine's redaction of it.
fn shown_url(url: &str) -> String {
    if url.contains(['@', '?', '#']) {
        redact_url(url)
    } else {
        url.to_string()
    }
}

/// The engine's reason a hook could not be read, once: it starts with `remote hook "NAME": `,
/// sometimes twice.
fn reason(name: &str, error: &str) -> String {
    let prefix = format!("remote hook {name:?}: ");
    let mut text = error;
    while let Some(rest) = text.strip_prefix(&prefix) {
        text = rest;
    }
    clean_line(&cut_chars(text, 300))
}

fn timeout_text(ms: u64) -> String {
    format!("{ms}ms")
}

/// Names joined, then `(values hidden)`; `(none)` for none.
fn keys_hidden<'a>(keys: impl Iterator<Item = &'a String>) -> String {
    let keys: Vec<String> = keys.map(|k| clean_line(k)).collect();
    if keys.is_empty() {
        "(none)".into()
    } else {
        format!("{} (values hidden)", keys.join(", "))
    }
}

async fn show(db: &Path, name: &str) -> CliResult<()> {
    let registry = Registry::open(db, Access::Read)?.ok_or_else(|| not_registered(name))?;
    let StoredHook {
        hook,
        created_at,
        updated_at,
    } = registry.get(name)?.ok_or_else(|| not_registered(name))?;
    drop(registry);
    let spec = match &hook.spec_url {
        Some(s) => shown_url(s),
        None if hook.protocol == Protocol::Openapi => {
            format!(
                "{}/openapi.json (default)",
                shown_url(&hook.url).trim_end_matches('/')
            )
        }
        None => "(none: the tool is read from <url>/schema)".into(),
    };
    stdout::line(&format!("Name:       {}", hook.name))?;
    stdout::line(&format!(
        "URL:        {}",
        clean_line(&shown_url(&hook.url))
    ))?;
    stdout::line(&format!("Protocol:   {}", hook.protocol.as_str()))?;
    stdout::line(&format!("Timeout:    {}", timeout_text(hook.timeout_ms)))?;
    stdout::line(&format!("Spec:       {}", clean_line(&spec)))?;
    stdout::line(&format!("Registered: {created_at}"))?;
    if updated_at != created_at {
        stdout::line(&format!("Updated:    {updated_at}"))?;
    }
    stdout::line(&format!("Headers:    {}", keys_hidden(hook.headers.keys())))?;
    stdout::line(&format!("Inject:     {}", keys_hidden(hook.inject.keys())))?;
    match probe(&hook).await {
        Ok(tools) => {
            stdout::line(&format!("Tools ({}):", tools.len()))?;
            let width = tools
                .iter()
                .map(|(n, _)| n.len())
                .max()
                .unwrap_or(0)
                .min(40);
            for (tool, description) in &tools {
                let line = description.lines().next().unwrap_or("").trim();
                stdout::line(&format!(
                    "  {:<width$}  {}",
                    tool,
                    clean_line(&cut_chars(line, 100)),
                    width = width
                ))?;
            }
        }
        Err(error) => stdout::line(&format!(
            "Tools:      not reachable: {}",
            reason(name, &error)
        ))?,
    }
    Ok(())
}

fn list(db: &Path) -> CliResult<()> {
    let hooks = match Registry::open(db, Access::Read)? {
        Some(registry) => registry.list()?,
        None => Vec::new(),
    };
    if hooks.is_empty() {
        stdout::line(
            "No hooks registered. Add one with `contenox hook add <name> --url <endpoint>`.",
        )?;
        return Ok(());
    }
    let rows: Vec<[String; 4]> = hooks
        .iter()
        .map(|s| {
            [
                s.hook.name.clone(),
                clean_line(&shown_url(&s.hook.url)),
                timeout_text(s.hook.timeout_ms),
                s.hook.protocol.as_str().to_string(),
            ]
        })
        .collect();
    let header = ["NAME", "URL", "TIMEOUT", "PROTOCOL"].map(String::from);
    let widths: Vec<usize> = (0..4)
        .map(|c| {
            std::iter::once(&header)
                .chain(&rows)
                .map(|r| r[c].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    for row in std::iter::once(&header).chain(&rows) {
        let line = format!(
            "{:<w0$}  {:<w1$}  {:<w2$}  {}",
            row[0],
            row[1],
            row[2],
            row[3],
            w0 = widths[0],
            w1 = widths[1],
            w2 = widths[2]
        );
        stdout::line(line.trim_end())?;
    }
    Ok(())
}
