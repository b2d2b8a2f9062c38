"""The scenarios on openai-agents (the OpenAI Agents SDK).

In-process scenarios use a small custom ``agents.Model`` returning scripted responses
(``get_response`` for the tool loop, ``stream_response`` yielding Responses-API stream events for
streaming; events are built with ``model_construct``, as the OpenAI SDK builds parsed SSE events
without validation). HTTP ones use ``OpenAIChatCompletionsModel`` with an
``AsyncOpenAI(base_url=..., api_key="x")``, streamed (``Runner.run_streamed``). Tracing is
disabled. Tools are ``async def``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

from agents import Agent, Model, ModelResponse, RunConfig, Runner, function_tool, set_tracing_disabled
from agents.usage import Usage
from openai.types.responses import (
    Response,
    ResponseCompletedEvent,
    ResponseFunctionToolCall,
    ResponseOutputItemDoneEvent,
    ResponseOutputMessage,
    ResponseOutputText,
    ResponseTextDeltaEvent,
)

NAME = "openai-agents"
INSTRUCTIONS = "You are a benchmark."
set_tracing_disabled(True)
RUN_CONFIG = RunConfig(tracing_disabled=True)


@function_tool
async def noop(n: int) -> str:
    """Do nothing."""
    return "ok"


@function_tool
async def sleep(n: int) -> str:
    """Sleep 50 ms."""
    await asyncio.sleep(0.05)
    return "slept"


def _usage() -> Usage:
    return Usage(requests=1, input_tokens=10, output_tokens=5, total_tokens=15)


def _message(text: str) -> ResponseOutputMessage:
    return ResponseOutputMessage(id="msg_1", type="message", role="assistant", status="completed",
                                 content=[ResponseOutputText(text=text, type="output_text", annotations=[],
                                                             logprobs=[])])


def _call(i: int, name: str) -> ResponseFunctionToolCall:
    return ResponseFunctionToolCall(id=f"fc_{i}", call_id=f"call_{i}", type="function_call", name=name,
                                    arguments=f'{{"n": {i}}}')


class ScriptedAgentsModel(Model):
    """Replies ``replies[i]`` (a list of output items) to the i-th call; streams ``deltas`` text."""

    def __init__(self, replies: list[list[Any]] | None = None, deltas: int = 0) -> None:
        self.replies = replies or []
        self.deltas = deltas
        self.calls = 0

    async def get_response(self, system_instructions, input, model_settings, tools, output_schema, handoffs,
                           tracing, *, previous_response_id=None, conversation_id=None, prompt=None,
                           **kwargs: Any) -> ModelResponse:
        output = self.replies[self.calls]
        self.calls += 1
        return ModelResponse(output=output, usage=_usage(), response_id=None)

    async def stream_response(self, system_instructions, input, model_settings, tools, output_schema, handoffs,
                              tracing, *, previous_response_id=None, conversation_id=None, prompt=None,
                              **kwargs: Any) -> AsyncIterator[Any]:
        self.calls += 1
        for i in range(self.deltas):
            yield ResponseTextDeltaEvent.model_construct(
                type="response.output_text.delta", item_id="msg_1", output_index=0, content_index=0,
                delta="x", logprobs=[], sequence_number=i + 1)
        message = _message("x" * self.deltas)
        yield ResponseOutputItemDoneEvent.model_construct(
            type="response.output_item.done", item=message, output_index=0, sequence_number=self.deltas + 1)
        response = Response(id="resp_1", created_at=0, model="scripted", object="response", output=[message],
                            tool_choice="none", tools=[], top_p=None, parallel_tool_calls=False, status="completed")
        yield ResponseCompletedEvent.model_construct(type="response.completed", response=response,
                                                     sequence_number=self.deltas + 2)


class OpenAIAgents:
    label = "openai-agents"

    def tool_loop(self, turns: int) -> float:
        replies = [[_call(i, "noop")] for i in range(turns)] + [[_message("done")]]
        model = ScriptedAgentsModel(replies)
        agent = Agent(name="bench", instructions=INSTRUCTIONS, tools=[noop], model=model)

        async def main() -> float:
            t0 = time.perf_counter()
            result = await Runner.run(agent, "go", max_turns=turns + 5, run_config=RUN_CONFIG)
            dt = time.perf_counter() - t0
            assert result.final_output == "done", result.final_output
            assert model.calls == turns + 1
            return dt

        return asyncio.run(main())

    def stream(self, deltas: int) -> float:
        model = ScriptedAgentsModel(deltas=deltas)
        agent = Agent(name="bench", instructions=INSTRUCTIONS, model=model)

        async def main() -> float:
            seen = 0
            t0 = time.perf_counter()
            result = Runner.run_streamed(agent, "go", run_config=RUN_CONFIG)
            async for event in result.stream_events():
                if event.type == "raw_response_event" and event.data.type == "response.output_text.delta":
                    seen += 1
            dt = time.perf_counter() - t0
            assert seen == deltas, seen
            assert result.final_output == "x" * deltas
            return dt

        return asyncio.run(main())

    def parallel(self, calls: int) -> float:
        replies = [[_call(i, "sleep") for i in range(calls)], [_message("done")]]
        model = ScriptedAgentsModel(replies)
        agent = Agent(name="bench", instructions=INSTRUCTIONS, tools=[sleep], model=model)

        async def main() -> float:
            t0 = time.perf_counter()
            result = await Runner.run(agent, "go", run_config=RUN_CONFIG)
            dt = time.perf_counter() - t0
            assert result.final_output == "done" and model.calls == 2
            return dt

        return asyncio.run(main())

    def _http_agent(self, url: str, turns: int) -> Agent:
        from agents import OpenAIChatCompletionsModel
        from openai import AsyncOpenAI

        model = OpenAIChatCompletionsModel(model=f"turns-{turns}", openai_client=AsyncOpenAI(base_url=url, api_key="x"))
        return Agent(name="bench", instructions=INSTRUCTIONS, tools=[noop], model=model)

    async def _conversation(self, agent: Agent, turns: int) -> None:
        result = Runner.run_streamed(agent, "go", max_turns=turns + 5, run_config=RUN_CONFIG)
        async for _ in result.stream_events():
            pass
        assert result.final_output == "All tools ran.", result.final_output

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


VARIANTS = {"openai-agents": OpenAIAgents}
