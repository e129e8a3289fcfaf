//! The `Transcript` class of `contenox._native`: a conversation the engine handed over, kept as
//! the engine's value and written as JSON only when Python reads it. A turn's result carries
//! one, and most callers never look at it: serializing a long conversation (hundreds of
//! messages) after every turn for nobody was most of a session turn's binding cost.

use contenox::Transcript;
use pyo3::prelude::*;

use crate::error::to_py_err;

/// A conversation held by the engine (wrapped by `contenox.Transcript`).
#[pyclass(frozen, module = "contenox._native", name = "Transcript")]
pub struct PyTranscript {
    pub(crate) transcript: Transcript,
    /// Written indented (`client.transcript`, as `Transcript::to_json` does) or compact (a
    /// turn's result).
    pretty: bool,
}

impl PyTranscript {
    /// A result's transcript: compact JSON.
    pub(crate) fn compact(transcript: Transcript) -> Self {
        PyTranscript {
            transcript,
            pretty: false,
        }
    }

    /// The client's conversation: indented JSON.
    pub(crate) fn pretty(transcript: Transcript) -> Self {
        PyTranscript {
            transcript,
            pretty: true,
        }
    }
}

#[pymethods]
impl PyTranscript {
    /// The conversation as JSON text.
    fn to_json(&self) -> PyResult<String> {
        if self.pretty {
            Ok(self.transcript.to_json())
        } else {
            serde_json::to_string(&self.transcript).map_err(|e| to_py_err(e.into()))
        }
    }

    /// The number of messages.
    fn __len__(&self) -> usize {
        self.transcript.messages.len()
    }
}
