"""A pure, single-threaded world for driving the core in tests.

It answers every effect from scripted data: replies (final assistant messages, streamed as real
stream events), tool functions, hook functions, and the order in which parallel tools finish.
Nothing here is an interpreter of the library: it exists so that core tests depend on the core
alone.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentcore import (
    AbortRequested,
    AfterToolCall,
    AfterToolCallDecided,
    AgentToolResult,
    ArgumentsPrepared,
    AssistantMessage,
    BeforeToolCall,
    BeforeToolCallDecided,
    CallLlm,
    CancelLlm,
    ContextConverted,
    ContextTransformed,
    ConvertToLlm,
    Emit,
    ExecuteTool,
    FollowUpsPolled,
    HookFailed,
    Input,
    LoopState,
    NextTurnPrepared,
    PartialAssistantMessage,
    PollFollowUps,
    PollSteering,
    PrepareArguments,
    PrepareNextTurn,
    RunEnded,
    ShouldStopAfterTurn,
    StartEvent,
    SteeringPolled,
    StopAfterTurnDecided,
    StreamEventReceived,
    StreamFailed,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolFailed,
    ToolFinished,
    ToolUpdated,
    TransformContext,
    step,
    thaw,
)


def stream_events(message: AssistantMessage, chunk: int = 4) -> list[Any]:
    """The stream events a provider would send for ``message`` (text in ``chunk``-sized deltas)."""
    p = PartialAssistantMessage.begin(api=message.api, provider=message.provider, model=message.model,
                                      timestamp=message.timestamp, usage=message.usage)
    events: list[Any] = [StartEvent(p)]

    def push(ev: Any) -> None:
        nonlocal p
        events.append(ev)
        p = ev.partial

    for block in message.content:
        i = len(p.blocks)
        if isinstance(block, TextContent):
            push(p.text_start())
            for k in range(0, len(block.text), chunk or len(block.text) or 1):
                push(p.text_delta(i, block.text[k:k + chunk] if chunk else block.text))
            push(p.text_end(i, block.text_signature))
        elif isinstance(block, ThinkingContent):
            push(p.thinking_start(block.redacted))
            push(p.thinking_delta(i, block.thinking))
            push(p.thinking_end(i, block.thinking_signature))
        else:
            assert isinstance(block, ToolCall)
            import json
            push(p.toolcall_start(block.id, block.name))
            text = json.dumps(thaw(block.arguments))
            for k in range(0, len(text), chunk or len(text) or 1):
                push(p.toolcall_delta(i, text[k:k + chunk] if chunk else text))
            push(p.toolcall_end(i, block.arguments))
    if message.stop_reason in ("error", "aborted"):
        events.append(p.error(message.stop_reason, message.error_message or "", usage=message.usage))
    else:
        events.append(p.done(message.stop_reason, usage=message.usage, error_message=message.error_message))
    return events


def reply(*content: Any, stop: str | None = None, error: str | None = None) -> AssistantMessage:
    blocks = tuple(TextContent(c) if isinstance(c, str) else c for c in content)
    if stop is None:
        stop = "toolUse" if any(isinstance(b, ToolCall) for b in blocks) else "stop"
    return AssistantMessage(blocks, api="test", provider="test", model="m", stop_reason=stop,  # type: ignore[arg-type]
                            error_message=error, timestamp=0)


def call(id: str, name: str, **args: Any) -> ToolCall:
    return ToolCall(id, name, args)


@dataclass
class World:
    """Scripted answers for every effect. ``finish_order`` lists tool call ids in the order
    parallel tools complete (default: source order)."""

    replies: list[Any] = field(default_factory=list)
    tools: dict[str, Callable[[Any], Any]] = field(default_factory=dict)
    hooks: dict[str, Callable[..., Any]] = field(default_factory=dict)
    finish_order: Sequence[str] | None = None
    chunk: int = 4
    abort_when: Callable[[Any], bool] | None = None
    updates: dict[str, list[Any]] = field(default_factory=dict)

    # outputs
    events: list[Any] = field(default_factory=list)
    trace: list[tuple[Input, tuple[Any, ...]]] = field(default_factory=list)
    messages: tuple[Any, ...] | None = None
    executed: list[str] = field(default_factory=list)
    llm_calls: list[CallLlm] = field(default_factory=list)
    clock: int = 0

    def feed(self, state: LoopState, inp: Input) -> tuple[LoopState, tuple[Any, ...]]:
        result = step(state, inp)
        new_state, effects = result.unwrap()
        self.trace.append((inp, effects))
        return new_state, effects

    def tick(self) -> int:
        self.clock += 1
        return self.clock

    def run(self, state: LoopState, first: Input) -> LoopState:
        todo: deque[Any] = deque()
        running: list[ExecuteTool] = []
        aborted = False

        def feed(inp: Input) -> None:
            nonlocal state, aborted
            if self.messages is not None or state.phase.name == "finished":
                return
            state, effects = self.feed(state, inp)
            for eff in effects:
                if isinstance(eff, Emit):
                    self.events.append(eff.event)
                    if not aborted and self.abort_when is not None and self.abort_when(eff.event):
                        aborted = True
                        abort_effects.append(True)
                else:
                    todo.append(eff)

        abort_effects: list[bool] = []

        def check_abort() -> None:
            if abort_effects:
                abort_effects.clear()
                feed(AbortRequested(self.tick()))

        feed(first)
        check_abort()
        while self.messages is None:
            if not todo:
                if not running:
                    raise AssertionError("the core is waiting but nothing is in flight")
                order = list(self.finish_order or [])
                pick = next((r for cid in order for r in running if r.tool_call.id == cid), running[0])
                running.remove(pick)
                self._finish_tool(pick, feed)
                check_abort()
                continue
            eff = todo.popleft()
            if isinstance(eff, RunEnded):
                self.messages = eff.messages
            elif isinstance(eff, CallLlm):
                if getattr(state.phase, "id", None) != eff.id:
                    continue  # the core already left this call behind (abort)
                self.llm_calls.append(eff)
                script = self.replies.pop(0)
                if callable(script):
                    script = script(eff)
                if isinstance(script, Exception):
                    feed(StreamFailed(eff.id, str(script), self.tick()))
                    check_abort()
                    continue
                for ev in stream_events(script, self.chunk):
                    if self.messages is not None or getattr(state.phase, "id", None) != eff.id:
                        break  # the core cut the stream (abort)
                    feed(StreamEventReceived(eff.id, ev, self.tick()))
                    check_abort()
            elif isinstance(eff, CancelLlm):
                pass
            elif isinstance(eff, ExecuteTool):
                running.append(eff)
            else:
                feed(self._answer_hook(eff))
                check_abort()
        return state

    def _finish_tool(self, eff: ExecuteTool, feed: Callable[[Input], None]) -> None:
        name = eff.tool_call.name
        self.executed.append(eff.tool_call.id)
        for partial in self.updates.get(eff.tool_call.id, []):
            feed(ToolUpdated(eff.id, partial, self.tick()))
        try:
            value = self.tools[name](eff.args)
        except Exception as exc:
            feed(ToolFailed(eff.id, str(exc), self.tick()))
            return
        if isinstance(value, str):
            value = AgentToolResult((TextContent(value),))
        feed(ToolFinished(eff.id, value, self.tick()))

    def _answer_hook(self, eff: Any) -> Input:
        table: dict[type, tuple[str, Callable[[Any], Input]]] = {
            PollSteering: ("get_steering_messages", lambda v: SteeringPolled(eff.id, tuple(v or ()), self.tick())),
            PollFollowUps: ("get_follow_up_messages", lambda v: FollowUpsPolled(eff.id, tuple(v or ()), self.tick())),
            TransformContext: ("transform_context", lambda v: ContextTransformed(eff.id, v, self.tick())),
            ConvertToLlm: ("convert_to_llm", lambda v: ContextConverted(eff.id, v, self.tick())),
            PrepareArguments: ("prepare_arguments", lambda v: ArgumentsPrepared(eff.id, v, self.tick())),
            BeforeToolCall: ("before_tool_call", lambda v: BeforeToolCallDecided(eff.id, v, self.tick())),
            AfterToolCall: ("after_tool_call", lambda v: AfterToolCallDecided(eff.id, v, self.tick())),
            PrepareNextTurn: ("prepare_next_turn", lambda v: NextTurnPrepared(eff.id, v, self.tick())),
            ShouldStopAfterTurn: ("should_stop_after_turn",
                                  lambda v: StopAfterTurnDecided(eff.id, bool(v), self.tick())),
        }
        name, wrap = table[type(eff)]
        fn = self.hooks[name]
        arg = {
            TransformContext: lambda: eff.messages,
            ConvertToLlm: lambda: eff.messages,
            PrepareArguments: lambda: eff.tool_call,
            BeforeToolCall: lambda: eff.context,
            AfterToolCall: lambda: eff.context,
            PrepareNextTurn: lambda: eff.context,
            ShouldStopAfterTurn: lambda: eff.context,
        }.get(type(eff), lambda: None)()
        try:
            value = fn() if arg is None and type(eff) in (PollSteering, PollFollowUps) else fn(arg)
        except Exception as exc:
            return HookFailed(eff.id, str(exc), self.tick())
        return wrap(value)
