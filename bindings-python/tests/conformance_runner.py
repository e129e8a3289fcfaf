"""The Python conformance runner: one scenario through contenox's public Python API -> a trace
-> ``conformance-check``. The contract is ``shared/conformance/SPEC.md`` and
``tests/conformance/README.md``."""

from __future__ import annotations

import asyncio
import base64
import collections
import json
import os
import subprocess
import tempfile
import threading
import urllib.request
from pathlib import Path
from typing import Any

import contenox

REPO = Path(__file__).resolve().parents[2]
SCENARIO_TIMEOUT_S = 30.0


def _binary(env: str, name: str) -> str:
    return os.environ.get(env) or str(REPO / "target" / "debug" / name)


FAKE_MODEL_SERVER = _binary("FAKE_MODEL_SERVER", "fake-model-server")
CONFORMANCE_CHECK = _binary("CONFORMANCE_CHECK", "conformance-check")
FAKE_REMOTE_SERVICE = _binary("FAKE_REMOTE_SERVICE", "fake-remote-service")


def scenario_dirs() -> list[Path]:
    dirs = [REPO / "tests" / "conformance" / "scenarios"]
    extra = os.environ.get("CONTENOX_SCENARIOS")
    if extra:
        dirs += [Path(d) for d in extra.split(":") if d]
    else:
        shared = REPO.parent / "shared" / "conformance" / "scenarios"
        if shared.is_dir():
            dirs.append(shared)
    return dirs


def scenario_files() -> list[Path]:
    seen: set[Path] = set()
    out: list[Path] = []
    for d in scenario_dirs():
        if not d.is_dir():
            continue
        for f in sorted(d.glob("*.json")):
            if f.resolve() not in seen:
                seen.add(f.resolve())
                out.append(f)
    return out


def _python_parts(parts: list[dict[str, Any]]) -> list[Any]:
    """A scenario's ``prompt_parts`` as a Python host writes them: image data as ``bytes``."""
    out: list[Any] = []
    for part in parts:
        if isinstance(part.get("data"), str):
            part = {**part, "data": base64.b64decode(part["data"])}
        out.append(part)
    return out


def _edit_checkpoint(checkpoint: str, edit: str | None) -> str:
    """Extension ``resume.edit``: ``newer`` raises the version, ``tampered`` changes the first
    call's arguments (its digest no longer matches)."""
    if edit is None:
        return checkpoint
    cp = json.loads(checkpoint)
    if edit == "newer":
        cp["version"] += 1
    elif edit == "tampered":
        cp["reply"]["calls"][0]["arguments"]["tampered"] = True
    else:
        raise ValueError(f"resume.edit: {edit!r} is not newer or tampered")
    return json.dumps(cp)


class FakeServer:
    """``fake-model-server --scenario FILE``: started with a piped stdin, stopped by closing it."""

    def __init__(self, scenario_file: Path) -> None:
        self.proc = subprocess.Popen(
            [FAKE_MODEL_SERVER, "--scenario", str(scenario_file)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().strip()
        if not line.isdigit():
            self.stop()
            raise RuntimeError(f"fake-model-server printed {line!r} instead of a port")
        self.port = int(line)
        # Keep reading stdout so the server can never block on a full pipe.
        threading.Thread(target=self.proc.stdout.read, daemon=True).start()

    def base_url(self, style: str) -> str:
        root = f"http://127.0.0.1:{self.port}"
        return root + "/v1" if style in ("openai", "openai-responses") else root

    def requests(self) -> list[Any]:
        url = f"http://127.0.0.1:{self.port}/_fake/requests"
        with urllib.request.urlopen(url, timeout=10) as r:
            result: list[Any] = json.load(r)
            return result

    def stop(self) -> None:
        if self.proc.stdin and not self.proc.stdin.closed:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def _pattern(p: str) -> tuple[str, str | None, str | None]:
    """``type[:name][@agent]``: ``@a/b`` a subagent chain, ``@*`` any subagent, ``@`` the
    scenario client's own; no ``@`` = any origin."""
    p, at, agent = p.partition("@")
    kind, _, name = p.partition(":")
    return kind, (name or None), (agent if at else None)


def _event_matches(event: contenox.Event, pattern: str) -> bool:
    kind, name, agent = _pattern(pattern)
    if event.type != kind or (name is not None and getattr(event, "name", None) != name):
        return False
    chain: tuple[str, ...] = getattr(event, "agent", ())
    if agent is None:
        return True
    if agent == "*":
        return bool(chain)
    return "/".join(chain) == agent


def _rule_matches(m: dict[str, Any], call: contenox.ToolCallEvent) -> bool:
    if "name" in m and m["name"] != call.name:
        return False
    if "hint" in m:
        attr = {"readOnly": "read_only", "destructive": "destructive", "openWorld": "open_world"}
        if getattr(call.hints, attr[m["hint"]]) is not True:
            return False
    if "no_hints" in m and call.hints.empty != bool(m["no_hints"]):
        return False
    if "server" in m and m["server"] != call.server:
        return False
    return not ("source" in m and m["source"] != call.source)


def _echo(name: str, spec: dict[str, Any] | None = None) -> contenox.Tool:
    spec = spec or {}
    return contenox.Tool(
        name,
        lambda args: json.dumps(args, separators=(",", ":"), ensure_ascii=False),
        description=spec.get("description") or "Echo the arguments.",
        input_schema=spec.get("schema") or {"type": "object"},
        hints=spec.get("hints"),
        tier=spec.get("tier") or "core",
    )


class _Meeting:
    """What the ``rendezvous`` tools of one client share: how many of their calls run now, and
    how many times a call arrived to find ``count`` running (each meeting releases every call
    running then)."""

    def __init__(self) -> None:
        self.running = 0
        self.epoch = 0

    async def rendezvous(self, args: dict[str, Any]) -> str:
        count = int(args.get("count", 1))
        deadline = asyncio.get_running_loop().time() + float(args.get("timeout_ms", 5000)) / 1000
        self.running += 1
        entered, running = self.epoch, self.running
        if running >= count:
            self.epoch += 1
        over = f"; over max: {running} running" if "max" in args and running > args["max"] else ""
        try:
            while True:
                if self.epoch > entered:
                    await asyncio.sleep(float(args.get("hold_ms", 0)) / 1000)
                    return f"met {count}{over}"
                if asyncio.get_running_loop().time() >= deadline:
                    return f"timed out with {self.running} running{over}"
                await asyncio.sleep(0.005)
        finally:
            self.running -= 1


def _host_tool(
    t: dict[str, Any], current: list[contenox.Client], meeting: _Meeting
) -> contenox.Tool:
    kind = t["kind"]
    common: dict[str, Any] = {
        "description": t.get("description") or f"Host tool {t['name']} ({kind}).",
        "input_schema": t.get("schema") or {"type": "object"},
        "hints": t.get("hints"),
        "tier": t.get("tier") or "core",
    }
    if kind == "echo":
        return _echo(t["name"], t)
    if kind == "fail":

        def fail(args: dict[str, Any]) -> str:  # sync: runs in a worker thread
            raise RuntimeError(args.get("message", "failed"))

        return contenox.Tool(t["name"], fail, **common)
    if kind == "sleep":

        async def sleep(args: dict[str, Any], ctx: contenox.ToolContext) -> str:  # async
            await asyncio.sleep(float(args.get("ms", 0)) / 1000)
            return "slept"

        return contenox.Tool(t["name"], sleep, **common)
    if kind == "rendezvous":

        async def rendezvous(args: dict[str, Any], ctx: contenox.ToolContext) -> str:
            return await meeting.rendezvous(args)

        return contenox.Tool(t["name"], rendezvous, **common)
    if kind == "register":

        def register(args: dict[str, Any]) -> str:
            current[0].register(_echo(args["name"]))
            return "registered"

        return contenox.Tool(t["name"], register, **common)
    raise ValueError(f"unknown host tool kind {kind!r}")


def _hooks(scenario: dict[str, Any]) -> dict[str, Any]:
    """The scenario's (or a subagent's) ``before_tool`` / ``after_tool`` rules as hooks."""
    before_rules: list[dict[str, Any]] = scenario.get("before_tool") or []
    after_rules: list[dict[str, Any]] | None = scenario.get("after_tool")

    def before_tool(call: contenox.ToolCallEvent) -> contenox.Deny | contenox.Ask | None:
        for rule in before_rules:
            if not _rule_matches(rule.get("match") or {}, call):
                continue
            d = rule["decision"]
            if d == "allow":
                return None
            if "deny" in d:
                return contenox.deny(d["deny"])
            ask = dict(d["ask"])
            ask.setdefault("kind", "approval")
            return contenox.pending(ask)
        return None

    hooks: dict[str, Any] = {"before_tool": before_tool}
    if after_rules is not None:

        async def after_tool(
            call: contenox.ToolCallEvent, result: contenox.ToolOutput
        ) -> contenox.ToolOutput | None:
            for rule in after_rules:
                if _rule_matches(rule.get("match") or {}, call):
                    return contenox.ToolOutput(rule["replace"])
            return None

        hooks["after_tool"] = after_tool
    return hooks


def _lifecycle(spec: dict[str, Any] | None, log: list[str]) -> dict[str, Any]:
    """Extension ``lifecycle``: for each point named, the answer every call gives (core's JSON
    form, in the binding's types; ``True`` for an observer) or ``"raise"``; every call is logged
    as ``point`` or ``point:detail`` before it answers."""
    if not spec:
        return {}
    from contenox._lifecycle import (
        AddContext,
        CompactInstructions,
        ContinueTurn,
        RefusePrompt,
        ReplacePrompt,
        VetoCompact,
    )

    typed = {
        "replace": ReplacePrompt,
        "add_context": AddContext,
        "refuse": RefusePrompt,
        "continue": ContinueTurn,
        "instructions": CompactInstructions,
        "veto": VetoCompact,
    }

    def answer(point: str, entry: str) -> Any:
        log.append(entry)
        given = spec[point]
        if given == "raise":
            raise RuntimeError(f"{point} raised")
        if isinstance(given, dict):
            ((tag, text),) = given.items()
            return typed[tag](text)
        return None  # True, "continue", "stop", "proceed": the point's default

    details: dict[str, Any] = {
        "on_prompt": lambda prompt: "on_prompt",
        "on_stop": lambda text: "on_stop",
        "before_compact": lambda req: f"before_compact:{req.trigger}",
        "on_tool_error": lambda call, result: f"on_tool_error:{call.name}",
        "on_turn_start": lambda prompt: "on_turn_start",
        "on_turn_end": lambda end: f"on_turn_end:{end.outcome}",
        "on_notification": lambda n: f"on_notification:{n.kind}",
    }

    def hook(point: str) -> Any:
        # Async, as a host's guard often is; the sync path is tested in test_lifecycle.py.
        async def call(*args: Any) -> Any:
            return answer(point, details[point](*args))

        return call

    return {point: hook(point) for point in spec}


def _wait_for(answers: collections.deque[Any]) -> Any:
    async def wait_for(request: contenox.PendingRequest, cancel: contenox.CancelSignal) -> Any:
        answer = answers.popleft() if answers else "never"
        if answer == "never":
            await asyncio.Event().wait()  # until the turn cancels this task
        return answer

    return wait_for


def _websearch(spec: Any) -> contenox.WebSearch | None:
    """``config.websearch``: false/absent = off; ``{"results": [...]}`` = a provider that
    answers every query with those results (the engine filters and caps them)."""
    if spec in (False, None):
        return None
    if not isinstance(spec, dict) or not isinstance(spec.get("results"), list):
        raise ValueError(f'websearch must be false or {{"results": [...]}}, got {spec!r}')
    fixed = [contenox.SearchResult(**r) for r in spec["results"]]

    async def search(request: contenox.SearchRequest) -> list[contenox.SearchResult]:
        return fixed

    return search


MCP_DIR = REPO / "tests" / "mcp"


def _installed(path: Path, what: str) -> str:
    if not path.exists():
        raise RuntimeError(f"{what} not found at {path}: run tests/mcp/install.sh")
    return str(path)


def _mcp_command(server: str, http_port: int | None) -> tuple[str, list[str]]:
    """tests/src/mcp_support.rs's test servers: "fast" (Python SDK) and "everything" (npm)."""
    if server == "fast":
        python = os.environ.get("CONTENOX_MCP_PYTHON") or _installed(
            MCP_DIR / ".venv" / "bin" / "python", "the MCP venv"
        )
        args = [_installed(MCP_DIR / "fast_server.py", "fast_server.py")]
        if http_port is not None:
            args += ["http", str(http_port)]
        return python, args
    if server == "everything":
        modules = Path(os.environ.get("CONTENOX_MCP_NODE_MODULES") or MCP_DIR / "node_modules")
        js = _installed(
            modules / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js",
            "@modelcontextprotocol/server-everything",
        )
        return "node", [js, "streamableHttp" if http_port is not None else "stdio"]
    raise ValueError(f"mcp: unknown test server {server!r}")


class McpSetup:
    """The scenario key ``mcp``: test servers loaded with ``contenox.load_mcp``."""

    def __init__(self) -> None:
        self.source: contenox.McpSource | None = None
        self.resource_tools = False
        self.http: list[subprocess.Popen[bytes]] = []

    async def start(self, spec: dict[str, Any]) -> None:
        self.resource_tools = bool(spec.get("resource_tools"))
        entries: dict[str, Any] = {}
        for name, s in spec["servers"].items():
            transport = s.get("transport", "stdio")
            if transport == "stdio":
                command, args = _mcp_command(s["server"], None)
                entry: dict[str, Any] = {"command": command, "args": args}
            elif transport == "http":
                entry = {"type": "http", "url": await self._start_http(s["server"])}
            else:
                raise ValueError(f"mcp: unknown transport {transport!r}")
            for key in (
                "inject",
                "headers",
                "timeout_ms",
                "env",
                "elicitation",
                "sampling",
                "roots",
            ):
                if key in s:
                    entry[key] = s[key]
            entries[name] = entry
        self.source = await contenox.load_mcp({"mcpServers": entries})
        failed = [f"{n}: {st.error}" for n, st in self.source.servers if not st.ready]
        if failed:
            raise RuntimeError("mcp servers failed: " + "; ".join(failed))

    async def _start_http(self, server: str) -> str:
        import socket

        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        command, args = _mcp_command(server, port)
        proc = subprocess.Popen(
            [command, *args],
            env={**os.environ, "PORT": str(port)},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self.http.append(proc)
        for _ in range(400):
            try:
                _, writer = await asyncio.open_connection("127.0.0.1", port)
                writer.close()
                return f"http://127.0.0.1:{port}/mcp"
            except OSError:
                await asyncio.sleep(0.05)
        raise RuntimeError(f"mcp: {server} over HTTP did not listen on {port}")

    def register_into(self, client: contenox.Client) -> None:
        if self.source is not None:
            self.source.register_into(client, resource_tools=self.resource_tools)

    async def close(self) -> None:
        if self.source is not None:
            await self.source.close()
        for proc in self.http:
            proc.kill()
            proc.wait()


class RemoteSetup:
    """The scenario key ``remote``: ``fake-remote-service --scenario FILE`` (the Rust harness's
    services, stopped by closing its stdin), its hooks loaded with ``contenox.load_remote``."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen[str] | None = None
        self.control = 0
        self.unreachable = False
        self.source: contenox.RemoteSource | None = None

    async def start(self, scenario_file: Path, services: list[dict[str, Any]]) -> None:
        self.proc = subprocess.Popen(
            [FAKE_REMOTE_SERVICE, "--scenario", str(scenario_file)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        try:
            info = json.loads(line)
        except ValueError:
            raise RuntimeError(f"fake-remote-service printed {line!r}") from None
        threading.Thread(target=self.proc.stdout.read, daemon=True).start()
        self.control = int(info["control"])
        reported: list[str] = []
        self.source = await contenox.load_remote(
            info["hooks"], on_hook=lambda name, _state: reported.append(name)
        )
        if sorted(reported) != sorted(h["name"] for h in info["hooks"]):
            raise RuntimeError(f"remote: on_hook reported {reported}")
        for (name, state), spec in zip(self.source.hooks, services, strict=True):
            down = bool(spec.get("unreachable"))
            self.unreachable |= down
            if state.ready == down:
                want = "down" if down else "ready"
                raise RuntimeError(f"remote: hook {name} should be {want}: {state}")

    def _control(self, method: str, path: str) -> Any:
        url = f"http://127.0.0.1:{self.control}{path}"
        req = urllib.request.Request(url, method=method)
        with urllib.request.urlopen(req, timeout=10) as r:
            return json.loads(r.read() or b"null") if method == "GET" else None

    def register_into(self, client: contenox.Client) -> None:
        if self.source is not None:
            self.source.register_into(client)

    def bring_up(self) -> None:
        """Start the services that were down at load."""
        if self.unreachable:
            self._control("POST", "/_fake/up")

    def requests(self) -> list[Any]:
        if self.proc is None:
            return []
        result: list[Any] = self._control("GET", "/_fake/remote_requests")
        return result

    async def close(self) -> None:
        if self.source is not None:
            await self.source.close()
        if self.proc is not None:
            if self.proc.stdin and not self.proc.stdin.closed:
                self.proc.stdin.close()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def _snapshot(root: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    for p in sorted(root.rglob("*")):
        if p.is_file():
            out[p.relative_to(root).as_posix()] = p.read_bytes().decode("utf-8", "replace")
    return out


class Subagents:
    """The scenario key ``subagents``: clients offered as tools (``as_tool_with``), built like
    the scenario's client against the same fake server; closed at the end."""

    def __init__(self, scenario: dict[str, Any], common: dict[str, Any]) -> None:
        self.specs: list[dict[str, Any]] = scenario.get("subagents") or []
        self.clients: list[contenox.Client] = []
        for sub in self.specs:
            cell: list[contenox.Client] = []
            meeting = _Meeting()
            options: dict[str, Any] = {
                **(sub.get("config") or {}),
                **common,
                "tools": [_host_tool(t, cell, meeting) for t in sub.get("host_tools") or []],
            }
            if "before_tool" in sub:
                options["hooks"] = _hooks(sub)
            if "wait_for" in sub:
                options["wait_for"] = _wait_for(collections.deque(sub["wait_for"]))
            client = contenox.create_client(**options)
            cell[:] = [client]
            self.clients.append(client)
        for i, sub in enumerate(self.specs):
            for name in sub.get("subagents") or []:
                self.clients[i].register(self.tool(name))

    def tool(self, name: str) -> contenox.SourceTool:
        i = next((i for i, s in enumerate(self.specs) if s["name"] == name), None)
        if i is None:
            raise ValueError(f"no subagent {name!r}")
        sub = self.specs[i]
        return self.clients[i].as_tool_with(
            name, sub.get("description") or f"The subagent {name}.", **(sub.get("options") or {})
        )

    def parent_tools(self) -> list[contenox.SourceTool]:
        return [self.tool(s["name"]) for s in self.specs if s.get("in_parent", True)]

    def close(self) -> None:
        for c in self.clients:
            c.close()


def _action(action: Any) -> dict[str, Any]:
    """An action as the trace records it (extension `step`)."""
    if action["kind"] in ("model_request", "summary_request"):
        return {"kind": action["kind"], "step": action["step"]}
    if action["kind"] == "tool_call":
        call = action["call"]
        return {
            "kind": "tool_call",
            "name": call["name"],
            "call_id": call["id"],
            "idempotency_key": action["idempotency_key"],
        }
    if action["kind"] == "ask":
        return {"kind": "ask", "call_id": action["request"]["call_id"]}
    return {"kind": "done"}


def _refused_feed(stepper: contenox.Stepper, result: dict[str, Any], errors: list[str]) -> None:
    """A feed that must be refused: its message joins `errors` (nothing when it was taken)."""
    try:
        stepper.feed(result)
    except contenox.StepError as e:
        errors.append(str(e))


async def _run_stepped(
    spec: dict[str, Any],
    prompt: str,
    client: contenox.Client,
    build: Any,
    events: list[dict[str, Any]],
) -> tuple[contenox.TurnResult, dict[str, Any]]:
    """Extension `step` (tests/conformance/README.md): every action performed, then with
    `replay` the same turn in a second client fed from the first one's journal."""
    stepper = client.step(prompt)
    actions: list[dict[str, Any]] = []
    errors: list[str] = []
    if spec.get("wrong_feed"):
        await stepper.next()
        wrong = {
            "kind": "tool_result",
            "call_id": "nope",
            "output": {"content": "x", "is_error": False},
        }
        _refused_feed(stepper, wrong, errors)
    while True:
        action = await stepper.next()
        actions.append(_action(action))
        if action["kind"] == "done":
            result = action["result"]
            break
        await stepper.perform()
        events.extend(e.to_dict() for e in stepper.events())
    events.extend(e.to_dict() for e in stepper.events())
    if spec.get("wrong_feed"):
        late = {"kind": "answer", "call_id": "nope", "answer": {"approve": True}}
        _refused_feed(stepper, late, errors)
    extra: dict[str, Any] = {"turn_id": stepper.turn_id, "actions": actions}
    if spec.get("wrong_feed"):
        extra["step_errors"] = errors
    if spec.get("replay"):
        journal = iter(stepper.journal)
        client2 = build()
        try:
            replay = client2.step(prompt, **stepper.options)
            replayed: list[dict[str, Any]] = []
            while True:
                action = await replay.next()
                replayed.append(_action(action))
                if action["kind"] == "done":
                    extra["replay_final_text"] = action["result"].final_text
                    break
                replay.feed(next(journal))
        finally:
            client2.close()
        extra["replay_actions"] = replayed
    return result, extra


async def run_scenario(path: Path, work: Path) -> dict[str, Any]:
    """Run one scenario; return its trace."""
    scenario = json.loads(path.read_text())
    style = scenario.get("style", "openai")
    root = work / "root"
    root.mkdir()
    for rel, content in (scenario.get("workspace") or {}).items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(content)
    config = dict(scenario.get("config") or {})
    websearch = _websearch(config.pop("websearch", None))

    server = FakeServer(path)
    mcp = McpSetup()
    remote = RemoteSetup()
    subagents: Subagents | None = None
    try:
        if "mcp" in scenario:
            await mcp.start(scenario["mcp"])
        if scenario.get("remote"):
            await remote.start(path, scenario["remote"])
        answers = collections.deque(scenario.get("wait_for") or [])
        current: list[contenox.Client] = []
        # A `fallback` entry of another style without a base URL talks to the fake server too
        # (it serves every style's chat endpoint).
        config["fallback"] = [
            {"base_url": server.base_url(f["style"]), **f}
            if isinstance(f, dict) and f.get("style", style) != style
            else f
            for f in config.get("fallback") or []
        ] or config.get("fallback")
        common = {
            "style": style,
            "base_url": server.base_url(style),
            "model": "fake",
            "api_key": "test",
            "root": root,
        }
        subagents = Subagents(scenario, common)
        compactions: list[dict[str, Any]] = []
        lifecycle_log: list[str] = []

        def on_compact(notice: contenox.CompactNotice) -> None:
            compactions.append(notice.to_dict())

        def build() -> contenox.Client:
            meeting = _Meeting()
            client = contenox.create_client(
                **config,
                **common,
                tools=[
                    *(_host_tool(t, current, meeting) for t in scenario.get("host_tools") or []),
                    *subagents.parent_tools(),
                ],
                hooks={**_hooks(scenario), **_lifecycle(scenario.get("lifecycle"), lifecycle_log)},
                wait_for=_wait_for(answers),
                websearch=websearch,
                on_compact=on_compact,
            )
            mcp.register_into(client)
            remote.register_into(client)
            current[:] = [client]
            return client

        def refused(e: contenox.ConfigurationError) -> dict[str, Any]:
            if "config_error_contains" not in (scenario.get("expect") or {}):
                raise e
            # SPEC "Approval policies": the creation error is the result; no turn runs.
            return {
                "scenario": scenario["name"],
                "binding": "python",
                "config_error": str(e),
                "requests": server.requests(),
                "workspace": _snapshot(root),
            }

        try:
            client = build()
        except contenox.ConfigurationError as e:
            return refused(e)
        remote.bring_up()
        if "transcript" in scenario:
            client.transcript = contenox.Transcript.from_json(json.dumps(scenario["transcript"]))
        actions = scenario.get("actions") or []
        fired = [False] * len(actions)
        events: list[dict[str, Any]] = []
        result: contenox.TurnResult | None = None
        chain = scenario.get("chain")
        chain_error: str | None = None
        prompts = [scenario["prompt"], *(scenario.get("more_prompts") or [])]
        step_extra: dict[str, Any] = {}
        if "step" in scenario:
            # Extension `step`: the prompt as a turn stepped by its host (no loop below).
            result, step_extra = await _run_stepped(
                scenario["step"], scenario["prompt"], client, build, events
            )
            prompts = []
        for i, prompt in enumerate(prompts):
            if i > 0 and scenario.get("restart_between_prompts"):
                saved = work / "transcript.json"
                client.transcript.save(saved)
                client.close()
                client = build()
                client.transcript = contenox.Transcript.load(saved)
            # Extension `run_settings`: the first prompt's run has its own model settings; a
            # refusal of them is the trace's config_error.
            settings = scenario.get("run_settings") if i == 0 else None
            # Extension `prompt_parts`: the first prompt as parts, image data as bytes.
            parts = scenario.get("prompt_parts") if i == 0 else None
            # Extension `run_output_schema`: the first prompt's run has its own output_schema.
            output_schema = scenario.get("run_output_schema") if i == 0 else None
            if chain is None:
                try:
                    run = client.stream(
                        prompt if parts is None else _python_parts(parts),
                        settings=settings,
                        output_schema=output_schema,
                    )
                except contenox.ConfigurationError as e:
                    client.close()
                    return refused(e)
            else:
                # Extension `chain`: the prompt is the chain's input. A chain that does not
                # read is the trace's `chain_error`; nothing runs.
                try:
                    run = client.stream_chain(chain, prompt, settings=settings)
                except contenox.ConfigurationError as e:
                    chain_error = str(e)
                    break
            async for event in run:
                for j, action in enumerate(actions):
                    if fired[j] or not _event_matches(event, action["on"]):
                        continue
                    fired[j] = True
                    todo = action["do"]
                    if todo == "cancel":
                        run.cancel()
                    else:
                        client.register(_echo(todo["register"]["name"]))
                events.append(event.to_dict())
            result = await run.result()
        # Extension `resume`: the last turn suspended; a client built again from the same
        # parts resumes it from its checkpoint with `answers` (under `policy` when given, after
        # `wait_ms`, from a checkpoint `edit`ed to be `tampered` or `newer`, a second time when
        # `twice`). A refusal is the trace's `resume_error`.
        resume_error: str | None = None
        spec = scenario.get("resume")
        if spec is not None:
            assert result is not None and result.checkpoint, "resume: the turn did not suspend"
            checkpoint = _edit_checkpoint(result.checkpoint, spec.get("edit"))
            if spec.get("wait_ms"):
                await asyncio.sleep(spec["wait_ms"] / 1000)
            client.close()
            client = build()
            if "policy" in spec:
                client.set_policy(spec["policy"])
            for _ in range(2 if spec.get("twice") else 1):
                try:
                    run = client.resume_stream(checkpoint, spec.get("answers") or {})
                except contenox.CheckpointError as e:
                    resume_error = str(e)
                    break
                async for event in run:
                    events.append(event.to_dict())
                result = await run.result()
        told = list(compactions)
        if scenario.get("settle_ms"):
            await asyncio.sleep(scenario["settle_ms"] / 1000)
        requests = server.requests()
        remote_requests = remote.requests()
        client.close()
    finally:
        if subagents is not None:
            subagents.close()
        await mcp.close()
        await remote.close()
        server.stop()
    if chain_error is not None:
        return {
            "scenario": scenario["name"],
            "binding": "python",
            "outcome": None,
            "final_text": None,
            "usage": None,
            "events": events,
            "requests": requests,
            "workspace": _snapshot(root),
            "compactions": told,
            "chain_error": chain_error,
        }
    assert result is not None
    extra: dict[str, Any] = dict(step_extra)
    if resume_error is not None:
        extra["resume_error"] = resume_error
    if "lifecycle" in scenario:
        extra["lifecycle"] = list(lifecycle_log)
    return {
        **extra,
        "scenario": scenario["name"],
        "binding": "python",
        "outcome": result.outcome,
        "final_text": result.final_text,
        "usage": result.usage.to_dict(),
        "events": events,
        "requests": requests,
        "workspace": _snapshot(root),
        "remote_requests": remote_requests,
        "compactions": told,
        "output": result.output,
    }


async def check_scenario(path: Path) -> None:
    """Run a scenario and judge its trace with ``conformance-check``; AssertionError on
    failure."""
    with tempfile.TemporaryDirectory(prefix="contenox-py-") as tmp:
        work = Path(tmp)
        trace = await asyncio.wait_for(run_scenario(path, work), SCENARIO_TIMEOUT_S)
        trace_file = work / "trace.json"
        trace_file.write_text(json.dumps(trace, indent=1))
        done = subprocess.run(
            [CONFORMANCE_CHECK, str(path), str(trace_file)],
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert done.returncode == 0, (
            f"conformance-check failed ({done.returncode}):\n{done.stdout}{done.stderr}"
        )
