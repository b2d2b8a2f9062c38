"""One connection to an MCP server, usable from any thread and from asyncio code.

The ``mcp`` SDK is asynchronous (anyio) and its client is bound to the event loop that opened it.
A :class:`Connection` therefore owns an event loop of its own, in a daemon thread (an anyio
blocking portal), and every request to the server runs there:

- :meth:`Connection.request` blocks the calling thread until the answer: a tool's thread under
  either interpreter (the asyncio interpreter runs a sync tool in a worker thread), a CLI.

A request is cancelled when the run's signal fires (the SDK then sends the protocol's
``notifications/cancelled``) and has a time limit. A request that fails because the connection
failed (the process exited, the stream closed, the server answered garbage, the handshake did not
complete) marks the connection broken: it is closed, the subprocess reaped, and the next request
connects again (a stdio server is started again).
"""

from __future__ import annotations

import concurrent.futures
import threading
from collections.abc import Awaitable, Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

__all__ = ["Connection", "MCPServerError", "ServerIdentity", "require_sdk"]

T = TypeVar("T")

SDK_MISSING = ("interpreters.mcp needs the MCP SDK (the package 'mcp', version 2): install it with "
               "pip install 'agentcore-fx[mcp]'")


def require_sdk() -> Any:
    """The ``mcp`` module, or an ``ImportError`` that says how to install it."""
    try:
        import mcp
    except ImportError as exc:
        raise ImportError(SDK_MISSING) from exc
    return mcp


class MCPServerError(RuntimeError):
    """A request to an MCP server failed: the message names the server and what happened."""


@dataclass(frozen=True)
class ServerIdentity:
    """Who answered: the server's name and version as it announced them, the protocol version
    agreed on, and the transport (``stdio``, ``http`` or ``in_process``)."""

    name: str
    version: str
    protocol_version: str
    transport: str

    def as_json(self) -> dict[str, str]:
        return {"name": self.name, "version": self.version, "protocol_version": self.protocol_version,
                "transport": self.transport}


class Connection:
    """A client session to one server, opened on demand, in an event loop of its own.

    ``open_client`` builds the SDK's ``Client`` (an async context manager); ``label`` names the
    server in every error; ``timeout`` is the time limit of a request in seconds (``None``: none).
    """

    def __init__(self, open_client: Callable[[], Any], label: str, transport: str,
                 timeout: float | None = 30.0) -> None:
        self.open_client = open_client
        self.label = label
        self.transport = transport
        self.timeout = timeout
        self.identity: ServerIdentity | None = None
        self._lock = threading.RLock()
        self._portal_cm: AbstractContextManager[Any] | None = None
        self._portal: Any = None
        self._client_cm: AbstractContextManager[Any] | None = None
        self._client: Any = None
        self.connects = 0
        """How many times it connected (a broken connection connects again on the next request)."""

    # -- opening and closing -------------------------------------------------------------------

    def open(self) -> None:
        """Connect (start the server, shake hands) unless connected."""
        with self._lock:
            if self._client is not None:
                return
            if self._portal is None:
                self._portal_cm = _daemon_portal()
                self._portal = self._portal_cm.__enter__()
            cm = self._portal.wrap_async_context_manager(self.open_client())
            try:
                client = cm.__enter__()
            except BaseException as exc:
                self.close()
                verb = "reached" if self.transport == "http" else "started"
                raise MCPServerError(f"MCP server {self.label} could not be {verb}: {describe(exc)}") from None
            self._client_cm, self._client = cm, client
            self.connects += 1
            info = client.server_info
            name, version = (str(getattr(info, key, "") or "") for key in ("name", "version"))
            self.identity = ServerIdentity(name, version, str(client.protocol_version or ""), self.transport)

    def drop(self) -> None:
        """Close the session (the subprocess is reaped); the next request connects again."""
        with self._lock:
            cm, self._client_cm, self._client = self._client_cm, None, None
            if cm is not None:
                try:
                    cm.__exit__(None, None, None)
                except BaseException:  # a broken session may fail to close: it is gone either way
                    pass

    def close(self) -> None:
        """Close the session and stop the event loop's thread."""
        with self._lock:
            self.drop()
            portal_cm, self._portal_cm, self._portal = self._portal_cm, None, None
            if portal_cm is not None:
                portal_cm.__exit__(None, None, None)

    @property
    def connected(self) -> bool:
        return self._client is not None

    # -- requests ------------------------------------------------------------------------------

    def _start(self, request: Callable[[Any], Awaitable[T]]) -> concurrent.futures.Future[T]:
        with self._lock:
            self.open()
            client, portal = self._client, self._portal

        async def run() -> T:
            if self.timeout is None:
                return await request(client)
            import anyio

            with anyio.fail_after(self.timeout):
                return await request(client)

        future: concurrent.futures.Future[T] = portal.start_task_soon(run)
        return future

    def request(self, request: Callable[[Any], Awaitable[T]], signal: Any = None) -> T:
        """Run ``request(client)`` on the connection's loop and wait for it in this thread.
        The run's ``signal`` cancels it."""
        future = self._start(request)
        unlink = signal.add_callback(future.cancel) if signal is not None else None
        try:
            return future.result()
        except concurrent.futures.CancelledError:
            raise MCPServerError(f"MCP server {self.label}: the request was cancelled (the run was aborted)") from None
        except BaseException as exc:
            raise self.failed(exc) from None
        finally:
            if unlink is not None:
                unlink()

    def failed(self, exc: BaseException) -> BaseException:
        """What a failed request raises; a failure of the connection itself drops it."""
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            return exc
        if isinstance(exc, TimeoutError):
            self.drop()  # a server that does not answer in time is restarted before the next call
            return MCPServerError(f"MCP server {self.label} did not answer within {self.timeout:g} s")
        code = getattr(exc, "code", None)
        if code is not None and not broken_connection(exc):
            return MCPServerError(f"MCP server {self.label} refused the request: {describe(exc)}")
        self.drop()
        return MCPServerError(f"MCP server {self.label} failed: {describe(exc)}; it is restarted for the next call")


@contextmanager
def _daemon_portal() -> Iterator[Any]:
    """An anyio blocking portal whose event loop runs in a daemon thread: a connection left open
    never keeps the process from exiting (a stdio server then sees its input close, and exits)."""
    import anyio
    from anyio.from_thread import BlockingPortal

    ready: concurrent.futures.Future[Any] = concurrent.futures.Future()

    async def main() -> None:
        async with BlockingPortal() as portal:
            ready.set_result(portal)
            await portal.sleep_until_stopped()

    def run() -> None:
        try:
            anyio.run(main)
        except BaseException as exc:  # the loop could not start: say so to the caller
            if not ready.done():
                ready.set_exception(exc)

    thread = threading.Thread(target=run, name="mcp-connection", daemon=True)
    thread.start()
    portal = ready.result()
    try:
        yield portal
    finally:
        portal.call(portal.stop)
        thread.join(timeout=10)


def broken_connection(exc: BaseException) -> bool:
    """Whether ``exc`` says the connection itself is gone (not a refused request)."""
    code = getattr(exc, "code", None)
    return code in (-32000, -32001) or not isinstance(code, int)


def describe(exc: BaseException) -> str:
    """An exception as one line: its message, or its type when it has none (the innermost of an
    exception group)."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    text = str(getattr(exc, "message", "") or exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__
