//! Hostile model servers: stalls, keep-alive-only streams, bodies beyond every cap, redirects,
//! secrets in URLs and error bodies. Each server is started by its test on 127.0.0.1 and gone
//! when the test ends; every wait is bounded.

use std::time::Duration;

use crate::net_util::{chunked_head, whole, RawServer, Step};
use contenox::{list_models, Client, Config, Event, Outcome, TurnResult};
use serde_json::{json, Value};

/// Longer than any test needs: a test that hits it has hung (the bug it guards against).
const HANG: Duration = Duration::from_secs(60);

fn config(style: &str, base_url: &str, extra: Value) -> Config {
    let mut cfg = json!({
        "style": style,
        "base_url": base_url,
        "model": "m",
        "api_key": "test-key",
        "builtins": [],
        "root": std::env::temp_dir(),
        "request_timeout_ms": 5_000,
        "idle_timeout_ms": 400,
        "retry": {"max_retries": 1, "initial_backoff_ms": 1, "max_backoff_ms": 2}
    });
    for (k, v) in extra.as_object().unwrap() {
        cfg[k] = v.clone();
    }
    serde_json::from_value(cfg).unwrap()
}

/// Run one turn, collecting its events; panics if it does not end within [`HANG`].
async fn turn(cfg: Config) -> (Vec<Event>, TurnResult) {
    let client = Client::from_config(cfg).unwrap();
    let mut run = client.stream("hi").unwrap();
    let events = tokio::time::timeout(HANG, async {
        let mut events = Vec::new();
        while let Some(e) = run.next_event().await {
            events.push(e);
        }
        events
    })
    .await
    .expect("the turn hung");
    (events, run.result().await.unwrap())
}

fn kinds(events: &[Event], kind: &str) -> usize {
    events.iter().filter(|e| e.kind() == kind).count()
}

fn deltas(events: &[Event]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            Event::TextDelta { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

fn error_of(result: &TurnResult) -> String {
    assert_eq!(result.outcome, Outcome::Error, "{result:?}");
    result.error.clone().unwrap_or_default()
}

fn sse(data: &str) -> Vec<u8> {
    format!("data: {data}\n\n").into_bytes()
}

fn openai_delta(text: &str) -> Vec<u8> {
    sse(
        &json!({"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": null}]})
            .to_string(),
    )
}

fn keepalives() -> Step {
    Step::Every {
        chunk: b": ping\n\n".to_vec(),
        every: Duration::from_millis(20),
    }
}

#[tokio::test]
async fn a_keep_alive_only_stream_is_an_idle_timeout_and_is_retried() {
    let server =
        RawServer::start(|_, _| vec![chunked_head(200, "text/event-stream", &[]), keepalives()])
            .await;
    let (events, result) = turn(config("openai", &format!("{}/v1", server.url()), json!({}))).await;
    let error = error_of(&result);
    assert!(error.contains("idle_timeout_ms"), "{error}");
    assert!(error.contains("400 ms"), "{error}");
    // Nothing but keep-alives arrived, so the request was sent again (then gave up).
    assert_eq!(kinds(&events, "retry"), 1, "{events:?}");
    assert_eq!(server.hits(), 2);
    assert_eq!(kinds(&events, "turn_end"), 1);
}

#[tokio::test]
async fn a_stall_after_content_is_an_error_without_a_retry_or_duplicated_deltas() {
    let server = RawServer::start(|_, _| {
        vec![
            chunked_head(200, "text/event-stream", &[]),
            Step::Chunk(openai_delta("Hello ")),
            Step::Chunk(openai_delta("wor")),
            keepalives(),
        ]
    })
    .await;
    let (events, result) = turn(config("openai", &format!("{}/v1", server.url()), json!({}))).await;
    let error = error_of(&result);
    assert!(error.contains("idle_timeout_ms"), "{error}");
    assert!(error.contains("broke off"), "{error}");
    assert_eq!(kinds(&events, "retry"), 0, "{events:?}");
    assert_eq!(deltas(&events), "Hello wor");
    assert_eq!(server.hits(), 1);
}

/// An openai stream of four content pieces 150 ms apart (600 ms in all), then the finish.
async fn four_pieces_150_ms_apart() -> RawServer {
    let pause = || Step::Pause(Duration::from_millis(150));
    let finish =
        sse(&json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}).to_string());
    RawServer::start(move |_, _| {
        vec![
            chunked_head(200, "text/event-stream", &[]),
            Step::Chunk(openai_delta("one ")),
            pause(),
            Step::Chunk(openai_delta("two ")),
            pause(),
            Step::Chunk(openai_delta("three ")),
            pause(),
            Step::Chunk(openai_delta("four")),
            pause(),
            Step::Chunk(finish.clone()),
            Step::Chunk(b"data: [DONE]\n\n".to_vec()),
            Step::End,
        ]
    })
    .await
}

#[tokio::test]
async fn each_piece_of_content_moves_the_idle_deadline_on() {
    // Four pieces 150 ms apart: 600 ms in all, past the 400 ms idle timeout counted from the
    // first read, but never 400 ms without a piece: the answer completes.
    let server = four_pieces_150_ms_apart().await;
    let (events, result) = turn(config("openai", &format!("{}/v1", server.url()), json!({}))).await;
    assert_eq!(result.outcome, Outcome::Done, "{result:?}");
    assert_eq!(deltas(&events), "one two three four");
    assert_eq!(kinds(&events, "retry"), 0);
}

#[tokio::test]
async fn the_request_timeout_does_not_cut_a_body_that_keeps_coming() {
    // The request's timer goes on to bound the body's reads (one timer per request): once the
    // head has arrived, the 300 ms request timeout no longer applies, only the idle timeout
    // (400 ms) between pieces, here 600 ms of pieces 150 ms apart.
    let server = four_pieces_150_ms_apart().await;
    let cfg = config(
        "openai",
        &format!("{}/v1", server.url()),
        json!({"request_timeout_ms": 300}),
    );
    let (events, result) = turn(cfg).await;
    assert_eq!(result.outcome, Outcome::Done, "{result:?}");
    assert_eq!(deltas(&events), "one two three four");
    assert_eq!(kinds(&events, "retry"), 0);
}

#[tokio::test]
async fn a_stalled_body_ends_at_the_idle_timeout_not_the_later_request_timeout() {
    // The request's timer (5 s) is moved back to the body's earlier idle deadline (400 ms).
    let server = RawServer::start(|_, _| {
        vec![
            chunked_head(200, "text/event-stream", &[]),
            Step::Chunk(openai_delta("Hello")),
            Step::Hold,
        ]
    })
    .await;
    let (events, result) = turn(config("openai", &format!("{}/v1", server.url()), json!({}))).await;
    let error = error_of(&result);
    assert!(error.contains("idle_timeout_ms"), "{error}");
    assert_eq!(deltas(&events), "Hello");
}

#[tokio::test]
async fn anthropic_pings_do_not_keep_a_stalled_answer_alive() {
    let ping = b"event: ping\ndata: {\"type\": \"ping\"}\n\n".to_vec();
    let start = b"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":1,\"output_tokens\":0}}}\n\n".to_vec();
    let server = RawServer::start(move |_, _| {
        vec![
            chunked_head(200, "text/event-stream", &[]),
            Step::Chunk(start.clone()),
            Step::Every {
                chunk: ping.clone(),
                every: Duration::from_millis(20),
            },
        ]
    })
    .await;
    let (events, result) = turn(config("anthropic", &server.url(), json!({}))).await;
    let error = error_of(&result);
    assert!(error.contains("idle_timeout_ms"), "{error}");
    assert_eq!(kinds(&events, "retry"), 0);
}

#[tokio::test]
async fn ollama_stalls_before_and_after_data() {
    // Headers, then nothing: retried.
    let silent =
        RawServer::start(|_, _| vec![chunked_head(200, "application/x-ndjson", &[]), Step::Hold])
            .await;
    let (events, result) = turn(config("ollama", &silent.url(), json!({}))).await;
    assert!(error_of(&result).contains("idle_timeout_ms"));
    assert_eq!(kinds(&events, "retry"), 1);
    assert_eq!(silent.hits(), 2);
    // Half a line, then nothing: the answer had begun, not retried.
    let half = RawServer::start(|_, _| {
        vec![
            chunked_head(200, "application/x-ndjson", &[]),
            Step::Chunk(b"{\"message\": {\"content\": \"x\"".to_vec()),
            Step::Hold,
        ]
    })
    .await;
    let (events, result) = turn(config("ollama", &half.url(), json!({}))).await;
    assert!(error_of(&result).contains("idle_timeout_ms"));
    assert_eq!(kinds(&events, "retry"), 0);
}

#[tokio::test]
async fn no_answer_within_the_request_timeout_is_retried() {
    let server = RawServer::start(|_, _| vec![Step::Hold]).await;
    let cfg = config(
        "openai",
        &format!("{}/v1", server.url()),
        json!({"request_timeout_ms": 300}),
    );
    let (events, result) = turn(cfg).await;
    let error = error_of(&result);
    assert!(error.contains("request_timeout_ms"), "{error}");
    assert!(error.contains("300 ms"), "{error}");
    assert_eq!(kinds(&events, "retry"), 1);
    assert_eq!(server.hits(), 2);
}

#[tokio::test]
async fn one_sse_line_beyond_the_cap_is_an_error_naming_the_cap() {
    // 17 MiB of one `data:` line, in 64 KiB chunks, and the line never ends.
    let server = RawServer::start(|_, _| {
        vec![
            chunked_head(200, "text/event-stream", &[]),
            Step::Chunk(b"data: ".to_vec()),
            Step::Repeat {
                chunk: vec![b'x'; 64 * 1024],
                count: 17 * 16,
            },
            Step::Hold,
        ]
    })
    .await;
    let (events, result) = turn(config(
        "openai",
        &format!("{}/v1", server.url()),
        json!({"idle_timeout_ms": 20_000}),
    ))
    .await;
    let error = error_of(&result);
    assert!(error.contains("16 MiB"), "{error}");
    assert!(error.contains("cap"), "{error}");
    assert_eq!(kinds(&events, "retry"), 0);
}

#[tokio::test]
async fn one_ndjson_line_beyond_the_cap_is_an_error_naming_the_cap() {
    let server = RawServer::start(|_, _| {
        vec![
            chunked_head(200, "application/x-ndjson", &[]),
            Step::Repeat {
                chunk: vec![b'x'; 64 * 1024],
                count: 17 * 16,
            },
            Step::Hold,
        ]
    })
    .await;
    let (_, result) = turn(config(
        "ollama",
        &server.url(),
        json!({"idle_timeout_ms": 20_000}),
    ))
    .await;
    let error = error_of(&result);
    assert!(error.contains("16 MiB") && error.contains("cap"), "{error}");
}

#[tokio::test]
async fn a_huge_error_body_is_read_only_up_to_its_cap() {
    // 200 MiB of error body: the client must stop reading long before the end.
    let server = RawServer::start(|_, _| {
        vec![
            chunked_head(500, "text/plain", &[]),
            Step::Chunk(b"the fleet is on fire ".to_vec()),
            Step::Repeat {
                chunk: vec![b'y'; 64 * 1024],
                count: 200 * 16,
            },
            Step::End,
        ]
    })
    .await;
    let (_, result) = turn(config(
        "openai",
        &format!("{}/v1", server.url()),
        json!({"retry": {"max_retries": 0}}),
    ))
    .await;
    let error = error_of(&result);
    assert!(error.contains("HTTP 500"), "{error}");
    assert!(error.contains("the fleet is on fire"), "{error}");
    assert!(error.len() < 4_000, "{}", error.len());
    // What the kernel buffers is a few MiB; reading the whole body would be 200 MiB.
    assert!(
        server.written() < 32 << 20,
        "the client read {} bytes of an error body",
        server.written()
    );
}

#[tokio::test]
async fn a_non_streamed_body_beyond_its_cap_is_an_error() {
    let server = RawServer::start(|_, _| {
        vec![
            chunked_head(200, "application/json", &[]),
            Step::Chunk(b"{\"choices\": [{\"message\": {\"content\": \"".to_vec()),
            Step::Repeat {
                chunk: vec![b'z'; 64 * 1024],
                count: 80 * 16,
            },
            Step::End,
        ]
    })
    .await;
    let (_, result) = turn(config(
        "openai",
        &format!("{}/v1", server.url()),
        json!({"idle_timeout_ms": 20_000}),
    ))
    .await;
    let error = error_of(&result);
    assert!(error.contains("64 MiB") && error.contains("cap"), "{error}");
    assert!(server.written() < 100 << 20, "{}", server.written());
}

/// A server that redirects every request to `target` (with a secret in the query).
async fn redirector(status: u16, target: String) -> RawServer {
    RawServer::start(move |_, _| {
        whole(
            status,
            "text/plain",
            &[("location", &target)],
            &format!("go to {target}"),
        )
    })
    .await
}

#[tokio::test]
async fn redirects_are_not_followed_and_carry_no_secret_headers() {
    for (style, path) in [
        ("openai", "/v1/chat/completions"),
        ("anthropic", "/v1/messages"),
        ("ollama", "/api/chat"),
    ] {
        for status in [301, 302, 307, 308] {
            let other = RawServer::start(|_, _| whole(200, "application/json", &[], "{}")).await;
            let target = format!("{}{path}?sig=REDIRECT-SIG-77", other.url());
            let server = redirector(status, target).await;
            let base = if style == "openai" {
                format!("{}/v1", server.url())
            } else {
                server.url()
            };
            let cfg = config(
                style,
                &base,
                json!({"headers": {"X-Custom-Secret": "HEADER-SECRET-55"}}),
            );
            let (events, result) = turn(cfg).await;
            let error = error_of(&result);
            assert!(
                error.contains(&status.to_string()),
                "{style} {status}: {error}"
            );
            assert!(error.contains(&other.url()), "{style} {status}: {error}");
            assert!(
                !error.contains("REDIRECT-SIG-77"),
                "{style} {status}: {error}"
            );
            assert_eq!(
                other.hits(),
                0,
                "{style} {status}: the redirect was followed"
            );
            assert_eq!(kinds(&events, "retry"), 0, "{style} {status}");
            // The models list follows no redirect either.
            let listed = list_models(&config(style, &base, json!({}))).await;
            let err = listed.unwrap_err().to_string();
            assert!(
                err.contains(&status.to_string()) && !err.contains("REDIRECT-SIG-77"),
                "{err}"
            );
            assert_eq!(
                other.hits(),
                0,
                "{style} {status}: list_models followed the redirect"
            );
        }
    }
}

#[tokio::test]
async fn url_userinfo_query_and_echoed_keys_stay_out_of_errors_and_events() {
    // Nobody listens on this port: reqwest's error names the URL.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let base = format!(
        "http://tok-USERINFO-1:pw-USERINFO-2@127.0.0.1:{port}/v1?api-version=2024-06-01&key=QUERY-SECRET-3"
    );
    let cfg = config("openai", &base, json!({"api_key": "API-KEY-SECRET-4"}));
    let (events, result) = turn(cfg).await;
    let error = error_of(&result);
    assert!(error.contains("could not reach"), "{error}");
    let everything = format!("{error}\n{}", serde_json::to_string(&events).unwrap());
    for secret in [
        "USERINFO-1",
        "USERINFO-2",
        "QUERY-SECRET-3",
        "API-KEY-SECRET-4",
    ] {
        assert!(
            !everything.contains(secret),
            "{secret} leaked: {everything}"
        );
    }
    assert_eq!(kinds(&events, "retry"), 1);

    // A server (or proxy) that echoes the key and the URL in its error body.
    let echo = RawServer::start(|n, _| {
        let body = format!("request {n}: invalid api key API-KEY-SECRET-4 for ?key=QUERY-SECRET-3");
        whole(503, "text/plain", &[], &body)
    })
    .await;
    let base = format!("{}/v1?key=QUERY-SECRET-3", echo.url());
    let (events, result) = turn(config(
        "openai",
        &base,
        json!({"api_key": "API-KEY-SECRET-4"}),
    ))
    .await;
    let error = error_of(&result);
    assert!(
        error.contains("HTTP 503") && error.contains("[redacted]"),
        "{error}"
    );
    let everything = format!("{error}\n{}", serde_json::to_string(&events).unwrap());
    for secret in ["QUERY-SECRET-3", "API-KEY-SECRET-4"] {
        assert!(
            !everything.contains(secret),
            "{secret} leaked: {everything}"
        );
    }
    // The query of the base URL still reaches the server (it is part of the endpoint).
    assert!(echo.requests.lock().unwrap()[0].contains("key=QUERY-SECRET-3"));
}

#[tokio::test]
async fn list_models_is_bounded_too() {
    let stalled = RawServer::start(|_, _| vec![Step::Hold]).await;
    let cfg = config(
        "openai",
        &format!("{}/v1", stalled.url()),
        json!({"request_timeout_ms": 300}),
    );
    let err = tokio::time::timeout(HANG, list_models(&cfg))
        .await
        .expect("list_models hung")
        .unwrap_err()
        .to_string();
    assert!(err.contains("request_timeout_ms"), "{err}");

    let trickle = RawServer::start(|_, _| {
        vec![
            chunked_head(200, "application/json", &[]),
            Step::Chunk(b"{\"data\": [".to_vec()),
            Step::Hold,
        ]
    })
    .await;
    let cfg = config("openai", &format!("{}/v1", trickle.url()), json!({}));
    let err = tokio::time::timeout(HANG, list_models(&cfg))
        .await
        .expect("list_models hung")
        .unwrap_err()
        .to_string();
    assert!(err.contains("idle_timeout_ms"), "{err}");

    let huge = RawServer::start(|_, _| {
        vec![
            chunked_head(200, "application/json", &[]),
            Step::Chunk(b"{\"data\": [".to_vec()),
            Step::Repeat {
                chunk: b"{\"id\": \"m\"},".repeat(5000),
                count: 20_000,
            },
            Step::End,
        ]
    })
    .await;
    let cfg = config(
        "openai",
        &format!("{}/v1", huge.url()),
        json!({"idle_timeout_ms": 20_000}),
    );
    let err = tokio::time::timeout(HANG, list_models(&cfg))
        .await
        .expect("list_models hung")
        .unwrap_err()
        .to_string();
    assert!(err.contains("cap"), "{err}");
    assert!(huge.written() < 100 << 20, "{}", huge.written());
}
