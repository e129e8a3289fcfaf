//! JSON bytes as Go's `encoding/json` writes them, so a service written against the Go runtime
//! this project descends from receives the same request bodies.
//!
//! What Go does and this does: compact; object keys sorted (Go sorts map keys by their bytes);
//! `<`, `>`, `&` as `\u003c`, `\u003e`, `\u0026`; U+2028 and U+2029 as `\u2028`, `\u2029`;
//! `\n`, `\r`, `\t`, `\b`, `\f` as short escapes and other control characters as `\u00XX`
//! (lowercase hex); floats in Go's shortest form (`1e+21`, `1e-7`, `0.000001`, `3`, `-0`).
//!
//! One deliberate difference: integers are written exactly. Go decodes every JSON number into
//! a float64 and so rounds integers beyond 2^53 (9007199254740993 becomes 9007199254740992);
//! within ±2^53 the bytes are the same.

use serde_json::{Map, Value};

/// `value` as Go's `json.Marshal` of the decoded value writes it.
pub(crate) fn to_vec(value: &Value) -> Vec<u8> {
    let mut out = Vec::with_capacity(128);
    write_value(&mut out, value);
    out
}

/// `value` as a `String` (see [`to_vec`]).
pub(crate) fn to_string(value: &Value) -> String {
    // Cannot fail: the writer copies `Value` strings (UTF-8) and writes ASCII around them.
    String::from_utf8(to_vec(value)).expect("the writer only writes UTF-8")
}

/// `{"name": <name>, "arguments": <arguments>}`, in that order: the struct Go's runtime
/// marshals for a call (struct fields keep their declared order; only maps are sorted).
pub(crate) fn call_body(name: &str, arguments: &Value) -> Vec<u8> {
    let mut out = Vec::with_capacity(128);
    out.extend_from_slice(b"{\"name\":");
    write_str(&mut out, name);
    out.extend_from_slice(b",\"arguments\":");
    write_value(&mut out, arguments);
    out.push(b'}');
    out
}

fn write_value(out: &mut Vec<u8>, value: &Value) {
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Number(n) => write_number(out, n),
        Value::String(s) => write_str(out, s),
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_value(out, item);
            }
            out.push(b']');
        }
        Value::Object(map) => write_object(out, map),
    }
}

fn write_object(out: &mut Vec<u8>, map: &Map<String, Value>) {
    // serde_json's map is sorted already unless a dependency turns on `preserve_order`; sort
    // by bytes here so the output never depends on that.
    let mut entries: Vec<(&String, &Value)> = map.iter().collect();
    entries.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    out.push(b'{');
    for (i, (k, v)) in entries.into_iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_str(out, k);
        out.push(b':');
        write_value(out, v);
    }
    out.push(b'}');
}

fn write_number(out: &mut Vec<u8>, n: &serde_json::Number) {
    if let Some(i) = n.as_i64() {
        out.extend_from_slice(i.to_string().as_bytes());
    } else if let Some(u) = n.as_u64() {
        out.extend_from_slice(u.to_string().as_bytes());
    } else if let Some(f) = n.as_f64() {
        out.extend_from_slice(go_float(f).as_bytes());
    } else {
        out.extend_from_slice(n.to_string().as_bytes());
    }
}

/// Go's float64 encoding: the shortest digits that read back as `f`, in plain notation for
/// 1e-6 <= |f| < 1e21 and in exponent notation (`1e+21`, `1.5e-7`) outside it.
fn go_float(f: f64) -> String {
    if !f.is_finite() {
        // JSON has no such number and serde_json never makes one; Go refuses to encode it.
        return "null".into();
    }
    let abs = f.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        // Rust's `{:e}` is the shortest round-trip form too, as `1.5e-7` / `1e21`.
        let s = format!("{f:e}");
        match s.split_once('e') {
            Some((mantissa, exp)) if !exp.starts_with('-') => format!("{mantissa}e+{exp}"),
            _ => s,
        }
    } else {
        // Rust's `Display` for f64: shortest round-trip digits, never an exponent, no `.0`.
        format!("{f}")
    }
}

fn write_str(out: &mut Vec<u8>, s: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.push(b'"');
    let bytes = s.as_bytes();
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        let escape: Option<&[u8]> = match b {
            b'"' => Some(b"\\\""),
            b'\\' => Some(b"\\\\"),
            b'\n' => Some(b"\\n"),
            b'\r' => Some(b"\\r"),
            b'\t' => Some(b"\\t"),
            0x08 => Some(b"\\b"),
            0x0c => Some(b"\\f"),
            b'<' => Some(b"\\u003c"),
            b'>' => Some(b"\\u003e"),
            b'&' => Some(b"\\u0026"),
            _ => None,
        };
        if let Some(e) = escape {
            out.extend_from_slice(&bytes[start..i]);
            out.extend_from_slice(e);
            i += 1;
            start = i;
        } else if b < 0x20 {
            out.extend_from_slice(&bytes[start..i]);
            out.extend_from_slice(b"\\u00");
            out.push(HEX[usize::from(b >> 4)]);
            out.push(HEX[usize::from(b & 0xf)]);
            i += 1;
            start = i;
        } else if b == 0xe2
            && bytes.get(i + 1) == Some(&0x80)
            && matches!(bytes.get(i + 2), Some(0xa8 | 0xa9))
        {
            // U+2028 LINE SEPARATOR / U+2029 PARAGRAPH SEPARATOR.
            out.extend_from_slice(&bytes[start..i]);
            out.extend_from_slice(if bytes[i + 2] == 0xa8 {
                b"\\u2028"
            } else {
                b"\\u2029"
            });
            i += 3;
            start = i;
        } else {
            i += 1;
        }
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The arguments of the golden tests, as a model would send them.
    fn args() -> Value {
        serde_json::from_str(
            r#"{"query":"a<b & c>d","n":3,"f":1.5,"big":1e21,"small":0.0000001,"tiny":0.000001,
                "neg":-0.0,"nested":{"z":1,"a":[true,null,"x"]},
                "uni":"é\u2028\u2029\n\t\r\b\f\u0001\u007f\"\\/"}"#,
        )
        .unwrap()
    }

    /// What `go run` printed for `json.Marshal(args)` (Go 1.26, encoding/json).
    const GO_ARGS: &str = r#"{"big":1e+21,"f":1.5,"n":3,"neg":-0,"nested":{"a":[true,null,"x"],"z":1},"query":"a\u003cb \u0026 c\u003ed","small":1e-7,"tiny":0.000001,"uni":"é\u2028\u2029\n\t\r\b\f\u0001\u007f\"\\/"}"#;

    #[test]
    fn values_as_go_writes_them() {
        // Go writes DEL (0x7f) raw; the golden has it escaped only for readability here.
        let want = GO_ARGS.replace("\\u007f", "\u{7f}");
        assert_eq!(to_string(&args()), want);
        for (f, go) in [
            (1e20, "100000000000000000000"),
            (123456789e12, "123456789000000000000"),
            (1e-7, "1e-7"),
            (1.5e-10, "1.5e-10"),
            (3.0, "3"),
            (2.5e300, "2.5e+300"),
            (-1e-6, "-0.000001"),
            (0.1, "0.1"),
        ] {
            assert_eq!(go_float(f), go, "{f}");
        }
        assert_eq!(to_string(&json!({})), "{}");
        assert_eq!(to_string(&json!([])), "[]");
        // Integers are exact (Go would round this one to ...992).
        assert_eq!(
            to_string(&serde_json::from_str::<Value>("9007199254740993").unwrap()),
            "9007199254740993"
        );
        assert_eq!(to_string(&json!(-42)), "-42");
    }

    #[test]
    fn keys_sort_by_bytes() {
        let v: Value = serde_json::from_str(r#"{"b":1,"B":2,"a":3,"é":4,"_":5}"#).unwrap();
        assert_eq!(to_string(&v), r#"{"B":2,"_":5,"a":3,"b":1,"é":4}"#);
    }

    #[test]
    fn call_body_puts_name_first() {
        let body = call_body("my-hook", &json!({"z": 1, "a": "<&>"}));
        assert_eq!(
            String::from_utf8(body).unwrap(),
            r#"{"name":"my-hook","arguments":{"a":"\u003c\u0026\u003e","z":1}}"#
        );
    }
}
