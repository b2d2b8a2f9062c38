"""An MCP server written with the SDK, for the tests: every kind of result, progress, and the
faults a real server shows only by accident. Run as ``python -m tests.support.mcp_probe`` (stdio).

``PROBE`` is the server object, for ``MCPServer.in_process``.
"""

from __future__ import annotations

import base64
import os
import sys
import time
import warnings

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.types import (
    AudioContent,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
)
from pydantic import BaseModel

PROBE = MCPServer("probe", version="1.2.3")
UNLOCKED: list[bool] = []
PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n-not-really").decode()


@PROBE.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@PROBE.tool()
def blocks() -> list[TextContent | ImageContent | AudioContent | ResourceLink | EmbeddedResource]:
    """One block of each kind."""
    return [TextContent(type="text", text="hello"),
            ImageContent(type="image", data=PNG, mime_type="image/png"),
            AudioContent(type="audio", data=base64.b64encode(b"RIFF1234").decode(), mime_type="audio/wav"),
            ResourceLink(type="resource_link", uri="file:///notes.txt", name="notes"),
            EmbeddedResource(type="resource", resource=TextResourceContents(uri="file:///a.txt", text="alpha",
                                                                            mime_type="text/plain"))]


@PROBE.tool()
def fail() -> str:
    """Always fails."""
    raise ValueError("it cannot be done")


@PROBE.tool()
async def slow(steps: int, ctx: Context, delay: float = 0.02) -> str:
    """Report progress, then answer."""
    for i in range(steps):
        await ctx.report_progress(i + 1, total=steps, message=f"step {i + 1}")
        await anyio.sleep(delay)
    return f"done after {steps}"


@PROBE.tool()
async def sleep(seconds: float) -> str:
    """Sleep (a hang, when long)."""
    await anyio.sleep(seconds)
    return "awake"


@PROBE.tool()
def crash() -> str:
    """The process exits in the middle of the call."""
    os._exit(3)


@PROBE.tool()
def garbage() -> str:
    """Writes something that is not JSON-RPC on stdout, then exits."""
    sys.stdout.write("this is not json\n")
    sys.stdout.flush()
    time.sleep(0.1)
    os._exit(4)


@PROBE.tool()
def pid() -> int:
    """The server's process id."""
    return os.getpid()


@PROBE.tool()
async def summarize(text: str, ctx: Context) -> str:
    """Ask the client's model for a one-line summary (sampling)."""
    from mcp.types import SamplingMessage

    warnings.simplefilter("ignore")  # the SDK deprecates sampling for the stateless protocol
    reply = await ctx.session.create_message(
        messages=[SamplingMessage(role="user", content=TextContent(type="text", text=f"Summarize: {text}"))],
        max_tokens=50, system_prompt="One line.")
    return f"summary: {reply.content.text} (by {reply.model})"


class Colour(BaseModel):
    colour: str


@PROBE.tool()
async def pick_colour(ctx: Context) -> str:
    """Ask the user for a colour (elicitation)."""
    answer = await ctx.elicit("Which colour?", schema=Colour)
    return f"{answer.action}: {answer.data.colour}" if answer.action == "accept" else answer.action


@PROBE.tool()
async def unlock(ctx: Context) -> str:
    """Add the tool 'secret' and tell the client its tool list changed."""
    if not UNLOCKED:
        UNLOCKED.append(True)
        PROBE.add_tool(secret)
    await ctx.session.send_tool_list_changed()
    return "unlocked"


def secret() -> str:
    """The secret, once unlocked."""
    return "42"


@PROBE.prompt()
def greet(name: str) -> str:
    """Greet someone."""
    return f"Say hello to {name}."


@PROBE.resource("probe://motto")
def motto() -> str:
    """The probe's motto."""
    return "Nothing is hidden."


if __name__ == "__main__":
    if "--fail-at-start" in sys.argv:
        sys.exit("the probe was told not to start")
    PROBE.run()
