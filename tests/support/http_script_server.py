"""A real HTTP/1.1 server on 127.0.0.1 that plays back scripted replies.

Each request takes the next :class:`Reply` of the script (FIFO) and is recorded in
``server.requests``. Bodies are sent with chunked transfer encoding, cut at random byte
boundaries with small random pauses, flushed after every chunk, so the client sees the body in
arbitrary pieces as it would from a real provider. A reply can also misbehave: stall before its
headers, stall or reset the connection after some bytes of its body. :func:`model_for` gives a
catalog model of an API with its ``base_url`` pointed at the server.
"""

from __future__ import annotations

import gzip
import json
import random
import socket
import struct
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

from agentcore import replace
from agentcore.messages import Model
from agentcore.providers import get_model
from tests.support.corpus import Interaction

__all__ = ["RecordedRequest", "Reply", "ScriptServer", "chat_model", "model_for", "reply_from"]


@dataclass
class Reply:
    status: int = 200
    body: bytes = b""
    content_type: str = "text/event-stream"
    headers: dict[str, str] = field(default_factory=dict)
    gzip: bool = False
    #: stay silent this long (seconds) before sending the status line
    stall_before_headers: float = 0.0
    #: after this many body bytes (before compression), do ``then``
    cut_after: int | None = None
    then: Literal["stall", "reset", "close"] = "stall"
    #: how long a ``stall`` lasts (the server's stop event ends it early)
    stall: float = 10.0
    #: reset the connection before sending anything
    reset_at_once: bool = False


def chat_model(url: str) -> Model:
    """The OpenAI Chat Completions model ``gpt-4o-mini``, served at ``url``."""
    return replace(get_model("openai", "gpt-4o-mini"), api="openai-completions", base_url=url + "/v1")


def model_for(api: str, url: str) -> Model:
    """A catalog model of ``api``, served at ``url``."""
    if api == "openai-completions":
        return chat_model(url)
    if api == "openai-responses":
        return replace(get_model("openai", "gpt-4o"), base_url=url + "/v1")
    if api == "anthropic-messages":
        return replace(get_model("anthropic", "claude-sonnet-4-5"), base_url=url)
    return replace(get_model("google", "gemini-2.5-flash"), base_url=url + "/v1beta")


def reply_from(it: Interaction, **overrides: Any) -> Reply:
    """A reply that plays back a recorded response (gzip again when it was recorded gzipped)."""
    headers = {k: v for k, v in it.response_headers.items()
               if k in ("retry-after", "retry-after-ms", "request-id", "x-request-id",
                        "x-should-retry")}
    args: dict[str, Any] = dict(
        status=it.status, body=it.body,
        content_type=it.response_headers.get("content-type", "application/json"),
        headers=headers,
        gzip=it.response_headers.get("content-encoding", "").lower() == "gzip",
    )
    args.update(overrides)
    return Reply(**args)


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.body) if self.body else None


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def setup(self) -> None:
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with self.server.lock:
            self.server.connections += 1

    def do_GET(self) -> None:
        self._serve()

    def do_POST(self) -> None:
        self._serve()

    def _serve(self) -> None:
        srv = self.server
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length) if length else b""
        with srv.lock:
            srv.requests.append(RecordedRequest(
                self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body))
            reply = srv.script.popleft() if srv.script else Reply(
                500, b'{"error": {"message": "test server: no scripted reply left"}}',
                "application/json")
        if reply.reset_at_once:
            self._reset()
            return
        if reply.stall_before_headers and srv.stop.wait(reply.stall_before_headers):
            self.close_connection = True
            return
        payload = reply.body
        cut = reply.cut_after
        if cut is not None:
            payload = payload[:cut]
        if reply.gzip:
            payload = gzip.compress(payload)
        self.send_response(reply.status)
        self.send_header("Content-Type", reply.content_type)
        self.send_header("Transfer-Encoding", "chunked")
        if reply.gzip:
            self.send_header("Content-Encoding", "gzip")
        for k, v in reply.headers.items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.flush()
        try:
            self._send_chunks(payload)
            if cut is not None:
                if reply.then == "reset":
                    # Give the client time to read what was sent: a TCP reset makes the
                    # receiver's kernel drop data it has not read yet.
                    time.sleep(0.05)
                    self._reset()
                    return
                if reply.then == "stall":
                    srv.stop.wait(reply.stall)
                    self.close_connection = True
                    return
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except OSError:  # the client went away (abort, timeout)
            self.close_connection = True

    def _send_chunks(self, payload: bytes) -> None:
        rng = self.server.rng
        pos = 0
        while pos < len(payload):
            size = rng.randint(1, self.server.max_chunk)
            piece = payload[pos:pos + size]
            pos += size
            self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            self.wfile.flush()
            if self.server.max_delay and rng.random() < 0.25:
                time.sleep(rng.random() * self.server.max_delay)

    def _reset(self) -> None:
        try:
            self.wfile.flush()
        except OSError:
            pass
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.close_connection = True
        self.connection.close()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, seed: int, max_chunk: int, max_delay: float) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.lock = threading.Lock()
        self.script: deque[Reply] = deque()
        self.requests: list[RecordedRequest] = []
        self.connections = 0
        self.stop = threading.Event()
        self.rng = random.Random(seed)
        self.max_chunk = max_chunk
        self.max_delay = max_delay


class ScriptServer:
    """Start with ``with ScriptServer() as server:``; ``server.url`` is its base URL."""

    def __init__(self, seed: int = 0, max_chunk: int = 200, max_delay: float = 0.001) -> None:
        self._srv = _Server(seed, max_chunk, max_delay)
        host, port = self._srv.server_address[:2]
        self.url = f"http://{host}:{port}"
        self._thread = threading.Thread(target=self._srv.serve_forever, kwargs={"poll_interval": 0.01},
                                        daemon=True)

    def __enter__(self) -> ScriptServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._srv.stop.set()
        self._srv.shutdown()
        self._srv.server_close()

    def clear(self) -> ScriptServer:
        """Drop the replies not yet sent and the requests seen (a new script on the same server)."""
        with self._srv.lock:
            self._srv.script.clear()
            self._srv.requests.clear()
        return self

    def add(self, *replies: Reply) -> ScriptServer:
        with self._srv.lock:
            self._srv.script.extend(replies)
        return self

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._srv.lock:
            return list(self._srv.requests)

    @property
    def attempts(self) -> int:
        return len(self.requests)

    @property
    def connections(self) -> int:
        with self._srv.lock:
            return self._srv.connections

    @property
    def unused(self) -> int:
        with self._srv.lock:
            return len(self._srv.script)
