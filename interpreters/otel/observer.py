"""``TracingObserver``: the journal that opens and closes a run's spans as the core's steps are
recorded (see :mod:`interpreters.otel` for the table of which step does what)."""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Any
from urllib.parse import urlsplit

from opentelemetry import trace
from opentelemetry.trace import SpanKind, Status, StatusCode, Tracer, TracerProvider

from agentcore import (
    AbortRequested,
    AgentLoopConfig,
    AssistantMessage,
    CallLlm,
    Continued,
    DoneEvent,
    Effect,
    Emit,
    ErrorEvent,
    ExecuteTool,
    HookFailed,
    Input,
    MessageEndEvent,
    Model,
    RunEnded,
    Started,
    StreamEventReceived,
    StreamFailed,
    TextContent,
    ToolExecutionEndEvent,
    ToolFailed,
    ToolFinished,
    TurnEndEvent,
    TurnStartEvent,
    Usage,
    thaw,
)

from ..runtime.journal import Journal
from ..secrets import known_secrets, merge_secrets, scrub
from .attributes import (
    FINISH_REASONS,
    INSTRUMENTATION,
    SCHEMA_URL,
    input_messages,
    json_text,
    message_json,
    output_messages,
    provider_name,
    tool_definitions,
)
from .spans import RunSpans, ToolScope, ToolSpan, library_version

__all__ = ["TracingObserver"]

_log = logging.getLogger("agentcore")


class TracingObserver(Journal):
    """A journal that turns a run into OpenTelemetry spans (GenAI semantic conventions 1.41.0).

    - ``tracer_provider``: where the spans go (default: the global provider, which is a no-op
      until an SDK is configured).
    - ``capture_content``: also record the messages, system instructions, tool definitions, tool
      arguments and results (``gen_ai.input.messages``, ``gen_ai.output.messages``, ...). Off by
      default: prompts and tool data often hold personal data. Known secrets (the config's
      ``api_key``, sensitive header values) and key-shaped strings are redacted from everything
      recorded.
    - ``turn_spans``: one ``turn {n}`` span per turn (the default), parent of that turn's model
      call and tool spans. ``False`` hangs them directly under the run span: a third fewer spans.
    - ``agent_name`` / ``agent_id``: ``gen_ai.agent.name`` / ``gen_ai.agent.id`` on the run span,
      whose name becomes ``invoke_agent {agent_name}``.
    - ``conversation_id``: ``gen_ai.conversation.id`` (default: the config's ``session_id``).
    - ``config``: the run's :class:`AgentLoopConfig`, read for the request parameters
      (``temperature``, ``max_tokens``), the model and the secrets to redact. Nothing else of it
      (headers, keys, hooks) is ever recorded.
    """

    __slots__ = ("_tracer", "capture_content", "turn_spans", "agent_name", "agent_id", "conversation_id",
                 "_temperature", "_max_tokens", "_model", "_secrets", "_run", "_servers")

    def __init__(
        self,
        tracer_provider: TracerProvider | None = None,
        *,
        capture_content: bool = False,
        turn_spans: bool = True,
        agent_name: str | None = None,
        agent_id: str | None = None,
        conversation_id: str | None = None,
        config: AgentLoopConfig | None = None,
    ) -> None:
        self._tracer: Tracer = trace.get_tracer(INSTRUMENTATION, library_version(), tracer_provider,
                                                schema_url=SCHEMA_URL)
        self.capture_content = capture_content
        self.turn_spans = turn_spans
        self.agent_name = agent_name
        self.agent_id = agent_id
        self.conversation_id = conversation_id if conversation_id is not None else (
            config.session_id if config is not None else None)
        self._temperature = config.temperature if config is not None else None
        self._max_tokens = config.max_tokens if config is not None else None
        self._model: Model | None = config.model if config is not None else None
        self._secrets = known_secrets(config, ())
        self._run: RunSpans | None = None
        self._servers: dict[str, tuple[str | None, int | None]] = {}

    def add_secrets(self, values: Sequence[str]) -> None:
        """Redact these too (the interpreter reports each API key a run resolves)."""
        self._secrets = merge_secrets(self._secrets, values)

    # -- the Journal protocol

    def record(self, step: int, input: Input, effects: Sequence[Effect]) -> None:
        kind = type(input)
        if kind is StreamEventReceived:
            event_kind = type(input.event)  # type: ignore[union-attr]
            if event_kind is not DoneEvent and event_kind is not ErrorEvent:
                return  # the hot path: a delta changes no span
        run = self._run
        if kind is Started or kind is Continued:
            now = time.time_ns()
            if run is not None:
                _log.warning("TracingObserver: a run started while another was still open; give "
                             "each concurrent run its own observer. Ending the previous run's spans.")
                self._end_run(run, now, superseded=True)
            run = self._open_run(input, now)
        elif run is None:
            if not any(type(e) in (CallLlm, ExecuteTool) for e in effects):
                return
            now = time.time_ns()
            run = self._open_run(None, now)  # a resumed run: no Started was seen
        if not run.recording:
            # No SDK, or the run was sampled out: nothing to record, only the end to notice.
            for effect in effects:
                if type(effect) is RunEnded:
                    self._run = None
            return
        now = time.time_ns()
        if kind is ToolFinished or kind is ToolFailed:
            tool = run.tools.get(input.id)  # type: ignore[union-attr]
            if tool is not None:
                tool.ended_at = now
                if kind is ToolFailed:
                    tool.exception = self._redact(input.error)  # type: ignore[union-attr]
        elif kind is StreamFailed:
            run.chat_failed = True
        elif kind is AbortRequested:
            run.aborted = True
            run.span.add_event("agentcore.abort_requested", timestamp=now)
        elif kind is HookFailed:
            run.hook_failed = True
        for effect in effects:
            ek = type(effect)
            if ek is Emit:
                event: Any = effect.event  # type: ignore[union-attr]
                et = type(event)
                if et is MessageEndEvent:
                    if isinstance(event.message, AssistantMessage):
                        self._reply_ended(run, event.message, now)
                elif et is ToolExecutionEndEvent:
                    self._tool_ended(run, event, now)
                elif et is TurnStartEvent:
                    self._open_turn(run, now)
                elif et is TurnEndEvent:
                    self._close_turn(run, event, now)
            elif ek is CallLlm:
                self._open_chat(run, effect, now)  # type: ignore[arg-type]
            elif ek is ExecuteTool:
                self._open_tool(run, effect, now)  # type: ignore[arg-type]
            elif ek is RunEnded:
                self._end_run(run, now)

    def tool_scope(self, effect: ExecuteTool) -> AbstractContextManager[Any]:
        """Entered around the tool's execution, in its thread or task: makes its
        ``execute_tool`` span the current span there."""
        run = self._run
        if run is None:
            return nullcontext()
        tool = run.tools.get(effect.id)
        if tool is not None:
            return ToolScope(tool.span, self._redact)
        # A sampled-out run still propagates its (unsampled) context, so the tool's own spans
        # are sampled out with it instead of starting traces of their own. Without an SDK there
        # is no context worth propagating.
        return ToolScope(run.span, self._redact) if run.propagate else nullcontext()

    def close(self) -> None:
        """End every span still open (a run abandoned with ``stream.close()`` never records
        ``RunEnded``). Recording a new run does this for the previous one too."""
        if self._run is not None:
            self._end_run(self._run, time.time_ns(), superseded=True)

    # -- spans

    def _redact(self, text: str) -> str:
        return scrub(text, self._secrets)

    def _json(self, value: Any) -> str:
        return self._redact(json_text(value))

    def _messages_json(self, run: RunSpans, messages: Sequence[Any]) -> str:
        # Only this call's messages are kept for the next call, so a transform_context hook
        # that builds new message objects every turn does not grow the cache.
        previous, current = run.fragments, {}
        parts: list[str] = []
        for message in messages:
            known = previous.get(id(message))
            if known is None or known[0] is not message:
                known = (message, self._json(message_json(message)))
            current[id(message)] = known
            parts.append(known[1])
        run.fragments = current
        return "[" + ",".join(parts) + "]"

    def _open_run(self, input: Input | None, now: int) -> RunSpans:
        attributes: dict[str, Any] = {"gen_ai.operation.name": "invoke_agent"}
        if self.agent_name:
            attributes["gen_ai.agent.name"] = self.agent_name
        if self.agent_id:
            attributes["gen_ai.agent.id"] = self.agent_id
        if self.conversation_id:
            attributes["gen_ai.conversation.id"] = self.conversation_id
        model = self._model
        if model is not None:
            attributes["gen_ai.provider.name"] = provider_name(model.provider)
            attributes["gen_ai.request.model"] = model.id
        if self.capture_content and type(input) is Started:
            attributes["gen_ai.input.messages"] = self._json(input_messages(input.prompts))
        if input is None:
            attributes["agentcore.run.resumed"] = True
        name = f"invoke_agent {self.agent_name}" if self.agent_name else "invoke_agent"
        # Parent: whatever span is current where the run starts (the caller's request span...).
        span = self._tracer.start_span(name, None, SpanKind.INTERNAL, attributes, start_time=now)
        run = RunSpans(span, trace.set_span_in_context(span), span.is_recording(), span.get_span_context().is_valid,
                   model_known=model is not None)
        self._run = run
        return run

    def _open_turn(self, run: RunSpans, now: int) -> None:
        if run.turn is not None:  # never expected: the core pairs turn_start and turn_end
            run.turn.end(now)
        run.turns += 1
        n = run.turns
        if not self.turn_spans:
            run.turn_context = run.context
            return
        turn = self._tracer.start_span(f"turn {n}", run.context, SpanKind.INTERNAL,
                                       {"agentcore.turn.number": n}, start_time=now)
        run.turn = turn
        run.turn_context = trace.set_span_in_context(turn)

    def _close_turn(self, run: RunSpans, event: TurnEndEvent, now: int) -> None:
        turn = run.turn
        if turn is None:
            run.turn_context = None
            return
        message = event.message
        turn.set_attribute("agentcore.turn.tool_results", len(event.tool_results))
        if message.stop_reason == "error" or message.stop_reason == "aborted":
            turn.set_status(Status(StatusCode.ERROR, self._redact(message.error_message or message.stop_reason)))
        turn.end(now)
        run.turn = None
        run.turn_context = None

    def _server(self, base_url: str) -> tuple[str | None, int | None]:
        known = self._servers.get(base_url)
        if known is None:
            host: str | None = None
            port: int | None = None
            try:
                parts = urlsplit(base_url)
                host = parts.hostname
                port = parts.port or {"https": 443, "http": 80}.get(parts.scheme)
            except ValueError:
                pass
            known = self._servers[base_url] = (host, port)
        return known

    def _open_chat(self, run: RunSpans, effect: CallLlm, now: int) -> None:
        if run.turn_context is None:
            self._open_turn(run, now)
        model = effect.model
        provider = provider_name(model.provider)
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": provider,
            "gen_ai.request.model": model.id,
        }
        if self._temperature is not None:
            attributes["gen_ai.request.temperature"] = self._temperature
        if self._max_tokens is not None:
            attributes["gen_ai.request.max_tokens"] = self._max_tokens
        if self.conversation_id:
            attributes["gen_ai.conversation.id"] = self.conversation_id
        if effect.thinking_level != "off":
            attributes["agentcore.request.thinking_level"] = effect.thinking_level
        if model.base_url:
            host, port = self._server(model.base_url)
            if host:
                attributes["server.address"] = host
                if port:
                    attributes["server.port"] = port
        if self.capture_content:
            if effect.system_prompt:
                if run.system_instructions[0] != effect.system_prompt:
                    run.system_instructions = (effect.system_prompt, self._json(
                        [{"type": "text", "content": effect.system_prompt}]))
                attributes["gen_ai.system_instructions"] = run.system_instructions[1]
            attributes["gen_ai.input.messages"] = self._messages_json(run, effect.messages)
            if effect.tools:
                if not run.tool_definitions or run.tool_specs is not effect.tools:
                    run.tool_definitions = self._json(tool_definitions(effect.tools))
                attributes["gen_ai.tool.definitions"] = run.tool_definitions
        if effect.tools is not run.tool_specs:
            run.tool_specs = effect.tools
            run.descriptions = {t.name: t.description for t in effect.tools if t.description}
        if not run.model_known:
            run.model_known = True
            run.span.set_attribute("gen_ai.provider.name", provider)
            run.span.set_attribute("gen_ai.request.model", model.id)
        if self.capture_content and not run.system_known and effect.system_prompt:
            run.system_known = True
            run.span.set_attribute("gen_ai.system_instructions", attributes["gen_ai.system_instructions"])
        if run.chat is not None:  # never expected: one model call at a time
            run.chat.end(now)
        run.chat_failed = False
        run.chat = self._tracer.start_span(f"chat {model.id}", run.turn_context, SpanKind.CLIENT, attributes,
                                           start_time=now)

    def _reply_ended(self, run: RunSpans, message: AssistantMessage, now: int) -> None:
        stop = message.stop_reason
        failed = stop == "error" or stop == "aborted"
        run.last_reply = message
        if failed:
            if stop == "aborted":
                error_type = "aborted"
            elif run.chat is None:
                error_type = "hook_failed" if run.hook_failed else "agent_error"
            else:
                error_type = "stream_failed" if run.chat_failed else "model_error"
            run.error_type = error_type
            run.error_message = self._redact(message.error_message or stop)
        usage = message.usage
        chat = run.chat
        if chat is None:
            return  # a loop hook failed: an error reply without a model call
        run.chat = None
        attributes: dict[str, Any] = {"gen_ai.response.finish_reasons": (FINISH_REASONS.get(stop, stop),)}
        if message.model:
            attributes["gen_ai.response.model"] = message.model
        if message.response_id:
            attributes["gen_ai.response.id"] = message.response_id
        if usage is not None:
            self._usage(run, usage, attributes)
        if self.capture_content:
            attributes["gen_ai.output.messages"] = self._json(output_messages(message))
        chat.set_attributes(attributes)
        if failed:
            chat.set_attribute("error.type", run.error_type or "_OTHER")
            chat.set_status(Status(StatusCode.ERROR, run.error_message))
        chat.end(now)

    @staticmethod
    def _usage(run: RunSpans, usage: Usage, attributes: dict[str, Any]) -> None:
        # agentcore's Usage keeps disjoint buckets (input excludes cached tokens); the
        # conventions' input_tokens counts every input token, cached ones included.
        cache_read, cache_write = usage.cache_read, usage.cache_write
        input_tokens = usage.input + cache_read + cache_write
        attributes["gen_ai.usage.input_tokens"] = input_tokens
        attributes["gen_ai.usage.output_tokens"] = usage.output
        if cache_read:
            attributes["gen_ai.usage.cache_read.input_tokens"] = cache_read
        if cache_write:
            attributes["gen_ai.usage.cache_creation.input_tokens"] = cache_write
        cost = usage.cost.total
        if cost:
            attributes["agentcore.usage.cost_usd"] = cost
        run.input_tokens += input_tokens
        run.output_tokens += usage.output
        run.cache_read += cache_read
        run.cache_write += cache_write
        run.cost += cost

    def _open_tool(self, run: RunSpans, effect: ExecuteTool, now: int) -> None:
        if run.turn_context is None:
            self._open_turn(run, now)
        call = effect.tool_call
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": call.name,
            "gen_ai.tool.call.id": call.id,
            "gen_ai.tool.type": "function",
        }
        description = run.descriptions.get(call.name)
        if description:
            attributes["gen_ai.tool.description"] = description
        if self.capture_content:
            attributes["gen_ai.tool.call.arguments"] = self._json(thaw(effect.args))
        span = self._tracer.start_span(f"execute_tool {call.name}", run.turn_context, SpanKind.INTERNAL,
                                       attributes, start_time=now)
        tool = ToolSpan(span, effect.id, call.name, call.id)
        run.tools[effect.id] = tool
        run.by_call_id[call.id] = tool

    def _tool_ended(self, run: RunSpans, event: ToolExecutionEndEvent, now: int) -> None:
        tool = run.by_call_id.pop(event.tool_call_id, None)
        if tool is None:
            # Never executed (unknown tool, invalid arguments, blocked, aborted, cut off).
            target = run.turn or run.span
            target.add_event("agentcore.tool_call.not_executed", {
                "gen_ai.tool.name": event.tool_name, "gen_ai.tool.call.id": event.tool_call_id,
            }, timestamp=now)
            return
        run.tools.pop(tool.eid, None)
        span = tool.span
        result = event.result
        if self.capture_content:
            text = "".join(b.text for b in result.content if isinstance(b, TextContent))
            span.set_attribute("gen_ai.tool.call.result", self._redact(text))
        if event.is_error:
            if tool.exception is not None:
                span.set_attribute("error.type", "tool_exception")
                span.set_status(Status(StatusCode.ERROR, tool.exception))
            else:
                span.set_attribute("error.type", "tool_error")
                if self.capture_content:
                    text = "".join(b.text for b in result.content if isinstance(b, TextContent))
                    span.set_status(Status(StatusCode.ERROR, self._redact(text)))
                else:
                    span.set_status(Status(StatusCode.ERROR, "the tool returned an error result"))
        span.end(tool.ended_at or now)

    def _end_run(self, run: RunSpans, now: int, superseded: bool = False) -> None:
        for tool in run.tools.values():
            tool.span.set_attribute("error.type", "not_finished")
            tool.span.set_status(Status(StatusCode.ERROR, "the run ended before the tool finished"))
            tool.span.end(tool.ended_at or now)
        run.tools.clear()
        run.by_call_id.clear()
        if run.chat is not None:
            run.chat.set_attribute("error.type", "not_finished")
            run.chat.set_status(Status(StatusCode.ERROR, "the run ended before the reply finished"))
            run.chat.end(now)
            run.chat = None
        if run.turn is not None:
            run.turn.end(now)
            run.turn = None
            run.turn_context = None
        run.fragments.clear()
        span = run.span
        attributes: dict[str, Any] = {
            "gen_ai.usage.input_tokens": run.input_tokens,
            "gen_ai.usage.output_tokens": run.output_tokens,
            "agentcore.run.turns": run.turns,
        }
        if run.cache_read:
            attributes["gen_ai.usage.cache_read.input_tokens"] = run.cache_read
        if run.cache_write:
            attributes["gen_ai.usage.cache_creation.input_tokens"] = run.cache_write
        if run.cost:
            attributes["agentcore.usage.cost_usd"] = run.cost
        if self.capture_content and run.last_reply is not None:
            attributes["gen_ai.output.messages"] = self._json(output_messages(run.last_reply))
        span.set_attributes(attributes)
        if superseded:
            span.set_attribute("error.type", "not_finished")
            span.set_status(Status(StatusCode.ERROR, "the run was not seen to end"))
        elif run.error_type is not None:
            span.set_attribute("error.type", run.error_type)
            span.set_status(Status(StatusCode.ERROR, run.error_message))
        elif run.aborted:
            span.set_attribute("error.type", "aborted")
            span.set_status(Status(StatusCode.ERROR, "Operation aborted"))
        span.end(now)
        if self._run is run:
            self._run = None
