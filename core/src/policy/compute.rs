//! Compute ceilings per turn: tool calls and tokens, from the policy's `compute` section and
//! the plain options `max_tool_calls` / `max_turn_tokens` (the smaller of each pair wins).

use std::fmt;

use super::document::{Policy, PolicyError};
use crate::config::{Config, Style};
use crate::event::Usage;

/// The result text of a call left unexecuted because a ceiling was reached (followed by which).
pub const BUDGET_RESULT: &str = "budget reached";

/// The ceilings in force for one step of a turn.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Ceilings {
    /// Model responses per turn.
    pub max_turns: u32,
    /// Tool calls per turn.
    pub max_tool_calls: Option<u64>,
    /// Input + output tokens per turn.
    pub max_tokens: Option<u64>,
}

fn smaller(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

impl Ceilings {
    /// The ceilings of `config` and `policy` together.
    pub fn of(config: &Config, policy: Option<&Policy>) -> Ceilings {
        let compute = policy.map(Policy::compute);
        Ceilings {
            max_turns: compute
                .and_then(|c| c.max_turns)
                .map_or(config.max_turns, |m| m.min(config.max_turns)),
            max_tool_calls: smaller(
                config.max_tool_calls,
                compute.and_then(|c| c.max_tool_calls),
            ),
            max_tokens: smaller(config.max_turn_tokens, compute.and_then(|c| c.max_tokens)),
        }
    }
}

/// Which ceiling a turn reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Exhausted {
    /// More tool calls than `max_tool_calls`.
    ToolCalls(u64),
    /// `max_turn_tokens` (or the policy's `maxTokens`) spent.
    Tokens(u64),
}

impl fmt::Display for Exhausted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Exhausted::ToolCalls(n) => write!(f, "max_tool_calls ({n} per turn)"),
            Exhausted::Tokens(n) => write!(f, "max_turn_tokens ({n} per turn)"),
        }
    }
}

impl Exhausted {
    /// The error result of a call this ceiling left unexecuted.
    pub fn result_text(&self) -> String {
        format!("{BUDGET_RESULT}: {self}")
    }
}

/// What a turn spent so far (kept in a suspended turn's checkpoint).
#[derive(Debug, Clone, Copy, Default, serde::Serialize, serde::Deserialize)]
pub struct Budget {
    calls: u64,
    tokens: u64,
}

/// The budget's answer for one model response that asks for tool calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Spend {
    /// How many of the response's calls may run (the first ones).
    pub run: usize,
    /// Set when the turn must end after this step.
    pub exhausted: Option<Exhausted>,
}

impl Budget {
    /// Whether the `i`-th call (from 0) of the next response runs whatever that response turns
    /// out to spend: there is no token ceiling (the response's own tokens could reach it), and
    /// the call is within `max_tool_calls`. What lets a call start before its reply is over.
    pub fn may_run(&self, i: usize, ceilings: &Ceilings) -> bool {
        let within = |max: u64| self.calls.saturating_add(i as u64 + 1) <= max;
        ceilings.max_tokens.is_none() && ceilings.max_tool_calls.is_none_or(within)
    }

    /// Account one response with `calls` tool calls and `usage`. Every call the model makes
    /// counts (denied ones too: a model looping on denials is a runaway as well); tokens count
    /// input and output. At the token ceiling no call of the response runs.
    pub fn spend(&mut self, calls: usize, usage: Usage, ceilings: &Ceilings) -> Spend {
        self.tokens = self
            .tokens
            .saturating_add(usage.input_tokens)
            .saturating_add(usage.output_tokens);
        let before = self.calls;
        self.calls = self.calls.saturating_add(calls as u64);
        if let Some(max) = ceilings.max_tokens {
            if calls > 0 && self.tokens >= max {
                return Spend {
                    run: 0,
                    exhausted: Some(Exhausted::Tokens(max)),
                };
            }
        }
        match ceilings.max_tool_calls {
            Some(max) if self.calls > max => Spend {
                run: max.saturating_sub(before) as usize,
                exhausted: Some(Exhausted::ToolCalls(max)),
            },
            _ => Spend {
                run: calls,
                exhausted: None,
            },
        }
    }
}

/// The policy's `modelAllowlist` / `backendAllowlist` against the client's model and style.
pub fn check_backend(policy: &Policy, config: &Config) -> Result<(), PolicyError> {
    let c = policy.compute();
    if !c.model_allowlist.is_empty() {
        let model = config.model.as_deref().unwrap_or("");
        if config.style != Style::Scripted && !c.model_allowlist.iter().any(|m| m == model) {
            return Err(PolicyError {
                at: "compute.modelAllowlist".into(),
                message: format!("model {model:?} is not on the list"),
            });
        }
    }
    if !c.backend_allowlist.is_empty() {
        let style = serde_json::to_value(config.style)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        let url = config.resolved_base_url();
        if !c.backend_allowlist.iter().any(|b| *b == style || *b == url) {
            return Err(PolicyError {
                at: "compute.backendAllowlist".into(),
                message: format!("style {style:?} at {url:?} is not on the list"),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(i: u64, o: u64) -> Usage {
        Usage {
            input_tokens: i,
            output_tokens: o,
            ..Usage::default()
        }
    }

    #[test]
    fn tool_call_ceiling_lets_the_first_calls_run() {
        let c = Ceilings {
            max_turns: 50,
            max_tool_calls: Some(3),
            max_tokens: None,
        };
        let mut b = Budget::default();
        assert_eq!(
            b.spend(2, usage(0, 0), &c),
            Spend {
                run: 2,
                exhausted: None
            }
        );
        assert_eq!(
            b.spend(1, usage(0, 0), &c),
            Spend {
                run: 1,
                exhausted: None
            }
        );
        assert_eq!(
            b.spend(2, usage(0, 0), &c),
            Spend {
                run: 0,
                exhausted: Some(Exhausted::ToolCalls(3))
            }
        );
        let mut b = Budget::default();
        assert_eq!(
            b.spend(5, usage(0, 0), &c),
            Spend {
                run: 3,
                exhausted: Some(Exhausted::ToolCalls(3))
            }
        );
    }

    #[test]
    fn token_ceiling() {
        let c = Ceilings {
            max_turns: 50,
            max_tool_calls: None,
            max_tokens: Some(100),
        };
        let mut b = Budget::default();
        assert_eq!(b.spend(1, usage(40, 10), &c).exhausted, None);
        let s = b.spend(1, usage(40, 10), &c);
        assert_eq!(
            s,
            Spend {
                run: 0,
                exhausted: Some(Exhausted::Tokens(100))
            }
        );
        assert!(Exhausted::Tokens(100)
            .result_text()
            .starts_with(BUDGET_RESULT));
    }

    #[test]
    fn config_and_policy_combine() {
        let mut config = Config {
            max_tool_calls: Some(10),
            ..Config::default()
        };
        let p = Policy::from_value(
            &serde_json::json!({"compute": {"maxToolCalls": 4, "maxTurns": 7, "maxTokens": 9}}),
        )
        .unwrap();
        let c = Ceilings::of(&config, Some(&p));
        assert_eq!(
            (c.max_turns, c.max_tool_calls, c.max_tokens),
            (7, Some(4), Some(9))
        );
        config.max_turn_tokens = Some(5);
        assert_eq!(Ceilings::of(&config, Some(&p)).max_tokens, Some(5));
        assert_eq!(Ceilings::of(&config, None).max_tool_calls, Some(10));
        assert_eq!(Ceilings::of(&Config::default(), None).max_turns, 50);
    }

    #[test]
    fn model_allowlist() {
        let p = Policy::from_value(&serde_json::json!({"compute": {"modelAllowlist": ["good"], "backendAllowlist": ["openai"]}})).unwrap();
        let mut config = Config {
            model: Some("good".into()),
            ..Config::default()
        };
        assert!(check_backend(&p, &config).is_ok());
        config.model = Some("other".into());
        assert_eq!(
            check_backend(&p, &config).unwrap_err().at,
            "compute.modelAllowlist"
        );
        config.model = Some("good".into());
        config.style = Style::Anthropic;
        assert_eq!(
            check_backend(&p, &config).unwrap_err().at,
            "compute.backendAllowlist"
        );
    }
}
