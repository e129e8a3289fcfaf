//! `Texts`: one or several strings in a scenario (`"x"` or `["x", "y"]`), used by the
//! scenario's expectations and by the remote services' request checks.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One or several strings: `"x"` or `["x", "y"]`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "Value", into = "Value")]
pub struct Texts(pub Vec<String>);

impl TryFrom<Value> for Texts {
    type Error = String;
    fn try_from(v: Value) -> Result<Self, String> {
        match v {
            Value::String(s) => Ok(Texts(vec![s])),
            Value::Array(items) => items
                .into_iter()
                .map(|i| match i {
                    Value::String(s) => Ok(s),
                    other => Err(format!("expected a string, got {other}")),
                })
                .collect::<Result<Vec<_>, _>>()
                .map(Texts),
            other => Err(format!(
                "expected a string or a list of strings, got {other}"
            )),
        }
    }
}

impl From<Texts> for Value {
    fn from(t: Texts) -> Value {
        if t.0.len() == 1 {
            Value::String(t.0.into_iter().next().unwrap_or_default())
        } else {
            Value::from(t.0)
        }
    }
}
