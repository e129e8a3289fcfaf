//! Reading a whole config ([`Config::from_json`], [`Config::from_value`]) and the checks beyond
//! its shape: what a client needs before its first turn, so that a bad option fails at creation
//! with its name, not at the first model request.

use reqwest::header::{HeaderName, HeaderValue};

use crate::config::Config;
use crate::config_read::read;
use crate::error::{ConfigError, Error, Result};
use crate::sandbox::config_problem;
use crate::script::ScriptEntry;
use crate::spelling::Spelling;
use crate::style::Style;

impl Config {
    /// Parse a config from JSON text with the engine's (snake_case) option names. Checks the
    /// shape of every option and the model endpoint; [`ClientBuilder::build`] checks the rest.
    ///
    /// [`ClientBuilder::build`]: crate::ClientBuilder::build
    pub fn from_json(json: &str) -> Result<Self> {
        let value: serde_json::Value = serde_json::from_str(json)
            .map_err(|e| Error::config(format!("the configuration is not valid JSON: {e}")))?;
        Config::from_value(&value, Spelling::Snake)
    }

    /// Read a config from a JSON value whose errors name the options the way `spelling` spells
    /// them (what a binding passes its host's options through): `style: "nope" is not one of
    /// openai, openai-responses, anthropic, ollama, scripted`, `unknown option "base_ur"; the options are ...`.
    pub fn from_value(value: &serde_json::Value, spelling: Spelling) -> Result<Self> {
        let config: Config = read(value, spelling).map_err(Error::Config)?;
        check_endpoint(&config, spelling)?;
        Ok(config)
    }
}

/// What the model endpoint needs: a `base_url` that is an http(s) URL, headers HTTP can carry,
/// timeouts that leave time to answer. Also what [`crate::list_models`] needs.
pub(crate) fn check_endpoint(config: &Config, spelling: Spelling) -> Result<()> {
    let bad = |e: ConfigError| Error::Config(e.spelled(spelling));
    for (name, ms) in [
        ("request_timeout_ms", config.request_timeout_ms),
        ("idle_timeout_ms", config.idle_timeout_ms),
        ("connect_timeout_ms", config.connect_timeout_ms),
    ] {
        if ms == 0 {
            return Err(bad(at_least_one(name)));
        }
    }
    if config.style != Style::Scripted {
        let url = config.resolved_base_url();
        let from = match (&config.base_url, config.style.base_url_env()) {
            (None, Some(env)) if std::env::var_os(env).is_some() => {
                format!("base_url (from {env})")
            }
            _ => "base_url".to_string(),
        };
        if let Err(why) = http_url(&url) {
            return Err(Error::Config(
                ConfigError::new(spelling.path(&from), why).with_value(quote(&url)),
            ));
        }
    }
    for (name, value) in &config.headers {
        if HeaderName::from_bytes(name.as_bytes()).is_err() {
            return Err(bad(ConfigError::new(
                "headers",
                "is not a valid HTTP header name",
            )
            .with_value(quote(name))));
        }
        if HeaderValue::from_str(value).is_err() {
            return Err(bad(ConfigError::new(
                format!("headers.{name}"),
                "is not a valid HTTP header value (no line breaks or control characters)",
            )));
        }
    }
    Ok(())
}

/// Everything a client needs: the endpoint, `max_turns` and the per-turn ceilings, a `model`
/// (or a `script` for the scripted style), script entries that each say what the model
/// answers, and the sandbox's options. (The `policy` is read and checked by the builder.)
pub(crate) fn check_client(config: &Config, spelling: Spelling) -> Result<()> {
    let bad = |e: ConfigError| Error::Config(e.spelled(spelling));
    if config.max_turns == 0 {
        return Err(bad(at_least_one("max_turns")));
    }
    if config.max_concurrent_tools == 0 {
        return Err(bad(at_least_one("max_concurrent_tools")));
    }
    if config.hook_timeout_ms == Some(0) {
        return Err(bad(at_least_one("hook_timeout_ms")));
    }
    for (name, ceiling) in [
        ("max_tool_calls", config.max_tool_calls),
        ("max_turn_tokens", config.max_turn_tokens),
    ] {
        if ceiling == Some(0) {
            return Err(bad(ConfigError::new(
                name,
                "is too small; it must be at least 1 (leave it out for no ceiling)",
            )
            .with_value("0")));
        }
    }
    if let Some(c) = &config.compaction {
        if c.threshold_tokens == 0 {
            return Err(bad(at_least_one("compaction.threshold_tokens")));
        }
    }
    if let Some((key, why, value)) = config.code_execution.as_ref().and_then(|c| c.problem()) {
        return Err(bad(ConfigError::new(key, why).with_value(value.to_string())));
    }
    if let Some(problem) = config_problem(&config.shell_env, &config.sandbox) {
        return Err(bad(problem));
    }
    config
        .model_settings()
        .check(config.style, config.max_tokens, "")
        .map_err(bad)?;
    if config.prompt_cache.is_some() && !matches!(config.style, Style::Anthropic | Style::Scripted)
    {
        let style = serde_json::to_value(config.style)?;
        return Err(bad(ConfigError::new(
            "prompt_cache",
            format!(
                "style {style} has no cache breakpoints to turn on or off (its servers cache \
                 prompts by themselves); leave it out"
            ),
        )));
    }
    match (&config.style, &config.script) {
        (Style::Scripted, None) => {
            return Err(bad(ConfigError::new(
                "script",
                "is missing: style \"scripted\" needs a list of responses",
            )))
        }
        (Style::Scripted, Some(script)) => check_script(script).map_err(bad)?,
        (style, _) if config.model.as_deref().unwrap_or("").is_empty() => {
            let style = serde_json::to_value(style)?;
            return Err(bad(ConfigError::new(
                "model",
                format!("is missing: style {style} needs a model name"),
            )));
        }
        _ => {}
    }
    check_endpoint(config, spelling)?;
    check_fallback(config).map_err(bad)
}

/// Each `fallback` entry is a model the client can send the same requests to: a style that
/// talks to a server, a model name, a key where it says to read one, and the main config's
/// options (settings, timeouts) valid for its style. Errors name the entry (`fallback[1].model`).
fn check_fallback(config: &Config) -> Result<(), ConfigError> {
    for (i, entry) in config.fallback.iter().enumerate() {
        let at = |name: &str| format!("fallback[{i}].{name}");
        if entry.style == Some(Style::Scripted) {
            return Err(ConfigError::new(
                at("style"),
                "\"scripted\" is not a model server; a fallback is openai, openai-responses, anthropic or ollama",
            ));
        }
        if entry.model.as_deref().unwrap_or("").is_empty() {
            return Err(ConfigError::new(
                at("model"),
                "is missing: a fallback names its model",
            ));
        }
        if let Some(var) = &entry.api_key_env {
            if entry.api_key.is_some() {
                return Err(ConfigError::new(
                    at("api_key_env"),
                    "is given beside api_key; give one of them",
                ));
            }
            if std::env::var(var).map_or(true, |v| v.is_empty()) {
                return Err(ConfigError::new(
                    at("api_key_env"),
                    "names an environment variable that is not set (or is empty)",
                )
                .with_value(quote(var)));
            }
        }
        let Some(derived) = config.fallback_config(i) else {
            continue;
        };
        if derived.style == Style::Scripted {
            return Err(ConfigError::new(
                at("style"),
                "is needed: the main model is scripted, so a fallback says which server style \
                 it speaks",
            ));
        }
        // The entry's own options keep their names; the main config's options (settings the
        // entry's style has no such thing for) are named as they are, with the entry.
        let own = ["style", "base_url", "model", "api_key", "headers"];
        if let Err(Error::Config(e)) = check_client(&derived, Spelling::Snake) {
            let root = e.option.split(['.', '[']).next().unwrap_or("");
            return Err(if own.contains(&root) {
                ConfigError {
                    option: at(&e.option),
                    ..e
                }
            } else {
                ConfigError::new(
                    format!("fallback[{i}]"),
                    format!("option {} does not fit this model: {}", e.option, e.reason),
                )
            });
        }
    }
    Ok(())
}

/// Every entry answers something: an empty entry (`{}`, or one whose keys were all misspelled)
/// would run as an empty answer, which no test means.
fn check_script(script: &[ScriptEntry]) -> Result<(), ConfigError> {
    for (i, entry) in script.iter().enumerate() {
        let says_something = entry.text.is_some()
            || entry.tool_calls.is_some()
            || entry.error.is_some()
            || entry.stall
            || entry.break_after_bytes.is_some();
        if !says_something {
            return Err(ConfigError::new(
                format!("script[{i}]"),
                "is empty; an entry has text, tool_calls, error, stall or break_after_bytes",
            ));
        }
        for (j, call) in entry.tool_calls.iter().flatten().enumerate() {
            if call.name.is_empty() {
                return Err(ConfigError::new(
                    format!("script[{i}].tool_calls[{j}].name"),
                    "is empty",
                ));
            }
        }
    }
    Ok(())
}

/// Why `url` cannot be a model endpoint, if it cannot.
fn http_url(url: &str) -> Result<(), String> {
    match reqwest::Url::parse(url) {
        Ok(u) if matches!(u.scheme(), "http" | "https") && u.has_host() => Ok(()),
        Ok(u) => Err(format!(
            "is not an http:// or https:// URL (its scheme is {:?})",
            u.scheme()
        )),
        Err(e) => Err(format!(
            "is not a URL ({e}); give one such as http://127.0.0.1:8080/v1"
        )),
    }
}

fn at_least_one(option: &str) -> ConfigError {
    ConfigError::new(option, "is too small; it must be at least 1").with_value("0")
}

fn quote(s: &str) -> String {
    serde_json::Value::String(s.to_string()).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn check(v: serde_json::Value, spelling: Spelling) -> String {
        let config: Config = serde_json::from_value(v).unwrap();
        check_client(&config, spelling).unwrap_err().to_string()
    }

    #[test]
    fn each_check_names_its_option() {
        assert_eq!(
            check(
                json!({"model": "m", "base_url": "not a url"}),
                Spelling::Camel
            ),
            "invalid configuration: baseUrl: \"not a url\" is not a URL (relative URL without a \
             base); give one such as http://127.0.0.1:8080/v1"
        );
        assert!(check(
            json!({"model": "m", "base_url": "ftp://x/"}),
            Spelling::Snake
        )
        .contains("base_url: \"ftp://x\" is not an http:// or https:// URL"));
        assert_eq!(
            check(
                json!({"style": "scripted", "script": [{"text": "a"}, {}]}),
                Spelling::Snake
            ),
            "invalid configuration: script[1]: is empty; an entry has text, tool_calls, error, \
             stall or break_after_bytes"
        );
        assert!(check(json!({"style": "anthropic"}), Spelling::Snake)
            .contains("model: is missing: style \"anthropic\" needs a model name"));
        assert!(check(json!({"style": "scripted"}), Spelling::Snake).contains("script: is missing"));
        assert!(check(
            json!({"style": "scripted", "script": [], "max_turns": 0}),
            Spelling::Camel
        )
        .contains("maxTurns: 0 is too small"));
        assert!(check(
            json!({"model": "m", "base_url": "http://h/", "headers": {"bad name": "v"}}),
            Spelling::Snake
        )
        .contains("headers: \"bad name\" is not a valid HTTP header name"));
        assert!(check(
            json!({"model": "m", "base_url": "http://h/", "headers": {"x-a": "a\nb"}}),
            Spelling::Snake
        )
        .contains("headers.x-a: is not a valid HTTP header value"));
        let scripted = |extra: serde_json::Value| {
            let mut v = json!({"style": "scripted", "script": [{"text": "a"}]});
            v.as_object_mut()
                .unwrap()
                .extend(extra.as_object().unwrap().clone());
            v
        };
        assert_eq!(
            check(scripted(json!({"max_tool_calls": 0})), Spelling::Camel),
            "invalid configuration: maxToolCalls: 0 is too small; it must be at least 1 (leave \
             it out for no ceiling)"
        );
        assert!(
            check(scripted(json!({"max_turn_tokens": 0})), Spelling::Snake)
                .contains("max_turn_tokens: 0 is too small")
        );
        for name in [
            "request_timeout_ms",
            "idle_timeout_ms",
            "connect_timeout_ms",
        ] {
            let camel = Spelling::Camel.path(name);
            assert!(
                check(scripted(json!({name: 0})), Spelling::Camel)
                    .contains(&format!("{camel}: 0 is too small; it must be at least 1")),
                "{name}"
            );
        }
        assert_eq!(
            check(
                scripted(json!({"shell_env": ["PATH", "*"]})),
                Spelling::Camel
            ),
            "invalid configuration: shellEnv[1]: \"*\" would pass the host's whole environment"
        );
        // A value given by `NAME=value` stays out of the message: it may be a secret.
        let e = check(
            scripted(json!({"shell_env": ["A*=s3cret-value"]})),
            Spelling::Snake,
        );
        assert!(
            e.contains("shell_env[0]: \"A*=<redacted>\" sets a value for a pattern")
                && !e.contains("s3cret"),
            "{e}"
        );
        assert_eq!(
            check(
                scripted(json!({"sandbox": {"writable": ["/ok", "rel/dir"]}})),
                Spelling::Camel
            ),
            "invalid configuration: sandbox.writable[1]: \"rel/dir\" is not an absolute path"
        );
    }

    #[test]
    fn good_configs_pass() {
        for v in [
            json!({"style": "scripted", "script": [{"text": ""}, {"stall": true}, {"error": {"status": 500}}]}),
            json!({"style": "ollama", "model": "m", "base_url": "127.0.0.1:11434"}),
            json!({"model": "m", "base_url": "https://api.example.com/v1"}),
        ] {
            let config: Config = serde_json::from_value(v.clone()).unwrap();
            check_client(&config, Spelling::Snake).unwrap_or_else(|e| panic!("{v}: {e}"));
        }
    }

    #[test]
    fn each_bad_fallback_entry_is_named() {
        let main = json!({"style": "openai", "model": "m", "base_url": "http://127.0.0.1:1/v1"});
        let with = |fallback: serde_json::Value, spelling| {
            let mut v = main.clone();
            v["fallback"] = fallback;
            check(v, spelling)
        };
        assert_eq!(
            with(
                json!([{"model": "a"}, {"style": "anthropic"}]),
                Spelling::Snake
            ),
            "invalid configuration: fallback[1].model: is missing: a fallback names its model"
        );
        assert!(with(
            json!([{"style": "scripted", "model": "x"}]),
            Spelling::Snake
        )
        .starts_with("invalid configuration: fallback[0].style: \"scripted\" is not"));
        assert_eq!(
            with(
                json!([{"model": "a", "api_key_env": "CONTENOX_TEST_SURELY_UNSET_VAR"}]),
                Spelling::Camel
            ),
            "invalid configuration: fallback[0].apiKeyEnv: \"CONTENOX_TEST_SURELY_UNSET_VAR\" \
             names an environment variable that is not set (or is empty)"
        );
        assert!(with(
            json!([{"model": "a", "api_key": "k", "api_key_env": "PATH"}]),
            Spelling::Snake
        )
        .contains("fallback[0].api_key_env: is given beside api_key"));
        assert!(with(
            json!([{"model": "a", "base_url": "ftp://x/"}]),
            Spelling::Camel
        )
        .contains("fallback[0].baseUrl: \"ftp://x\" is not an http:// or https:// URL"));
        // A main option the entry's style has no such thing for names the entry.
        let mut v = main.clone();
        v["style"] = json!("anthropic");
        v["top_k"] = json!(5);
        v["fallback"] = json!([{"style": "openai", "model": "gpt"}]);
        let e = check(v, Spelling::Snake);
        assert!(
            e.starts_with("invalid configuration: fallback[0]: option top_k does not fit"),
            "{e}"
        );
        // Misspelt keys and wrong shapes name the entry (the config reader's messages).
        let read = |fallback: serde_json::Value| {
            let mut v = main.clone();
            v["fallback"] = fallback;
            Config::from_value(&v, Spelling::Camel)
                .unwrap_err()
                .to_string()
        };
        let e = read(json!([{"model": "a", "base_ur": "x"}]));
        assert!(e.contains("fallback[0]: unknown key \"baseUr\""), "{e}");
        let e = read(json!([3]));
        assert!(
            e.contains("fallback[0]") && e.contains("a model name or a model config"),
            "{e}"
        );
        // A scripted main model needs its fallback's style.
        let v = json!({"style": "scripted", "script": [{"text": "a"}],
                       "fallback": [{"model": "m"}]});
        assert!(check(v, Spelling::Snake).contains("fallback[0].style: is needed"));
        // Valid entries pass.
        for fallback in [
            json!([{"model": "second"}]),
            json!([{"style": "ollama", "model": "llama", "base_url": "http://127.0.0.1:2"},
                   {"style": "anthropic", "model": "c", "api_key_env": "PATH"}]),
        ] {
            let mut v = main.clone();
            v["fallback"] = fallback.clone();
            let config: Config = serde_json::from_value(v).unwrap();
            check_client(&config, Spelling::Snake).unwrap_or_else(|e| panic!("{fallback}: {e}"));
        }
    }
}
