"""The scenarios on pydantic-ai (``pydantic-ai-slim``).

In-process scenarios use ``FunctionModel`` (an ``async def`` function for the tool loop, an async
generator ``stream_function`` for streaming); replies carry a usage so the test double does not
estimate one from the whole history. HTTP ones use ``OpenAIChatModel`` with an
``OpenAIProvider(base_url=..., api_key="x")``, streamed (``run_stream_events``). Tools are
``async def`` so none of them costs a worker thread.
"""

from __future__ import annotations

import asyncio
import time

from pydantic_ai import Agent, AgentRunResultEvent, Tool
from pydantic_ai.messages import ModelResponse, PartDeltaEvent, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import RequestUsage, UsageLimits

NAME = "pydantic-ai"
NO_LIMITS = UsageLimits(request_limit=None)
INSTRUCTIONS = "You are a benchmark."


async def noop(n: int) -> str:
    """Do nothing."""
    return "ok"


async def sleep(n: int) -> str:
    """Sleep 50 ms."""
    await asyncio.sleep(0.05)
    return "slept"


def _usage() -> RequestUsage:
    return RequestUsage(input_tokens=10, output_tokens=5)


class PydanticAI:
    label = "pydantic-ai"

    def tool_loop(self, turns: int) -> float:
        count = 0

        async def model_fn(messages: list, info: AgentInfo) -> ModelResponse:
            nonlocal count
            i = count
            count += 1
            if i < turns:
                part = ToolCallPart(tool_name="noop", args={"n": i}, tool_call_id=f"call_{i}")
                return ModelResponse(parts=[part], usage=_usage())
            return ModelResponse(parts=[TextPart("done")], usage=_usage())

        agent = Agent(FunctionModel(model_fn), instructions=INSTRUCTIONS, tools=[Tool(noop, takes_ctx=False)])

        async def main() -> float:
            t0 = time.perf_counter()
            result = await agent.run("go", usage_limits=NO_LIMITS)
            dt = time.perf_counter() - t0
            assert result.output == "done", result.output
            assert count == turns + 1, count
            return dt

        return asyncio.run(main())

    def stream(self, deltas: int) -> float:
        async def stream_fn(messages: list, info: AgentInfo):
            for _ in range(deltas):
                yield "x"

        agent = Agent(FunctionModel(stream_function=stream_fn), instructions=INSTRUCTIONS)

        async def main() -> float:
            seen = 0
            t0 = time.perf_counter()
            async with agent.run_stream_events("go", usage_limits=NO_LIMITS) as events:
                async for event in events:
                    if isinstance(event, PartDeltaEvent):
                        seen += 1
            dt = time.perf_counter() - t0
            assert seen >= deltas - 1, seen
            return dt

        return asyncio.run(main())

    def parallel(self, calls: int) -> float:
        count = 0

        async def model_fn(messages: list, info: AgentInfo) -> ModelResponse:
            nonlocal count
            count += 1
            if count == 1:
                parts = [ToolCallPart(tool_name="sleep", args={"n": i}, tool_call_id=f"call_{i}") for i in range(calls)]
                return ModelResponse(parts=parts, usage=_usage())
            return ModelResponse(parts=[TextPart("done")], usage=_usage())

        agent = Agent(FunctionModel(model_fn), instructions=INSTRUCTIONS, tools=[Tool(sleep, takes_ctx=False)])

        async def main() -> float:
            t0 = time.perf_counter()
            result = await agent.run("go", usage_limits=NO_LIMITS)
            dt = time.perf_counter() - t0
            assert result.output == "done" and count == 2
            return dt

        return asyncio.run(main())

    def _http_agent(self, url: str, turns: int) -> Agent:
        from pydantic_ai.models.openai import OpenAIChatModel
        from pydantic_ai.providers.openai import OpenAIProvider

        model = OpenAIChatModel(f"turns-{turns}", provider=OpenAIProvider(base_url=url, api_key="x"))
        return Agent(model, instructions=INSTRUCTIONS, tools=[Tool(noop, takes_ctx=False)])

    async def _conversation(self, agent: Agent, turns: int) -> None:
        output = None
        async with agent.run_stream_events("go", usage_limits=NO_LIMITS) as events:
            async for event in events:
                if isinstance(event, AgentRunResultEvent):
                    output = event.result.output
        assert output == "All tools ran.", output

    def http_conversation(self, url: str, turns: int) -> float:
        async def main() -> float:
            agent = self._http_agent(url, turns)
            t0 = time.perf_counter()
            await self._conversation(agent, turns)
            return time.perf_counter() - t0

        return asyncio.run(main())

    def http_concurrent(self, url: str, conversations: int, turns: int) -> float:
        async def main() -> float:
            agent = self._http_agent(url, turns)
            t0 = time.perf_counter()
            await asyncio.gather(*(self._conversation(agent, turns) for _ in range(conversations)))
            return time.perf_counter() - t0

        return asyncio.run(main())


VARIANTS = {"pydantic-ai": PydanticAI}
