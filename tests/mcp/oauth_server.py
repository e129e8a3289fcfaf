"""An OAuth-protected MCP server for contenox's MCP OAuth tests, built only from the Python SDK's
own parts (mcp 2.x): `MCPServer` with `auth_server_provider` serves, on one origin, the
authorization server (RFC 8414 metadata, dynamic client registration, /authorize with PKCE,
/token with refresh, /revoke), the protected resource metadata (RFC 9728) and the streamable
HTTP endpoint /mcp, which answers 401 with `WWW-Authenticate: Bearer resource_metadata=...`
without a valid token. The provider below keeps everything in memory and approves every
authorization request at once (the browser step is the client's business: it gets the
authorization URL and follows it).

Run: `python oauth_server.py PORT` (127.0.0.1:PORT). Environment:
- ACCESS_TTL: seconds an access token lives (default 3600).

Test controls (plain HTTP, not MCP):
- POST /_test/expire: every access token expires now (a refresh makes new ones).
- POST /_test/revoke: every access and refresh token is revoked (only a new authorization helps).
- GET /_test/stats: {"authorizations": n, "refreshes": n, "registrations": n} as JSON.
"""

import os
import secrets
import sys
import time

from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    RefreshToken,
    TokenError,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions, RevocationOptions
from mcp.server.mcpserver import MCPServer
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from starlette.requests import Request
from starlette.responses import JSONResponse

PORT = int(sys.argv[1]) if len(sys.argv) > 1 else 8765
ORIGIN = f"http://127.0.0.1:{PORT}"
ACCESS_TTL = int(os.environ.get("ACCESS_TTL", "3600"))


class Provider:
    """The in-memory authorization server."""

    def __init__(self) -> None:
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.access: dict[str, AccessToken] = {}
        self.refresh: dict[str, RefreshToken] = {}
        self.stats = {"authorizations": 0, "refreshes": 0, "registrations": 0}

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        assert client_info.client_id is not None
        self.clients[client_info.client_id] = client_info
        self.stats["registrations"] += 1

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        # The person approves at once.
        code = secrets.token_urlsafe(24)
        assert client.client_id is not None
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=params.scopes or [],
            expires_at=time.time() + 300,
            client_id=client.client_id,
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
        )
        self.stats["authorizations"] += 1
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> AuthorizationCode | None:
        return self.codes.get(authorization_code)

    def _issue(self, client_id: str, scopes: list[str], resource: str | None) -> OAuthToken:
        access = "at-" + secrets.token_urlsafe(24)
        refresh = "rt-" + secrets.token_urlsafe(24)
        expires = int(time.time()) + ACCESS_TTL
        self.access[access] = AccessToken(
            token=access, client_id=client_id, scopes=scopes, expires_at=expires, resource=resource
        )
        self.refresh[refresh] = RefreshToken(
            token=refresh, client_id=client_id, scopes=scopes, resource=resource
        )
        return OAuthToken(
            access_token=access,
            expires_in=ACCESS_TTL,
            scope=" ".join(scopes) or None,
            refresh_token=refresh,
        )

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        if self.codes.pop(authorization_code.code, None) is None:
            raise TokenError("invalid_grant", "code already used")
        assert client.client_id is not None
        return self._issue(client.client_id, authorization_code.scopes, authorization_code.resource)

    async def load_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: str
    ) -> RefreshToken | None:
        return self.refresh.get(refresh_token)

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        if self.refresh.pop(refresh_token.token, None) is None:
            raise TokenError("invalid_grant", "refresh token revoked")
        self.stats["refreshes"] += 1
        assert client.client_id is not None
        return self._issue(client.client_id, scopes or refresh_token.scopes, refresh_token.resource)

    async def load_access_token(self, token: str) -> AccessToken | None:
        found = self.access.get(token)
        if found is None or (found.expires_at is not None and found.expires_at <= time.time()):
            return None
        return found

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        self.access.pop(token.token, None)
        self.refresh.pop(token.token, None)


provider = Provider()
server = MCPServer(
    "protected",
    auth_server_provider=provider,
    auth=AuthSettings(
        issuer_url=ORIGIN,
        resource_server_url=f"{ORIGIN}/mcp",
        validate_token_resource=False,
        client_registration_options=ClientRegistrationOptions(enabled=True),
        revocation_options=RevocationOptions(enabled=True),
    ),
)


@server.tool()
def vault_sum(a: int, b: int) -> str:
    """Add two numbers (behind OAuth)."""
    return f"vault says {a + b}"


@server.custom_route("/_test/expire", methods=["POST"])
async def expire(request: Request) -> JSONResponse:
    for token in provider.access.values():
        token.expires_at = int(time.time()) - 1
    return JSONResponse({"expired": len(provider.access)})


@server.custom_route("/_test/revoke", methods=["POST"])
async def revoke(request: Request) -> JSONResponse:
    provider.access.clear()
    provider.refresh.clear()
    return JSONResponse({"revoked": True})


@server.custom_route("/_test/stats", methods=["GET"])
async def stats(request: Request) -> JSONResponse:
    return JSONResponse(provider.stats)


if __name__ == "__main__":
    server.run("streamable-http", host="127.0.0.1", port=PORT)
