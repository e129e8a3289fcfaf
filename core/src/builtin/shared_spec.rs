//! The builtins' specs, built and checked once per process and shared by every client.
//!
//! A spec is a few KiB of descriptions and JSON Schema; ten of them copied into every client
//! were most of an idle client's heap. Builtin specs never change (a builtin's spec depends only
//! on its variant, e.g. bash with or without background shells), so each client holds pointers.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use parking_lot::Mutex;

use crate::error::Result;
use crate::tool::{check_spec, Tool, ToolSpec};

/// The shared spec of a builtin; `key` names the builtin and its variant.
pub(crate) fn shared_spec(key: &str, tool: &dyn Tool) -> Result<Arc<ToolSpec>> {
    static SPECS: OnceLock<Mutex<HashMap<String, Arc<ToolSpec>>>> = OnceLock::new();
    let specs = SPECS.get_or_init(Default::default);
    if let Some(spec) = specs.lock().get(key) {
        return Ok(spec.clone());
    }
    // Built outside the lock (checking a schema takes a while); a race builds it twice and
    // keeps the first.
    let spec = tool.spec();
    check_spec(&spec)?;
    let spec = Arc::new(spec);
    Ok(specs.lock().entry(key.to_string()).or_insert(spec).clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clients_share_one_spec_per_builtin_variant() {
        let read = super::super::builtin("read").unwrap();
        let a = shared_spec("read", read.as_ref()).unwrap();
        let b = shared_spec("read", read.as_ref()).unwrap();
        assert!(Arc::ptr_eq(&a, &b));
        assert_eq!(*a, read.spec());
    }
}
