"""What a server asks of the client, and tells it: a model's answer (``sampling``), the user's
(``elicitation``), and that its tool list changed (``notifications/tools/list_changed``: see
:attr:`Asks.tools_changed`).

- ``sampling=`` a stream function (the same kind a run takes: the HTTP providers, a cassette, a
  ``ScriptedModel``) answers ``sampling/createMessage``: the server's messages and system prompt
  become an ``LlmContext``, its ``maxTokens`` and ``temperature`` the options, and the reply's
  text the answer. Each exchange is kept (:attr:`Asks.sampled`) so that the tool's result can
  carry it into the transcript (``details["sampling"]``).
- ``elicitation=`` a function ``(message, schema) -> dict | None`` (sync or async) answers an
  elicitation: the content to accept, or ``None`` to decline. Without one, every elicitation is
  declined.
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable
from typing import Any

from agentcore import (
    AssistantMessage,
    DoneEvent,
    ErrorEvent,
    LlmContext,
    Model,
    StreamOptions,
    TextContent,
    UserMessage,
)

__all__ = ["Asks"]

PROTOCOLS = ("legacy", "auto")
"""``legacy``: the handshake-era protocol (every server; sampling, elicitation and list changes
work); ``auto``: the newest revision the server speaks."""

_STOP_REASONS = {"stop": "endTurn", "length": "maxTokens", "toolUse": "toolUse"}


class Asks:
    """The client's answers to what one server asks."""

    def __init__(self, label: str, sampling: Callable[..., Any] | None, model: Model | None,
                 elicitation: Callable[..., Any] | None, protocol: str = "legacy") -> None:
        if protocol not in PROTOCOLS:
            raise ValueError(f"protocol must be one of {', '.join(map(repr, PROTOCOLS))}, not {protocol!r}")
        self.protocol = protocol
        if sampling is not None and not callable(sampling):
            raise TypeError(f"sampling must be a stream function, not {type(sampling).__name__}")
        if elicitation is not None and not callable(elicitation):
            raise TypeError(f"elicitation must be a function (message, schema) -> dict | None, "
                            f"not {type(elicitation).__name__}")
        self.label = label
        self.sampling, self.elicitation = sampling, elicitation
        self.model = model if model is not None else Model(id="mcp-sampling")
        self.sampled: list[dict[str, Any]] = []
        """Every sampling exchange so far: the request's messages and system prompt, the reply."""
        self.tools_changed = threading.Event()
        """Set when the server says its tool list changed; cleared when the list is read again."""

    def client_options(self) -> dict[str, Any]:
        """The SDK ``Client`` options that install these answers, and the protocol: by default
        the handshake-era one (``legacy``: ``2025-11-25``), which every server speaks and in which
        a server may ask the client during a call and announce that its tool list changed;
        ``auto`` takes the newest the server speaks (the stateless ``2026-07-28`` revision has no
        such back channel: a server there cannot ask, and is declined by the SDK)."""
        options: dict[str, Any] = {"elicitation_callback": self.elicit, "mode": self.protocol,
                                   "message_handler": self.notified}
        if self.sampling is not None:
            options["sampling_callback"] = self.sample
        return options

    async def notified(self, message: Any) -> None:
        """A notification (or a transport error) from the server: a changed tool list is noted."""
        if type(message).__name__ == "ToolListChangedNotification":
            self.tools_changed.set()

    async def sample(self, context: Any, params: Any) -> Any:
        import anyio
        import mcp.types as types

        messages: list[Any] = []
        for message in params.messages:
            blocks = message.content if isinstance(message.content, list) else [message.content]
            text = "\n".join(getattr(b, "text", f"[{getattr(b, 'type', 'content')}]") for b in blocks)
            messages.append(UserMessage(text) if message.role == "user" else AssistantMessage((TextContent(text),)))
        llm = LlmContext(params.system_prompt or "", messages)
        options = StreamOptions(temperature=params.temperature, max_tokens=params.max_tokens)
        assert self.sampling is not None
        try:
            final = await anyio.to_thread.run_sync(self._final, llm, options)
        except Exception as exc:
            return types.ErrorData(code=types.INTERNAL_ERROR, message=f"the client's model failed: {exc}")
        self.sampled.append({"system_prompt": llm.system_prompt, "messages": [m.text for m in messages],
                             "reply": final.text, "model": self.model.id})
        return types.CreateMessageResult(role="assistant", content=types.TextContent(type="text", text=final.text),
                                         model=self.model.id,
                                         stop_reason=_STOP_REASONS.get(final.stop_reason, final.stop_reason))

    def _final(self, context: LlmContext, options: StreamOptions) -> AssistantMessage:
        """Run the stream function to its end (in a worker thread): the reply."""
        assert self.sampling is not None
        events = self.sampling(self.model, context, options)
        if hasattr(events, "__aiter__") or inspect.isawaitable(events):
            import asyncio

            return asyncio.run(_collect_async(events))
        for event in events:
            final = _final_of(event)
            if final is not None:
                return final
        raise RuntimeError("the stream ended without a reply")

    async def elicit(self, context: Any, params: Any) -> Any:
        import mcp.types as types

        schema = getattr(params, "requested_schema", None)
        if self.elicitation is None or schema is None:  # no one to ask, or a URL to open: declined
            return types.ElicitResult(action="decline")
        answer = self.elicitation(params.message, schema)
        if inspect.isawaitable(answer):
            answer = await answer
        if answer is None:
            return types.ElicitResult(action="decline")
        if not isinstance(answer, dict):
            return types.ErrorData(code=types.INTERNAL_ERROR,
                                   message=f"the elicitation function returned {type(answer).__name__}, "
                                           "not a dict or None")
        return types.ElicitResult(action="accept", content=answer)


def _final_of(event: Any) -> AssistantMessage | None:
    if isinstance(event, DoneEvent):
        return event.message
    if isinstance(event, ErrorEvent):
        raise RuntimeError(event.error.error_message or "the model failed")
    return None


async def _collect_async(events: Any) -> AssistantMessage:
    if inspect.isawaitable(events):
        events = await events
    async for event in events:
        final = _final_of(event)
        if final is not None:
            return final
    raise RuntimeError("the stream ended without a reply")
