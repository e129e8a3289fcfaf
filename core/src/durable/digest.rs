//! SHA-256 digests of JSON values: of a checkpoint's content, of a tool's spec, of an ask's
//! request, of the parts of a config that make a turn the same turn.
//!
//! `serde_json`'s map keeps its keys sorted (the crate is built without `preserve_order`), so
//! the text of a value, and with it its digest, does not depend on the order keys were written.

use serde::Serialize;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::config::Config;
use crate::gate::PendingRequest;
use crate::tool_spec::ToolSpec;

/// The lowercase hex SHA-256 of `bytes`.
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    let sum = Sha256::digest(bytes);
    let mut out = String::with_capacity(64);
    for b in sum.iter() {
        out.push_str(&format!("{b:02x}"));
    }
    out
}

/// The digest of a serializable value, through its JSON text (sorted keys).
pub(crate) fn of<T: Serialize + ?Sized>(value: &T) -> String {
    // A `Value` round trip sorts the keys of structs' maps too.
    let v = serde_json::to_value(value).unwrap_or(Value::Null);
    sha256_hex(v.to_string().as_bytes())
}

/// A tool's spec: name, description, input schema, hints.
pub(crate) fn tool(spec: &ToolSpec) -> String {
    of(spec)
}

/// An ask as the host sees it, without its timeout (a resumed ask's timeout is what is left).
pub(crate) fn request(r: &PendingRequest) -> String {
    of(&json!({
        "kind": r.kind,
        "prompt": r.prompt,
        "data": r.data,
        "call_id": r.call_id,
        "name": r.name,
        "arguments": r.arguments,
    }))
}

/// What makes a config the same agent: its style, model, system prompt, tools (builtins and
/// allowlist) and answer schema. Nothing secret (no key, header, base URL, environment) and
/// nothing that differs between two processes of one deployment (the root, the server's
/// address) goes in.
pub(crate) fn config(c: &Config) -> String {
    of(&json!({
        "style": c.style,
        "model": c.model,
        "system": c.system,
        "builtins": c.builtins,
        "allow": c.allow,
        "output_schema": c.output_schema,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_vector_and_key_order() {
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        let a: Value = serde_json::from_str(r#"{"b":1,"a":[1,2]}"#).unwrap();
        let b: Value = serde_json::from_str(r#"{"a":[1,2],"b":1}"#).unwrap();
        assert_eq!(of(&a), of(&b));
        let c: Value = serde_json::from_str(r#"{"a":[2,1],"b":1}"#).unwrap();
        assert_ne!(of(&a), of(&c));
    }

    #[test]
    fn config_digest_leaves_secrets_and_addresses_out() {
        let a = Config {
            model: Some("m".into()),
            ..Config::default()
        };
        let mut b = a.clone();
        b.api_key = Some("sk-other".into());
        b.base_url = Some("http://127.0.0.1:9/v1".into());
        b.headers.insert("x-secret".into(), "v".into());
        b.root = Some("/elsewhere".into());
        assert_eq!(config(&a), config(&b));
        b.system = Some("another agent".into());
        assert_ne!(config(&a), config(&b));
    }
}
