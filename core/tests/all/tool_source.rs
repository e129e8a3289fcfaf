//! `ToolSource` and `Client::add_source` through the public API, with a source of the test's
//! own (what a later source, such as code execution's inner tools, would be): the client
//! registers its tools, runs its before-turn work before the first model request of each turn,
//! and holds it weakly; the source holds its clients weakly; a refused attach leaves nothing.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};

use contenox::tool::WeakHost;
use contenox::{
    async_trait, tool_fn, CancellationToken, Client, Message, Outcome, ScriptEntry, Tool, ToolHost,
    ToolOutput, ToolSource, ToolSpec, Transcript,
};
use serde_json::{json, Value};

fn named(name: &str) -> Arc<dyn Tool> {
    Arc::new(tool_fn(
        ToolSpec::new(name, "Say which tool ran.", json!({"type": "object"})),
        {
            let name = name.to_string();
            move |_args, _ctx| {
                let name = name.clone();
                async move { Ok(ToolOutput::text(format!("{name} ran"))) }
            }
        },
    ))
}

/// A source of one tool (`early`) whose before-turn work registers a second one (`late`) into
/// every client it was added to, and counts the turns it was asked about.
struct Counting {
    hosts: Mutex<Vec<WeakHost>>,
    turns: AtomicUsize,
    refuse: bool,
}

impl Counting {
    fn new(refuse: bool) -> Arc<Counting> {
        Arc::new(Counting {
            hosts: Mutex::new(Vec::new()),
            turns: AtomicUsize::new(0),
            refuse,
        })
    }
}

#[async_trait]
impl ToolSource for Counting {
    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        vec![named("early")]
    }

    fn states(&self) -> Vec<(String, Value)> {
        vec![("counting".into(), json!({"state": "ready", "tools": 1}))]
    }

    async fn close(&self) {}

    fn is_closed(&self) -> bool {
        false
    }

    async fn before_turn(&self, _cancel: &CancellationToken) {
        self.turns.fetch_add(1, Ordering::SeqCst);
        let hosts: Vec<ToolHost> = self
            .hosts
            .lock()
            .unwrap()
            .iter()
            .filter_map(WeakHost::upgrade)
            .collect();
        for host in hosts {
            host.register(named("late")).unwrap();
        }
    }

    fn attach(self: Arc<Self>, host: &ToolHost) -> contenox::Result<()> {
        if self.refuse {
            return Err(contenox::Error::config(
                "this source refuses every client".into(),
            ));
        }
        for tool in self.tools() {
            host.register(tool)?;
        }
        self.hosts.lock().unwrap().push(host.downgrade());
        Ok(())
    }
}

fn client(script: Vec<ScriptEntry>) -> Client {
    Client::builder()
        .script(script)
        .builtins(Vec::<String>::new())
        .build()
        .unwrap()
}

fn tool_results(t: &Transcript) -> Vec<(String, bool)> {
    t.messages
        .iter()
        .filter_map(|m| match m {
            Message::Tool { is_error, .. } => Some((m.text().into_owned(), *is_error)),
            _ => None,
        })
        .collect()
}

fn names(client: &Client) -> Vec<String> {
    let mut names: Vec<String> = client.tools().into_iter().map(|t| t.name).collect();
    names.sort();
    names
}

#[tokio::test]
async fn the_sources_work_runs_before_the_first_request_of_every_turn() {
    let client = client(vec![
        // The first response already calls the tool the before-turn work registers.
        ScriptEntry::tool_call("c1", "late", json!({})),
        ScriptEntry::text("done"),
        ScriptEntry::text("again"),
    ]);
    let source = Counting::new(false);
    client.add_source(source.clone()).unwrap();
    assert_eq!(names(&client), ["early"]);
    assert_eq!(source.turns.load(Ordering::SeqCst), 0);

    let first = client.run("go").await.unwrap();
    assert_eq!(first.outcome, Outcome::Done);
    assert_eq!(
        tool_results(&first.transcript),
        [("late ran".to_string(), false)]
    );
    assert_eq!(source.turns.load(Ordering::SeqCst), 1);
    assert_eq!(names(&client), ["early", "late"]);

    client.run("more").await.unwrap();
    assert_eq!(source.turns.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn the_client_holds_its_sources_weakly() {
    let client = client(vec![ScriptEntry::text("done")]);
    let source = Counting::new(false);
    client.add_source(source.clone()).unwrap();
    let weak: Weak<Counting> = Arc::downgrade(&source);
    drop(source);
    assert!(
        weak.upgrade().is_none(),
        "the client keeps a dropped source alive"
    );
    // The turn runs without it; the tool it registered stays (it is the client's now).
    let result = client.run("go").await.unwrap();
    assert_eq!(result.outcome, Outcome::Done);
    assert_eq!(names(&client), ["early"]);
}

#[tokio::test]
async fn a_source_holds_its_clients_weakly_and_sees_a_closed_one_as_gone() {
    let source = Counting::new(false);
    let dropped = client(Vec::new());
    dropped.add_source(source.clone()).unwrap();
    let closed = client(Vec::new());
    closed.add_source(source.clone()).unwrap();
    let hosts = source.hosts.lock().unwrap().clone();
    assert!(hosts.iter().all(|h| h.upgrade().is_some()));

    drop(dropped);
    assert!(
        hosts[0].is_gone(),
        "the source keeps a dropped client alive"
    );
    assert!(hosts[0].upgrade().is_none());

    closed.close();
    assert!(!hosts[1].is_gone());
    assert!(
        hosts[1].upgrade().is_none(),
        "a closed client is offered to its sources"
    );
}

#[tokio::test]
async fn a_refused_attach_registers_nothing_and_is_not_polled() {
    let client = client(vec![ScriptEntry::text("done")]);
    let source = Counting::new(true);
    let err = client.add_source(source.clone()).unwrap_err();
    assert!(err.to_string().contains("refuses"), "{err}");
    assert!(names(&client).is_empty());
    client.run("go").await.unwrap();
    assert_eq!(
        source.turns.load(Ordering::SeqCst),
        0,
        "a source that refused the client is polled before its turns"
    );
}

#[tokio::test]
async fn a_source_is_read_by_kind_and_reports_each_member_as_json() {
    use contenox::{load_source, SourceConfig};

    let unknown = SourceConfig::from_json("ftp", "{}").err().unwrap();
    assert!(
        unknown.to_string().contains("no tool source kind"),
        "{unknown}"
    );
    let not_json = SourceConfig::from_json("remote", "[{").err().unwrap();
    assert!(not_json.to_string().contains("not JSON"), "{not_json}");
    assert!(SourceConfig::from_json("mcp", r#"{"servers": {}}"#).is_err());

    // MCP: a server that cannot start is reported failed; the resource tools come along.
    let config = SourceConfig::from_json(
        "mcp",
        r#"{"mcpServers": {"broken": {"command": "/nonexistent/contenox-test-server", "args": []}}}"#,
    )
    .unwrap();
    let reports = Mutex::new(Vec::new());
    let loaded = load_source(config, |name, state| {
        reports
            .lock()
            .unwrap()
            .push((name.to_string(), state.clone()))
    })
    .await
    .unwrap();
    let reports = reports.into_inner().unwrap();
    assert_eq!(reports.len(), 1, "{reports:?}");
    assert_eq!(reports[0].0, "broken");
    assert_eq!(reports[0].1["state"], "failed");
    assert!(loaded.source.tools().is_empty());
    let mut resource: Vec<String> = loaded
        .resource_tools
        .iter()
        .map(|t| t.spec().name)
        .collect();
    resource.sort();
    assert_eq!(resource, ["list_mcp_resources", "read_mcp_resource"]);

    // Remote: a hook nobody answers is unavailable, and there are no resource tools.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let hooks =
        format!(r#"[{{"name": "svc", "url": "http://127.0.0.1:{port}", "timeout_ms": 500}}]"#);
    let config = SourceConfig::from_json("remote", &hooks).unwrap();
    let reports = Mutex::new(Vec::new());
    let loaded = load_source(config, |name, state| {
        reports
            .lock()
            .unwrap()
            .push((name.to_string(), state.clone()))
    })
    .await
    .unwrap();
    let reports = reports.into_inner().unwrap();
    assert_eq!(reports.len(), 1, "{reports:?}");
    assert_eq!(reports[0].0, "svc");
    assert_eq!(reports[0].1["state"], "unavailable");
    assert!(loaded.resource_tools.is_empty());
    assert_eq!(loaded.source.states()[0].1["state"], "unavailable");
}
