//! Which spans a turn gets: the telemetry it reports to (its parent's, for a subagent; its
//! client's otherwise) and what its chat spans say about the models it may send to.

use std::sync::Arc;

use crate::client_state::ClientState;
use crate::config::Config;
use crate::style::Style;
use crate::telemetry::{Attributes, ModelTarget, SpanContext, TurnTrace};
use crate::tool::EventSink;

/// `sink` with the spans of a turn of `inner`'s: under the parent's call span when `sink` is a
/// subagent's, under `host_parent` (the host's current span) or at a new trace's root
/// otherwise. Unchanged when neither the parent nor the client has telemetry on.
pub(crate) fn trace_turn(
    inner: &ClientState,
    sink: EventSink,
    agent: Option<&str>,
    host_parent: Option<SpanContext>,
) -> EventSink {
    let (telemetry, parent, root) = match sink.trace_parent() {
        Some((telemetry, parent, root)) => (telemetry, Some(parent), Some(root)),
        None => match inner.telemetry() {
            // The host's span is not sampled: neither is the turn (a parent-based sampler's
            // choice, the OpenTelemetry SDKs' default).
            Some(_) if host_parent.is_some_and(|p| !p.sampled) => return sink,
            Some(telemetry) => (telemetry.clone(), host_parent, None),
            None => return sink,
        },
    };
    let config = inner.config();
    let trace = TurnTrace::begin(
        telemetry,
        parent,
        root,
        agent,
        targets(config),
        request_attributes(config),
    );
    sink.traced(Arc::new(trace))
}

/// The GenAI conventions' provider name of a style.
fn provider(style: Style) -> &'static str {
    match style {
        Style::Openai | Style::OpenaiResponses => "openai",
        Style::Anthropic => "anthropic",
        Style::Ollama => "ollama",
        Style::Scripted => "contenox.scripted",
    }
}

/// The model a config sends to: name, provider, host and port (never the URL's user info,
/// path or query).
fn target(config: &Config) -> ModelTarget {
    let (address, port) = match config.style {
        Style::Scripted => (None, None),
        _ => match url::Url::parse(&config.resolved_base_url()) {
            Ok(url) => (
                url.host_str().map(str::to_string),
                url.port_or_known_default(),
            ),
            Err(_) => (None, None),
        },
    };
    ModelTarget {
        name: config.model_name().to_string(),
        provider: provider(config.style),
        address,
        port,
    }
}

/// The models of a client, its own first then its fallbacks (the slots turns move along).
fn targets(config: &Config) -> Vec<ModelTarget> {
    std::iter::once(target(config))
        .chain(
            (0..config.fallback.len())
                .filter_map(|i| config.fallback_config(i).map(|c| target(&c))),
        )
        .collect()
}

/// The request settings every chat span of a client carries.
fn request_attributes(config: &Config) -> Attributes {
    let mut attributes: Attributes = vec![(
        "gen_ai.request.max_tokens".into(),
        u64::from(config.max_tokens).into(),
    )];
    if let Some(t) = config.temperature {
        attributes.push(("gen_ai.request.temperature".into(), t.into()));
    }
    if let Some(p) = config.top_p {
        attributes.push(("gen_ai.request.top_p".into(), p.into()));
    }
    if let Some(k) = config.top_k {
        attributes.push(("gen_ai.request.top_k".into(), f64::from(k).into()));
    }
    if let Some(seed) = config.seed {
        attributes.push(("gen_ai.request.seed".into(), seed.into()));
    }
    if let Some(stop) = &config.stop {
        attributes.push(("gen_ai.request.stop_sequences".into(), stop.clone().into()));
    }
    attributes
}
