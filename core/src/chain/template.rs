//! The macros of chain texts (`system_instruction`, `prompt_template`, string `args`), checked
//! when the chain is read and expanded when the task runs.
//!
//! - `{{.input}}` the chain's input; `{{.TASK_ID}}` that task's output text (empty until it ran)
//! - `{{hookservice:list}}` the names of the tools this task can see, comma-separated;
//!   `{{hookservice:hooks}}` the hooks / MCP servers they come from; `{{hookservice:tools
//!   NAME}}` the tools of one of them
//! - `{{now}}` the local time (RFC 3339); `{{now:LAYOUT}}` in a Go time layout (`2006-01-02`)
//! - `{{var:model}}`, `{{var:provider}}`, `{{var:chain}}` the task's model, the client's style,
//!   the chain's id; `{{var:NAME|default}}` a default for any of them; `{{chain:id}}`
//!
//! Anything else between `{{` and `}}` is refused when the chain is read: Go's full template
//! language (pipes, `if`, functions) is not supported, and a template that silently rendered
//! as written would send the model text nobody meant.

use std::borrow::Cow;

use chrono::Local;

/// A parsed text: literal pieces and macros.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Template {
    parts: Vec<Part>,
}

#[derive(Debug, Clone, PartialEq)]
enum Part {
    Text(String),
    /// `{{.name}}`
    Var(String),
    /// `{{hookservice:list}}`
    ToolList,
    /// `{{hookservice:hooks}}`
    HookList,
    /// `{{hookservice:tools NAME}}`
    ToolsOf(String),
    /// `{{now}}` (None) or `{{now:LAYOUT}}` (a chrono format made from the Go layout).
    Now(Option<String>),
    /// `{{var:NAME}}` / `{{var:NAME|default}}`
    ChainVar(String, Option<String>),
}

/// What a template is expanded with.
pub(crate) trait Scope {
    /// The output text of a task, or the chain's input for `input`.
    fn var(&self, name: &str) -> String;
    /// The names of the tools the task can see.
    fn tool_names(&self) -> Vec<String>;
    /// The hooks / MCP servers those tools come from.
    fn hook_names(&self) -> Vec<String>;
    /// The visible tools of one hook / server.
    fn tools_of(&self, hook: &str) -> Vec<String>;
    /// `model`, `provider`, `chain`: `None` for any other name.
    fn chain_var(&self, name: &str) -> Option<String>;
}

impl Template {
    /// Parse `text`; `Err` names the macro that is not supported. `task_ids` are the names
    /// `{{.name}}` may use besides `input`.
    pub fn parse(text: &str, task_ids: &[&str]) -> Result<Template, String> {
        let mut parts = Vec::new();
        let mut rest = text;
        while let Some(start) = rest.find("{{") {
            let Some(len) = rest[start + 2..].find("}}") else {
                break;
            };
            if start > 0 {
                parts.push(Part::Text(rest[..start].to_string()));
            }
            let inner = &rest[start + 2..start + 2 + len];
            parts.push(parse_macro(inner, task_ids)?);
            rest = &rest[start + 2 + len + 2..];
        }
        if !rest.is_empty() {
            parts.push(Part::Text(rest.to_string()));
        }
        Ok(Template { parts })
    }

    /// Whether the text has no macro at all.
    pub fn is_plain(&self) -> bool {
        self.parts.iter().all(|p| matches!(p, Part::Text(_)))
    }

    /// Expand every macro, refusing to build more than `max` bytes. `Err` for a
    /// `{{var:NAME}}` that has no value and no default, or a text that would pass `max`.
    pub fn render(&self, scope: &dyn Scope, max: usize) -> Result<String, RenderError> {
        let mut out = String::new();
        for part in &self.parts {
            let piece: Cow<'_, str> = match part {
                Part::Text(t) => Cow::Borrowed(t),
                Part::Var(name) => Cow::Owned(scope.var(name)),
                Part::ToolList => Cow::Owned(listed(scope.tool_names())),
                Part::HookList => Cow::Owned(listed(scope.hook_names())),
                Part::ToolsOf(hook) => Cow::Owned(listed(scope.tools_of(hook))),
                Part::Now(None) => Cow::Owned(Local::now().to_rfc3339()),
                Part::Now(Some(format)) => Cow::Owned(Local::now().format(format).to_string()),
                Part::ChainVar(name, default) => match scope.chain_var(name).or(default.clone()) {
                    Some(v) => Cow::Owned(v),
                    None => {
                        return Err(RenderError::Unbound(format!(
                            "{{{{var:{name}}}}} has no value (known: model, provider, chain; \
                             give a default as {{{{var:{name}|default}}}})"
                        )))
                    }
                },
            };
            // Checked before the text grows: a refused render never holds more than `max`.
            let len = out.len().saturating_add(piece.len());
            if len > max {
                return Err(RenderError::TooLong { at_least: len });
            }
            out.push_str(&piece);
        }
        Ok(out)
    }
}

/// Why a template did not render.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum RenderError {
    /// A `{{var:NAME}}` without a value or a default (the message says which).
    Unbound(String),
    /// The text would pass the cap it was rendered with: at least this many bytes.
    TooLong { at_least: usize },
}

fn listed(names: Vec<String>) -> String {
    if names.is_empty() {
        "(none)".to_string()
    } else {
        names.join(", ")
    }
}

fn parse_macro(inner: &str, task_ids: &[&str]) -> Result<Part, String> {
    let m = inner.trim();
    let unsupported = || {
        format!(
            "{{{{{inner}}}}} is not a supported macro (supported: {{{{.input}}}}, {{{{.TASK_ID}}}}, \
             {{{{hookservice:list}}}}, {{{{hookservice:hooks}}}}, {{{{hookservice:tools NAME}}}}, \
             {{{{now}}}}, {{{{now:LAYOUT}}}}, {{{{var:NAME}}}}, {{{{chain:id}}}})"
        )
    };
    if let Some(name) = m.strip_prefix('.') {
        if name == "input" || task_ids.contains(&name) {
            return Ok(Part::Var(name.to_string()));
        }
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_alphanumeric() || "_-".contains(c))
        {
            return Err(unsupported());
        }
        return Err(format!(
            "{{{{.{name}}}}} names no task (the variables are .input and the task ids)"
        ));
    }
    if m == "hookservice:list" {
        return Ok(Part::ToolList);
    }
    if m == "hookservice:hooks" {
        return Ok(Part::HookList);
    }
    if let Some(hook) = m.strip_prefix("hookservice:tools") {
        let hook = hook.trim();
        if hook.is_empty() || hook.contains(char::is_whitespace) {
            return Err(unsupported());
        }
        return Ok(Part::ToolsOf(hook.to_string()));
    }
    if m == "now" {
        return Ok(Part::Now(None));
    }
    if let Some(layout) = m.strip_prefix("now:") {
        return Ok(Part::Now(Some(go_layout(layout))));
    }
    if m == "chain:id" {
        return Ok(Part::ChainVar("chain".into(), None));
    }
    if let Some(var) = m.strip_prefix("var:") {
        let (name, default) = match var.split_once('|') {
            Some((n, d)) => (n.trim(), Some(d.to_string())),
            None => (var.trim(), None),
        };
        if name.is_empty() || !name.chars().all(|c| c.is_alphanumeric() || c == '_') {
            return Err(unsupported());
        }
        return Ok(Part::ChainVar(name.to_string(), default));
    }
    Err(unsupported())
}

/// A Go reference-time layout (`Mon Jan 2 15:04:05 MST 2006`) as a chrono format string.
fn go_layout(layout: &str) -> String {
    // Longest tokens first, as Go's own parser reads them.
    const TOKENS: &[(&str, &str)] = &[
        ("January", "%B"),
        ("Monday", "%A"),
        (".000000000", "%.9f"),
        (".000000", "%.6f"),
        (".000", "%.3f"),
        ("Z07:00", "%:z"),
        ("-07:00", "%:z"),
        ("-0700", "%z"),
        ("2006", "%Y"),
        ("002", "%j"),
        ("Jan", "%b"),
        ("Mon", "%a"),
        ("MST", "%Z"),
        ("-07", "%:::z"),
        ("01", "%m"),
        ("02", "%d"),
        ("_2", "%e"),
        ("03", "%I"),
        ("04", "%M"),
        ("05", "%S"),
        ("06", "%y"),
        ("15", "%H"),
        ("PM", "%p"),
        ("pm", "%P"),
        ("1", "%-m"),
        ("2", "%-d"),
        ("3", "%-I"),
        ("4", "%-M"),
        ("5", "%-S"),
    ];
    let mut out = String::new();
    let mut rest = layout;
    'outer: while !rest.is_empty() {
        for (go, strf) in TOKENS {
            if let Some(tail) = rest.strip_prefix(go) {
                out.push_str(strf);
                rest = tail;
                continue 'outer;
            }
        }
        let Some(c) = rest.chars().next() else { break };
        if c == '%' {
            out.push_str("%%");
        } else {
            out.push(c);
        }
        rest = &rest[c.len_utf8()..];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    struct S;
    impl Scope for S {
        fn var(&self, name: &str) -> String {
            match name {
                "input" => "the input".into(),
                "first" => "first out".into(),
                _ => String::new(),
            }
        }
        fn tool_names(&self) -> Vec<String> {
            vec!["point".into(), "alerts_active_area".into()]
        }
        fn hook_names(&self) -> Vec<String> {
            vec!["nws".into()]
        }
        fn tools_of(&self, hook: &str) -> Vec<String> {
            if hook == "nws" {
                self.tool_names()
            } else {
                vec![]
            }
        }
        fn chain_var(&self, name: &str) -> Option<String> {
            (name == "model").then(|| "qwen".to_string())
        }
    }

    fn render(text: &str) -> Result<String, String> {
        Template::parse(text, &["first"])?
            .render(&S, usize::MAX)
            .map_err(|e| match e {
                RenderError::Unbound(m) => m,
                RenderError::TooLong { at_least } => format!("too long: {at_least}"),
            })
    }

    #[test]
    fn macros_expand() {
        assert_eq!(
            render("Tools: {{hookservice:list}}.").unwrap(),
            "Tools: point, alerts_active_area."
        );
        assert_eq!(render("{{hookservice:hooks}}").unwrap(), "nws");
        assert_eq!(render("{{hookservice:tools other}}").unwrap(), "(none)");
        assert_eq!(
            render("Q: {{.input}} / {{ .first }}").unwrap(),
            "Q: the input / first out"
        );
        assert_eq!(render("{{var:model}}").unwrap(), "qwen");
        assert_eq!(render("{{var:max_tokens|8192}}").unwrap(), "8192");
        assert!(render("{{var:nothing}}").unwrap_err().contains("no value"));
        assert_eq!(
            render("no macros {{ at all").unwrap(),
            "no macros {{ at all"
        );
        let today = render("Today is {{now:2006-01-02}}.").unwrap();
        assert_eq!(
            today,
            format!("Today is {}.", Local::now().format("%Y-%m-%d"))
        );
        assert!(Template::parse("plain", &[]).unwrap().is_plain());
    }

    #[test]
    fn unsupported_macros_are_refused() {
        for bad in [
            "{{ .input | toJson }}",
            "{{if .x}}",
            "{{.missing}}",
            "{{hookservice:tools}}",
            "{{var:}}",
            "{{}}",
        ] {
            assert!(Template::parse(bad, &["first"]).is_err(), "{bad}");
        }
        let e = Template::parse("{{.missing}}", &["first"]).unwrap_err();
        assert!(e.contains("names no task"), "{e}");
    }

    #[test]
    fn a_render_stops_at_its_cap_before_the_text_grows_past_it() {
        let t = Template::parse("ab{{.input}}cd", &[]).unwrap();
        // "ab" + "the input" + "cd" = 13 bytes.
        assert_eq!(t.render(&S, 13).unwrap(), "abthe inputcd");
        assert_eq!(
            t.render(&S, 12).unwrap_err(),
            RenderError::TooLong { at_least: 13 }
        );
        assert_eq!(
            t.render(&S, 5).unwrap_err(),
            RenderError::TooLong { at_least: 11 }
        );
        assert_eq!(
            t.render(&S, 1).unwrap_err(),
            RenderError::TooLong { at_least: 2 }
        );
    }

    #[test]
    fn go_layouts() {
        assert_eq!(go_layout("2006-01-02"), "%Y-%m-%d");
        assert_eq!(go_layout("15:04:05"), "%H:%M:%S");
        assert_eq!(go_layout("Mon Jan _2 2006"), "%a %b %e %Y");
        assert_eq!(go_layout("January 2, 2006 3:04 PM"), "%B %-d, %Y %-I:%M %p");
        assert_eq!(go_layout("100%"), "%-m00%%");
    }
}
