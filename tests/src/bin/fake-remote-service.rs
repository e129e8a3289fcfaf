//! `fake-remote-service --scenario FILE`
//!
//! Starts the scenario's `remote` services on 127.0.0.1 (the `unreachable` ones stay down) and
//! a control server, prints one JSON line and serves until its stdin reaches EOF (start it with
//! a piped stdin; close the pipe to stop it):
//!
//! ```text
//! {"control": 40123, "hooks": [{"name": "myapi", "url": "http://127.0.0.1:40124", ...}],
//!  "services": {"myapi": {"url": "http://127.0.0.1:40124", "port": 40124, "unreachable": false}}}
//! ```
//!
//! `hooks` is what the runner passes to its binding's `load_remote`, unchanged. Control
//! endpoints: `POST /_fake/up` starts the `unreachable` services (on their announced ports);
//! `GET /_fake/remote_requests` returns what the services received, in order of arrival, as
//! the trace's `remote_requests`.

use std::io::{Read, Write};
use std::process::ExitCode;
use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use contenox_conformance::remote::server::FakeRemote;
use contenox_conformance::scenario::Scenario;
use serde_json::{json, Value};
use tokio::sync::Mutex;

const USAGE: &str = "usage: fake-remote-service --scenario FILE";

fn parse_args() -> Result<String, String> {
    let mut scenario = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.split_once('=') {
            Some(("--scenario", v)) => scenario = Some(v.to_string()),
            _ if arg == "--scenario" => {
                scenario = Some(args.next().ok_or("--scenario needs a value")?);
            }
            _ if arg == "-h" || arg == "--help" => return Err(String::new()),
            _ => return Err(format!("unknown argument {arg:?}")),
        }
    }
    scenario.ok_or_else(|| "--scenario is required".into())
}

type Shared = Arc<Mutex<FakeRemote>>;

async fn up(State(fake): State<Shared>) -> (StatusCode, String) {
    match fake.lock().await.bring_up().await {
        Ok(()) => (StatusCode::OK, "up".into()),
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}

async fn requests(State(fake): State<Shared>) -> Json<Vec<Value>> {
    Json(fake.lock().await.requests())
}

fn main() -> ExitCode {
    let path = match parse_args() {
        Ok(p) => p,
        Err(e) => {
            if !e.is_empty() {
                eprintln!("fake-remote-service: {e}");
            }
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    let scenario = match Scenario::load(&path) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("fake-remote-service: {e}");
            return ExitCode::from(2);
        }
    };
    if scenario.remote.is_empty() {
        eprintln!("fake-remote-service: {path}: the scenario has no \"remote\" services");
        return ExitCode::from(2);
    }

    // Stdin EOF (or a read error) ends the process, whatever the services are doing.
    std::thread::spawn(|| {
        let mut stdin = std::io::stdin().lock();
        let mut buf = [0u8; 256];
        while matches!(stdin.read(&mut buf), Ok(n) if n > 0) {}
        std::process::exit(0);
    });

    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("fake-remote-service: {e}");
            return ExitCode::from(1);
        }
    };
    runtime.block_on(async move {
        let fake = match FakeRemote::start(&scenario.remote).await {
            Ok(f) => f,
            Err(e) => {
                eprintln!("fake-remote-service: bind: {e}");
                return ExitCode::from(1);
            }
        };
        let line = json!({"hooks": fake.hooks(), "services": fake.describe()});
        let fake: Shared = Arc::new(Mutex::new(fake));
        let app = Router::new()
            .route("/_fake/up", post(up))
            .route("/_fake/remote_requests", get(requests))
            .with_state(fake);
        let listener = match tokio::net::TcpListener::bind("127.0.0.1:0").await {
            Ok(l) => l,
            Err(e) => {
                eprintln!("fake-remote-service: bind: {e}");
                return ExitCode::from(1);
            }
        };
        let port = listener.local_addr().map(|a| a.port()).unwrap_or(0);
        let mut line = line;
        line["control"] = json!(port);
        let mut out = std::io::stdout().lock();
        if writeln!(out, "{line}").and_then(|()| out.flush()).is_err() {
            return ExitCode::from(1);
        }
        drop(out);
        if let Err(e) = axum::serve(listener, app).await {
            eprintln!("fake-remote-service: {e}");
            return ExitCode::from(1);
        }
        ExitCode::SUCCESS
    })
}
