"""The real parts the client's tests run against: a `recall serve` on a new SQLite file with
two tenants' keys, and the local model (`scripts/models.sh start`) for chat.

The `recall` binary is `$RECALL_BIN`, else the checkout's `target/debug/recall` (what
`cargo test` built). Outside CI a missing binary or model skips the tests that need it with a
note; under `CI=true` it fails them: there, they must run.
"""

from __future__ import annotations

import os
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[3]
CI = os.environ.get("CI") == "true"


def _missing(why: str) -> None:
    if CI:
        pytest.fail(f"{why}; CI=true, so this test must run")
    pytest.skip(why)


def recall_bin() -> Path:
    path = Path(os.environ.get("RECALL_BIN") or ROOT / "target" / "debug" / "recall")
    if not path.exists():
        _missing(f"{path} does not exist (cargo build -p recall-cli, or set RECALL_BIN)")
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Server:
    """A running `recall serve`: its URL, a key of tenant `a` and one of tenant `b`."""

    url: str
    key: str
    other_key: str
    db: Path
    log: Path
    proc: subprocess.Popen[bytes] = field(repr=False)

    def rows(self, sql: str) -> list[tuple[object, ...]]:
        """Rows of a query on the server's SQLite file (read-only), to check what is stored."""
        import sqlite3

        con = sqlite3.connect(f"file:{self.db}?mode=ro", uri=True)
        try:
            return list(con.execute(sql))
        finally:
            con.close()


def start_server(tmp: Path, env: dict[str, str] | None = None, args: list[str] | None = None) -> Server:
    binary = recall_bin()
    db = tmp / "recall.db"
    base_env = {k: v for k, v in os.environ.items() if not k.startswith(("RECALL_", "OPENAI_", "ANTHROPIC_"))}
    base_env.update({"RECALL_DB": str(db), "RUST_LOG": "warn", "RECALL_EMBED": "off"})
    # The server finds a running local model by itself; only the one a test passes is used.
    base_env["XDG_CACHE_HOME"] = str(tmp / "cache")
    base_env.update(env or {})

    def keys(tenant: str) -> str:
        out = subprocess.run([str(binary), "keys", "create", "--tenant", tenant], env=base_env, capture_output=True, check=True, stdin=subprocess.DEVNULL)
        return out.stdout.decode().strip()

    key, other = keys("a"), keys("b")
    port = free_port()
    log = tmp / "serve.log"
    proc = subprocess.Popen(
        [str(binary), "serve", "--addr", f"127.0.0.1:{port}", *(args or [])],
        env=base_env,
        stdin=subprocess.DEVNULL,
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            if httpx.get(url + "/readyz", timeout=1).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError(f"recall serve did not start: {log.read_text()}")
        time.sleep(0.05)
    return Server(url, key, other, db, log, proc)


def stop_server(s: Server) -> None:
    s.proc.terminate()
    try:
        s.proc.wait(10)
    except subprocess.TimeoutExpired:
        s.proc.kill()


@pytest.fixture(scope="session")
def server() -> Iterator[Server]:
    """One server for the tests that only store and read (each makes its own conversations)."""
    with tempfile.TemporaryDirectory() as tmp:
        s = start_server(Path(tmp))
        yield s
        stop_server(s)


@dataclass
class LocalModel:
    """The local chat model (llama-server, OpenAI wire format) and its model name."""

    base_url: str
    model: str


@pytest.fixture(scope="session")
def local_model() -> Iterator[LocalModel]:
    """`scripts/models.sh start`, with a lease for this test process; given back at the end
    (the server stops unless someone else uses it)."""
    script = ROOT / "scripts" / "models.sh"
    env = dict(os.environ, RECALL_MODELS_HOLDER=str(os.getpid()))
    status = subprocess.run(["bash", str(script), "status"], capture_output=True, env=env, stdin=subprocess.DEVNULL)
    if b"installed: yes" not in status.stdout:
        _missing("the local model is not installed (bash scripts/models.sh fetch)")
    out = subprocess.run(["bash", str(script), "start"], capture_output=True, env=env, stdin=subprocess.DEVNULL)
    if out.returncode != 0:
        raise RuntimeError(f"scripts/models.sh start failed: {out.stderr.decode()}")
    values = dict(line.split("=", 1) for line in out.stdout.decode().splitlines() if "=" in line)
    state = {}
    envfile = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "recall" / "run" / "llama-server.env"
    if envfile.exists():
        state = dict(line.split("=", 1) for line in envfile.read_text().splitlines() if "=" in line)
    try:
        yield LocalModel(values["OPENAI_BASE_URL"], state.get("MODEL", "local"))
    finally:
        subprocess.run(["bash", str(script), "stop"], capture_output=True, env=env, stdin=subprocess.DEVNULL)


@pytest.fixture(scope="session")
def chat_server(local_model: LocalModel) -> Iterator[Server]:
    """A server whose chat backend is the local model."""
    with tempfile.TemporaryDirectory() as tmp:
        s = start_server(Path(tmp), env={"OPENAI_BASE_URL": local_model.base_url, "OPENAI_API_KEY": "local"})
        yield s
        stop_server(s)
