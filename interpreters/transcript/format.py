"""The transcript format: versions, the shapes of its lines, and the digests they carry.

What a transcript file is, line by line (``docs/transcript-format.md`` has it with examples
and the compatibility promise)::

    {"transcript": "agentcore-fx", "version": 6, ..., "initial_state": {...}}     header, line 1
    {"step": 1, "input": {...}, "effects": [{...}, ...]}                            one per step
    {"step": 4, "last": 9, "deltas": {"text": ["Hel", "lo", ...], ...}}               a run of deltas
    {"resumed_from_step": 12, "at": 1700000000000}                                   resume marker

Lines are compact JSON (:data:`compact_json`). An ``emit`` of ``message_update`` is written as
``{"type": "message_update", "digest": ...}`` only (:func:`update_digest`, one digest per run of
deltas): it is the input's own stream event and the partial the core folded from it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any, Final, Literal

import msgspec

from agentcore.codec import encode_bytes, prepared, to_json
from agentcore.events import MessageUpdateEvent
from agentcore.stream import TextDeltaEvent, ThinkingDeltaEvent, ToolCallDeltaEvent

from ..secrets import hinted, scrub_json

__all__ = [
    "CALLER_SECRETS",
    "SAMPLING_OPTIONS",
    "DELTAS",
    "DELTA_HEADER_LINE",
    "DELTA_LINE",
    "DIGESTS_VERSION",
    "ENCODER_DIGESTS_VERSION",
    "FORMAT",
    "FlushMode",
    "READABLE_VERSIONS",
    "RUN_LINE",
    "TranscriptError",
    "UPDATE",
    "UPDATE_DIGEST",
    "UPDATE_TEXT",
    "VERSION",
    "compact_json",
    "delta_run_digest",
    "is_update",
    "sampling_options",
    "json_str",
    "update_digest",
]

FORMAT: Final = "agentcore-fx"
VERSION: Final = 6
READABLE_VERSIONS: Final = (1, 2, 3, 4, 5, 6)
DIGESTS_VERSION: Final = 4
"""The first version whose ``message_update`` effects carry digests (see :func:`update_digest`)."""
ENCODER_DIGESTS_VERSION: Final = 5
"""The first version whose update digests hash the codec's own JSON text (version 4 hashed the
``json`` module's, which writes some numbers differently: ``1.5e-05`` for ``0.000015``)."""

FlushMode = Literal["entry", "turn"]

CALLER_SECRETS: Final = "caller_secrets"
"""The header's (and a resume line's) count of the secrets its recorder was given
(``secrets=``): never their values, which a transcript must not hold; a resume asks for at least
as many again."""


class TranscriptError(ValueError):
    """A file that is not a readable transcript; the message names the file (when it is known),
    the line and the problem: ``run.jsonl: line 1: the header's initial_state does not decode:
    $.run.turns is a str ('x'), not an int``.

    ``path`` and ``line`` are the file and the line (``None`` where not known); ``problem`` is the
    message without the file's name (``line 1: ...``)."""

    def __init__(self, problem: str, *, path: Any = None, line: int | None = None) -> None:
        super().__init__(f"{path}: {problem}" if path is not None else problem)
        self.problem = problem
        self.path = path
        self.line = line


# --------------------------------------------------------------------------- line shapes

compact_json: Final = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), check_circular=False).encode
"""The JSON text of a line: no spaces, non-ASCII characters as they are."""
json_str: Final[Any] = json.encoder.encode_basestring
"""A ``str`` as a JSON string (what :data:`compact_json` writes for it)."""
DELTAS: Final = (TextDeltaEvent, ThinkingDeltaEvent, ToolCallDeltaEvent)
"""The stream events a ``deltas`` line holds runs of."""
UPDATE: Final = {"type": "emit", "event": {"type": "message_update"}}
"""A ``message_update`` emit without a digest (format versions 1 to 3), as JSON data."""
UPDATE_TEXT: Final = '{"type":"emit","event":{"type":"message_update"}}'
"""The same as line text."""
UPDATE_DIGEST: Final = '{"type":"emit","event":{"type":"message_update","digest":"%s"}}'
"""A ``message_update`` emit with its digest (version 4 on), as line text."""
DELTA_LINE: Final = ('{"step":%d,"input":{"type":"stream_event_received","id":%d,"event":{"type":"%s",'
                     '"content_index":%d,"delta":%s},"at":%d},"effects":[%s]}\n')
"""The step line of one stream delta (the reader gives each step of a run this text)."""
DELTA_HEADER_LINE: Final = ('{"step":%d,"input":{"type":"stream_event_received","id":%d,"event":{"type":"%s",'
                            '"content_index":%d,"delta":%s,"header":%s},"at":%d},"effects":[%s]}\n')
"""The step line of one stream delta whose partial brought a new header (its JSON text last)."""
RUN_LINE: Final = ('{"step":%d,"last":%d,"deltas":{"id":%d,"type":"%s","content_index":%d,"text":%s,"at":%s%s}}'
                   '\n')
"""A ``deltas`` line: consecutive deltas of one block, from ``step`` to ``last``."""


def is_update(data: Any) -> bool:
    """Whether recorded effect JSON is a ``message_update`` emit (with or without its digest)."""
    return data is UPDATE or (type(data) is dict and data.get("type") == "emit" and type(data.get("event")) is dict
                               and data["event"].get("type") == "message_update")


# --------------------------------------------------------------------------- update digests


def _digest(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()


def delta_run_digest(kind: str, index: int, deltas_json: str) -> str:
    """The digest of a run of ``message_update`` effects that each carry one delta of block
    ``index`` (``kind``: ``"text_delta"``, ``"thinking_delta"`` or ``"toolcall_delta"``), given
    the deltas as one JSON list (``compact_json(deltas)``).

    >>> delta_run_digest("text_delta", 0, '["Hel","lo"]')
    '10abb30080e50f0e'
    """
    return _digest('["%s",%d,%s]' % (kind, index, deltas_json))


_last_header: tuple[Any, Any] = (None, None)


def _header_json(header: Any) -> Any:
    """``to_json(header)``, kept for the last header seen: the updates of one reply share their
    partial's header object until the stream changes it (records are immutable)."""
    global _last_header
    seen, data = _last_header
    if seen is not header or header is None:
        data = to_json(header)
        _last_header = (header, data)
    return data


_last_text: tuple[Any, Any] = (None, None)


def _header_text(header: Any) -> Any:
    """The JSON text of ``header``, kept for the last header seen (as :func:`_header_json`)."""
    global _last_text
    seen, text = _last_text
    if seen is not header or header is None:
        text = msgspec.Raw(encode_bytes(prepared(header)))
        _last_text = (header, text)
    return text


def update_digest(updates: Sequence[MessageUpdateEvent], secrets: Sequence[str] | None = None, *,
                  version: int = VERSION) -> str:
    """The digest a transcript keeps for consecutive ``message_update`` effects.

    An update is its stream event and the partial message the core folded it into. The digest
    covers what the transcript can give back: every field of the event but its partial, and the
    partial's header (model, usage, ``response_id``...). Updates that each carry one delta of the
    same block are digested as one run (:func:`delta_run_digest`); any other updates, one by one
    in order. The partial's blocks are not covered: a replay folds them from the same recorded
    events. ``secrets``: scrub the digested text as the recorder scrubs its lines (``None``: it
    is digested as it is, because it was read from a scrubbed transcript). ``version``: the
    transcript's (a version-4 file's digests hash the ``json`` module's text of the same JSON).

    >>> from agentcore import MessageUpdateEvent
    >>> from agentcore.stream import PartialAssistantMessage
    >>> opened = PartialAssistantMessage.begin(model="m").text_start()
    >>> a = opened.partial.text_delta(0, "Hel")
    >>> b = a.partial.text_delta(0, "lo")
    >>> update_digest([MessageUpdateEvent(a.partial, a), MessageUpdateEvent(b.partial, b)])
    '10abb30080e50f0e'
    """
    if not updates:
        raise ValueError("no updates to digest")
    events: list[Any] = [u.assistant_message_event for u in updates]
    first = events[0]
    kind = type(first)
    if kind in DELTAS and all(type(e) is kind and e.content_index == first.content_index for e in events):
        text = '["%s",%d,%s]' % (first.type, first.content_index, compact_json([e.delta for e in events]))
    elif version >= ENCODER_DIGESTS_VERSION:
        text = encode_bytes([[prepared(e, partials=False), _header_text(getattr(u.message, "header", None))]
                             for e, u in zip(events, updates)]).decode("utf-8")
    else:
        text = compact_json([[to_json(e, partials=False), _header_json(getattr(u.message, "header", None))]
                             for e, u in zip(events, updates)])
    if secrets is not None and (hinted(text) or any(secret in text for secret in secrets)):
        text = scrub_json(text, secrets)
    return _digest(text)


SAMPLING_OPTIONS: Final = ("temperature", "max_tokens", "thinking_budgets")
"""The config's options that change what a model answers, recorded in the header as
``"options"`` (a request-matched replay compares them)."""


def sampling_options(config: Any) -> dict[str, Any]:
    """The header's ``options``: each of :data:`SAMPLING_OPTIONS` as the config has it (JSON)."""
    return {name: to_json(getattr(config, name)) for name in SAMPLING_OPTIONS}
