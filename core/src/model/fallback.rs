//! Fallback models (config `fallback`): when a model fails for good with a failure another
//! model may not have (see [`RequestFailed::fall_back`]), the same request, rendered again in
//! the next model's style, goes to the next model. Each model keeps its own retries.

use std::sync::Arc;

use super::retry::{complete_with_retry, RequestFailed};
use super::{Backend, ModelResponse, RequestBody};
use crate::config::RetryPolicy;
use crate::event::Event;
use crate::tool::EventSink;

/// One model a request may go to: the config's own (slot 0) or a `fallback` entry.
pub(crate) struct Model {
    /// Its name, as events report it.
    pub name: String,
    pub backend: Arc<dyn Backend>,
}

/// What answered a request.
pub(crate) struct Answered<R> {
    pub response: ModelResponse,
    /// The slot of the model that answered.
    pub slot: usize,
    /// What `render` returned with the body that was answered.
    pub rendered: R,
}

/// Send one request to `models[start]`, and on a failure another model may not have, to each
/// next model in turn (a `fallback` event before each). `render(slot, backend)` renders the
/// request for that model's style (with whatever else the caller needs from that moment).
/// `on_call` sees each call as it streams in; a call is data, so no fallback follows one.
pub(crate) async fn complete_with_fallback<R>(
    models: &[Model],
    start: usize,
    render: impl Fn(usize, &dyn Backend) -> (RequestBody, R),
    policy: &RetryPolicy,
    sink: &EventSink,
    index: u32,
    on_call: Option<&(dyn Fn(&super::RawCall) + Send + Sync)>,
) -> Result<Answered<R>, RequestFailed> {
    let mut slot = start.min(models.len().saturating_sub(1));
    loop {
        let model = &models[slot];
        let (body, rendered) = render(slot, &*model.backend);
        match complete_with_retry(&*model.backend, &body, policy, sink, index, on_call).await {
            Ok(response) => {
                return Ok(Answered {
                    response,
                    slot,
                    rendered,
                })
            }
            Err(f) if f.fall_back && slot + 1 < models.len() => {
                sink.emit_with(|| Event::Fallback {
                    from_model: model.name.clone(),
                    to_model: models[slot + 1].name.clone(),
                    status: f.status,
                    error: f.message.clone(),
                    agent: Vec::new(),
                });
                slot += 1;
            }
            Err(f) => return Err(f),
        }
    }
}
