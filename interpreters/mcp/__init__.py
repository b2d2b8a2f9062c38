"""MCP servers as tools (the ``mcp`` SDK, an optional extra: ``pip install 'agentcore-fx[mcp]'``).

- :mod:`~interpreters.mcp.server`: :class:`MCPServer` (``stdio``, ``http``, ``in_process``), its
  tools as ``AgentTool`` s, prompts and resources; :func:`tools_of` for several servers;
- :mod:`~interpreters.mcp.connection`: one session in an event loop of its own, usable from
  threads and from asyncio, cancelled by the run's signal, connected again after a failure;
- :mod:`~interpreters.mcp.results`: what a call's result becomes for the model and in
  ``details``.

Importing this package does not import the SDK; making a server does (and says how to install it
when it is missing). The core never imports either.
"""

from .connection import MCPServerError, ServerIdentity
from .server import MCPServer, refreshing, tools_of

__all__ = ["MCPServer", "MCPServerError", "ServerIdentity", "refreshing", "tools_of"]
