//! Reading a chain: the JSON Schema of the Go runtime first, then the checks a schema cannot
//! make (gotos that name no task, unknown handlers and operators, macros, allowlists). A chain
//! that fails any of them is refused before anything runs, with the field named.

use std::collections::HashMap;
use std::sync::OnceLock;
use std::time::Duration;

use serde_json::{Map, Value};

use super::definition::{ChainDef, TaskDef, ToolsCall};
use super::duration::parse_go_duration;
use super::limits::{Limits, CEILING};
use super::operator::Operator;
use super::template::Template;
use super::tools::TaskTools;
use crate::error::{Error, Result};
use crate::style::Style;

/// The most tasks one run of a chain executes unless the chain says otherwise (`max_steps`).
pub const DEFAULT_MAX_STEPS: u32 = 100;

/// The Go runtime's chain schema, verbatim.
const SCHEMA: &str = include_str!("task-chain.schema.json");

/// The handlers this engine runs.
pub(crate) const HANDLERS: &[&str] = &[
    "chat_completion",
    "execute_tool_calls",
    "tools",
    "hook",
    "noop",
    "raise_error",
    "prompt_to_string",
];

/// The target of a transition: a task (its index) or the end of the chain.
pub(crate) type Goto = Option<usize>;

/// What a task does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Handler {
    ChatCompletion,
    ExecuteToolCalls,
    Tools,
    Noop,
    RaiseError,
    PromptToString,
}

/// One branch, resolved.
#[derive(Debug, Clone)]
pub(crate) struct Branch {
    pub operator: Operator,
    pub goto: Goto,
}

/// A `tools` task's direct call.
#[derive(Debug, Clone)]
pub(crate) struct DirectCall {
    /// The provider: a hook / MCP server name, or a tool's own name.
    pub provider: String,
    pub tool_name: Option<String>,
    /// The arguments; their strings are templates.
    pub args: Map<String, Value>,
    /// The parsed templates of the string arguments, by JSON pointer.
    pub arg_templates: Vec<(String, Template)>,
}

/// One task, checked and compiled.
#[derive(Debug, Clone)]
pub(crate) struct Task {
    pub id: String,
    pub handler: Handler,
    /// The handler's name as the chain wrote it (`tools` or `hook`, ...), for events.
    pub handler_name: String,
    pub system: Option<Template>,
    pub prompt: Option<Template>,
    /// `None`: the previous task's output (the chain's input for the first task run).
    pub input_var: Option<String>,
    /// A model name for this task's requests (not given, or a `{{var:model}}` macro: the client's).
    pub model: Option<String>,
    /// The provider `execute_config.provider` names (not given, or a macro: the client's).
    pub provider: Option<String>,
    pub tools: TaskTools,
    pub call: Option<DirectCall>,
    pub input_max_bytes: Option<usize>,
    pub timeout: Option<Duration>,
    pub retries: u32,
    pub on_failure: Goto,
    pub branches: Vec<Branch>,
}

/// A task chain, read and checked: the Go runtime's chain JSON (`id`, `tasks[]` with `handler`,
/// `system_instruction`, `prompt_template`, `input_var`, `execute_config`, `transition`, ...).
/// Run it with [`Client::run_chain`](crate::Client::run_chain). See [`crate::chain`].
#[derive(Debug, Clone)]
pub struct Chain {
    pub(crate) id: String,
    description: Option<String>,
    pub(crate) tasks: Vec<Task>,
    pub(crate) max_steps: u32,
    pub(crate) limits: Limits,
    ignored: Vec<String>,
}

impl Chain {
    /// Read a chain from its JSON text. `Err` ([`Error::Config`]) names the field that is wrong.
    pub fn from_json(text: &str) -> Result<Chain> {
        let value: Value = serde_json::from_str(text)
            .map_err(|e| Error::config(format!("chain: not JSON: {e}")))?;
        Chain::from_value(value)
    }

    /// Read a chain from a JSON value. `Err` ([`Error::Config`]) names the field that is wrong.
    pub fn from_value(value: Value) -> Result<Chain> {
        check_schema(&value)?;
        let def: ChainDef = serde_path_to_error::deserialize(value).map_err(|e| {
            let at = e.path().to_string();
            let inner = e.into_inner();
            if at == "." {
                Error::config(format!("chain: {inner}"))
            } else {
                Error::config(format!("chain: at {at}: {inner}"))
            }
        })?;
        compile(def)
    }

    /// The chain's `id`.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The chain's `description`, when it has one.
    pub fn description(&self) -> Option<&str> {
        self.description.as_deref()
    }

    /// The ids of its tasks, in order.
    pub fn task_ids(&self) -> Vec<&str> {
        self.tasks.iter().map(|t| t.id.as_str()).collect()
    }

    /// The most tasks one run executes before it stops with an error.
    pub fn max_steps(&self) -> u32 {
        self.max_steps
    }

    /// The same chain with another step limit (at least 1).
    pub fn with_max_steps(mut self, n: u32) -> Chain {
        self.max_steps = n.max(1);
        self
    }

    /// The size caps of a run: rendered texts, variables, what a run adds to the conversation.
    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// The same chain with other size caps (each kept within 1 byte..=1 GiB).
    pub fn with_limits(mut self, limits: Limits) -> Chain {
        self.limits = limits.clamped();
        self
    }

    /// Fields the chain sets that this engine reads but does not act on (for example
    /// `tasks[0].execute_config.temperature`), each with what happens instead. A host shows
    /// them so nobody relies on them silently.
    pub fn ignored_fields(&self) -> &[String] {
        &self.ignored
    }

    /// Each task's `execute_config.provider`, when it names one, must be the style of the client
    /// that runs the chain: a task's requests go through that client's connection, and a chain
    /// written for another provider would silently talk to the wrong one. Checked before the
    /// chain starts; the error names the task and the field.
    pub(crate) fn check_providers(&self, style: Style) -> Result<()> {
        let name = style.name();
        for (i, task) in self.tasks.iter().enumerate() {
            let Some(provider) = &task.provider else {
                continue;
            };
            if provider.trim().eq_ignore_ascii_case(name) {
                continue;
            }
            return Err(Error::config(format!(
                "chain: at tasks[{i}].execute_config.provider: task {:?} asks for provider \
                 {provider:?}, but this client's model is {name}: a chain task runs on its \
                 client's connection. Run the chain on a client of that provider, or remove \
                 the key",
                task.id
            )));
        }
        Ok(())
    }
}

fn schema_validator() -> &'static jsonschema::Validator {
    static VALIDATOR: OnceLock<jsonschema::Validator> = OnceLock::new();
    VALIDATOR.get_or_init(|| {
        // Cannot fail: SCHEMA is the crate's own document, parsed and compiled by every chain test.
        let schema: Value = serde_json::from_str(SCHEMA).expect("the chain schema is JSON");
        jsonschema::validator_for(&schema).expect("the chain schema compiles")
    })
}

fn check_schema(value: &Value) -> Result<()> {
    let problems: Vec<String> = schema_validator()
        .iter_errors(value)
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
        Err(Error::config(format!(
            "chain does not match the task-chain schema: {}",
            problems.join("; ")
        )))
    }
}

/// The checks the schema cannot make, and the compiled tasks.
fn compile(def: ChainDef) -> Result<Chain> {
    let bad = |at: String, msg: String| Error::config(format!("chain: at {at}: {msg}"));
    if def.id.trim().is_empty() {
        return Err(bad("id".into(), "must not be empty".into()));
    }
    let mut index: HashMap<&str, usize> = HashMap::new();
    for (i, t) in def.tasks.iter().enumerate() {
        let at = format!("tasks[{i}].id");
        if t.id.trim().is_empty() {
            return Err(bad(at, "must not be empty".into()));
        }
        if t.id == "end" {
            return Err(bad(
                at,
                "\"end\" ends a chain; it cannot be a task's id".into(),
            ));
        }
        if let Some(first) = index.insert(&t.id, i) {
            return Err(bad(
                at,
                format!("{:?} is also the id of tasks[{first}]", t.id),
            ));
        }
    }
    let ids: Vec<&str> = def.tasks.iter().map(|t| t.id.as_str()).collect();
    let goto = |at: String, target: &str| -> Result<Goto> {
        if target.is_empty() || target == "end" {
            return Ok(None);
        }
        index.get(target).copied().map(Some).ok_or_else(|| {
            bad(
                at,
                format!(
                    "{target:?} names no task (the tasks are {}; \"end\" ends the chain)",
                    ids.join(", ")
                ),
            )
        })
    };
    let mut ignored = Vec::new();
    for (field, set) in [
        ("token_limit", def.token_limit.is_some()),
        ("debug", def.debug.is_some()),
    ] {
        if set {
            ignored.push(format!("{field} (not used by this engine)"));
        }
    }
    let max_steps = match def.max_steps {
        None => DEFAULT_MAX_STEPS,
        Some(n) if (1..=1_000_000).contains(&n) => n as u32,
        Some(n) => {
            return Err(bad(
                "max_steps".into(),
                format!("{n} is not in 1..=1000000"),
            ))
        }
    };
    let cap = |key: &str, given: Option<i64>, default: usize| -> Result<usize> {
        match given {
            None => Ok(default),
            Some(n) if n >= 1 && n as u64 <= CEILING as u64 => Ok(n as usize),
            Some(n) => Err(bad(key.into(), format!("{n} is not in 1..={CEILING}"))),
        }
    };
    let defaults = Limits::default();
    let limits = Limits {
        template_bytes: cap(
            "max_template_bytes",
            def.max_template_bytes,
            defaults.template_bytes,
        )?,
        variable_bytes: cap(
            "max_variable_bytes",
            def.max_variable_bytes,
            defaults.variable_bytes,
        )?,
        history_bytes: cap(
            "max_history_bytes",
            def.max_history_bytes,
            defaults.history_bytes,
        )?,
    };
    let mut tasks = Vec::with_capacity(def.tasks.len());
    for (i, t) in def.tasks.iter().enumerate() {
        tasks.push(compile_task(i, t, &ids, &goto, &mut ignored)?);
    }
    // An edge names two tasks, checked once every id is known.
    for (i, t) in tasks.iter().enumerate() {
        for (b, branch) in t.branches.iter().enumerate() {
            if let Operator::EdgeTraversedAtLeast { from, to, .. } = &branch.operator {
                for end in [from, to] {
                    if !index.contains_key(end.as_str()) {
                        return Err(bad(
                            format!("tasks[{i}].transition.branches[{b}].edge"),
                            format!("{end:?} names no task"),
                        ));
                    }
                }
            }
        }
    }
    Ok(Chain {
        id: def.id,
        description: def.description,
        tasks,
        max_steps,
        limits,
        ignored,
    })
}

fn compile_task(
    i: usize,
    t: &TaskDef,
    ids: &[&str],
    goto: &dyn Fn(String, &str) -> Result<Goto>,
    ignored: &mut Vec<String>,
) -> Result<Task> {
    let at = |field: &str| format!("tasks[{i}].{field}");
    let bad = |field: &str, msg: String| Error::config(format!("chain: at {}: {msg}", at(field)));
    let handler = match t.handler.as_str() {
        "chat_completion" => Handler::ChatCompletion,
        "execute_tool_calls" => Handler::ExecuteToolCalls,
        "tools" | "hook" => Handler::Tools,
        "noop" => Handler::Noop,
        "raise_error" => Handler::RaiseError,
        "prompt_to_string" => Handler::PromptToString,
        other => {
            return Err(bad(
                "handler",
                format!(
                    "{other:?} is not a handler this engine runs (one of: {})",
                    HANDLERS.join(", ")
                ),
            ))
        }
    };
    let template = |field: &str, text: &Option<String>| -> Result<Option<Template>> {
        text.as_deref()
            .map(|s| Template::parse(s, ids).map_err(|e| bad(field, e)))
            .transpose()
    };
    let system = template("system_instruction", &t.system_instruction)?;
    let prompt = template("prompt_template", &t.prompt_template)?;
    if handler == Handler::PromptToString && prompt.is_none() {
        return Err(bad(
            "prompt_template",
            "a prompt_to_string task needs a prompt_template".into(),
        ));
    }
    if let Some(var) = &t.input_var {
        if var != "input" && !ids.contains(&var.as_str()) {
            return Err(bad(
                "input_var",
                format!(
                    "{var:?} names no task (use a task id, or \"input\" for the chain's input)"
                ),
            ));
        }
    }
    let exec = t.execute_config.clone().unwrap_or_default();
    if exec.tools.is_some() && exec.hooks.is_some() {
        return Err(bad(
            "execute_config.hooks",
            "give the allowlist once: \"tools\" or its older name \"hooks\", not both".into(),
        ));
    }
    let allow = exec.tools.as_deref().or(exec.hooks.as_deref());
    let field = if exec.hooks.is_some() {
        "hooks"
    } else {
        "tools"
    };
    let tools = TaskTools::new(allow, exec.hide_tools.as_deref())
        .map_err(|e| bad(&format!("execute_config.{field}"), e.to_string()))?;
    let is_macro = |s: &str| s.trim_start().starts_with("{{");
    let model = exec
        .model
        .as_deref()
        .filter(|m| !m.trim().is_empty() && !is_macro(m))
        .map(str::to_string);
    // A task runs on its client's connection: a provider that names it is honoured, any other
    // is refused when the chain starts on a client (see `Chain::check_providers`).
    let provider = exec
        .provider
        .as_deref()
        .filter(|p| !is_macro(p) && !p.trim().is_empty())
        .map(str::to_string);
    let ec = |f: &str| {
        format!(
            "{} (not supported; ignored)",
            at(&format!("execute_config.{f}"))
        )
    };
    for (f, set) in [
        ("models", exec.models.is_some()),
        ("providers", exec.providers.is_some()),
        ("temperature", exec.temperature.is_some()),
        ("tools_policies", exec.tools_policies.is_some()),
        ("pass_clients_tools", exec.pass_clients_tools.is_some()),
        ("think", exec.think.is_some()),
        ("max_tokens", exec.max_tokens.is_some()),
        ("shift", exec.shift.is_some()),
        ("retry_policy", exec.retry_policy.is_some()),
    ] {
        if set {
            ignored.push(ec(f));
        }
    }
    for (f, set) in [
        ("print", t.print.is_some()),
        ("output_template", t.output_template.is_some()),
    ] {
        if set {
            ignored.push(format!("{} (not supported; ignored)", at(f)));
        }
    }
    let call = match (&t.tools, &t.hook) {
        (Some(_), Some(_)) => {
            return Err(bad(
                "hook",
                "give the direct call once: \"tools\" or its older name \"hook\", not both".into(),
            ))
        }
        (Some(c), None) | (None, Some(c)) => Some(direct_call(c, ids, &|f, m| {
            let block = if t.tools.is_some() { "tools" } else { "hook" };
            bad(&format!("{block}.{f}"), m)
        })?),
        (None, None) => None,
    };
    if handler == Handler::Tools && call.is_none() {
        return Err(bad(
            "tools",
            format!(
                "a {:?} task needs a \"tools\" block: {{\"name\": provider, \"tool_name\": tool, \"args\": {{...}}}}",
                t.handler
            ),
        ));
    }
    let input_max_bytes = match t.input_max_bytes {
        None => None,
        Some(n) if n > 0 => Some(usize::try_from(n).unwrap_or(usize::MAX)),
        Some(n) => {
            return Err(bad(
                "input_max_bytes",
                format!("{n} is not a positive number"),
            ))
        }
    };
    let timeout = t
        .timeout
        .as_deref()
        .map(|s| parse_go_duration(s).map_err(|e| bad("timeout", e)))
        .transpose()?
        .filter(|d| !d.is_zero());
    let retries = match t.retry_on_failure {
        None => 0,
        Some(n) if (0..=100).contains(&n) => n as u32,
        Some(n) => return Err(bad("retry_on_failure", format!("{n} is not in 0..=100"))),
    };
    let transition = t.transition.clone().unwrap_or_default();
    let on_failure = match &transition.on_failure {
        Some(target) if !target.is_empty() => {
            let g = goto(at("transition.on_failure"), target)?;
            if g.is_none() {
                return Err(bad(
                    "transition.on_failure",
                    "names the task to go to when this one fails; \"end\" is not a task".into(),
                ));
            }
            g
        }
        _ => None,
    };
    let mut branches = Vec::with_capacity(transition.branches.len());
    for (b, def) in transition.branches.iter().enumerate() {
        let here = format!("transition.branches[{b}]");
        // The seed's two spellings of chat_completion's control tokens mean the same.
        let when = match (handler, def.operator.as_str(), def.when.as_str()) {
            (Handler::ChatCompletion, "equals", "tool_call") => "tool-call",
            (Handler::ChatCompletion, "equals", "executed") => "stop",
            (_, _, w) => w,
        };
        let operator = Operator::parse(&def.operator, when, def.edge.as_deref()).map_err(|e| {
            let (key, msg) = e.split_once(": ").unwrap_or(("operator", e.as_str()));
            bad(&format!("{here}.{key}"), msg.to_string())
        })?;
        let goto = goto(at(&format!("{here}.goto")), &def.goto)?;
        branches.push(Branch { operator, goto });
    }
    Ok(Task {
        id: t.id.clone(),
        handler,
        handler_name: t.handler.clone(),
        system,
        prompt,
        input_var: t.input_var.clone(),
        model,
        provider,
        tools,
        call,
        input_max_bytes,
        timeout,
        retries,
        on_failure,
        branches,
    })
}

fn direct_call(
    c: &ToolsCall,
    ids: &[&str],
    bad: &dyn Fn(&str, String) -> Error,
) -> Result<DirectCall> {
    if c.name.trim().is_empty() {
        return Err(bad(
            "name",
            "names the provider (a hook, an MCP server or a tool); it must not be empty".into(),
        ));
    }
    let mut arg_templates = Vec::new();
    collect_templates(
        &Value::Object(c.args.clone()),
        String::new(),
        ids,
        &mut arg_templates,
    )
    .map_err(|(at, e)| bad(&format!("args{at}"), e))?;
    Ok(DirectCall {
        provider: c.name.clone(),
        tool_name: c.tool_name.clone().filter(|n| !n.is_empty()),
        args: c.args.clone(),
        arg_templates,
    })
}

/// Every string with a macro inside `value`, by JSON pointer.
fn collect_templates(
    value: &Value,
    pointer: String,
    ids: &[&str],
    out: &mut Vec<(String, Template)>,
) -> std::result::Result<(), (String, String)> {
    match value {
        Value::String(s) => {
            let t = Template::parse(s, ids).map_err(|e| (pointer.clone(), e))?;
            if !t.is_plain() {
                out.push((pointer, t));
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                collect_templates(v, format!("{pointer}/{i}"), ids, out)?;
            }
        }
        Value::Object(map) => {
            for (k, v) in map {
                let key = k.replace('~', "~0").replace('/', "~1");
                collect_templates(v, format!("{pointer}/{key}"), ids, out)?;
            }
        }
        _ => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The seed's weather chain, as its documentation writes it.
    fn weather() -> Value {
        json!({
          "id": "chain-nws",
          "description": "Query the US National Weather Service via natural language.",
          "token_limit": 32768,
          "tasks": [
            {
              "id": "nws_chat",
              "handler": "chat_completion",
              "system_instruction": "You are a weather assistant with access to the US National Weather Service API. Use the tools to answer weather questions. Today is {{now:2006-01-02}}.",
              "execute_config": {
                "model": "{{var:model}}",
                "provider": "{{var:provider}}",
                "hooks": ["nws"]
              },
              "transition": {
                "branches": [
                  { "operator": "equals", "when": "tool-call", "goto": "run_tools" },
                  { "operator": "default", "when": "", "goto": "end" }
                ]
              }
            },
            {
              "id": "run_tools",
              "handler": "execute_tool_calls",
              "input_var": "nws_chat",
              "transition": {
                "branches": [
                  { "operator": "default", "when": "", "goto": "nws_chat" }
                ]
              }
            }
          ]
        })
    }

    fn error(v: Value) -> String {
        Chain::from_value(v).unwrap_err().to_string()
    }

    #[test]
    fn the_seed_weather_chain_reads() {
        let chain = Chain::from_value(weather()).unwrap();
        assert_eq!(chain.id(), "chain-nws");
        assert_eq!(chain.task_ids(), ["nws_chat", "run_tools"]);
        assert_eq!(chain.max_steps(), DEFAULT_MAX_STEPS);
        let t = &chain.tasks[0];
        assert_eq!(t.model, None, "{{{{var:model}}}} means the client's model");
        assert!(t.tools.sees("point", Some("nws")));
        assert!(!t.tools.sees("bash", None));
        assert_eq!(t.branches[0].goto, Some(1));
        assert_eq!(t.branches[1].goto, None);
        assert_eq!(chain.tasks[1].branches[0].goto, Some(0));
        assert_eq!(
            chain.ignored_fields(),
            ["token_limit (not used by this engine)"]
        );
        // The newer spelling of the control tokens means the same.
        let mut newer = weather();
        newer["tasks"][0]["transition"]["branches"][0]["when"] = json!("tool_call");
        let chain = Chain::from_value(newer).unwrap();
        assert_eq!(
            chain.tasks[0].branches[0].operator,
            Operator::Equals("tool-call".into())
        );
    }

    #[test]
    fn schema_errors_name_the_field() {
        let e = error(json!({"id": "x"}));
        assert!(e.contains("tasks"), "{e}");
        let e = error(json!({"id": "x", "tasks": []}));
        assert!(e.contains("schema") && e.contains("/tasks"), "{e}");
        let e = error(json!({"id": "x", "tasks": [{"id": "a", "handler": 5}]}));
        assert!(e.contains("/tasks/0/handler"), "{e}");
        let e = error(json!({"id": "x", "tasks": [{"id": "a"}]}));
        assert!(e.contains("handler"), "{e}");
        assert!(Chain::from_json("{not json")
            .unwrap_err()
            .to_string()
            .contains("not JSON"));
    }

    #[test]
    fn semantic_errors_name_the_field() {
        let mut v = weather();
        v["tasks"][1]["transition"]["branches"][0]["goto"] = json!("nws_chatt");
        let e = error(v);
        assert!(
            e.contains("tasks[1].transition.branches[0].goto") && e.contains("nws_chatt"),
            "{e}"
        );

        let mut v = weather();
        v["tasks"][0]["transition"]["branches"][0]["operator"] = json!("equal");
        let e = error(v);
        assert!(
            e.contains("tasks[0].transition.branches[0].operator"),
            "{e}"
        );

        let mut v = weather();
        v["tasks"][0]["handler"] = json!("chat");
        let e = error(v);
        assert!(
            e.contains("tasks[0].handler") && e.contains("\"chat\""),
            "{e}"
        );

        let mut v = weather();
        v["tasks"][0]["transitions"] = json!({});
        let e = error(v);
        assert!(e.contains("tasks[0]") && e.contains("transitions"), "{e}");

        let mut v = weather();
        v["tasks"][0]["execute_config"]["tols"] = json!(["x"]);
        let e = error(v);
        assert!(
            e.contains("tasks[0].execute_config") && e.contains("tols"),
            "{e}"
        );

        let mut v = weather();
        v["tasks"][1]["id"] = json!("nws_chat");
        assert!(error(v).contains("tasks[1].id"));

        let mut v = weather();
        v["tasks"][1]["input_var"] = json!("nobody");
        assert!(error(v).contains("tasks[1].input_var"));

        let mut v = weather();
        v["tasks"][0]["transition"]["on_failure"] = json!("gone");
        assert!(error(v).contains("tasks[0].transition.on_failure"));

        let mut v = weather();
        v["tasks"][0]["transition"]["branches"][0] =
            json!({"operator": "gt", "when": "many", "goto": "end"});
        assert!(error(v).contains("tasks[0].transition.branches[0].when"));

        let mut v = weather();
        v["tasks"][0]["system_instruction"] = json!("{{ .input | toJson }}");
        assert!(error(v).contains("tasks[0].system_instruction"));

        let mut v = weather();
        v["tasks"][0]["execute_config"]["tools"] = json!(["x"]);
        assert!(error(v).contains("tasks[0].execute_config.hooks"));

        let mut v = weather();
        v["tasks"][0]["execute_config"]["hooks"] = json!(["[oops"]);
        assert!(error(v).contains("tasks[0].execute_config.hooks"));

        let mut v = weather();
        v["tasks"][0]["timeout"] = json!("soon");
        assert!(error(v).contains("tasks[0].timeout"));

        let mut v = weather();
        v["tasks"][1]["id"] = json!("end");
        assert!(error(v).contains("tasks[1].id"));

        let mut v = weather();
        v["max_steps"] = json!(0);
        assert!(error(v).contains("max_steps"));

        let e = error(json!({"id": "x", "tasks": [{"id": "a", "handler": "tools"}]}));
        assert!(e.contains("tasks[0].tools"), "{e}");
        let e = error(json!({"id": "x", "tasks": [{"id": "a", "handler": "tools",
            "tools": {"name": "n", "args": {"q": "{{.nope}}"}}}]}));
        assert!(e.contains("tasks[0].tools.args/q"), "{e}");
        let e = error(json!({"id": "x", "tasks": [{"id": "a", "handler": "noop",
            "transition": {"branches": [{"operator": "edge_traversed_at_least",
              "edge": "a->b", "when": "2", "goto": "end"}]}}]}));
        assert!(e.contains("tasks[0].transition.branches[0].edge"), "{e}");
    }

    #[test]
    fn ignored_fields_are_reported() {
        let mut v = weather();
        v["tasks"][0]["execute_config"]["temperature"] = json!(0.2);
        v["tasks"][0]["execute_config"]["provider"] = json!("ollama");
        v["tasks"][1]["print"] = json!("done");
        let chain = Chain::from_value(v).unwrap();
        let ignored = chain.ignored_fields().join("\n");
        assert!(
            ignored.contains("tasks[0].execute_config.temperature"),
            "{ignored}"
        );
        assert!(
            !ignored.contains("execute_config.provider"),
            "a provider is checked, not ignored: {ignored}"
        );
        assert!(ignored.contains("tasks[1].print"), "{ignored}");
    }

    #[test]
    fn a_provider_must_be_the_clients_style() {
        let mut v = weather();
        v["tasks"][0]["execute_config"]["provider"] = json!("Ollama");
        let chain = Chain::from_value(v.clone()).unwrap();
        chain.check_providers(Style::Ollama).unwrap();
        let e = chain.check_providers(Style::Openai).unwrap_err();
        let Error::Config(c) = &e else {
            panic!("{e:?}")
        };
        let text = e.to_string();
        assert!(c.reason.contains("this client's model is openai"), "{text}");
        assert!(text.contains("tasks[0].execute_config.provider"), "{text}");
        // A macro, an empty value or no key: the client's own connection.
        for p in [Some(json!("{{var:provider}}")), Some(json!("")), None] {
            match p {
                Some(p) => v["tasks"][0]["execute_config"]["provider"] = p,
                None => {
                    v["tasks"][0]["execute_config"]
                        .as_object_mut()
                        .unwrap()
                        .remove("provider");
                }
            }
            Chain::from_value(v.clone())
                .unwrap()
                .check_providers(Style::Anthropic)
                .unwrap();
        }
    }
}
