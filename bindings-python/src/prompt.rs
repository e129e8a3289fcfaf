//! A turn's prompt from Python: a `str`, or a list of part dicts whose image `data` may be
//! `bytes` (base64-encoded here; the engine checks every part, as for every binding).

use base64::Engine as _;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyDict, PyList, PyString, PyTuple};
use serde_json::{Map, Value};

use crate::convert::to_value;
use crate::error::to_py_err;

/// `prompt` as the engine's [`contenox::Prompt`]; a bad part is the engine's
/// `ConfigurationError` naming it, a prompt of another type a `TypeError`.
pub(crate) fn to_prompt(prompt: &Bound<'_, PyAny>) -> PyResult<contenox::Prompt> {
    if let Ok(s) = prompt.cast::<PyString>() {
        return Ok(contenox::Prompt::from(s.to_str()?));
    }
    if !(prompt.is_instance_of::<PyList>() || prompt.is_instance_of::<PyTuple>()) {
        return Err(PyTypeError::new_err(format!(
            "a prompt is a str or a list of parts, not {}",
            prompt.get_type().name()?
        )));
    }
    let parts = prompt
        .try_iter()?
        .map(|item| part_value(&item?))
        .collect::<PyResult<Vec<Value>>>()?;
    contenox::Prompt::from_json(&Value::Array(parts)).map_err(to_py_err)
}

/// One part as JSON: a dict's `data` given as bytes (or bytearray, memoryview) becomes base64.
fn part_value(item: &Bound<'_, PyAny>) -> PyResult<Value> {
    let Ok(dict) = item.cast::<PyDict>() else {
        return to_value(item);
    };
    let mut fields = Map::with_capacity(dict.len());
    for (key, value) in dict.iter() {
        let Ok(key) = key.cast::<PyString>() else {
            // Not JSON: the converter's TypeError names the key's type.
            return to_value(item);
        };
        let key_text = key.to_str()?.to_owned();
        let json = if key_text == "data" && is_bytes_like(&value) {
            let bytes: Vec<u8> = if let Ok(b) = value.cast::<PyBytes>() {
                b.as_bytes().to_vec()
            } else {
                // bytearray, memoryview: bytes(value) copies them through the buffer protocol.
                let copied = value.py().get_type::<PyBytes>().call1((&value,))?;
                copied.cast::<PyBytes>()?.as_bytes().to_vec()
            };
            Value::String(base64::engine::general_purpose::STANDARD.encode(bytes))
        } else {
            to_value(&value)?
        };
        fields.insert(key_text, json);
    }
    Ok(Value::Object(fields))
}

fn is_bytes_like(value: &Bound<'_, PyAny>) -> bool {
    value.is_instance_of::<PyBytes>()
        || value.is_instance_of::<PyByteArray>()
        || value
            .get_type()
            .name()
            .is_ok_and(|n| n.to_str().is_ok_and(|n| n == "memoryview"))
}
