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

Which ids are taken is kept in the state (``RunState.call_ids``, a :class:`CallIds`: a turn
costs the same whatever the length of the history). It is derived from the conversation, so it
is not written with a state; reading one back rebuilds it.

>>> from agentcore import AssistantMessage, ToolCall
>>> earlier = AssistantMessage((ToolCall("0", "f"),), stop_reason="toolUse")
>>> reply = AssistantMessage((ToolCall("0", "f"), ToolCall("", "f")), stop_reason="toolUse")
>>> reply, taken = take_call_ids(reply, taken_call_ids([earlier]))
>>> [c.id for c in reply.tool_calls], sorted(taken)
(['0_2', 'call_3'], ['0', '0_2', 'call_3'])
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, Final

from .messages import AssistantMessage, ToolCall
from .records import replace

__all__ = ["MAX_CALL_ID_LENGTH", "CallIds", "take_call_ids", "taken_call_ids", "with_calls_of"]

MAX_CALL_ID_LENGTH: Final = 40
"""The longest id an id made here has (OpenAI's limit on a tool call id it is sent back)."""


class CallIds:
    """An immutable set of ids that grows at a cost that does not depend on its size.

    The ids are kept in frozensets whose sizes at least halve from one to the next (like the
    digits of a binary counter): adding ids makes a small set, merged with the last ones while
    they are not bigger (at C speed; each id is copied O(log n) times over its life), and a
    lookup asks each of the O(log n) sets. Two sets of the same ids are equal however they were
    built.

    >>> ids = CallIds(["a"]).with_ids(["b", "a"])
    >>> "b" in ids, "c" in ids, len(ids), ids == CallIds(["b", "a"])
    (True, False, 2, True)
    """

    __slots__ = ("_parts", "_size")

    def __init__(self, ids: Iterable[str] = ()) -> None:
        part = frozenset(ids)
        self._parts: tuple[frozenset[str], ...] = (part,) if part else ()
        self._size = len(part)

    def __contains__(self, id: object) -> bool:
        for part in self._parts:
            if id in part:
                return True
        return False

    def isdisjoint(self, ids: frozenset[str]) -> bool:
        """Whether none of ``ids`` is here."""
        for part in self._parts:
            if not part.isdisjoint(ids):
                return False
        return True

    def __len__(self) -> int:
        return self._size

    def __iter__(self) -> Iterator[str]:
        for part in self._parts:
            yield from part

    def with_ids(self, ids: Iterable[str]) -> CallIds:
        """These ids and ``ids`` (``self`` when it has them all)."""
        return self.with_new(frozenset(i for i in ids if i not in self))

    def with_new(self, new: frozenset[str]) -> CallIds:
        """These ids and ``new``, which holds none of them (``self`` when it is empty)."""
        if not new:
            return self
        out = CallIds.__new__(CallIds)
        out._size = self._size + len(new)
        parts = self._parts
        if not parts or len(parts[-1]) > len(new):
            out._parts = (*parts, new)
            return out
        merged = list(parts)
        while merged and len(merged[-1]) <= len(new):
            new = merged.pop() | new
        merged.append(new)
        out._parts = tuple(merged)
        return out

    def as_frozenset(self) -> frozenset[str]:
        """The ids, as one frozenset."""
        return frozenset().union(*self._parts)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, CallIds):
            return NotImplemented
        return self._size == other._size and all(i in other for part in self._parts for i in part)

    def __hash__(self) -> int:
        return hash(self.as_frozenset())

    def __reduce__(self) -> tuple[Any, ...]:
        return CallIds, (sorted(self),)

    def __repr__(self) -> str:
        return f"CallIds({sorted(self)!r})"


_NONE: Final = CallIds()


def taken_call_ids(*conversations: Iterable[Any]) -> CallIds:
    """The ids of the tool calls of the assistant messages in ``conversations``."""
    found: list[str] = []
    for messages in conversations:
        for message in messages:
            if isinstance(message, AssistantMessage) and isinstance(message.content, tuple):
                found += [b.id for b in message.content if type(b) is ToolCall and type(b.id) is str]
    return CallIds(found) if found else _NONE


def with_calls_of(taken: CallIds, message: Any) -> CallIds:
    """``taken`` with the ids of ``message`` 's tool calls (``taken`` itself when it has none)."""
    if isinstance(message, AssistantMessage):
        ids = [b.id for b in message.content if type(b) is ToolCall]
        if ids:
            return taken.with_ids(ids)
    return taken


def _numbered(base: str, n: int) -> str:
    suffix = f"_{n}"
    return (base or "call")[:MAX_CALL_ID_LENGTH - len(suffix)] + suffix


def take_call_ids(message: AssistantMessage, taken: CallIds) -> tuple[AssistantMessage, CallIds]:
    """``message`` with an id of its own for each tool call whose id is empty or already used (in
    ``taken``, or by an earlier call of ``message``; ``message`` itself when none is), and
    ``taken`` with the ids of its calls."""
    content = message.content
    ids = [b.id for b in content if type(b) is ToolCall]
    if not ids:
        return message, taken
    kept = frozenset(ids)
    if len(kept) == len(ids) and "" not in kept and taken.isdisjoint(kept):
        return message, taken.with_new(kept)  # the common case: all new
    kept_ids: set[str] = set()
    renamed: set[int] = set()
    for i, block in enumerate(content):
        if type(block) is ToolCall:
            if block.id and block.id not in taken and block.id not in kept_ids:
                kept_ids.add(block.id)
            else:
                renamed.add(i)
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
        while new in taken or new in kept_ids:
            n += 1
            new = _numbered(block.id, n)
        kept_ids.add(new)
        blocks[i] = replace(block, id=new)
    return replace(message, content=tuple(blocks)), taken.with_new(frozenset(kept_ids))
