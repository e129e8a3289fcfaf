//! Branch operators: how a task's transition value is compared with a branch's `when`.

/// A branch's operator, checked when the chain is read.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Operator {
    /// The value is exactly `when`.
    Equals(String),
    /// `when` occurs in the value.
    Contains(String),
    /// The value starts with `when`.
    StartsWith(String),
    /// The value ends with `when`.
    EndsWith(String),
    /// The value, read as a number, is greater than `when`.
    Gt(f64),
    /// The value, read as a number, is less than `when`.
    Lt(f64),
    /// The value, read as a number, is within `lo..=hi` (`when` is `"lo-hi"` or `"lo,hi"`).
    InRange(f64, f64),
    /// The edge `from -> to` was taken at least `n` times in this run (reads the engine's
    /// counts, not the value).
    EdgeTraversedAtLeast {
        /// The task the edge leaves.
        from: String,
        /// The task the edge enters.
        to: String,
        /// How many times.
        n: u64,
    },
    /// Always.
    Default,
}

/// The operator names a branch may use.
pub(crate) const OPERATORS: &[&str] = &[
    "equals",
    "contains",
    "starts_with",
    "ends_with",
    "gt",
    "lt",
    "in_range",
    "edge_traversed_at_least",
    "default",
];

impl Operator {
    /// Read `operator` with its `when` (and `edge`); `Err` says what is wrong with which key.
    pub fn parse(operator: &str, when: &str, edge: Option<&str>) -> Result<Operator, String> {
        let number = |what: &str| {
            when.trim()
                .parse::<f64>()
                .ok()
                .filter(|n| n.is_finite())
                .ok_or_else(|| {
                    format!("when: operator {what:?} compares numbers, and {when:?} is not one")
                })
        };
        Ok(match operator {
            "equals" => Operator::Equals(when.to_string()),
            "contains" => Operator::Contains(when.to_string()),
            "starts_with" => Operator::StartsWith(when.to_string()),
            "ends_with" => Operator::EndsWith(when.to_string()),
            "gt" => Operator::Gt(number("gt")?),
            "lt" => Operator::Lt(number("lt")?),
            "in_range" => {
                let (lo, hi) = range(when).ok_or_else(|| {
                    format!(
                        "when: operator \"in_range\" takes \"LOW-HIGH\" or \"LOW,HIGH\" \
                         (numbers, LOW <= HIGH), not {when:?}"
                    )
                })?;
                Operator::InRange(lo, hi)
            }
            "edge_traversed_at_least" => {
                let edge = edge.ok_or(
                    "edge: operator \"edge_traversed_at_least\" needs an \"edge\" (\"from->to\")",
                )?;
                let (from, to) = edge
                    .split_once("->")
                    .map(|(a, b)| (a.trim(), b.trim()))
                    .filter(|(a, b)| !a.is_empty() && !b.is_empty())
                    .ok_or_else(|| format!("edge: {edge:?} is not \"from_task->to_task\""))?;
                let n = when.trim().parse::<u64>().map_err(|_| {
                    format!(
                        "when: operator \"edge_traversed_at_least\" takes a count, not {when:?}"
                    )
                })?;
                Operator::EdgeTraversedAtLeast {
                    from: from.to_string(),
                    to: to.to_string(),
                    n,
                }
            }
            "default" => Operator::Default,
            other => {
                return Err(format!(
                    "operator: {other:?} is not an operator (one of: {})",
                    OPERATORS.join(", ")
                ))
            }
        })
    }

    /// Whether `value` passes; `edges` counts how often an edge was taken in this run.
    pub fn matches(&self, value: &str, edges: &dyn Fn(&str, &str) -> u64) -> bool {
        let num = || value.trim().parse::<f64>().ok().filter(|n| n.is_finite());
        match self {
            Operator::Equals(w) => value == w,
            Operator::Contains(w) => value.contains(w.as_str()),
            Operator::StartsWith(w) => value.starts_with(w.as_str()),
            Operator::EndsWith(w) => value.ends_with(w.as_str()),
            Operator::Gt(w) => num().is_some_and(|n| n > *w),
            Operator::Lt(w) => num().is_some_and(|n| n < *w),
            Operator::InRange(lo, hi) => num().is_some_and(|n| *lo <= n && n <= *hi),
            Operator::EdgeTraversedAtLeast { from, to, n } => edges(from, to) >= *n,
            Operator::Default => true,
        }
    }
}

/// `"lo-hi"` or `"lo,hi"`; a leading minus belongs to the number (`"-5--1"`, `"-5,-1"`).
fn range(when: &str) -> Option<(f64, f64)> {
    let w = when.trim();
    let split = w.find(',').or_else(|| {
        // The first `-` that is not a sign: not at the start, not right after `e` or `E`.
        w.char_indices().skip(1).find_map(|(i, c)| {
            let prev = w[..i].chars().last();
            (c == '-' && !matches!(prev, Some('e' | 'E'))).then_some(i)
        })
    })?;
    let lo: f64 = w[..split].trim().parse().ok()?;
    let hi: f64 = w[split + 1..].trim().parse().ok()?;
    (lo.is_finite() && hi.is_finite() && lo <= hi).then_some((lo, hi))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_edges(_: &str, _: &str) -> u64 {
        0
    }

    #[test]
    fn string_operators() {
        let m = |op: &str, when: &str, v: &str| {
            Operator::parse(op, when, None)
                .unwrap()
                .matches(v, &no_edges)
        };
        assert!(m("equals", "tool-call", "tool-call"));
        assert!(!m("equals", "tool-call", "tool-call "));
        assert!(m("contains", "fail", "api_failure"));
        assert!(!m("contains", "Fail", "api_failure"));
        assert!(m("starts_with", "err", "error_timeout"));
        assert!(m("ends_with", "_ok", "write_ok"));
        assert!(!m("ends_with", "_ok", "write_ok!"));
        assert!(m("default", "", "anything"));
    }

    #[test]
    fn number_operators() {
        let m = |op: &str, when: &str, v: &str| {
            Operator::parse(op, when, None)
                .unwrap()
                .matches(v, &no_edges)
        };
        assert!(m("gt", "10", "10.5"));
        assert!(!m("gt", "10", "10"));
        assert!(!m("gt", "10", "eleven"));
        assert!(m("lt", "0", " -3 "));
        assert!(m("in_range", "1-5", "5"));
        assert!(m("in_range", "1,5", "1"));
        assert!(!m("in_range", "1-5", "5.01"));
        assert!(m("in_range", "-5--1", "-3"));
        assert!(m("in_range", "-5,-1", "-1"));
        assert!(m("in_range", "1e-3-1e3", "0.5"));
        assert!(!m("in_range", "1-5", "NaN"));
        assert!(!m("gt", "1", "inf"));
    }

    #[test]
    fn bad_operators_name_the_key() {
        let e =
            |op: &str, when: &str, edge: Option<&str>| Operator::parse(op, when, edge).unwrap_err();
        assert!(e("equal", "x", None).starts_with("operator: \"equal\""));
        assert!(e("gt", "ten", None).starts_with("when:"));
        assert!(e("in_range", "5-1", None).starts_with("when:"));
        assert!(e("in_range", "5", None).starts_with("when:"));
        assert!(e("edge_traversed_at_least", "3", None).starts_with("edge:"));
        assert!(e("edge_traversed_at_least", "3", Some("a-b")).starts_with("edge:"));
        assert!(e("edge_traversed_at_least", "x", Some("a->b")).starts_with("when:"));
    }

    #[test]
    fn edges_are_counted_by_the_engine() {
        let op = Operator::parse("edge_traversed_at_least", "2", Some("chat -> tools")).unwrap();
        let counts = |from: &str, to: &str| u64::from(from == "chat" && to == "tools") * 2;
        assert!(op.matches("ignored", &counts));
        assert!(!op.matches("ignored", &no_edges));
    }
}
