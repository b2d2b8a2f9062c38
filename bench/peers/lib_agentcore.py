"""The scenarios on agentcore-fx: ``interpreters.agent_loop`` (sync) and ``interpreters.aio.agent_loop``.

In-process scenarios use ``interpreters.ScriptedModel``; HTTP ones the default provider stream
function (``stream_fn=None``) with a ``custom_openai_model`` pointed at the loopback server.
Every function returns the wall time in seconds of the part being measured (setup excluded).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from agentcore import AgentContext, AgentLoopConfig, AssistantMessage, Model, TextContent, ToolCall, ToolResultMessage
from interpreters import ScriptedModel, agent_loop, aio, tool
from interpreters.streams.scripted import Reply

NAME = "agentcore-fx"
CONFIG = AgentLoopConfig(model=Model(id="bench"))


@tool
def noop(n: int) -> str:
    """Do nothing."""
    return "ok"


@tool(name="noop")
async def anoop(n: int) -> str:
    """Do nothing."""
    return "ok"


@tool(name="sleep")
def sleep_sync(n: int) -> str:
    """Sleep 50 ms."""
    time.sleep(0.05)
    return "slept"


@tool(name="sleep")
async def sleep_async(n: int) -> str:
    """Sleep 50 ms."""
    await asyncio.sleep(0.05)
    return "slept"


def _tool_script(turns: int) -> list[Any]:
    return [Reply(tool_calls=(("noop", {"n": i}),)) for i in range(turns)] + ["done"]


def _history(n: int) -> list[Any]:
    """``n`` messages of earlier tool turns, for the flatness case (``tool_loop_history``)."""
    out: list[Any] = []
    for i in range(n // 2):
        out.append(AssistantMessage((ToolCall(f"h{i}", "noop", {"n": i}),), stop_reason="toolUse"))
        out.append(ToolResultMessage(f"h{i}", "noop", (TextContent("ok"),)))
    return out


def _http_config(url: str, turns: int) -> AgentLoopConfig:
    from agentcore.providers.catalog import custom_openai_model

    return AgentLoopConfig(model=custom_openai_model(f"turns-{turns}", base_url=url), api_key="x")


def _client_for_this_loop() -> None:
    """Create the event loop's HTTP client (``httpx.AsyncClient``, whose SSL context costs ~17 ms)
    before the clock starts, as the peers' clients are created before theirs."""
    from interpreters.streams.http import default_async_streamer

    default_async_streamer()


class Sync:
    """agentcore-fx, sync interpreter."""

    label = "agentcore-fx sync"

    def tool_loop(self, turns: int, history: int = 0) -> float:
        model = ScriptedModel(_tool_script(turns), chunk_size=0)
        ctx = AgentContext("You are a benchmark.", _history(history), [noop])
        t0 = time.perf_counter()
        msgs = agent_loop("go", ctx, CONFIG, stream_fn=model).result()
        dt = time.perf_counter() - t0
        assert len(msgs) == 2 * turns + 2, len(msgs)
        return dt

    def tool_loop_history(self, turns: int, history: int) -> float:
        return self.tool_loop(turns, history)

    def stream(self, deltas: int) -> float:
        model = ScriptedModel(["x" * deltas], chunk_size=1)
        ctx = AgentContext("You are a benchmark.", [], [])
        seen = 0
        t0 = time.perf_counter()
        for event in agent_loop("go", ctx, CONFIG, stream_fn=model):
            if event.type == "message_update":
                seen += 1
        dt = time.perf_counter() - t0
        assert seen >= deltas, seen
        return dt

    def parallel(self, calls: int) -> float:
        model = ScriptedModel([Reply(tool_calls=tuple(("sleep", {"n": i}) for i in range(calls))), "done"],
                              chunk_size=0)
        ctx = AgentContext("You are a benchmark.", [], [sleep_sync])
        t0 = time.perf_counter()
        msgs = agent_loop("go", ctx, CONFIG, stream_fn=model).result()
        dt = time.perf_counter() - t0
        assert len(msgs) == calls + 3, len(msgs)
        return dt

    def http_conversation(self, url: str, turns: int) -> float:
        ctx = AgentContext("You are a benchmark.", [], [noop])
        config = _http_config(url, turns)
        t0 = time.perf_counter()
        msgs = agent_loop("go", ctx, config).result()
        dt = time.perf_counter() - t0
        assert msgs[-1].text == "All tools ran.", msgs[-1]
        assert len(msgs) == 2 * turns + 2, len(msgs)
        return dt


class Async:
    """agentcore-fx, asyncio interpreter."""

    label = "agentcore-fx aio"

    def tool_loop(self, turns: int, history: int = 0) -> float:
        model = ScriptedModel(_tool_script(turns), chunk_size=0)
        ctx = AgentContext("You are a benchmark.", _history(history), [anoop])

        async def main() -> float:
            t0 = time.perf_counter()
            msgs = await aio.agent_loop("go", ctx, CONFIG, stream_fn=model).result()
            dt = time.perf_counter() - t0
            assert len(msgs) == 2 * turns + 2, len(msgs)
            return dt

        return asyncio.run(main())

    def tool_loop_history(self, turns: int, history: int) -> float:
        return self.tool_loop(turns, history)

    def stream(self, deltas: int) -> float:
        model = ScriptedModel(["x" * deltas], chunk_size=1)
        ctx = AgentContext("You are a benchmark.", [], [])

        async def main() -> float:
            seen = 0
            t0 = time.perf_counter()
            async for event in aio.agent_loop("go", ctx, CONFIG, stream_fn=model):
                if event.type == "message_update":
                    seen += 1
            dt = time.perf_counter() - t0
            assert seen >= deltas, seen
            return dt

        return asyncio.run(main())

    def parallel(self, calls: int) -> float:
        model = ScriptedModel([Reply(tool_calls=tuple(("sleep", {"n": i}) for i in range(calls))), "done"],
                              chunk_size=0)
        ctx = AgentContext("You are a benchmark.", [], [sleep_async])

        async def main() -> float:
            t0 = time.perf_counter()
            msgs = await aio.agent_loop("go", ctx, CONFIG, stream_fn=model).result()
            dt = time.perf_counter() - t0
            assert len(msgs) == calls + 3, len(msgs)
            return dt

        return asyncio.run(main())

    async def _conversation(self, config: AgentLoopConfig, turns: int) -> None:
        ctx = AgentContext("You are a benchmark.", [], [anoop])
        msgs = await aio.agent_loop("go", ctx, config).result()
        assert msgs[-1].text == "All tools ran.", msgs[-1]
        assert len(msgs) == 2 * turns + 2, len(msgs)

    def http_conversation(self, url: str, turns: int) -> float:
        config = _http_config(url, turns)

        async def main() -> float:
            _client_for_this_loop()
            t0 = time.perf_counter()
            await self._conversation(config, turns)
            return time.perf_counter() - t0

        return asyncio.run(main())

    def http_concurrent(self, url: str, conversations: int, turns: int) -> float:
        config = _http_config(url, turns)

        async def main() -> float:
            _client_for_this_loop()
            t0 = time.perf_counter()
            await asyncio.gather(*(self._conversation(config, turns) for _ in range(conversations)))
            return time.perf_counter() - t0

        return asyncio.run(main())


VARIANTS = {"agentcore-sync": Sync, "agentcore-aio": Async}
