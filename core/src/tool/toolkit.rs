//! The registry of tools a client offers.

use std::sync::{Arc, OnceLock};

use parking_lot::RwLock;

use serde_json::Value;

use super::{valid_tool_name, Allowlist, CallTool, Source, Tier, Tool, ToolSpec, CALL_TOOL};
use crate::error::{Error, Result};

/// One registered tool with what the engine needs at call time.
pub(crate) struct Entry {
    pub tool: Arc<dyn Tool>,
    /// Shared, not copied: the builtins' specs are one allocation per process (see
    /// `builtin::shared`), and a model request points at them instead of cloning schemas.
    pub spec: Arc<ToolSpec>,
    pub source: Source,
    pub server: Option<String>,
    /// Compiled on first use: most tools are never called in a given process.
    validator: OnceLock<Option<jsonschema::Validator>>,
}

impl Entry {
    /// Check `args` against the input schema; `Err` lists what does not match.
    pub fn validate(&self, args: &Value) -> std::result::Result<(), String> {
        let validator = self
            .validator
            .get_or_init(|| jsonschema::validator_for(&self.spec.input_schema).ok());
        let Some(v) = validator else { return Ok(()) };
        let problems: Vec<String> = v
            .iter_errors(args)
            .take(5)
            .map(|e| {
                let at = e.instance_path().to_string();
                if at.is_empty() {
                    e.to_string()
                } else {
                    format!("at {at}: {e}")
                }
            })
            .collect();
        if problems.is_empty() {
            Ok(())
        } else {
            Err(problems.join("; "))
        }
    }
}

/// The tools of a client. Tools may be registered and unregistered at any time; a turn reads
/// the registry afresh for every model request.
#[derive(Default)]
pub struct Toolkit {
    entries: RwLock<Vec<Arc<Entry>>>,
}

impl Toolkit {
    /// Add a tool, replacing any tool of the same name.
    pub fn register(&self, tool: Arc<dyn Tool>) -> Result<()> {
        let spec = tool.spec();
        check_spec(&spec)?;
        self.insert(tool, Arc::new(spec));
        Ok(())
    }

    /// Add a tool whose spec was already checked by [`check_spec`] (a builtin's shared spec).
    pub(crate) fn register_checked(&self, tool: Arc<dyn Tool>, spec: Arc<ToolSpec>) {
        self.insert(tool, spec);
    }

    fn insert(&self, tool: Arc<dyn Tool>, spec: Arc<ToolSpec>) {
        let entry = Arc::new(Entry {
            source: tool.source(),
            server: tool.server(),
            tool,
            spec,
            validator: OnceLock::new(),
        });
        let mut entries = self.entries.write();
        match entries.iter().position(|e| e.spec.name == entry.spec.name) {
            Some(i) => entries[i] = entry,
            None => entries.push(entry),
        }
    }

    /// Remove a tool by name; true when it was there.
    pub fn unregister(&self, name: &str) -> bool {
        let mut entries = self.entries.write();
        let before = entries.len();
        entries.retain(|e| e.spec.name != name);
        entries.len() != before
    }

    /// The specs of all registered tools, allowed or not.
    pub fn specs(&self) -> Vec<ToolSpec> {
        let entries = self.entries.read();
        entries.iter().map(|e| ToolSpec::clone(&e.spec)).collect()
    }

    /// The name and the server (hook / MCP server, when it has one) of every registered tool.
    pub(crate) fn names_and_servers(&self) -> Vec<(String, Option<String>)> {
        let entries = self.entries.read();
        entries
            .iter()
            .map(|e| (e.spec.name.clone(), e.server.clone()))
            .collect()
    }

    /// The registered tool of that name, when `allowed` lets it through.
    pub(crate) fn lookup(&self, name: &str, allowed: &dyn Fn(&str) -> bool) -> Option<Arc<Entry>> {
        if !allowed(name) {
            return None;
        }
        let entries = self.entries.read();
        entries.iter().find(|e| e.spec.name == name).cloned()
    }

    /// The specs the model is offered now: allowed core tools, plus `call_tool` when some allowed
    /// tool is deferred.
    pub(crate) fn offered(&self, allowed: &dyn Fn(&str) -> bool) -> Vec<Arc<ToolSpec>> {
        let entries = self.entries.read();
        let mut offered = Vec::with_capacity(entries.len() + 1);
        let mut deferred = Vec::new();
        for e in entries.iter().filter(|e| allowed(&e.spec.name)) {
            match e.spec.tier {
                Tier::Core => offered.push(e.spec.clone()),
                Tier::Deferred => deferred.push(&*e.spec),
            }
        }
        if !deferred.is_empty() {
            offered.push(Arc::new(CallTool::spec(&deferred)));
        }
        offered
    }

    /// The allowed deferred tools whose name or description contains `query` (case-insensitive).
    pub(crate) fn search_deferred(
        &self,
        query: &str,
        allowed: &dyn Fn(&str) -> bool,
    ) -> Vec<ToolSpec> {
        let q = query.to_lowercase();
        let entries = self.entries.read();
        entries
            .iter()
            .filter(|e| e.spec.tier == Tier::Deferred && allowed(&e.spec.name))
            .filter(|e| {
                q.is_empty()
                    || e.spec.name.to_lowercase().contains(&q)
                    || e.spec.description.to_lowercase().contains(&q)
            })
            .map(|e| ToolSpec::clone(&e.spec))
            .collect()
    }
}

/// Refuse a spec the engine cannot offer: a bad or reserved name, an input schema that is not
/// a JSON Schema object.
pub(crate) fn check_spec(spec: &ToolSpec) -> Result<()> {
    if !valid_tool_name(&spec.name) {
        return Err(Error::Tool(format!(
            "tool name {:?} must match ^[A-Za-z0-9_-]{{1,64}}$",
            spec.name
        )));
    }
    if spec.name == CALL_TOOL {
        return Err(Error::Tool(format!("{CALL_TOOL} is reserved")));
    }
    if !spec.input_schema.is_object() {
        return Err(Error::Tool(format!(
            "tool {}: input_schema must be a JSON object",
            spec.name
        )));
    }
    if let Err(e) = jsonschema::meta::validate(&spec.input_schema) {
        return Err(Error::Tool(format!(
            "tool {}: input_schema is not a valid JSON Schema: {e}",
            spec.name
        )));
    }
    Ok(())
}

/// Whether a name passes both the client's and the run's allowlists.
pub(crate) fn allowed_by(client: &Allowlist, run: Option<&Allowlist>, name: &str) -> bool {
    client.allows(name) && run.is_none_or(|r| r.allows(name))
}
