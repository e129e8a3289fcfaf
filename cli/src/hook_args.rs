//! The `--header "Name: value"` and `--inject key=value` flags of `hook add` / `hook update`.
//!
//! A header splits at its first `:`, an injected parameter at its first `=`; both sides are
//! trimmed. An empty name, a missing separator or a name given twice is an error that names the
//! flag by its position, never by its text: the text may be a secret.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::error::{CliError, CliResult};

/// The headers of the `--header` flags, in a map (names compared case-insensitively for
/// repeats).
pub fn parse_headers(flags: &[String]) -> CliResult<BTreeMap<String, String>> {
    let mut headers = BTreeMap::new();
    let mut seen = std::collections::HashSet::new();
    for (i, flag) in flags.iter().enumerate() {
        let n = i + 1;
        let Some((name, value)) = flag.split_once(':') else {
            return Err(CliError::usage(format!(
                "--header #{n}: no \":\" between name and value (write \"Name: value\"; the value is not shown)"
            )));
        };
        let (name, value) = (name.trim(), value.trim());
        if name.is_empty() {
            return Err(CliError::usage(format!(
                "--header #{n}: the header name before \":\" is empty"
            )));
        }
        if !seen.insert(name.to_ascii_lowercase()) {
            return Err(CliError::usage(format!(
                "--header #{n}: the header {name:?} is given twice"
            )));
        }
        headers.insert(name.to_string(), value.to_string());
    }
    Ok(headers)
}

/// The parameters of the `--inject` flags.
pub fn parse_inject(flags: &[String]) -> CliResult<Map<String, Value>> {
    let mut inject = Map::new();
    for (i, flag) in flags.iter().enumerate() {
        let n = i + 1;
        let Some((key, value)) = flag.split_once('=') else {
            return Err(CliError::usage(format!(
                "--inject #{n}: no \"=\" between key and value (write key=value; the value is not shown)"
            )));
        };
        let (key, value) = (key.trim(), value.trim());
        if key.is_empty() {
            return Err(CliError::usage(format!(
                "--inject #{n}: the key before \"=\" is empty"
            )));
        }
        if inject.contains_key(key) {
            return Err(CliError::usage(format!(
                "--inject #{n}: the key {key:?} is given twice"
            )));
        }
        inject.insert(key.to_string(), Value::String(value.to_string()));
    }
    Ok(inject)
}

/// A `--timeout` in milliseconds: a positive whole number.
pub fn parse_timeout(text: &str) -> CliResult<u64> {
    match text.trim().parse::<u64>() {
        Ok(ms) if ms > 0 => Ok(ms),
        _ => Err(CliError::usage(format!(
            "--timeout {:?}: give a positive number of milliseconds (for example 15000)",
            crate::terminal::clean_line(&crate::terminal::cut_chars(text, 40))
        ))),
    }
}

/// A hook's name: what `--hooks` and chains call it; the tool's name for the one-tool protocols.
pub fn check_name(name: &str) -> CliResult<()> {
    if contenox::tool::valid_tool_name(name) {
        Ok(())
    } else {
        Err(CliError::usage(format!(
            "hook name {:?}: use 1 to 64 letters, digits, '_' or '-'",
            crate::terminal::clean_line(&crate::terminal::cut_chars(name, 70))
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn headers_split_at_the_first_colon() {
        let h = parse_headers(&s(&["Authorization:  Bearer a:b ", " X-App :v2"])).unwrap();
        assert_eq!(h["Authorization"], "Bearer a:b");
        assert_eq!(h["X-App"], "v2");
        assert_eq!(parse_headers(&s(&["X-Empty:"])).unwrap()["X-Empty"], "");
        for bad in [
            &["no separator secret-value"][..],
            &[": secret-value"],
            &["A: secret-value", "a: secret-value"],
        ] {
            let e = parse_headers(&s(bad)).unwrap_err();
            assert_eq!(e.code, 2);
            assert!(!e.message.contains("secret-value"), "{}", e.message);
        }
    }

    #[test]
    fn inject_splits_at_the_first_equals() {
        let i = parse_inject(&s(&["tenant_id = acme", "q=a=b"])).unwrap();
        assert_eq!(i["tenant_id"], "acme");
        assert_eq!(i["q"], "a=b");
        for bad in [&["tenant"][..], &["=x"], &["a=1", "a=2"]] {
            assert_eq!(parse_inject(&s(bad)).unwrap_err().code, 2);
        }
        let e = parse_inject(&s(&["my-secret-token"])).unwrap_err();
        assert!(!e.message.contains("my-secret-token"), "{}", e.message);
    }

    #[test]
    fn timeouts_and_names() {
        assert_eq!(parse_timeout("15000").unwrap(), 15000);
        for bad in ["0", "-5", "1.5", "abc", ""] {
            assert_eq!(parse_timeout(bad).unwrap_err().code, 2, "{bad}");
        }
        assert!(check_name("nws").is_ok() && check_name("my-app_2").is_ok());
        for bad in ["", "a b", "x/y", "\u{1b}[31m"] {
            assert!(check_name(bad).is_err(), "{bad}");
        }
    }
}
