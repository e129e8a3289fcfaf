#!/usr/bin/env bash
# Installs the real MCP servers the MCP tests start: @modelcontextprotocol/server-everything (npm)
# into tests/mcp/node_modules and the Python `mcp` SDK (MCPServer, mcp 2's FastMCP) into tests/mcp/.venv.
# Both directories are gitignored; the tests find them there (or via CONTENOX_MCP_NODE_MODULES /
# CONTENOX_MCP_PYTHON).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"
# npm ci: exactly package-lock.json's versions (npm install may move them).
if [ ! -f node_modules/@modelcontextprotocol/server-everything/package.json ]; then
  npm ci --no-audit --no-fund --loglevel=error
fi
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
if ! .venv/bin/python -c 'import mcp.server.mcpserver' 2>/dev/null; then
  .venv/bin/pip install --quiet --disable-pip-version-check -r requirements.txt
fi
echo "MCP test servers installed under $here"
