//! Model settings: what steers the model's sampling and tool use, beyond the conversation.
//! `temperature`, `top_p`, `top_k`, `stop`, `seed`, `tool_choice`, `parallel_tool_calls`,
//! `reasoning` and `extra_body`, given as client options ([`crate::Config`]) and, for one run,
//! as [`crate::RunOptions::settings`] (each key given there replaces the client's).
//!
//! Each reaches the request in its style's own spelling (see `docs/settings.md` for the table)
//! and is refused with a configuration error where a style has no such thing: `top_k` on the
//! openai style, `seed` on the anthropic style, `tool_choice` and `parallel_tool_calls` on
//! ollama, a `reasoning.budget_tokens` anywhere but anthropic. The scripted style takes every
//! setting (checked like any) and ignores it: it has no model to steer.
//!
//! ```
//! use contenox::{ModelSettings, RunOptions, Spelling};
//! use serde_json::json;
//!
//! let settings = ModelSettings::from_value(
//!     &json!({"temperature": 0, "seed": 7, "tool_choice": {"name": "read"}}),
//!     Spelling::Snake,
//! )
//! .unwrap();
//! assert_eq!(settings.seed, Some(7));
//! let _options = RunOptions::default().settings(settings);
//!
//! let bad = ModelSettings::from_value(&json!({"tool_choice": "always"}), Spelling::Snake);
//! assert!(bad.unwrap_err().to_string().contains(r#"tool_choice: "always" is not"#));
//! ```

use std::fmt;

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::{ConfigError, Error, Result};
use crate::spelling::Spelling;
use crate::style::Style;

/// The model settings of a client or of one run. Every field left `None` is the server's
/// default (nothing is sent).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ModelSettings {
    /// Sampling temperature: 0 and up (at most 2 on the openai style, 1 on anthropic).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// Nucleus sampling: from 0 to 1.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f64>,
    /// Sample from the `top_k` most likely tokens (anthropic and ollama; at least 1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub top_k: Option<u32>,
    /// Sequences that end the answer (openai `stop`, anthropic `stop_sequences`, ollama
    /// `options.stop`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stop: Option<Vec<String>>,
    /// A sampling seed, for repeatable answers where the server supports it (openai, ollama).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seed: Option<i64>,
    /// Whether and which tool the model must call (openai and anthropic). A choice that forces
    /// a call (`required`, or a tool by name) holds for the turn's first request only: once
    /// the model has called a tool, the turn's later requests leave the choice to the model,
    /// or the turn could never end.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<ToolChoice>,
    /// Whether the model may call several tools in one answer (openai
    /// `parallel_tool_calls`, anthropic `tool_choice.disable_parallel_tool_use`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parallel_tool_calls: Option<bool>,
    /// How much the model reasons before it answers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<Reasoning>,
    /// A JSON object merged into the request body last (RFC 7386 JSON merge patch: objects
    /// merge key by key, `null` removes a key, anything else replaces it), for fields of one
    /// provider. It may not set `model`, `messages`, `tools` or `stream`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extra_body: Option<Map<String, Value>>,
}

/// `tool_choice`: `"auto"`, `"required"`, `"none"`, or `{"name": TOOL}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolChoice {
    /// The model decides (the servers' default when tools are offered).
    Auto,
    /// The model must call some tool.
    Required,
    /// The model may not call tools.
    None,
    /// The model must call this tool.
    Tool(String),
}

impl ToolChoice {
    /// Whether this choice makes the model call a tool.
    pub fn forces_a_call(&self) -> bool {
        matches!(self, ToolChoice::Required | ToolChoice::Tool(_))
    }
}

const TOOL_CHOICE_EXPECTED: &str = r#""auto", "required", "none" or {"name": TOOL}"#;

impl Serialize for ToolChoice {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        match self {
            ToolChoice::Auto => s.serialize_str("auto"),
            ToolChoice::Required => s.serialize_str("required"),
            ToolChoice::None => s.serialize_str("none"),
            ToolChoice::Tool(name) => {
                let mut map = s.serialize_map(Some(1))?;
                map.serialize_entry("name", name)?;
                map.end()
            }
        }
    }
}

impl<'de> Deserialize<'de> for ToolChoice {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct Choice;
        impl<'de> Visitor<'de> for Choice {
            type Value = ToolChoice;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(TOOL_CHOICE_EXPECTED)
            }
            fn visit_str<E: de::Error>(self, v: &str) -> std::result::Result<ToolChoice, E> {
                match v {
                    "auto" => Ok(ToolChoice::Auto),
                    "required" => Ok(ToolChoice::Required),
                    "none" => Ok(ToolChoice::None),
                    _ => Err(E::invalid_value(de::Unexpected::Str(v), &self)),
                }
            }
            fn visit_map<A: MapAccess<'de>>(
                self,
                map: A,
            ) -> std::result::Result<ToolChoice, A::Error> {
                #[derive(Deserialize)]
                #[serde(deny_unknown_fields)]
                struct Named {
                    name: String,
                }
                let named = Named::deserialize(de::value::MapAccessDeserializer::new(map))?;
                Ok(ToolChoice::Tool(named.name))
            }
        }
        d.deserialize_any(Choice)
    }
}

/// `reasoning`: an effort (`{"effort": "low"}`) or, on the anthropic style, a thinking budget
/// in tokens (`{"budget_tokens": 4096}`); exactly one of them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Reasoning {
    /// How hard the model thinks: openai `reasoning_effort`, anthropic `thinking` with the
    /// budget [`Effort::budget_tokens`] says, ollama `think`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub effort: Option<Effort>,
    /// Anthropic's thinking budget, given directly (at least 1024, and below `max_tokens`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub budget_tokens: Option<u32>,
}

/// A reasoning effort.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Effort {
    /// As little as the model allows.
    Minimal,
    /// Some.
    Low,
    /// More.
    Medium,
    /// The most.
    High,
}

/// The least thinking budget the anthropic Messages API takes.
pub const MIN_THINKING_BUDGET: u32 = 1024;

impl Effort {
    /// The name the openai style sends (`reasoning_effort`).
    pub fn as_str(self) -> &'static str {
        match self {
            Effort::Minimal => "minimal",
            Effort::Low => "low",
            Effort::Medium => "medium",
            Effort::High => "high",
        }
    }

    /// The thinking budget an effort asks of the anthropic style: 1024 (the API's least),
    /// 2048, 4096 and 8192 tokens. `max_tokens` must be above it.
    pub fn budget_tokens(self) -> u32 {
        match self {
            Effort::Minimal => MIN_THINKING_BUDGET,
            Effort::Low => 2048,
            Effort::Medium => 4096,
            Effort::High => 8192,
        }
    }

    /// Ollama's `think` level: its levels are `low`, `medium` and `high` (a model that only
    /// turns thinking on or off takes any of them as on); `minimal` is sent as `low`.
    pub fn ollama_level(self) -> &'static str {
        match self {
            Effort::Minimal | Effort::Low => "low",
            Effort::Medium => "medium",
            Effort::High => "high",
        }
    }
}

impl Reasoning {
    /// The anthropic thinking budget: the one given, or the effort's.
    pub fn anthropic_budget(&self) -> u32 {
        match (self.budget_tokens, self.effort) {
            (Some(n), _) => n,
            (None, Some(e)) => e.budget_tokens(),
            (None, None) => MIN_THINKING_BUDGET,
        }
    }
}

/// The keys of the request body the engine writes itself, which `extra_body` may not touch.
pub const RESERVED_BODY_KEYS: [&str; 4] = ["model", "messages", "tools", "stream"];

impl ModelSettings {
    /// Read settings from JSON (a binding's per-run `settings`), naming a mistake the way
    /// `spelling` spells it, under `settings.`. Shape only: the style's own rules are checked
    /// when a run starts with them.
    pub fn from_value(value: &Value, spelling: Spelling) -> Result<Self> {
        crate::config_read::read(value, spelling).map_err(|mut e: ConfigError| {
            e.option = if e.option.is_empty() {
                "settings".to_string()
            } else {
                format!("settings.{}", e.option)
            };
            Error::Config(e)
        })
    }

    /// Whether no setting is given.
    pub fn is_empty(&self) -> bool {
        *self == ModelSettings::default()
    }

    /// These settings with every key `over` gives replaced by its value there.
    pub fn overlay(&self, over: &ModelSettings) -> ModelSettings {
        fn pick<T: Clone>(base: &Option<T>, over: &Option<T>) -> Option<T> {
            over.clone().or_else(|| base.clone())
        }
        ModelSettings {
            temperature: pick(&self.temperature, &over.temperature),
            top_p: pick(&self.top_p, &over.top_p),
            top_k: pick(&self.top_k, &over.top_k),
            stop: pick(&self.stop, &over.stop),
            seed: pick(&self.seed, &over.seed),
            tool_choice: pick(&self.tool_choice, &over.tool_choice),
            parallel_tool_calls: pick(&self.parallel_tool_calls, &over.parallel_tool_calls),
            reasoning: pick(&self.reasoning, &over.reasoning),
            extra_body: pick(&self.extra_body, &over.extra_body),
        }
    }

    /// Whether the settings make a request a thinking one on the anthropic style.
    pub(crate) fn anthropic_thinking(&self) -> Option<u32> {
        self.reasoning.map(|r| r.anthropic_budget())
    }

    /// What `style` can send, with `max_tokens` beside them: the first problem, its option
    /// named under `prefix` (`""` for client options, `"settings."` for a run's).
    pub(crate) fn check(
        &self,
        style: Style,
        max_tokens: u32,
        prefix: &str,
    ) -> std::result::Result<(), ConfigError> {
        let at = |name: &str| format!("{prefix}{name}");
        let style_name = style.name();
        let lacks = |name: &str, instead: &str| {
            ConfigError::new(
                at(name),
                format!("style \"{style_name}\" has no {name}{instead}"),
            )
        };
        let scripted = style == Style::Scripted;

        if let Some(t) = self.temperature {
            let most = match style {
                Style::Openai | Style::OpenaiResponses => 2.0,
                Style::Anthropic => 1.0,
                Style::Ollama | Style::Scripted => f64::MAX,
            };
            if !t.is_finite() || t < 0.0 || t > most {
                let range = if most == f64::MAX {
                    "0 or more".to_string()
                } else {
                    format!("from 0 to {most} on style \"{style_name}\"")
                };
                return Err(
                    ConfigError::new(at("temperature"), format!("is not {range}"))
                        .with_value(number(t)),
                );
            }
        }
        if let Some(p) = self.top_p {
            if !(0.0..=1.0).contains(&p) {
                return Err(
                    ConfigError::new(at("top_p"), "is not from 0 to 1").with_value(number(p))
                );
            }
        }
        if let Some(k) = self.top_k {
            if matches!(style, Style::Openai | Style::OpenaiResponses) {
                return Err(lacks(
                    "top_k",
                    " (an OpenAI-compatible server that takes one gets it through extra_body)",
                ));
            }
            if k == 0 {
                return Err(
                    ConfigError::new(at("top_k"), "is too small; it must be at least 1")
                        .with_value("0"),
                );
            }
        }
        if self.stop.is_some() && style == Style::OpenaiResponses {
            return Err(lacks(
                "stop",
                " (the Responses API takes no stop sequences; a server that does gets them \
                 through extra_body)",
            ));
        }
        if let Some(stop) = &self.stop {
            if let Some(i) = stop.iter().position(String::is_empty) {
                return Err(ConfigError::new(
                    format!("{}[{i}]", at("stop")),
                    "is empty; a stop sequence has at least one character",
                ));
            }
        }
        if self.seed.is_some() && matches!(style, Style::Anthropic | Style::OpenaiResponses) {
            return Err(lacks("seed", ""));
        }
        if style == Style::Ollama {
            if self.tool_choice.is_some() {
                return Err(lacks("tool_choice", ""));
            }
            if self.parallel_tool_calls.is_some() {
                return Err(lacks("parallel_tool_calls", ""));
            }
        }
        if let Some(ToolChoice::Tool(name)) = &self.tool_choice {
            if name.is_empty() {
                return Err(ConfigError::new(at("tool_choice.name"), "is empty"));
            }
        }
        if let Some(r) = &self.reasoning {
            match (r.effort, r.budget_tokens) {
                (None, None) => {
                    return Err(ConfigError::new(
                        at("reasoning"),
                        "gives neither effort nor budget_tokens; give one",
                    ))
                }
                (Some(_), Some(_)) => {
                    return Err(ConfigError::new(
                        at("reasoning"),
                        "gives both effort and budget_tokens; give one",
                    ))
                }
                (None, Some(_)) if !scripted && style != Style::Anthropic => {
                    return Err(ConfigError::new(
                        at("reasoning.budget_tokens"),
                        format!(
                            "style \"{style_name}\" has no thinking budget; give \
                             reasoning.effort instead"
                        ),
                    ))
                }
                _ => {}
            }
            if style == Style::Anthropic {
                self.check_thinking(r, max_tokens, &at)?;
            }
        }
        if let Some(extra) = &self.extra_body {
            if let Some(key) = RESERVED_BODY_KEYS.iter().find(|k| extra.contains_key(**k)) {
                return Err(ConfigError::new(
                    format!("{}.{key}", at("extra_body")),
                    "may not be set: the engine writes model, messages, tools and stream itself",
                ));
            }
            if style == Style::OpenaiResponses && extra.contains_key("input") {
                return Err(ConfigError::new(
                    format!("{}.input", at("extra_body")),
                    "may not be set: the engine writes the conversation (input) itself",
                ));
            }
        }
        Ok(())
    }

    /// Anthropic's rules for extended thinking: a budget of at least 1024 tokens below
    /// `max_tokens`, and no temperature or top_k changes, top_p from 0.95, no forced tool
    /// call beside it (the API answers HTTP 400 otherwise).
    fn check_thinking(
        &self,
        r: &Reasoning,
        max_tokens: u32,
        at: &dyn Fn(&str) -> String,
    ) -> std::result::Result<(), ConfigError> {
        let budget = r.anthropic_budget();
        let what = match r.effort {
            Some(e) => format!("reasoning.effort \"{}\" thinks", e.as_str()),
            None => "reasoning".to_string(),
        };
        if r.budget_tokens.is_some() && budget < MIN_THINKING_BUDGET {
            return Err(ConfigError::new(
                at("reasoning.budget_tokens"),
                format!(
                    "is too small; the anthropic style thinks with at least {MIN_THINKING_BUDGET}"
                ),
            )
            .with_value(budget.to_string()));
        }
        if max_tokens <= budget {
            return Err(ConfigError::new(
                "max_tokens",
                format!(
                    "must be above the thinking budget: {what} with a budget of {budget} tokens, \
                     which max_tokens includes; raise max_tokens or give a smaller \
                     reasoning.budget_tokens"
                ),
            )
            .with_value(max_tokens.to_string()));
        }
        let beside = "cannot be set beside reasoning on the anthropic style (extended thinking \
                      refuses it)";
        if self.temperature.is_some_and(|t| t != 1.0) {
            return Err(ConfigError::new(at("temperature"), beside));
        }
        if self.top_k.is_some() {
            return Err(ConfigError::new(at("top_k"), beside));
        }
        if let Some(p) = self.top_p.filter(|p| *p < 0.95) {
            return Err(ConfigError::new(
                at("top_p"),
                "is below 0.95, which extended thinking on the anthropic style refuses",
            )
            .with_value(number(p)));
        }
        if self
            .tool_choice
            .as_ref()
            .is_some_and(ToolChoice::forces_a_call)
        {
            return Err(ConfigError::new(
                at("tool_choice"),
                "cannot force a tool call beside reasoning on the anthropic style (extended \
                 thinking takes only \"auto\" or \"none\")",
            ));
        }
        Ok(())
    }

    /// These settings for a request after the model has called a tool in this turn: a choice
    /// that forces a call is left to the model again (`None` when nothing changes).
    pub(crate) fn after_a_call(&self) -> Option<ModelSettings> {
        self.tool_choice
            .as_ref()
            .is_some_and(ToolChoice::forces_a_call)
            .then(|| ModelSettings {
                tool_choice: None,
                ..self.clone()
            })
    }
}

fn number(n: f64) -> String {
    serde_json::Number::from_f64(n).map_or_else(|| n.to_string(), |n| n.to_string())
}

/// The settings of one turn: those of its first request, and those of its later ones (a
/// forced tool choice dropped once the model has called a tool).
#[derive(Debug, Clone, Default)]
pub(crate) struct TurnSettings {
    first: ModelSettings,
    later: Option<ModelSettings>,
}

impl TurnSettings {
    pub fn new(first: ModelSettings) -> Self {
        let later = first.after_a_call();
        TurnSettings { first, later }
    }

    /// The settings of the turn's request number `index` (0 = the first).
    pub fn for_request(&self, index: u32) -> &ModelSettings {
        match (&self.later, index) {
            (Some(later), 1..) => later,
            _ => &self.first,
        }
    }

    /// The settings of the first request.
    pub fn first(&self) -> &ModelSettings {
        &self.first
    }
}

/// `patch` applied to `target` as RFC 7386 JSON merge patch: objects merge key by key, `null`
/// removes a key, any other value replaces what was there. (Ten lines: a crate for it would add
/// a dependency to every artifact for less.)
pub(crate) fn merge_patch(target: &mut Value, patch: &Map<String, Value>) {
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let Value::Object(map) = target else {
        unreachable!("made an object above")
    };
    for (key, value) in patch {
        match value {
            Value::Null => {
                map.remove(key);
            }
            Value::Object(inner) => {
                merge_patch(map.entry(key.clone()).or_insert(Value::Null), inner)
            }
            other => {
                map.insert(key.clone(), other.clone());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn read(v: Value) -> ModelSettings {
        ModelSettings::from_value(&v, Spelling::Snake).unwrap()
    }

    fn problem(v: Value, style: Style, max_tokens: u32) -> String {
        let s = read(v);
        s.check(style, max_tokens, "").unwrap_err().to_string()
    }

    #[test]
    fn every_setting_reads_and_writes_back() {
        let v = json!({"temperature": 0.5, "top_p": 0.9, "top_k": 40, "stop": ["END"],
            "seed": -3, "tool_choice": {"name": "read"}, "parallel_tool_calls": false,
            "reasoning": {"effort": "high"}, "extra_body": {"x": {"y": 1}}});
        let s = read(v.clone());
        assert_eq!(s.tool_choice, Some(ToolChoice::Tool("read".into())));
        assert_eq!(serde_json::to_value(&s).unwrap(), v);
        for (text, choice) in [
            ("auto", ToolChoice::Auto),
            ("required", ToolChoice::Required),
            ("none", ToolChoice::None),
        ] {
            assert_eq!(read(json!({"tool_choice": text})).tool_choice, Some(choice));
        }
        assert!(ModelSettings::default().is_empty());
        assert!(!s.is_empty());
    }

    #[test]
    fn shape_mistakes_name_the_setting() {
        let err = |v: Value, spelling| {
            ModelSettings::from_value(&v, spelling)
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            err(json!({"tool_choice": "always"}), Spelling::Snake),
            r#"invalid configuration: settings.tool_choice: "always" is not "auto", "required", "none" or {"name": TOOL}"#
        );
        assert!(err(json!({"tool_choice": {"tool": "x"}}), Spelling::Snake)
            .contains(r#"settings.tool_choice: unknown key "tool"; the keys are name"#));
        assert!(err(json!({"tool_choice": {}}), Spelling::Camel)
            .contains(r#"settings.toolChoice: "name" is missing"#));
        assert!(err(json!({"temprature": 1}), Spelling::Snake)
            .contains(r#"settings: unknown option "temprature"; the options are temperature"#));
        assert!(
            err(json!({"reasoning": {"effort": "max"}}), Spelling::Snake).contains(
                r#"settings.reasoning.effort: "max" is not one of minimal, low, medium, high"#
            )
        );
        assert!(
            err(json!({"reasoning": {"budget_tokens": -1}}), Spelling::Camel)
                .contains("settings.reasoning.budgetTokens: -1 is not a whole number of 0 or more")
        );
        assert!(err(json!({"stop": "END"}), Spelling::Snake)
            .contains(r#"settings.stop: "END" is not a list"#));
        assert!(err(json!({"extra_body": [1]}), Spelling::Snake)
            .contains("settings.extra_body: a list is not an object"));
    }

    #[test]
    fn each_style_refuses_what_it_has_no_such_thing_for() {
        assert_eq!(
            problem(json!({"top_k": 5}), Style::Openai, 4096),
            "top_k: style \"openai\" has no top_k (an OpenAI-compatible server that takes one \
             gets it through extra_body)"
        );
        assert_eq!(
            problem(json!({"seed": 1}), Style::Anthropic, 4096),
            "seed: style \"anthropic\" has no seed"
        );
        for key in ["tool_choice", "parallel_tool_calls"] {
            let v = if key == "tool_choice" {
                json!({key: "auto"})
            } else {
                json!({key: true})
            };
            assert_eq!(
                problem(v, Style::Ollama, 4096),
                format!("{key}: style \"ollama\" has no {key}")
            );
        }
        // The Responses API has no top_k, stop sequences or seed.
        for (key, value) in [
            ("top_k", json!(5)),
            ("stop", json!(["x"])),
            ("seed", json!(1)),
        ] {
            assert!(
                problem(json!({key: value}), Style::OpenaiResponses, 4096)
                    .starts_with(&format!("{key}: style \"openai-responses\" has no {key}")),
                "{key}"
            );
        }
        assert_eq!(
            problem(
                json!({"extra_body": {"input": []}}),
                Style::OpenaiResponses,
                4096
            ),
            "extra_body.input: may not be set: the engine writes the conversation (input) itself"
        );
        read(
            json!({"temperature": 2, "top_p": 1, "tool_choice": "required",
            "parallel_tool_calls": false, "reasoning": {"effort": "minimal"}}),
        )
        .check(Style::OpenaiResponses, 1, "")
        .unwrap();
        for style in [Style::Openai, Style::OpenaiResponses, Style::Ollama] {
            assert!(
                problem(json!({"reasoning": {"budget_tokens": 2048}}), style, 4096)
                    .starts_with("reasoning.budget_tokens: style")
            );
        }
        // The scripted style takes every setting.
        let all = json!({"top_k": 5, "seed": 1, "tool_choice": "required",
            "parallel_tool_calls": false, "reasoning": {"budget_tokens": 10}});
        read(all).check(Style::Scripted, 1, "").unwrap();
    }

    #[test]
    fn ranges_and_empty_values_are_refused() {
        assert_eq!(
            problem(json!({"temperature": 2.5}), Style::Openai, 1),
            "temperature: 2.5 is not from 0 to 2 on style \"openai\""
        );
        assert!(problem(json!({"temperature": 1.5}), Style::Anthropic, 1)
            .starts_with("temperature: 1.5 is not from 0 to 1"));
        assert_eq!(
            problem(json!({"temperature": -1}), Style::Ollama, 1),
            "temperature: -1.0 is not 0 or more"
        );
        assert_eq!(
            problem(json!({"top_p": 1.01}), Style::Openai, 1),
            "top_p: 1.01 is not from 0 to 1"
        );
        assert!(problem(json!({"top_k": 0}), Style::Ollama, 1).starts_with("top_k: 0 is too small"));
        assert!(
            problem(json!({"stop": ["a", ""]}), Style::Openai, 1).starts_with("stop[1]: is empty")
        );
        assert!(
            problem(json!({"tool_choice": {"name": ""}}), Style::Openai, 1)
                .starts_with("tool_choice.name: is empty")
        );
        assert!(problem(json!({"reasoning": {}}), Style::Openai, 1)
            .contains("neither effort nor budget_tokens"));
        assert!(problem(
            json!({"reasoning": {"effort": "low", "budget_tokens": 2000}}),
            Style::Anthropic,
            9000
        )
        .contains("both effort and budget_tokens"));
        for key in RESERVED_BODY_KEYS {
            assert_eq!(
                problem(json!({"extra_body": {"x": 1, key: null}}), Style::Openai, 1),
                format!(
                    "extra_body.{key}: may not be set: the engine writes model, messages, \
                     tools and stream itself"
                )
            );
        }
        read(json!({"extra_body": {"max_completion_tokens": 5, "stream_options": null}}))
            .check(Style::Openai, 1, "")
            .unwrap();
    }

    #[test]
    fn anthropic_thinking_rules() {
        let high = json!({"reasoning": {"effort": "high"}});
        assert_eq!(
            problem(high.clone(), Style::Anthropic, 4096),
            "max_tokens: 4096 must be above the thinking budget: reasoning.effort \"high\" \
             thinks with a budget of 8192 tokens, which max_tokens includes; raise max_tokens \
             or give a smaller reasoning.budget_tokens"
        );
        read(high).check(Style::Anthropic, 8193, "").unwrap();
        assert!(problem(
            json!({"reasoning": {"budget_tokens": 1000}}),
            Style::Anthropic,
            4096
        )
        .starts_with("reasoning.budget_tokens: 1000 is too small"));
        let with = |extra: Value| {
            let mut v = json!({"reasoning": {"budget_tokens": 2048}});
            v.as_object_mut()
                .unwrap()
                .extend(extra.as_object().unwrap().clone());
            v
        };
        for (extra, starts) in [
            (
                json!({"temperature": 0.2}),
                "temperature: cannot be set beside reasoning",
            ),
            (json!({"top_k": 3}), "top_k: cannot be set beside reasoning"),
            (json!({"top_p": 0.5}), "top_p: 0.5 is below 0.95"),
            (
                json!({"tool_choice": "required"}),
                "tool_choice: cannot force a tool call",
            ),
            (
                json!({"tool_choice": {"name": "x"}}),
                "tool_choice: cannot force a tool call",
            ),
        ] {
            let p = problem(with(extra), Style::Anthropic, 4096);
            assert!(p.starts_with(starts), "{p}");
        }
        for fine in [
            json!({"temperature": 1}),
            json!({"top_p": 0.95}),
            json!({"tool_choice": "none"}),
        ] {
            read(with(fine)).check(Style::Anthropic, 4096, "").unwrap();
        }
        // A run's settings are named under `settings.`.
        let e = read(json!({"seed": 1}))
            .check(Style::Anthropic, 1, "settings.")
            .unwrap_err();
        assert_eq!(e.option, "settings.seed");
    }

    #[test]
    fn a_run_overlays_the_clients_settings_key_by_key() {
        let client = read(json!({"temperature": 0.2, "seed": 1, "stop": ["a"]}));
        let run = read(json!({"temperature": 0.9, "stop": ["b", "c"]}));
        assert_eq!(
            serde_json::to_value(client.overlay(&run)).unwrap(),
            json!({"temperature": 0.9, "seed": 1, "stop": ["b", "c"]})
        );
        assert_eq!(client.overlay(&ModelSettings::default()), client);
    }

    #[test]
    fn a_forced_choice_holds_for_the_first_request_only() {
        let forced = TurnSettings::new(read(json!({"tool_choice": "required", "seed": 4})));
        assert_eq!(
            forced.for_request(0).tool_choice,
            Some(ToolChoice::Required)
        );
        assert_eq!(forced.for_request(1).tool_choice, None);
        assert_eq!(forced.for_request(7).seed, Some(4));
        let named = TurnSettings::new(read(json!({"tool_choice": {"name": "t"}})));
        assert_eq!(named.for_request(1).tool_choice, None);
        for kept in ["auto", "none"] {
            let t = TurnSettings::new(read(json!({"tool_choice": kept})));
            assert!(t.for_request(3).tool_choice.is_some(), "{kept}");
        }
    }

    #[test]
    fn merge_patch_follows_rfc_7386() {
        // The RFC's own example (section 3).
        let mut target = json!({"title": "Goodbye!", "author": {"givenName": "John",
            "familyName": "Doe"}, "tags": ["example", "sample"], "content": "This will be unchanged"});
        let patch = json!({"title": "Hello!", "phoneNumber": "+01-123-456-7890",
            "author": {"familyName": null}, "tags": ["example"]});
        merge_patch(&mut target, patch.as_object().unwrap());
        assert_eq!(
            target,
            json!({"title": "Hello!", "author": {"givenName": "John"}, "tags": ["example"],
                "content": "This will be unchanged", "phoneNumber": "+01-123-456-7890"})
        );
        // An object patched into a non-object replaces it.
        let mut target = json!({"a": 1});
        merge_patch(
            &mut target,
            json!({"a": {"b": null, "c": 2}}).as_object().unwrap(),
        );
        assert_eq!(target, json!({"a": {"c": 2}}));
    }
}
