"""Fixtures of the real-server suite: a llama-server binary, tiny GGUF models, running servers.

The binary is built from the llama.cpp sources vendored in llama-cpp-python's sdist by
``build_llama_server.sh`` and cached in ``~/.cache/agentcore-fx`` (``.ci/run`` builds it before
the tests). When it is missing the first test that needs it runs the build (5 minutes on 2
cores, once); when the build is impossible every test of the suite errors with the reason and
the summary says it on one line: the suite is never skipped in silence.

Servers listen on free loopback ports, are waited for on ``/health`` and are stopped (then
killed) at the end of the session or of the test that started them.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from .helpers import free_port
from .tiny_model import NEVER_EOS_LOGIT, STOPPER_EOS_LOGIT, Vocab, write_model

_HERE = Path(__file__).resolve().parent

BUILD_SCRIPT = _HERE / "build_llama_server.sh"
VERSION = os.environ.get("LLAMA_CPP_PYTHON_VERSION", "0.3.36")
CACHE = Path(os.environ.get("AGENTCORE_LLAMA_CACHE", Path.home() / ".cache" / "agentcore-fx"))
BINARY = Path(os.environ["AGENTCORE_LLAMA_SERVER"]) if os.environ.get("AGENTCORE_LLAMA_SERVER") \
    else CACHE / f"llama-server-{VERSION}"

_problem: list[str] = []  # why the binary is unavailable (for the summary line)
_running: list[LlamaServer] = []


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if Path(str(item.fspath)).resolve().is_relative_to(_HERE):
            item.add_marker(pytest.mark.llm_server)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if _problem:
        terminalreporter.write_line(
            f"llm_server: NOT RUN, llama-server is unavailable: {_problem[0]}", red=True, bold=True)


@pytest.fixture(scope="session")
def llama_server_bin() -> Path:
    if _problem:
        pytest.fail(_problem[0], pytrace=False)
    if not (BINARY.is_file() and os.access(BINARY, os.X_OK)):
        note = BINARY.with_name(BINARY.name + ".failed")
        if os.environ.get("AGENTCORE_LLAMA_BUILD", "1") == "0":
            why = f" (the build failed: {note.read_text().strip()})" if note.is_file() else ""
            reason = f"{BINARY} is missing{why}; build it with: bash {BUILD_SCRIPT}"
        else:
            print(f"\nllm_server: {BINARY} is missing; building it (about 5 minutes) ...", file=sys.stderr)
            proc = subprocess.run(["bash", str(BUILD_SCRIPT)], capture_output=True, text=True,
                                  env={**os.environ, "PYTHON": sys.executable})
            reason = "" if proc.returncode == 0 else (
                f"{BUILD_SCRIPT.name} failed: " + (proc.stderr.strip().splitlines() or ["no output"])[-1])
        if reason or not BINARY.is_file():
            _problem.append(reason or f"{BINARY} was not built")
            pytest.fail(_problem[0], pytrace=False)
    return BINARY


@dataclass
class Models:
    stopper: Path
    """Writes a few tokens, then ends its turn."""
    never: Path
    """Never ends its turn (a reply stops at max_tokens, the context size or an abort)."""
    vocab: Vocab = field(default_factory=Vocab)


@pytest.fixture(scope="session")
def models(tmp_path_factory: pytest.TempPathFactory) -> Models:
    d = tmp_path_factory.mktemp("gguf")
    return Models(stopper=write_model(d / "stopper.gguf", eos_logit=STOPPER_EOS_LOGIT),
                  never=write_model(d / "never.gguf", eos_logit=NEVER_EOS_LOGIT))


class LlamaServer:
    """One llama-server process on a free loopback port."""

    def __init__(self, binary: Path, model: Path, *args: str, ctx_size: int = 4096,
                 log_dir: Path | None = None) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.args = [str(binary), "-m", str(model), "--host", "127.0.0.1", "--port", str(self.port),
                     "--jinja", "-c", str(ctx_size), "-np", "1", "-t", "1", "--no-warmup",
                     "--metrics", "--slots",
                     # Plain sampling: random text from the whole vocabulary.
                     "--temp", "1", "--top-k", "0", "--top-p", "1", "--min-p", "0", *args]
        self.log_path = (log_dir or Path("/tmp")) / f"llama-server-{self.port}.log"
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(self.args, stdout=self._log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL)
        _running.append(self)
        self._wait_healthy()

    def _wait_healthy(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"llama-server exited with {self.proc.returncode}: {self.log_tail()}")
            try:
                if httpx.get(self.url + "/health", timeout=1.0).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.02)
        self.stop()
        raise RuntimeError(f"llama-server not healthy after {timeout} s: {self.log_tail()}")

    @property
    def v1(self) -> str:
        return self.url + "/v1"

    def log_tail(self, n: int = 15) -> str:
        self._log.flush()
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return "(no log)"

    def metrics(self) -> dict[str, float]:
        text = httpx.get(self.url + "/metrics", timeout=5.0).text
        out: dict[str, float] = {}
        for line in text.splitlines():
            if line and not line.startswith("#"):
                name, _, value = line.rpartition(" ")
                out[name.strip()] = float(value)
        return out

    def slots(self) -> list[dict[str, Any]]:
        return list(httpx.get(self.url + "/slots", timeout=5.0).json())

    def busy(self) -> bool:
        return any(s.get("is_processing") for s in self.slots())

    def wait_idle(self, timeout: float = 10.0) -> float:
        """Seconds until no slot is processing (raises after ``timeout``)."""
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout:
            if not self.busy():
                return time.monotonic() - t0
            time.sleep(0.005)
        raise AssertionError(f"the server still generates {timeout} s later")

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(5)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self._log.close()
        if self in _running:
            _running.remove(self)


@pytest.fixture(scope="session")
def server_factory(llama_server_bin: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    logs = tmp_path_factory.mktemp("llama-logs")
    started: list[LlamaServer] = []

    def start(model: Path, *args: str, ctx_size: int = 4096) -> LlamaServer:
        server = LlamaServer(llama_server_bin, model, *args, ctx_size=ctx_size, log_dir=logs)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


@pytest.fixture(scope="session")
def chat_server(server_factory: Any, models: Models) -> LlamaServer:
    """The stopper model: replies of a few tokens; tool calls when a request biases ``<tool_call>``."""
    return server_factory(models.stopper)


@pytest.fixture(scope="session")
def never_server(server_factory: Any, models: Models) -> LlamaServer:
    """The model that never ends its turn."""
    return server_factory(models.never)


@pytest.fixture(scope="session")
def forcing_server(server_factory: Any, models: Models) -> LlamaServer:
    """The stopper model with ``<tool_call>`` lifted server-side (``--logit-bias``): every reply is
    one tool call whatever the request says (``/v1/messages`` ignores a request's ``logit_bias``)."""
    return server_factory(models.stopper, "--logit-bias", f"{models.vocab.tool_call}+100")


@pytest.fixture
def server(server_factory: Any, models: Models) -> Iterator[Any]:
    """Starts servers owned by one test (stopped at its end)."""
    mine: list[LlamaServer] = []

    def start(model: Path | None = None, *args: str, ctx_size: int = 4096) -> LlamaServer:
        s = server_factory(model or models.never, *args, ctx_size=ctx_size)
        mine.append(s)
        return s

    yield start
    for s in mine:
        s.stop()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    for server in list(_running):  # a test that failed half-way: no process left behind
        server.stop()
