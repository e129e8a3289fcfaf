//! OAuth 2.1 for streamable HTTP servers, as the MCP authorization specification asks of a
//! client: the server's 401 names its protected-resource metadata (RFC 9728) in
//! `WWW-Authenticate`; that names the authorization server, whose metadata (RFC 8414, or OpenID
//! discovery) gives the endpoints; the client registers itself (RFC 7591) unless the config gives
//! a `client_id`; the person authorizes in a browser (authorization code with PKCE S256, the
//! `resource` indicator of RFC 8707); the code becomes tokens; an access token that stops working
//! is refreshed, and a refresh that fails starts a new authorization.
//!
//! The host does two things ([`McpAuth`]): keeps the tokens (`load` / `save`, opaque JSON text
//! under a key naming the server's URL) and performs the browser step (`authorize` gets the URL
//! to open and returns the URL the browser was redirected to). The engine does the rest over the
//! reqwest 0.12 client it already has (no redirects followed, bounded bodies, timeouts).
//!
//! Tokens never appear in an error, an event or a log line: errors name the endpoint's origin,
//! the HTTP status and the server's OAuth `error` code only.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use base64::Engine;
use parking_lot::{Mutex, RwLock};
use rand::distr::{Alphanumeric, SampleString};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::tool::HostError;

/// The largest metadata or token response read.
const MAX_BODY: usize = 256 * 1024;
/// An access token this close to its expiry is refreshed before it is used.
const EXPIRY_SKEW_S: u64 = 30;

/// What the host provides for OAuth-protected MCP servers: where tokens are kept and the
/// browser step. Given to [`load_mcp_with`](super::load_mcp_with).
#[async_trait]
pub trait McpAuth: Send + Sync + 'static {
    /// The redirect URI the authorization server sends the browser back to (registered with
    /// it): a loopback URL the host listens on, such as `http://127.0.0.1:33418/callback`.
    fn redirect_uri(&self) -> String;

    /// Let the person authorize: open `url` (the authorization server's page) and return the
    /// full URL the browser was redirected to (the redirect URI with `code` and `state`).
    /// `server` is the server's name in the config.
    async fn authorize(&self, server: &str, url: &str) -> Result<String, HostError>;

    /// The tokens saved under `key` (JSON text the engine wrote with `save`), if any.
    async fn load(&self, key: &str) -> Result<Option<String>, HostError>;

    /// Keep `value` under `key`. It holds tokens: keep it where only the user can read it.
    async fn save(&self, key: &str, value: &str) -> Result<(), HostError>;
}

/// The per-server `oauth` options of the config (all optional).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OAuthOptions {
    /// A client id registered beforehand (else the engine registers one dynamically).
    pub client_id: Option<String>,
    /// Its secret, for a confidential client (sent as `client_secret_post`).
    pub client_secret: Option<String>,
    /// The scopes to ask for, space-separated (else the resource metadata's `scopes_supported`).
    pub scope: Option<String>,
}

/// What is kept for one server (the JSON given to [`McpAuth::save`]).
#[derive(Clone, Default, Serialize, Deserialize)]
struct Saved {
    client_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    client_secret: Option<String>,
    token_endpoint: String,
    access_token: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    refresh_token: Option<String>,
    /// Seconds since the epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    expires_at: Option<u64>,
}

/// The OAuth state of one HTTP server: its current access token (read for every request) and
/// how to get a new one.
pub(crate) struct OAuthSession {
    auth: Arc<dyn McpAuth>,
    server: String,
    url: String,
    options: OAuthOptions,
    http: reqwest::Client,
    timeout: Duration,
    /// The token sent with every request (shared with the HTTP client of each connection).
    pub bearer: Arc<RwLock<Option<String>>>,
    /// The `WWW-Authenticate` of the last 401 (set by the HTTP client).
    pub challenge: Arc<Mutex<Option<String>>>,
    saved: tokio::sync::Mutex<Option<Saved>>,
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

impl OAuthSession {
    pub fn new(
        auth: Arc<dyn McpAuth>,
        server: &str,
        url: &str,
        options: OAuthOptions,
        timeout: Duration,
    ) -> Result<OAuthSession, String> {
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| format!("cannot build the HTTP client: {e}"))?;
        Ok(OAuthSession {
            auth,
            server: server.to_string(),
            url: url.to_string(),
            options,
            http,
            timeout,
            bearer: Arc::default(),
            challenge: Arc::default(),
            saved: tokio::sync::Mutex::new(None),
        })
    }

    /// The key the host keeps this server's tokens under.
    fn key(&self) -> String {
        format!("mcp-oauth:{}", self.url)
    }

    /// Before a connection: the saved token (loaded once), refreshed when it has expired.
    pub async fn prepare(&self) -> Result<(), String> {
        let mut saved = self.saved.lock().await;
        if saved.is_none() {
            let text = self
                .auth
                .load(&self.key())
                .await
                .map_err(|e| format!("the token store failed: {e}"))?;
            *saved = text.and_then(|t| serde_json::from_str(&t).ok());
        }
        let expired = saved
            .as_ref()
            .and_then(|s| s.expires_at)
            .is_some_and(|at| at <= now() + EXPIRY_SKEW_S);
        if expired {
            // A refresh that fails leaves the old token: the server's 401 then starts a new
            // authorization.
            let _ = self.refresh(&mut saved).await;
        }
        *self.bearer.write() = saved.as_ref().map(|s| s.access_token.clone());
        Ok(())
    }

    /// After a 401: a refresh when there is a refresh token, else (or when it fails) a new
    /// authorization. The new token is in `bearer` when this returns `Ok`.
    pub async fn reauthorize(&self) -> Result<(), String> {
        let challenge = self.challenge.lock().take();
        let mut saved = self.saved.lock().await;
        // Another request refreshed meanwhile: its token is newer than the one refused.
        let refused = self.bearer.read().clone();
        if saved.as_ref().map(|s| &s.access_token) != refused.as_ref() {
            *self.bearer.write() = saved.as_ref().map(|s| s.access_token.clone());
            return Ok(());
        }
        if saved.as_ref().is_some_and(|s| s.refresh_token.is_some())
            && self.refresh(&mut saved).await.is_ok()
        {
            *self.bearer.write() = saved.as_ref().map(|s| s.access_token.clone());
            return Ok(());
        }
        let fresh = self.authorize(challenge.as_deref()).await?;
        self.store(&fresh).await?;
        *self.bearer.write() = Some(fresh.access_token.clone());
        *saved = Some(fresh);
        Ok(())
    }

    async fn store(&self, saved: &Saved) -> Result<(), String> {
        let text = serde_json::to_string(saved).map_err(|e| e.to_string())?;
        self.auth
            .save(&self.key(), &text)
            .await
            .map_err(|e| format!("the token store failed: {e}"))
    }

    async fn refresh(&self, saved: &mut Option<Saved>) -> Result<(), String> {
        let Some(old) = saved.as_ref() else {
            return Err("nothing to refresh".into());
        };
        let Some(refresh_token) = old.refresh_token.clone() else {
            return Err("no refresh token".into());
        };
        let mut form = vec![
            ("grant_type", "refresh_token".to_string()),
            ("refresh_token", refresh_token.clone()),
            ("client_id", old.client_id.clone()),
            ("resource", self.url.clone()),
        ];
        if let Some(secret) = &old.client_secret {
            form.push(("client_secret", secret.clone()));
        }
        let tokens = self.token_request(&old.token_endpoint, &form).await?;
        let mut new = old.clone();
        new.access_token = tokens.access_token;
        new.refresh_token = tokens.refresh_token.or(Some(refresh_token));
        new.expires_at = tokens.expires_in.map(|s| now() + s);
        self.store(&new).await?;
        *saved = Some(new);
        Ok(())
    }

    /// The whole authorization: discovery, registration, the browser step, the code exchange.
    async fn authorize(&self, challenge: Option<&str>) -> Result<Saved, String> {
        let resource = self.resource_metadata(challenge).await;
        let issuer = resource
            .as_ref()
            .and_then(|r| r.get("authorization_servers"))
            .and_then(Value::as_array)
            .and_then(|a| a.first())
            .and_then(Value::as_str)
            .map(str::to_string)
            .unwrap_or_else(|| origin_of(&self.url));
        let meta = self.server_metadata(&issuer).await?;
        let endpoint = |key: &str| {
            meta.get(key)
                .and_then(Value::as_str)
                .map(str::to_string)
                .ok_or_else(|| format!("the authorization server's metadata has no {key}"))
        };
        let authorization_endpoint = endpoint("authorization_endpoint")?;
        let token_endpoint = endpoint("token_endpoint")?;
        let s256 = meta
            .get("code_challenge_methods_supported")
            .and_then(Value::as_array)
            .is_some_and(|m| m.iter().any(|v| v == "S256"));
        if !s256 {
            return Err("the authorization server does not advertise PKCE S256 \
                 (code_challenge_methods_supported); refusing to authorize"
                .into());
        }
        let redirect_uri = self.auth.redirect_uri();
        let (client_id, client_secret) = match &self.options.client_id {
            Some(id) => (id.clone(), self.options.client_secret.clone()),
            None => {
                let registration = endpoint("registration_endpoint").map_err(|_| {
                    "the authorization server offers no dynamic client registration; give the \
                     server's \"oauth\": {\"client_id\": ...}"
                        .to_string()
                })?;
                self.register(&registration, &redirect_uri).await?
            }
        };
        let scope = self.options.scope.clone().or_else(|| {
            resource
                .as_ref()
                .and_then(|r| r.get("scopes_supported"))
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .collect::<Vec<_>>()
                        .join(" ")
                })
                .filter(|s| !s.is_empty())
        });
        let verifier = Alphanumeric.sample_string(&mut rand::rng(), 64);
        let code_challenge = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .encode(Sha256::digest(verifier.as_bytes()));
        let state = Alphanumeric.sample_string(&mut rand::rng(), 32);
        let mut url = url::Url::parse(&authorization_endpoint)
            .map_err(|e| format!("the authorization endpoint is not a URL: {e}"))?;
        {
            let mut q = url.query_pairs_mut();
            q.append_pair("response_type", "code")
                .append_pair("client_id", &client_id)
                .append_pair("redirect_uri", &redirect_uri)
                .append_pair("code_challenge", &code_challenge)
                .append_pair("code_challenge_method", "S256")
                .append_pair("state", &state)
                .append_pair("resource", &self.url);
            if let Some(scope) = &scope {
                q.append_pair("scope", scope);
            }
        }
        let back = self
            .auth
            .authorize(&self.server, url.as_str())
            .await
            .map_err(|e| format!("the authorization was not completed: {e}"))?;
        let back = url::Url::parse(&back)
            .map_err(|_| "the authorization callback is not a URL".to_string())?;
        let param = |name: &str| {
            back.query_pairs()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.into_owned())
        };
        if let Some(error) = param("error") {
            return Err(format!(
                "the authorization server refused: {}",
                shown_code(&error)
            ));
        }
        if param("state").as_deref() != Some(state.as_str()) {
            return Err("the authorization callback's state does not match; refused".into());
        }
        let code = param("code").ok_or("the authorization callback has no code")?;
        let mut form = vec![
            ("grant_type", "authorization_code".to_string()),
            ("code", code),
            ("redirect_uri", redirect_uri),
            ("client_id", client_id.clone()),
            ("code_verifier", verifier),
            ("resource", self.url.clone()),
        ];
        if let Some(secret) = &client_secret {
            form.push(("client_secret", secret.clone()));
        }
        let tokens = self.token_request(&token_endpoint, &form).await?;
        Ok(Saved {
            client_id,
            client_secret,
            token_endpoint,
            access_token: tokens.access_token,
            refresh_token: tokens.refresh_token,
            expires_at: tokens.expires_in.map(|s| now() + s),
        })
    }

    /// RFC 9728 metadata: the URL the challenge names, else the well-known URLs of the server's
    /// path, then of its origin. `None` when none answers (the server's origin is then taken as
    /// the authorization server, as older servers expect).
    async fn resource_metadata(&self, challenge: Option<&str>) -> Option<Value> {
        let mut urls = Vec::new();
        if let Some(u) = challenge.and_then(|c| challenge_param(c, "resource_metadata")) {
            urls.push(u);
        }
        if let Ok(u) = url::Url::parse(&self.url) {
            let origin = origin_of(&self.url);
            let path = u.path().trim_end_matches('/');
            if !path.is_empty() {
                urls.push(format!(
                    "{origin}/.well-known/oauth-protected-resource{path}"
                ));
            }
            urls.push(format!("{origin}/.well-known/oauth-protected-resource"));
        }
        for u in urls {
            if let Ok(v) = self.get_json(&u).await {
                return Some(v);
            }
        }
        None
    }

    /// RFC 8414 metadata of `issuer`, else its OpenID configuration.
    async fn server_metadata(&self, issuer: &str) -> Result<Value, String> {
        let origin = origin_of(issuer);
        let path = url::Url::parse(issuer)
            .map(|u| u.path().trim_end_matches('/').to_string())
            .unwrap_or_default();
        let mut urls = vec![format!(
            "{origin}/.well-known/oauth-authorization-server{path}"
        )];
        urls.push(format!("{origin}/.well-known/openid-configuration{path}"));
        if !path.is_empty() {
            urls.push(format!("{issuer}/.well-known/openid-configuration"));
        }
        for u in &urls {
            if let Ok(v) = self.get_json(u).await {
                return Ok(v);
            }
        }
        Err(format!(
            "no authorization server metadata at {origin} (oauth-authorization-server, \
             openid-configuration)"
        ))
    }

    /// RFC 7591 registration of a public client (or confidential, when the server gives a
    /// secret).
    async fn register(
        &self,
        endpoint: &str,
        redirect_uri: &str,
    ) -> Result<(String, Option<String>), String> {
        let body = serde_json::json!({
            "client_name": "contenox",
            "redirect_uris": [redirect_uri],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
        });
        let req = self.http.post(endpoint).json(&body);
        let v = self
            .json_of(req, endpoint, "the client registration")
            .await?;
        let id = v
            .get("client_id")
            .and_then(Value::as_str)
            .ok_or("the client registration answered no client_id")?;
        let secret = v
            .get("client_secret")
            .and_then(Value::as_str)
            .map(str::to_string);
        Ok((id.to_string(), secret))
    }

    async fn token_request(
        &self,
        endpoint: &str,
        form: &[(&str, String)],
    ) -> Result<Tokens, String> {
        let req = self.http.post(endpoint).form(form);
        let v = self.json_of(req, endpoint, "the token request").await?;
        serde_json::from_value(v).map_err(|_| "the token response has no access_token".to_string())
    }

    async fn get_json(&self, url: &str) -> Result<Value, String> {
        let req = self
            .http
            .get(url)
            .header("MCP-Protocol-Version", "2025-06-18");
        self.json_of(req, url, "the metadata request").await
    }

    /// Send, read at most [`MAX_BODY`] bytes, parse JSON. Errors name the origin, the status and
    /// an OAuth `error` code, never a body that may hold a token.
    async fn json_of(
        &self,
        req: reqwest::RequestBuilder,
        url: &str,
        what: &str,
    ) -> Result<Value, String> {
        let at = origin_of(url);
        let resp = tokio::time::timeout(self.timeout, req.send())
            .await
            .map_err(|_| format!("{what} to {at} timed out"))?
            .map_err(|e| format!("{what} to {at} failed: {}", e.without_url()))?;
        let status = resp.status();
        let mut resp = resp;
        let mut body = Vec::new();
        loop {
            let chunk = tokio::time::timeout(self.timeout, resp.chunk())
                .await
                .map_err(|_| format!("{what} to {at} timed out"))?
                .map_err(|e| format!("{what} to {at} failed: {}", e.without_url()))?;
            let Some(chunk) = chunk else { break };
            if body.len() + chunk.len() > MAX_BODY {
                return Err(format!(
                    "{what} to {at}: the answer is over {MAX_BODY} bytes"
                ));
            }
            body.extend_from_slice(&chunk);
        }
        let value: Option<Value> = serde_json::from_slice(&body).ok();
        if !status.is_success() {
            let code = value
                .as_ref()
                .and_then(|v| v.get("error"))
                .and_then(Value::as_str)
                .map(|c| format!(" ({})", shown_code(c)))
                .unwrap_or_default();
            return Err(format!("{what} to {at} answered HTTP {status}{code}"));
        }
        value.ok_or_else(|| format!("{what} to {at} did not answer JSON"))
    }
}

/// A token response (RFC 6749 5.1).
#[derive(Deserialize)]
struct Tokens {
    access_token: String,
    #[serde(default)]
    refresh_token: Option<String>,
    #[serde(default)]
    expires_in: Option<u64>,
}

/// An OAuth error code as shown: the registered codes are short ASCII words; anything else is
/// not repeated.
fn shown_code(code: &str) -> &str {
    if code.len() <= 40 && code.bytes().all(|b| b.is_ascii_lowercase() || b == b'_') {
        code
    } else {
        "an unreadable error code"
    }
}

/// `scheme://host[:port]` of a URL (the URL itself when it does not parse).
fn origin_of(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(u) => u.origin().ascii_serialization(),
        Err(_) => url.to_string(),
    }
}

/// A parameter of a `WWW-Authenticate: Bearer k="v", ...` challenge.
fn challenge_param(header: &str, name: &str) -> Option<String> {
    let rest = header.trim().strip_prefix("Bearer").unwrap_or(header);
    for part in rest.split(',') {
        let Some((k, v)) = part.split_once('=') else {
            continue;
        };
        if k.trim().eq_ignore_ascii_case(name) {
            return Some(v.trim().trim_matches('"').to_string());
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn challenge_parameters_are_read() {
        let h = r#"Bearer error="invalid_token", error_description="Authentication required", resource_metadata="http://127.0.0.1:9/.well-known/oauth-protected-resource/mcp""#;
        assert_eq!(
            challenge_param(h, "resource_metadata").as_deref(),
            Some("http://127.0.0.1:9/.well-known/oauth-protected-resource/mcp")
        );
        assert_eq!(
            challenge_param(h, "error").as_deref(),
            Some("invalid_token")
        );
        assert_eq!(challenge_param("Bearer", "resource_metadata"), None);
    }

    #[test]
    fn error_codes_are_shown_only_when_they_look_like_codes() {
        assert_eq!(shown_code("invalid_grant"), "invalid_grant");
        assert_eq!(shown_code("at-SECRET-token"), "an unreadable error code");
    }
}
