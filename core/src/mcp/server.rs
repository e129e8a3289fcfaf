//! One configured server: its connection (made on load, remade after the server died), its
//! tools, and the refresh after `notifications/tools/list_changed`.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use parking_lot::{Mutex, RwLock};

// Sampling and roots are deprecated by SEP-2577 in rmcp, and still in the MCP specification
// servers speak (server-everything uses both).
#[allow(deprecated)]
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, CreateMessageRequestParams,
    CreateMessageResult, ElicitRequestParams, ElicitResult, ErrorData, Implementation,
    ListRootsResult, ReadResourceRequestParams, RequestParamsMeta,
};
use rmcp::service::{NotificationContext, RequestContext, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{ClientHandler, Peer, RoleClient, ServiceError, ServiceExt};
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use super::calls::ActiveCalls;
use super::config::{ServerConfig, Transport};
use super::names;
use super::oauth::{McpAuth, OAuthSession};
use super::stdio::{ChildProcess, StderrTail};
use super::tool::{convert_result, McpTool, ToolServer};

use crate::model::redact::{display_url, url_secrets, Redactor};
use crate::tool::CANCELLED_RESULT;
use crate::tool::{Tool, ToolContext, ToolOutput};

/// How long a stdio server gets to exit on its own after its stdin closed (then SIGTERM, then the
/// same again before SIGKILL).
const EXIT_GRACE: Duration = Duration::from_millis(500);

/// The shortest time a server gets to start and answer `initialize`.
pub(crate) const MIN_START_TIMEOUT: Duration = Duration::from_secs(30);

/// What the servers or hooks of one source share (one type for MCP and remote sources).
pub(crate) use crate::tool::SourceShared as Shared;

/// A live connection.
struct Live {
    service: RunningService<RoleClient, Handler>,
    child: Option<ChildProcess>,
    generation: u64,
    /// Why the HTTP client last gave up on an answer (a cap, a stall), which rmcp reports only
    /// as a closed transport.
    http_error: Option<super::http::LastError>,
}

impl Live {
    fn alive(&mut self) -> bool {
        if self.service.is_closed() || self.service.peer().is_transport_closed() {
            return false;
        }
        match &mut self.child {
            Some(child) => !child.exited(),
            None => true,
        }
    }

    fn stderr(&self) -> Option<Arc<StderrTail>> {
        self.child.as_ref().map(|c| c.stderr.clone())
    }

    async fn shutdown(mut self) {
        let _ = self.service.close_with_timeout(EXIT_GRACE).await;
        if let Some(child) = self.child.take() {
            child.shutdown(EXIT_GRACE).await;
        }
    }
}

/// One server of a source.
pub(crate) struct Server {
    /// The name in the config.
    pub name: String,
    /// The sanitised prefix of its tool names.
    pub prefix: String,
    pub config: ServerConfig,
    pub shared: Arc<Shared>,
    conn: tokio::sync::Mutex<Option<Live>>,
    generation: AtomicU64,
    /// The stderr of the last process (kept after it died, for error messages).
    last_stderr: Mutex<Option<Arc<StderrTail>>>,
    /// The tools as last listed.
    tools: RwLock<Vec<Arc<McpTool>>>,
    /// Set by `notifications/tools/list_changed`, cleared by the refresh.
    dirty: AtomicBool,
    /// Set while a refresh task exists: notifications that arrive meanwhile only set `dirty`,
    /// so a burst of them costs one task and at most two listings, not one task each.
    refresh_scheduled: AtomicBool,
    refresh_lock: tokio::sync::Mutex<()>,
    /// This server's secrets (header, env and injected values, the URL's userinfo and query),
    /// kept out of every error text.
    redactor: Redactor,
    /// The tool calls running on it (whose turns answer the server's own requests).
    pub calls: Arc<ActiveCalls>,
    /// OAuth, for an HTTP server of a source loaded with an `McpAuth`.
    oauth: Option<Arc<OAuthSession>>,
}

/// How a request to a server failed.
pub(crate) enum CallError {
    /// The server could not be reached or started.
    Connect(String),
    /// The server answered with an error, timed out, or went away.
    Failed(String),
    /// The turn was cancelled.
    Cancelled,
}

impl CallError {
    pub fn into_output(self) -> ToolOutput {
        match self {
            CallError::Connect(m) | CallError::Failed(m) => ToolOutput::error(m),
            CallError::Cancelled => ToolOutput::error(CANCELLED_RESULT),
        }
    }
}

impl Server {
    pub fn new(
        name: String,
        prefix: String,
        config: ServerConfig,
        shared: Arc<Shared>,
        auth: Option<Arc<dyn McpAuth>>,
    ) -> Self {
        let oauth = match (&config.transport, auth) {
            (Transport::Http { url, .. }, Some(auth)) => {
                OAuthSession::new(auth, &name, url, config.oauth.clone(), config.timeout)
                    .ok()
                    .map(Arc::new)
            }
            _ => None,
        };
        Server {
            oauth,
            name,
            prefix,
            shared,
            conn: tokio::sync::Mutex::new(None),
            generation: AtomicU64::new(0),
            last_stderr: Mutex::new(None),
            tools: RwLock::new(Vec::new()),
            dirty: AtomicBool::new(false),
            refresh_scheduled: AtomicBool::new(false),
            refresh_lock: tokio::sync::Mutex::new(()),
            redactor: secrets_of(&config),
            calls: Arc::default(),
            config,
        }
    }

    fn timeout_ms(&self) -> u128 {
        self.config.timeout.as_millis()
    }

    /// The limit of a start (process and handshake): the request limit, but never under
    /// [`MIN_START_TIMEOUT`] (an interpreter starting on a busy machine is slow).
    fn start_timeout(&self) -> Duration {
        self.config.timeout.max(MIN_START_TIMEOUT)
    }

    /// The server's current tools.
    pub fn tools(&self) -> Vec<Arc<McpTool>> {
        self.tools.read().clone()
    }

    /// The process id of the running stdio server, if any.
    pub async fn pid(&self) -> Option<u32> {
        let conn = self.conn.lock().await;
        conn.as_ref()
            .and_then(|l| l.child.as_ref())
            .and_then(ChildProcess::id)
    }

    /// The last stderr lines of the server, as a suffix for error messages.
    fn stderr_suffix(&self, tail: Option<&StderrTail>) -> String {
        let text = match tail {
            Some(t) => t.text(),
            None => self
                .last_stderr
                .lock()
                .as_ref()
                .map(|t| t.text())
                .unwrap_or_default(),
        };
        if text.is_empty() {
            String::new()
        } else {
            format!("\nserver stderr (last lines):\n{text}")
        }
    }

    /// Connect (start the process / open the session), initialize, within the timeout.
    async fn connect(self: &Arc<Self>) -> Result<Live, String> {
        let generation = self.generation.fetch_add(1, Ordering::Relaxed) + 1;
        let handler = Handler {
            server: Arc::downgrade(self),
        };
        let ms = self.start_timeout().as_millis();
        match &self.config.transport {
            Transport::Stdio {
                command,
                args,
                env,
                cwd,
            } => {
                let (child, stdout, stdin) = ChildProcess::spawn(command, args, env, cwd.as_ref())
                    .map_err(|e| format!("cannot start {command:?}: {e}"))?;
                *self.last_stderr.lock() = Some(child.stderr.clone());
                let started =
                    tokio::time::timeout(self.start_timeout(), handler.serve((stdout, stdin)))
                        .await;
                match started {
                    Ok(Ok(service)) => Ok(Live {
                        service,
                        child: Some(child),
                        generation,
                        http_error: None,
                    }),
                    Ok(Err(e)) => {
                        let tail = child.stderr.clone();
                        child.shutdown(EXIT_GRACE).await;
                        Err(format!(
                            "MCP handshake with {command:?} failed: {e}{}",
                            self.stderr_suffix(Some(&tail))
                        ))
                    }
                    Err(_) => {
                        let tail = child.stderr.clone();
                        child.shutdown(EXIT_GRACE).await;
                        Err(format!(
                            "{command:?} did not complete the MCP handshake within {ms} ms{}",
                            self.stderr_suffix(Some(&tail))
                        ))
                    }
                }
            }
            Transport::Http { url, headers } => {
                let Some(oauth) = &self.oauth else {
                    return self.connect_http(url, headers, handler, generation).await;
                };
                oauth.prepare().await?;
                match self.connect_http(url, headers, handler, generation).await {
                    Ok(live) => Ok(live),
                    Err(e) if oauth.challenge.lock().is_some() => {
                        oauth
                            .reauthorize()
                            .await
                            .map_err(|why| format!("{e}; OAuth authorization failed: {why}"))?;
                        let handler = Handler {
                            server: Arc::downgrade(self),
                        };
                        self.connect_http(url, headers, handler, generation).await
                    }
                    Err(e) => Err(e),
                }
            }
        }
    }

    /// Open a streamable HTTP session (with the OAuth token, when there is one).
    async fn connect_http(
        self: &Arc<Self>,
        url: &str,
        headers: &std::collections::BTreeMap<String, String>,
        handler: Handler,
        generation: u64,
    ) -> Result<Live, String> {
        let ms = self.start_timeout().as_millis();
        {
            {
                let mut client = super::http::HttpClient::new(self.config.timeout)?;
                if let Some(oauth) = &self.oauth {
                    client = client.with_oauth(oauth.bearer.clone(), oauth.challenge.clone());
                }
                let http_error = client.last_error();
                let shown = display_url(url);
                let mut config = StreamableHttpClientTransportConfig::with_uri(url);
                for (k, v) in headers {
                    // Checked when the config was read.
                    let name = http::HeaderName::from_bytes(k.as_bytes())
                        .map_err(|e| format!("header {k:?}: {e}"))?;
                    let value =
                        http::HeaderValue::from_str(v).map_err(|e| format!("header {k:?}: {e}"))?;
                    config.custom_headers.insert(name, value);
                }
                let transport = StreamableHttpClientTransport::with_client(client, config);
                match tokio::time::timeout(self.start_timeout(), handler.serve(transport)).await {
                    Ok(Ok(service)) => Ok(Live {
                        service,
                        child: None,
                        generation,
                        http_error: Some(http_error),
                    }),
                    Ok(Err(e)) => Err(format!("MCP handshake with {shown} failed: {e}")),
                    Err(_) => Err(format!(
                        "{shown} did not complete the MCP handshake within {ms} ms"
                    )),
                }
            }
        }
    }

    /// The peer of a live connection, connecting (again) when there is none or it died.
    async fn peer(self: &Arc<Self>) -> Result<(Peer<RoleClient>, u64), CallError> {
        if self.shared.closed.is_cancelled() {
            return Err(CallError::Connect(format!(
                "MCP server {}: the MCP source was closed",
                self.name
            )));
        }
        let mut conn = self.conn.lock().await;
        if let Some(live) = conn.as_mut() {
            if live.alive() {
                return Ok((live.service.peer().clone(), live.generation));
            }
        }
        if let Some(dead) = conn.take() {
            dead.shutdown().await;
        }
        let live = self.connect().await.map_err(|e| {
            CallError::Connect(
                self.redactor
                    .redact(&format!("MCP server {}: {e}", self.name)),
            )
        })?;
        if self.shared.closed.is_cancelled() {
            live.shutdown().await;
            return Err(CallError::Connect(format!(
                "MCP server {}: the MCP source was closed",
                self.name
            )));
        }
        let out = (live.service.peer().clone(), live.generation);
        *conn = Some(live);
        Ok(out)
    }

    /// Drop the connection of `generation` (the server went away); returns the stderr suffix.
    async fn mark_dead(&self, generation: u64) -> String {
        let mut conn = self.conn.lock().await;
        let tail = conn.as_ref().and_then(Live::stderr);
        let why = conn
            .as_ref()
            .and_then(|l| l.http_error.as_ref())
            .and_then(super::http::LastError::take)
            .map(|e| format!("\nthe HTTP client gave up on its answer: {e}"))
            .unwrap_or_default();
        if conn.as_ref().is_some_and(|l| l.generation == generation) {
            if let Some(dead) = conn.take() {
                dead.shutdown().await;
            }
        }
        format!("{why}{}", self.stderr_suffix(tail.as_deref()))
    }

    /// Start the server and list its tools (what `load_mcp` does for each server, at once).
    pub async fn list_tools_for_start(self: &Arc<Self>) -> Result<Vec<Value>, String> {
        self.list_tools(self.start_timeout())
            .await
            .map_err(|e| match e {
                CallError::Connect(m) | CallError::Failed(m) => m,
                CallError::Cancelled => CANCELLED_RESULT.into(),
            })
    }

    /// Take the tools listed at start (names are given out here, server by server in order).
    pub fn install_listed(self: &Arc<Self>, listed: Vec<Value>) {
        self.install_tools(listed);
    }

    async fn list_tools(self: &Arc<Self>, limit: Duration) -> Result<Vec<Value>, CallError> {
        let (peer, generation) = self.peer().await?;
        match tokio::time::timeout(limit, peer.list_all_tools()).await {
            Ok(Ok(tools)) => Ok(tools
                .into_iter()
                .filter_map(|t| serde_json::to_value(t).ok())
                .collect()),
            Ok(Err(e)) => Err(self.failure("tools/list", e, generation).await),
            Err(_) => Err(CallError::Failed(format!(
                "MCP server {}: tools/list timed out after {} ms",
                self.name,
                limit.as_millis()
            ))),
        }
    }

    /// Turn listed tools into toolkit tools, keeping the names of tools that stay.
    ///
    /// Runs whole under the names lock: the listing at start and a refresh after an early
    /// `list_changed` may install at the same time, and each must see the other's tools as the
    /// old ones (read outside the lock, both saw none, and the second gave every tool a `_2`
    /// name).
    fn install_tools(self: &Arc<Self>, listed: Vec<Value>) -> (Vec<String>, Vec<Arc<McpTool>>) {
        let mut taken = self.shared.taken.lock();
        let old = self.tools();
        for t in &old {
            taken.remove(&t.spec_name);
        }
        let mut fresh = Vec::with_capacity(listed.len());
        for value in listed {
            let Some(mcp_name) = value.get("name").and_then(Value::as_str) else {
                continue;
            };
            let kept = old
                .iter()
                .find(|t| t.mcp_name == mcp_name)
                .map(|t| t.spec_name.clone());
            let name = match kept {
                Some(n) if taken.insert(n.clone()) => n,
                _ => names::unique(&names::base_name(&self.prefix, mcp_name), &mut taken),
            };
            let server: Arc<dyn ToolServer> = Arc::new(self.clone());
            fresh.push(Arc::new(McpTool::new(
                server,
                name,
                &value,
                &self.config.inject,
            )));
        }
        let gone: Vec<String> = old
            .iter()
            .filter(|o| !fresh.iter().any(|f| f.spec_name == o.spec_name))
            .map(|o| o.spec_name.clone())
            .collect();
        *self.tools.write() = fresh.clone();
        drop(taken);
        (gone, fresh)
    }

    /// Re-list the tools after `notifications/tools/list_changed` and update every client the
    /// source was registered into.
    pub async fn refresh_if_dirty(self: &Arc<Self>) {
        let _guard = self.refresh_lock.lock().await;
        if !self.dirty.swap(false, Ordering::AcqRel) {
            return;
        }
        let listed = match self.list_tools(self.config.timeout).await {
            Ok(l) => l,
            Err(_) => {
                tracing::warn!(server = %self.name, "could not refresh the MCP tool list");
                return;
            }
        };
        let (gone, fresh) = self.install_tools(listed);
        for client in self.shared.live_clients() {
            for name in &gone {
                client.unregister(name);
            }
            for tool in &fresh {
                if let Err(e) = client.register(tool.clone() as Arc<dyn Tool>) {
                    tracing::warn!(tool = %tool.spec_name, "MCP tool not registered: {e}");
                }
            }
        }
    }

    /// After a call: a list_changed that came with it is applied before its result returns, so
    /// the model's next request sees the new tools.
    async fn settle_refresh(self: &Arc<Self>) {
        tokio::task::yield_now().await;
        if self.dirty.load(Ordering::Acquire) {
            self.refresh_if_dirty().await;
        } else {
            // A refresh running right now: wait for it.
            let _ = self.refresh_lock.lock().await;
        }
    }

    async fn failure(&self, what: &str, e: ServiceError, generation: u64) -> CallError {
        match self.failure_text(what, e, generation).await {
            CallError::Failed(m) => CallError::Failed(self.redactor.redact(&m)),
            other => other,
        }
    }

    async fn failure_text(&self, what: &str, e: ServiceError, generation: u64) -> CallError {
        match e {
            ServiceError::McpError(err) => CallError::Failed(format!(
                "MCP server {} answered {what} with an error: {}",
                self.name, err.message
            )),
            ServiceError::TransportClosed | ServiceError::TransportSend(_) => {
                let tail = self.mark_dead(generation).await;
                CallError::Failed(format!(
                    "MCP server {} went away during {what} ({e}); it is reconnected on the next \
                     call{tail}",
                    self.name
                ))
            }
            other => CallError::Failed(format!("MCP server {}: {what} failed: {other}", self.name)),
        }
    }

    /// Run `fut` against the timeout and the turn's cancel; dropping `fut` (on cancel or
    /// timeout) makes rmcp send `notifications/cancelled` for the request.
    async fn bounded<T>(
        &self,
        what: &str,
        cancel: &CancellationToken,
        generation: u64,
        fut: impl std::future::Future<Output = Result<T, ServiceError>>,
    ) -> Result<T, CallError> {
        tokio::select! {
            biased;
            _ = cancel.cancelled() => Err(CallError::Cancelled),
            _ = self.shared.closed.cancelled() => Err(CallError::Failed(format!(
                "MCP server {}: the MCP source was closed during {what}", self.name
            ))),
            r = tokio::time::timeout(self.config.timeout, fut) => match r {
                Ok(Ok(v)) => Ok(v),
                Ok(Err(e)) => Err(self.failure(what, e, generation).await),
                Err(_) => Err(CallError::Failed(format!(
                    "MCP server {}: {what} timed out after {} ms", self.name, self.timeout_ms()
                ))),
            },
        }
    }

    /// Call one of the server's tools with arguments already merged.
    pub async fn call_tool(
        self: &Arc<Self>,
        tool: &str,
        args: Map<String, Value>,
        cancel: &CancellationToken,
        traceparent: Option<String>,
    ) -> ToolOutput {
        let (peer, generation) = match self.peer().await {
            Ok(p) => p,
            Err(e) => return e.into_output(),
        };
        let mut params = CallToolRequestParams::new(tool.to_string()).with_arguments(args);
        // The call's span (telemetry on), as MCP carries trace context (SEP-414); the HTTP
        // transport also sends it as the request's `traceparent` header.
        if let Some(traceparent) = &traceparent {
            params.set_traceparent(traceparent);
        }
        let what = format!("the call of {tool}");
        let mut out = self
            .bounded(&what, cancel, generation, peer.call_tool(params.clone()))
            .await;
        // A 401 (the token expired or was revoked): the server did not run the call. Authorize
        // again (refresh, else the browser step) and send it once more on a new session.
        if let (Err(_), Some(oauth)) = (&out, &self.oauth) {
            if oauth.challenge.lock().is_some() {
                if let Err(why) = oauth.reauthorize().await {
                    return ToolOutput::error(format!(
                        "MCP server {}: OAuth authorization failed: {why}",
                        self.name
                    ));
                }
                self.mark_dead(generation).await;
                let (peer, generation) = match self.peer().await {
                    Ok(p) => p,
                    Err(e) => return e.into_output(),
                };
                out = self
                    .bounded(&what, cancel, generation, peer.call_tool(params))
                    .await;
            }
        }
        match out {
            Ok(result) => {
                self.settle_refresh().await;
                match serde_json::to_value(result) {
                    Ok(v) => convert_result(&v),
                    Err(e) => ToolOutput::error(format!("unreadable MCP result: {e}")),
                }
            }
            Err(e) => e.into_output(),
        }
    }

    /// Whether the server announced resources (connecting when needed).
    pub async fn offers_resources(self: &Arc<Self>) -> Result<bool, CallError> {
        let (peer, _) = self.peer().await?;
        Ok(peer
            .peer_info()
            .is_none_or(|info| info.capabilities.resources.is_some()))
    }

    /// The server's resources (every page), as MCP's JSON objects.
    pub async fn list_resources(
        self: &Arc<Self>,
        cancel: &CancellationToken,
    ) -> Result<Vec<Value>, CallError> {
        let (peer, generation) = self.peer().await?;
        let list = self
            .bounded(
                "resources/list",
                cancel,
                generation,
                peer.list_all_resources(),
            )
            .await?;
        Ok(list
            .into_iter()
            .filter_map(|r| serde_json::to_value(r).ok())
            .collect())
    }

    /// Read one resource; MCP's `ReadResourceResult` as JSON.
    pub async fn read_resource(
        self: &Arc<Self>,
        uri: &str,
        cancel: &CancellationToken,
    ) -> Result<Value, CallError> {
        let (peer, generation) = self.peer().await?;
        let result = self
            .bounded(
                "resources/read",
                cancel,
                generation,
                peer.read_resource(ReadResourceRequestParams::new(uri)),
            )
            .await?;
        serde_json::to_value(result).map_err(|e| CallError::Failed(e.to_string()))
    }

    /// Tell the server its roots changed (`notifications/roots/list_changed`), when it is
    /// connected and was offered roots; a server that is not connected asks when it connects.
    pub async fn roots_changed(&self) {
        if !self.config.answers.roots {
            return;
        }
        let peer = {
            let conn = self.conn.lock().await;
            conn.as_ref().map(|l| l.service.peer().clone())
        };
        if let Some(peer) = peer {
            #[allow(deprecated)]
            if let Err(e) = peer.notify_roots_list_changed().await {
                tracing::debug!(server = %self.name, "roots/list_changed not sent: {e}");
            }
        }
    }

    /// Stop the server (graceful, bounded). The connection stays locked until it has stopped,
    /// so a second, concurrent shutdown (a client closing the source while the host closes it
    /// too) also returns only once the server is gone.
    pub async fn shutdown(&self) {
        let mut conn = self.conn.lock().await;
        if let Some(live) = conn.take() {
            live.shutdown().await;
        }
    }

    /// Kill the server's process group now (drop path, maybe outside any runtime). Inside a
    /// runtime the killed process is also reaped there, so not even a zombie is left (outside
    /// one, tokio's orphan queue reaps it when its runtime next wakes).
    pub fn kill_now(&self) {
        if let Ok(mut conn) = self.conn.try_lock() {
            if let Some(mut live) = conn.take() {
                if let Some(child) = live.child.as_mut() {
                    child.kill_now();
                }
                if let (Some(child), Ok(runtime)) =
                    (live.child.take(), tokio::runtime::Handle::try_current())
                {
                    runtime.spawn(child.reap());
                }
            }
        }
    }
}

/// The server as its tools see it (implemented on the `Arc`: a call may outlive the borrow).
#[async_trait::async_trait]
impl ToolServer for Arc<Server> {
    fn name(&self) -> &str {
        &self.name
    }

    async fn call_tool(
        &self,
        tool: &str,
        args: Map<String, Value>,
        ctx: &ToolContext,
    ) -> ToolOutput {
        let _in_call = self.calls.enter(ctx);
        Server::call_tool(self, tool, args, &ctx.cancel, ctx.traceparent()).await
    }
}

/// The values an error text of this server must not show.
fn secrets_of(config: &ServerConfig) -> Redactor {
    let mut secrets: Vec<String> = config
        .inject
        .values()
        .map(|v| match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
        .collect();
    match &config.transport {
        Transport::Stdio { env, .. } => secrets.extend(env.values().cloned()),
        Transport::Http { url, headers } => {
            secrets.extend(url_secrets(url));
            secrets.extend(headers.values().cloned());
        }
    }
    Redactor::new(secrets)
}

/// rmcp's client handler: identifies contenox and listens for list_changed.
pub(crate) struct Handler {
    server: Weak<Server>,
}

#[allow(deprecated)]
impl ClientHandler for Handler {
    fn on_tool_list_changed(
        &self,
        _context: NotificationContext<RoleClient>,
    ) -> impl std::future::Future<Output = ()> + Send + '_ {
        if let Some(server) = self.server.upgrade() {
            server.dirty.store(true, Ordering::Release);
            if !server.refresh_scheduled.swap(true, Ordering::AcqRel) {
                tokio::spawn(async move {
                    loop {
                        server.refresh_if_dirty().await;
                        server.refresh_scheduled.store(false, Ordering::Release);
                        // A notification that came during the refresh saw the task scheduled and
                        // spawned none: this task takes it over, unless a new task already did.
                        if !server.dirty.load(Ordering::Acquire)
                            || server.refresh_scheduled.swap(true, Ordering::AcqRel)
                        {
                            break;
                        }
                    }
                });
            }
        }
        std::future::ready(())
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let Some(server) = self.server.upgrade() else {
            return Err(ErrorData::internal_error("the MCP source was closed", None));
        };
        if !server.config.answers.elicitation {
            return Err(ErrorData::invalid_request(
                "elicitation is turned off for this server",
                None,
            ));
        }
        let params = serde_json::to_value(&request).unwrap_or(Value::Null);
        // The ask ends (declined) at 3/4 of the server's limit, so the server hears the answer
        // before the call it asks during times out.
        let limit = server.config.timeout.as_millis() / 4 * 3;
        let timeout = u64::try_from(limit).unwrap_or(u64::MAX).max(1);
        let answer = super::elicit::elicit(&server.name, timeout, &server.calls, &params).await;
        serde_json::from_value(answer.to_value())
            .map_err(|e| ErrorData::internal_error(format!("elicitation result: {e}"), None))
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        let Some(server) = self.server.upgrade() else {
            return Err(ErrorData::internal_error("the MCP source was closed", None));
        };
        if !server.config.answers.sampling {
            return Err(ErrorData::invalid_request(
                "sampling is turned off for this server (its config's \"sampling\": true turns \
                 it on)",
                None,
            ));
        }
        let params = serde_json::to_value(&params).unwrap_or(Value::Null);
        match super::sampling::sample(&server.name, &server.calls, params).await {
            Ok(result) => serde_json::from_value(result)
                .map_err(|e| ErrorData::internal_error(format!("sampling result: {e}"), None)),
            Err(message) => Err(ErrorData::invalid_request(message, None)),
        }
    }

    async fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, ErrorData> {
        let Some(server) = self.server.upgrade() else {
            return Err(ErrorData::internal_error("the MCP source was closed", None));
        };
        if !server.config.answers.roots {
            return Err(ErrorData::invalid_request(
                "roots are turned off for this server",
                None,
            ));
        }
        let dirs = super::roots::roots(&server.shared, &server.calls);
        serde_json::from_value(super::roots::list_result(&dirs))
            .map_err(|e| ErrorData::internal_error(format!("roots: {e}"), None))
    }

    fn get_info(&self) -> ClientConfig {
        let answers = self
            .server
            .upgrade()
            .map(|s| s.config.answers)
            .unwrap_or_default();
        ClientConfig::new(
            capabilities(&answers),
            Implementation::new("contenox", env!("CARGO_PKG_VERSION")),
        )
    }
}

/// The client capabilities sent in `initialize`: what contenox answers of the server's requests.
fn capabilities(answers: &super::config::ServerRequests) -> ClientCapabilities {
    let mut caps = serde_json::Map::new();
    if answers.roots {
        caps.insert("roots".into(), serde_json::json!({"listChanged": true}));
    }
    if answers.sampling {
        caps.insert("sampling".into(), serde_json::json!({}));
    }
    if answers.elicitation {
        caps.insert("elicitation".into(), serde_json::json!({"form": {}}));
    }
    serde_json::from_value(Value::Object(caps)).unwrap_or_default()
}
