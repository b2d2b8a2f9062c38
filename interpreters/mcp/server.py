"""``MCPServer``: an MCP server whose tools an agent calls, under either interpreter.

>>> from interpreters.mcp import MCPServer
>>> server = MCPServer.stdio("python", ["-m", "my_server"])        # doctest: +SKIP
>>> with server:                                                   # doctest: +SKIP
...     messages = run_agent_loop("...", AgentContext("", [], server.tools()), config, emit=print)
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from agentcore import AgentTool, AgentToolResult, Model, TextContent, replace

from .asks import Asks
from .connection import Connection, ServerIdentity, require_sdk
from .results import progress_result, tool_result

__all__ = ["MCPCall", "MCPServer", "refreshing", "tools_of"]


class MCPServer:
    """One MCP server: started (stdio) or reached (HTTP) when entered, closed when left; its
    tools as ``AgentTool`` s (:meth:`tools`). Use it as a context manager, ``with`` or
    ``async with``. Make one with :meth:`stdio`, :meth:`http` or :meth:`in_process`.

    ``timeout`` is the time limit of one request in seconds (a call's own limit is the run's
    tool time limit, when shorter). A request that fails because the server crashed, hung, closed
    its stream or answered garbage becomes an error result naming the server, and the next call
    connects again (a stdio server is started again).
    """

    def __init__(self, connection: Connection, name: str, asks: Asks) -> None:
        self.name = name
        self._connection = connection
        self._asks = asks
        self._tools: list[Any] | None = None

    # -- making one ----------------------------------------------------------------------------

    @classmethod
    def stdio(cls, command: str, args: Sequence[str] = (), env: Mapping[str, str] | None = None,
              cwd: str | os.PathLike[str] | None = None, *, name: str | None = None,
              timeout: float | None = 30.0, sampling: Callable[..., Any] | None = None,
              sampling_model: Model | None = None, elicitation: Callable[..., Any] | None = None,
              protocol: str = "legacy") -> MCPServer:
        """A server run as a subprocess speaking MCP on its stdin and stdout. ``sampling`` (a
        stream function, with ``sampling_model``) answers the server's sampling requests;
        ``elicitation`` (``(message, schema) -> dict | None``) its elicitations; ``protocol``
        is ``legacy`` (the handshake era, every server: the default) or ``auto`` (the newest the
        server speaks; see :data:`~interpreters.mcp.asks.PROTOCOLS`)."""
        mcp = require_sdk()
        if not isinstance(command, str) or not command:
            raise ValueError(f"MCPServer.stdio needs a command (a non-empty string), not {command!r}")
        params = mcp.StdioServerParameters(command=command, args=list(args), env=dict(env) if env else None,
                                           cwd=os.fspath(cwd) if cwd is not None else None)
        label = name or " ".join([command, *args])
        asks = Asks(label, sampling, sampling_model, elicitation, protocol)
        return cls(Connection(lambda: mcp.Client(params, **asks.client_options()), label, "stdio", timeout), label,
                   asks)

    @classmethod
    def http(cls, url: str, headers: Mapping[str, str] | None = None, *, name: str | None = None,
             timeout: float | None = 30.0, sampling: Callable[..., Any] | None = None,
             sampling_model: Model | None = None, elicitation: Callable[..., Any] | None = None,
             protocol: str = "legacy") -> MCPServer:
        """A server reached over Streamable HTTP at ``url`` (``http://host:port/mcp``); ``headers``
        go with every request. The other options are :meth:`stdio`'s."""
        mcp = require_sdk()
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise ValueError(f"MCPServer.http needs an http:// or https:// URL, not {url!r}")
        asks = Asks(name or url, sampling, sampling_model, elicitation, protocol)

        def open_client() -> Any:
            if not headers:
                return mcp.Client(url, **asks.client_options())
            import httpx2
            from mcp.client.streamable_http import streamable_http_client

            http = httpx2.AsyncClient(headers=dict(headers), timeout=httpx2.Timeout(30, read=300),
                                      follow_redirects=True)
            return mcp.Client(streamable_http_client(url, http_client=http), **asks.client_options())

        return cls(Connection(open_client, name or url, "http", timeout), name or url, asks)

    @classmethod
    def in_process(cls, server: Any, *, name: str | None = None, timeout: float | None = 30.0,
                   sampling: Callable[..., Any] | None = None, sampling_model: Model | None = None,
                   elicitation: Callable[..., Any] | None = None, protocol: str = "legacy") -> MCPServer:
        """A server object of the ``mcp`` SDK (``mcp.server.mcpserver.MCPServer`` or a low-level
        ``Server``) in this process: no subprocess, for tests. The options are :meth:`stdio`'s."""
        mcp = require_sdk()
        label = name or str(getattr(server, "name", None) or type(server).__name__)
        asks = Asks(label, sampling, sampling_model, elicitation, protocol)
        return cls(Connection(lambda: mcp.Client(server, **asks.client_options()), label, "in_process", timeout),
                   label, asks)

    # -- the context manager -------------------------------------------------------------------

    def __enter__(self) -> MCPServer:
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> MCPServer:
        import asyncio

        await asyncio.to_thread(self.open)
        return self

    async def __aexit__(self, *exc: object) -> None:
        import asyncio

        await asyncio.to_thread(self.close)

    def open(self) -> None:
        """Connect and read the tool list (done by entering the context manager)."""
        self._connection.open()
        self._tools = self._list_tools()

    def close(self) -> None:
        """Disconnect (a stdio server is stopped and reaped)."""
        self._connection.close()

    @property
    def identity(self) -> ServerIdentity | None:
        """Who answered at the last connection (``None`` before the first)."""
        return self._connection.identity

    # -- tools ---------------------------------------------------------------------------------

    def _list_tools(self) -> list[Any]:
        async def listing(client: Any) -> list[Any]:
            tools: list[Any] = []
            cursor = None
            while True:
                page = await client.list_tools(cursor=cursor)
                tools.extend(page.tools)
                cursor = page.next_cursor
                if cursor is None:
                    return tools

        return self._connection.request(listing)

    @property
    def tools_changed(self) -> bool:
        """Whether the server said its tool list changed since it was read (:meth:`refresh`)."""
        return self._asks.tools_changed.is_set()

    def refresh(self) -> bool:
        """Read the tool list again if the server said it changed; whether it did."""
        if not self._asks.tools_changed.is_set():
            return False
        self._asks.tools_changed.clear()
        self._tools = self._list_tools()
        return True

    def tool_specs(self) -> list[dict[str, Any]]:
        """The server's tools as it listed them (name, description, input schema)."""
        if self._tools is None:
            raise RuntimeError(f"MCP server {self.name} is not open: use it in a with block first")
        return [{"name": t.name, "description": t.description or "", "parameters": t.input_schema}
                for t in self._tools]

    def tools(self, prefix: str | None = None) -> list[AgentTool]:
        """The server's tools as ``AgentTool`` s, named ``prefix + name`` when a prefix is given.
        They work under both interpreters, with ``Agent``, the command line and Ray workers."""
        return [self._tool(spec, prefix or "") for spec in self.tool_specs()]

    def _tool(self, spec: dict[str, Any], prefix: str) -> AgentTool:
        identity = self.identity
        origin = {"mcp_server": self.name, "tool": spec["name"],
                  **({} if identity is None else identity.as_json())}
        return AgentTool(name=prefix + spec["name"], label=prefix + spec["name"], description=spec["description"],
                         parameters=spec["parameters"] or {"type": "object"},
                         execute=MCPCall(self._connection, spec["name"], origin, self._asks))

    # -- prompts and resources -----------------------------------------------------------------

    def prompts(self) -> list[dict[str, Any]]:
        """The server's prompts: name, description and arguments."""
        async def listing(client: Any) -> Any:
            return (await client.list_prompts()).prompts

        return [p.model_dump(mode="json", exclude_none=True) for p in self._connection.request(listing)]

    def get_prompt(self, name: str, arguments: Mapping[str, str] | None = None) -> list[Any]:
        """Prompt ``name`` filled in with ``arguments``, as agent messages (user and assistant)."""
        from agentcore import AssistantMessage, UserMessage

        async def get(client: Any) -> Any:
            return await client.get_prompt(name, dict(arguments or {}))

        out: list[Any] = []
        for message in self._connection.request(get).messages:
            block = message.content
            text = block.text if getattr(block, "type", "") == "text" else f"[{getattr(block, 'type', 'content')}]"
            out.append(UserMessage(text) if message.role == "user" else AssistantMessage((TextContent(text),)))
        return out

    def resources(self) -> list[dict[str, Any]]:
        """The server's resources: URI, name, description, MIME type."""
        async def listing(client: Any) -> Any:
            return (await client.list_resources()).resources

        return [r.model_dump(mode="json", exclude_none=True) for r in self._connection.request(listing)]

    def read_resource(self, uri: str) -> list[dict[str, Any]]:
        """The contents of resource ``uri``: each with its URI, MIME type and ``text`` or base64
        ``blob``."""
        async def read(client: Any) -> Any:
            return (await client.read_resource(uri)).contents

        return [c.model_dump(mode="json", exclude_none=True) for c in self._connection.request(read)]

    def __repr__(self) -> str:
        return f"MCPServer({self.name!r}, {self._connection.transport})"


class MCPCall:
    """The ``execute`` of an MCP tool: one ``tools/call`` of tool ``remote`` on the connection,
    cancelled by the run's signal, its progress given to ``on_update``. ``origin`` (JSON) says
    which server it calls; a transcript recorder writes it in the header (``tool_origins``)."""

    def __init__(self, connection: Connection, remote: str, origin: Mapping[str, Any], asks: Asks) -> None:
        self.connection, self.remote, self.origin, self.asks = connection, remote, dict(origin), asks

    def __call__(self, tool_call_id: str, args: Any, signal: Any = None, on_update: Any = None) -> AgentToolResult:
        arguments, remote = _plain(args), self.remote
        sampled = len(self.asks.sampled)

        async def call(client: Any) -> Any:
            async def progress(done: float, total: float | None, message: str | None) -> None:
                if on_update is not None:
                    on_update(progress_result(done, total, message))

            return await client.call_tool(remote, arguments, progress_callback=progress)

        result = tool_result(self.connection.request(call, signal))
        exchanges = self.asks.sampled[sampled:]
        if exchanges:  # what the server asked the client's model during the call, for the transcript
            result = replace(result, details={**(result.details or {}), "sampling": exchanges})
        return result


def refreshing(*servers: MCPServer, prefixes: Mapping[str, str] | None = None,
               then: Callable[[Any], Any] | None = None) -> Callable[[Any], Any]:
    """A ``prepare_next_turn`` hook that gives the next turn the servers' tools as they are now,
    when one of them said its tool list changed (``notifications/tools/list_changed``): their
    tools in the run's context are replaced, the others kept. ``then`` is your own
    ``prepare_next_turn``, called first."""
    from agentcore import NextTurn

    def prepare_next_turn(turn: Any) -> Any:
        nxt = then(turn) if then is not None else None
        if not any([server.refresh() for server in servers]):
            return nxt
        context = nxt.context if nxt is not None and nxt.context is not None else turn.context
        ours = {id(server._connection) for server in servers}
        kept = [t for t in context.tools
                if not (isinstance(t.execute, MCPCall) and id(t.execute.connection) in ours)]
        fresh = replace(context, tools=[*kept, *tools_of(*servers, prefixes=prefixes)])
        return replace(nxt, context=fresh) if nxt is not None else NextTurn(context=fresh)

    return prepare_next_turn


def tools_of(*servers: MCPServer, prefixes: Mapping[str, str] | None = None) -> list[AgentTool]:
    """The tools of several servers together; a name two servers share is refused, naming both,
    unless ``prefixes`` (server name → prefix) tells them apart."""
    tools: list[AgentTool] = []
    owner: dict[str, str] = {}
    for server in servers:
        for tool in server.tools((prefixes or {}).get(server.name)):
            if tool.name in owner:
                raise ValueError(f"the MCP servers {owner[tool.name]} and {server.name} both have a tool named "
                                 f"{tool.name!r}: give one of them a prefix (prefixes={{{server.name!r}: 'x_'}})")
            owner[tool.name] = server.name
            tools.append(tool)
    return tools


def _plain(value: Any) -> Any:
    """Validated arguments (frozen) as plain JSON for the SDK."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value

