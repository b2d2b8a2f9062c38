"""Tool call ids that are unique in a conversation.

A tool call's id is what pairs it with its result in the conversation, and what a tool is told
to use as its idempotency key (``tool_call_id``). Providers do not always make it unique: some
OpenAI-compatible servers send calls without an id (the decoders then make one up from the
response, :func:`agentcore.providers.base.made_up_call_id`), some send ``"0"`` on every turn,
and a stream function may give anything. So the core checks each reply before its
``message_end``: a call whose id is empty, or taken by an earlier call of the conversation (of
the run's context, of what the run added, or of the same reply), gets ``<id>_<n>`` (``call_<n>``
when it had none), where ``n`` is the call's number among the tool calls of the conversation,
or the next number free. An id is cut to :data:`MAX_CALL_ID_LENGTH` characters before its number
so that the id stays one every provider takes back.

Which ids are taken is kept in the state (``RunState.call_ids``, a persistent map: a turn costs
the same whatever the length of the history). It is derived from the conversation, so it is not
written with a state; reading one back rebuilds it.

>>> from agentcore import AssistantMessage, ToolCall
>>> earlier = AssistantMessage((ToolCall("0", "f"),), stop_reason="toolUse")
>>> reply = AssistantMessage((ToolCall("0", "f"), ToolCall("", "f")), stop_reason="toolUse")
>>> [c.id for c in unique_call_ids(reply, taken_call_ids([earlier])).tool_calls]
['0_2', 'call_3']
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

from pyrsistent import PMap, pmap

from .messages import AssistantMessage, ToolCall
from .records import replace

__all__ = ["MAX_CALL_ID_LENGTH", "taken_call_ids", "unique_call_ids", "with_calls_of"]

MAX_CALL_ID_LENGTH: Final = 40
"""The longest id an id made here has (OpenAI's limit on a tool call id it is sent back)."""

_EMPTY: Final[PMap[str, bool]] = pmap()


def taken_call_ids(*conversations: Iterable[Any]) -> PMap[str, bool]:
    """The ids of the tool calls of the assistant messages in ``conversations`` (id → ``True``)."""
    found: dict[str, bool] = {}
    for messages in conversations:
        for message in messages:
            if isinstance(message, AssistantMessage) and isinstance(message.content, tuple):
                for block in message.content:
                    if type(block) is ToolCall and type(block.id) is str:
                        found[block.id] = True
    return pmap(found) if found else _EMPTY


def with_calls_of(taken: PMap[str, bool], message: Any) -> PMap[str, bool]:
    """``taken`` with the ids of ``message`` 's tool calls (``taken`` itself when it has none)."""
    if isinstance(message, AssistantMessage):
        for block in message.content:
            if type(block) is ToolCall and block.id not in taken:
                taken = taken.set(block.id, True)
    return taken


def _numbered(base: str, n: int) -> str:
    suffix = f"_{n}"
    return (base or "call")[:MAX_CALL_ID_LENGTH - len(suffix)] + suffix


def unique_call_ids(message: AssistantMessage, taken: PMap[str, bool]) -> AssistantMessage:
    """``message`` with an id of its own for each tool call whose id is empty or already used
    (in ``taken``, or by an earlier call of ``message``); ``message`` itself when none is."""
    content = message.content
    kept: set[str] = set()
    renamed: set[int] = set()
    for i, block in enumerate(content):
        if type(block) is ToolCall:
            if block.id and block.id not in taken and block.id not in kept:
                kept.add(block.id)
            else:
                renamed.add(i)
    if not renamed:
        return message
    blocks = list(content)
    number = len(taken)  # the number of the call before the reply's first
    for i, block in enumerate(content):
        if type(block) is not ToolCall:
            continue
        number += 1
        if i not in renamed:
            continue
        n = number
        new = _numbered(block.id, n)
        while new in taken or new in kept:
            n += 1
            new = _numbered(block.id, n)
        kept.add(new)
        blocks[i] = replace(block, id=new)
    return replace(message, content=tuple(blocks))
