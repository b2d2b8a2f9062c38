"""Reading transcripts back: the lines checked, runs of deltas expanded, histories resolved.

:func:`read_transcript` gives a :class:`Transcript`: the header and the :class:`Entry` of every
step of its one linear history (a resume marker cuts what it supersedes). A torn last line is
dropped with a warning; any other damage is a :class:`~interpreters.transcript.format.TranscriptError`
naming the line. Recorded effects stay JSON as written (``$seq`` history deltas resolved, see
:func:`expand`) until asked for decoded.
"""

from __future__ import annotations

import os
import typing
import warnings
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import msgspec

from agentcore import Effect, Input, LoopState
from agentcore.codec import CodecError, PartialFold, from_json, parse
from agentcore.effects import Emit
from agentcore.events import MessageUpdateEvent
from agentcore.inputs import (
    ContextConverted,
    ContextTransformed,
    FollowUpsPolled,
    Resumed,
    RunSettings,
    Started,
    SteeringPolled,
    StreamEventReceived,
)
from agentcore.messages import AssistantMessage, Model, TextContent, ThinkingContent, ToolCall, Usage
from agentcore.records import fields_problem, kind_of, messages_problem, type_problem
from agentcore.reply import stream_event_problem
from agentcore.stream import (
    DoneEvent,
    ErrorEvent,
    PartialAssistantMessage,
    TextDeltaEvent,
    ThinkingDeltaEvent,
    ToolCallDeltaEvent,
)
from agentcore.tools import ToolSpec

from ..runtime.gc_pause import paused_gc
from .format import (
    DELTA_LINE,
    DELTAS,
    FORMAT,
    READABLE_VERSIONS,
    TranscriptError,
    compact_json,
    is_update,
    json_str,
)

__all__ = [
    "Entry",
    "SeqDelta",
    "Transcript",
    "decode_state",
    "expand",
    "parse_transcript",
    "read_transcript",
]


@dataclass(eq=False)
class Entry:
    """One recorded step: its input (decoded) and its effects (JSON as written; see :func:`expand`)."""

    step: int
    line: int
    input: Input
    input_json: Any
    effects_json: list[Any]
    text: str
    seqs: Mapping[str, list[Any]]
    path: Path | None = None
    """The transcript's file (``None``: read from bytes), which errors about the line name."""
    _effects: tuple[Effect, ...] | None = None

    @property
    def effects_text(self) -> list[bytes] | None:
        """The JSON text of each recorded effect, as the line holds it (``$seq`` deltas and all);
        ``None`` for a line msgspec does not parse (one with a lone surrogate's escape)."""
        try:
            return [bytes(raw) for raw in _effects_of(self.text.encode("utf-8")).effects]
        except (msgspec.DecodeError, UnicodeEncodeError):
            return None

    @property
    def effects(self) -> tuple[Effect, ...]:
        """The recorded effects, decoded (``message_update`` emits come back as the input's event)."""
        if self._effects is None:
            try:
                self._effects = tuple(_decode_effect(e, self.input) for e in self.effects_json)
            except _DECODE_ERRORS as exc:
                raise _fail(self.line, f"cannot decode the effects: {exc}", self.path) from None
        return self._effects


class _EffectsOnly(msgspec.Struct):
    effects: list[msgspec.Raw] = []


_effects_of: Final = msgspec.json.Decoder(_EffectsOnly).decode


class SeqDelta(dict[str, Any]):
    """A ``{"$seq": key, "keep": n, "add": [...]}`` delta as read back; ``full`` is the whole
    history it stands for (compares equal to the plain JSON object)."""

    full: list[Any]


def expand(value: Any) -> Any:
    """Recorded effect JSON with every ``$seq`` delta (as :func:`read_transcript` resolved it)
    replaced by the whole history. Any other ``$seq`` key is data, kept as it is."""
    if isinstance(value, SeqDelta):
        return list(value.full)
    if isinstance(value, dict):
        return {k: expand(v) for k, v in value.items()}
    if isinstance(value, list):
        return [expand(v) for v in value]
    return value


def _decode_effect(data: Any, inp: Input) -> Effect:
    if is_update(data):
        ev = getattr(inp, "event", None)
        return Emit(MessageUpdateEvent(getattr(ev, "partial", None), ev))  # type: ignore[arg-type]
    full = expand(data)
    effect: Effect = from_json(full)
    return effect


@dataclass
class Transcript:
    """A transcript read back: the header and the entries of its one linear history."""

    path: Path | None
    header: Mapping[str, Any]
    entries: list[Entry]
    torn: bool = False
    resumed_from: tuple[int, ...] = ()
    size: int = 0
    """Bytes of the intact prefix (everything but a torn last line)."""
    _initial: LoopState | None = field(default=None, repr=False)

    @property
    def version(self) -> int:
        return int(self.header["version"])

    @property
    def steps(self) -> int:
        return len(self.entries)

    @property
    def initial_state(self) -> LoopState:
        """The state the run started from (the header's ``initial_state``, decoded and checked)."""
        if self._initial is None:
            if "initial_state" not in self.header:
                raise _fail(1, "the header has no initial_state", self.path)
            try:
                self._initial = decode_state(self.header["initial_state"])
            except _DECODE_ERRORS as exc:
                raise _fail(1, f"the header's initial_state does not decode: {exc}", self.path) from None
        return self._initial

    @property
    def inputs(self) -> list[Input]:
        return [e.input for e in self.entries]

    def __iter__(self) -> Iterator[Entry]:
        return iter(self.entries)

    def __len__(self) -> int:
        return len(self.entries)


def decode_state(data: Mapping[str, Any]) -> LoopState:
    """``from_json`` for a ``LoopState``, checked: every field of every record in it has its
    type (:func:`agentcore.records.type_problem`) and the conversations hold messages. Raises
    :class:`CodecError` naming the first field that does not (``$.run.turns is a str ('x'),
    not an int``)."""
    decoded = from_json(data)
    problem = type_problem(decoded, LoopState, read_back=True)
    if problem is None:
        run = decoded.run
        problem = (messages_problem(run.messages, "$.run.messages")
                   or messages_problem(run.new_messages, "$.run.new_messages")
                   or messages_problem(run.llm_messages or (), "$.run.llm_messages"))
        for name, kind in _COUNTERS.items():  # the core counts on with them: exact types
            problem = problem or type_problem(getattr(run, name), kind, f"$.run.{name}")
    if problem is not None:
        raise CodecError(problem)
    return decoded  # type: ignore[no-any-return]


_COUNTERS: Final[dict[str, type]] = {"next_id": int, "turns": int, "total_tokens": int, "cost_usd": float}


_HEADER_RECORDS: Final[dict[str, Any]] = {"model": Model, "tools": tuple[ToolSpec, ...]}
"""The header's records besides ``initial_state`` (copies of the initial state's, for readers
of the header alone) and the types they decode to."""
_HEADER_VALUES: Final[dict[str, Any]] = {"library_version": str, "created_at": int, "system_prompt": str,
                                         "hooks": typing.Sequence[str], "interpreter": str,
                                         "options": typing.Mapping[str, Any],
                                         "tool_origins": typing.Mapping[str, typing.Mapping[str, Any]]}


def _check_header(header: dict[str, Any], path: Path | None) -> LoopState:
    """The header's initial state, decoded; every field of the header checked first (the ones a
    writer left out are not required: only ``initial_state`` is)."""
    if "initial_state" not in header:
        raise _fail(1, "the header has no initial_state", path)
    for name, expected in _HEADER_VALUES.items():
        if name in header:
            problem = type_problem(header[name], expected, f"the header's {name}")
            if problem is not None:
                raise _fail(1, problem, path)
    for name, expected in _HEADER_RECORDS.items():
        if name in header:
            try:
                decoded = from_json(header[name])
                problem = type_problem(decoded, expected, read_back=True)
                if problem is not None:
                    raise CodecError(problem)
            except _DECODE_ERRORS as exc:
                verb = "do" if name == "tools" else "does"
                raise _fail(1, f"the header's {name} {verb} not decode: {exc}", path) from None
    try:
        return decode_state(header["initial_state"])
    except _DECODE_ERRORS as exc:
        raise _fail(1, f"the header's initial_state does not decode: {exc}", path) from None


def _reply_problem(reply: Any, path: str) -> str | None:
    """What is damaged in the reply a done or error event carries: what the core reads of it (its
    blocks and its usage) is looked at first, cheaply, then every field (for the words)."""
    if (type(reply) is AssistantMessage and (reply.usage is None or type(reply.usage) is Usage)
            and type(reply.content) is tuple and all(type(block) in _BLOCKS for block in reply.content)
            and type(reply.stop_reason) is str) or type(reply) is PartialAssistantMessage:
        return None  # (a partial reply is the fold's, as the reader built it)
    return fields_problem(reply, path, read_back=True)


_BLOCKS: Final = frozenset({TextContent, ThinkingContent, ToolCall})
_FOLDED: Final = frozenset({TextDeltaEvent, ThinkingDeltaEvent, ToolCallDeltaEvent})
"""Stream events the reader does not look at (the most frequent): a delta the fold cannot place
is left out of the reply the reader folds, and refused when a replay steps over it
(:func:`interpreters.replay.step_recorded`)."""
_INPUTS: Final = typing.get_args(Input)
_MESSAGES: Final[dict[type, str]] = {Started: "prompts", SteeringPolled: "messages", FollowUpsPolled: "messages",
                                     ContextTransformed: "messages", ContextConverted: "messages"}
"""The inputs that carry messages, and the field that holds them (its type says only ``Any``)."""
_DECODE_ERRORS: Final = (CodecError, TypeError, KeyError, IndexError, AttributeError, ValueError)
"""What decoding damaged JSON can raise (a missing type tag leaves a plain mapping, say)."""


def _fail(line: int, problem: str, path: Path | None = None) -> TranscriptError:
    return TranscriptError(f"line {line}: {problem}", path=path, line=line)


def read_transcript(path: str | os.PathLike[str]) -> Transcript:
    """Read a transcript file.

    A last line without its newline (a write torn by a crash) is dropped with a warning; a
    damaged line anywhere else, an unknown version or a file that is not a transcript raises
    :class:`TranscriptError` naming the line.
    """
    p = Path(path)
    data = p.read_bytes()
    return parse_transcript(data, p)


_decode_line: Final = msgspec.json.Decoder().decode


def _parse_line(raw: bytes) -> Any:
    """One line's JSON: parsed in C; a line msgspec refuses (``NaN``, which older transcripts
    hold, a lone surrogate's escape, or a damaged line) goes through the json module
    (:func:`agentcore.codec.parse`), which also words the error."""
    try:
        return _decode_line(raw)
    except msgspec.DecodeError:
        return parse(raw)


def parse_transcript(data: bytes, path: Path | None = None) -> Transcript:
    """Parse a transcript's bytes (what :func:`read_transcript` does once it has read them)."""
    with paused_gc():  # many objects that live on and hold no cycles (see interpreters.runtime.gc_pause)
        return _parse(data, path)


def _parse(data: bytes, path: Path | None) -> Transcript:
    lines = data.split(b"\n")
    torn = False
    size = len(data)
    if lines and lines[-1] == b"":
        lines.pop()
    elif lines:
        torn = True
        size -= len(lines[-1])
        warnings.warn(
            f"{path or 'transcript'}: line {len(lines)} is torn (no newline at the end: the run "
            "stopped while writing it); it is ignored", RuntimeWarning, stacklevel=4)
        lines.pop()
    if not lines:
        raise _fail(1, "empty file: not an agentcore-fx transcript", path)
    try:
        header = _parse_line(lines[0])
    except ValueError:
        raise _fail(1, "not an agentcore-fx transcript (the header is not JSON)", path) from None
    if not isinstance(header, dict) or header.get("transcript") != FORMAT:
        raise _fail(1, "not an agentcore-fx transcript (no {\"transcript\": \"agentcore-fx\"} header)", path)
    version = header.get("version")
    if version not in READABLE_VERSIONS or type(version) is not int:
        raise _fail(1, f"unsupported transcript version {version!r} (this reader reads versions "
                        f"{READABLE_VERSIONS[0]} to {READABLE_VERSIONS[-1]})", path)
    initial = _check_header(header, path)
    entries: list[Entry] = []
    seqs: dict[str, list[Any]] = {}
    folds: dict[int, PartialFold] = {}
    resumed: list[int] = []
    for index in range(1, len(lines)):
        lineno = index + 1
        raw = lines[index]
        try:
            text = raw.decode("utf-8")
            obj = _parse_line(raw)
        except ValueError as exc:
            raise _fail(lineno, f"damaged line (not JSON: {exc})", path) from None
        if not isinstance(obj, dict):
            raise _fail(lineno, "damaged line (not a JSON object)", path)
        if obj.get("transcript") == FORMAT:
            raise _fail(lineno, "a second header: two recorders wrote this file (spliced); it cannot be replayed", path)
        if "resumed_from_step" in obj:
            n = obj["resumed_from_step"]
            if not isinstance(n, int) or not 0 <= n <= len(entries):
                raise _fail(lineno, f"resumed_from_step {n!r} is not a recorded step", path)
            del entries[n:]
            seqs = dict(entries[-1].seqs) if entries else {}
            folds.clear()
            resumed.append(n)
            continue
        if "step" not in obj:
            continue  # a line kind from a newer minor revision: ignored
        n = obj["step"]
        if type(n) is not int or n != len(entries) + 1:
            raise _fail(lineno, f"step {n!r} out of order (expected step {len(entries) + 1})", path)
        if "deltas" in obj:
            _expand_run(obj, lineno, entries, seqs, folds, path)
            continue
        inp_json = obj.get("input")
        effects = obj.get("effects", [])
        if not isinstance(inp_json, dict) or not isinstance(effects, list):
            raise _fail(lineno, "damaged step (input must be an object and effects a list)", path)
        for i, e in enumerate(effects):
            if not (isinstance(e, dict) and type(e.get("type")) is str
                    and (e["type"] != "emit" or (isinstance(e.get("event"), dict)
                                                 and type(e["event"].get("type")) is str))):
                raise _fail(lineno, f"damaged step (effect {i} is not an effect object with a type)", path)
        try:
            inp = from_json(inp_json)
            if not isinstance(inp, _INPUTS):
                raise CodecError(f"not an input: {inp_json.get('type')!r}")
            if type(inp) is StreamEventReceived:
                if type(inp.id) is not int or (type(inp.at) is not int and type(inp.at) is not float):
                    raise CodecError(fields_problem(inp, "input", read_back=True) or "input.event is damaged")
                fold = folds.get(inp.id)
                if fold is None:
                    fold = folds[inp.id] = PartialFold()
                changed = inp_json["event"].get("header") if isinstance(inp_json.get("event"), dict) else None
                if changed is not None:
                    changed = from_json(changed)
                    if not isinstance(changed, AssistantMessage):
                        raise CodecError(f"the event's header is a {type(changed).__name__}, not an assistant message")
                event = fold.apply(inp.event, changed, strict=False)
                kind = type(event)
                if kind not in _FOLDED:  # the recorder writes real stream events only
                    problem = stream_event_problem(event)
                    if problem is None and kind is DoneEvent:
                        problem = _reply_problem(event.message, "input.event.message")
                    elif problem is None and kind is ErrorEvent:
                        problem = _reply_problem(event.error, "input.event.error")
                    if problem is not None:
                        raise CodecError(problem)
                if event is not inp.event:
                    inp = StreamEventReceived(inp.id, event, inp.at)
            else:
                problem = fields_problem(inp, "input", read_back=True)
                if problem is None and type(inp) is Resumed and inp.settings is not None:  # a record in full
                    problem = type_problem(inp.settings, RunSettings, "input.settings", read_back=True)
                messages = _MESSAGES.get(type(inp))
                if problem is None and messages is not None:
                    problem = messages_problem(getattr(inp, messages), f"input.{messages}")
                if problem is not None:
                    raise CodecError(problem)
        except _DECODE_ERRORS as exc:
            raise _fail(lineno, f"cannot decode the input: {exc}", path) from None
        try:
            seqs = _resolve(effects, seqs)
        except (KeyError, TypeError, ValueError) as exc:
            raise _fail(lineno, f"damaged history delta: {exc}", path) from None
        entries.append(Entry(n, lineno, inp, inp_json, effects, text, seqs, path))
    return Transcript(path, header, entries, torn, tuple(resumed), size, initial)


_DELTA_KINDS: Final[dict[str, type]] = {cls.type: cls for cls in DELTAS}


def _expand_run(obj: dict[str, Any], lineno: int, entries: list[Entry], seqs: dict[str, list[Any]],
                folds: dict[int, PartialFold], path: Path | None) -> None:
    """Append the steps of a ``deltas`` line (a run of stream deltas) to ``entries``."""
    run = obj["deltas"]
    first = obj["step"]
    try:
        if not isinstance(run, dict):
            raise ValueError("deltas must be an object")
        sid, kind, index, texts, at = run["id"], run["type"], run["content_index"], run["text"], run["at"]
        cls = _DELTA_KINDS.get(kind)
        if cls is None:
            raise ValueError(f"unknown delta type {kind!r}")
        if (type(sid) is not int or type(index) is not int or index < 0 or not isinstance(texts, list) or not texts
                or not all(type(t) is str for t in texts)):
            raise ValueError("id and content_index must be integers (content_index >= 0) and text a list of strings")
        if type(obj.get("last")) is not int or obj["last"] != first + len(texts) - 1:
            raise ValueError(f"last is {obj.get('last')!r} but {len(texts)} deltas from step {first} end at "
                             f"step {first + len(texts) - 1}")
        ats = [at] * len(texts) if type(at) is int else at
        if not isinstance(ats, list) or len(ats) != len(texts) or not all(type(a) is int for a in ats):
            raise ValueError("at must be an integer or one integer per delta")
        digest = run.get("digest")
        if digest is not None and type(digest) is not str:
            raise ValueError("digest must be a string")
    except (KeyError, ValueError) as exc:
        raise _fail(lineno, f"damaged deltas line ({exc})", path) from None
    fold = folds.get(sid)
    if fold is None:
        fold = folds[sid] = PartialFold()
    try:
        last = len(texts) - 1
        for offset, (delta, ms) in enumerate(zip(texts, ats)):
            n = first + offset
            event = fold.apply(cls(index, delta, None))
            update: dict[str, Any] = {"type": "message_update"}
            if offset == last and digest is not None:
                update["digest"] = digest  # the run's digest, on its last step
            emit = compact_json({"type": "emit", "event": update})
            text = DELTA_LINE % (n, sid, kind, index, json_str(delta), ms, emit)
            inp_json = {"type": "stream_event_received", "id": sid,
                        "event": {"type": kind, "content_index": index, "delta": delta}, "at": ms}
            effects = [{"type": "emit", "event": update}]
            entries.append(Entry(n, lineno, StreamEventReceived(sid, event, ms), inp_json, effects, text[:-1], seqs,
                                 path))
    except IndexError:
        raise _fail(lineno, f"cannot decode the input: content_index {index} names no block of the reply",
                    path) from None
    except _DECODE_ERRORS as exc:
        raise _fail(lineno, f"cannot decode the input: {exc}", path) from None


_HOOK_HISTORIES: Final = ((("context", "context", "messages"), "ctx"), (("context", "context", "tools"), "ctx_tools"))
_HISTORIES: Final[dict[str, tuple[tuple[tuple[str, ...], str], ...]]] = {
    "call_llm": ((("messages",), "llm"), (("tools",), "tools")),
    "transform_context": ((("messages",), "ctx"),),
    "convert_to_llm": ((("messages",), "ctx"),),
    "before_tool_call": _HOOK_HISTORIES,
    "after_tool_call": _HOOK_HISTORIES,
    "prepare_next_turn": (*_HOOK_HISTORIES, (("context", "new_messages"), "new")),
    "should_stop_after_turn": (*_HOOK_HISTORIES, (("context", "new_messages"), "new")),
}
"""Where the recorder writes histories as ``$seq`` deltas (:class:`~.encode.EffectEncoder`), per
effect type, in the order it writes them, and the history each one goes on (its key). Nowhere
else: a ``$seq`` key in a tool's arguments or details is data."""


def _resolve(value: list[Any], seqs: dict[str, list[Any]]) -> dict[str, list[Any]]:
    """Replace each ``$seq`` delta by a :class:`SeqDelta` knowing its whole history, in order;
    returns the new last-history-per-key map (copied on write: each entry keeps its own)."""
    copied = False
    for item in value:
        paths = _HISTORIES.get(str(item.get("type"))) if type(item) is dict else None
        if paths is None:
            continue
        for path, history in paths:
            parent: Any = item
            for key in path[:-1]:
                parent = parent.get(key) if type(parent) is dict else None
            last = path[-1]
            v = parent.get(last) if type(parent) is dict else None
            if type(v) is list:
                continue  # a history written in full (an older recorder)
            if type(v) is not dict or "$seq" not in v:
                found = kind_of(v) if type(parent) is dict and last in parent else "missing"
                raise ValueError(f"{_where(item, path)} is {found}, not a history")
            key, keep, add = v["$seq"], v.get("keep"), v.get("add")
            prev = seqs.get(key, [])
            if key != history or type(keep) is not int or not 0 <= keep <= len(prev) or type(add) is not list:
                raise ValueError(_delta_problem(_where(item, path), key, history, keep, add, len(prev)))
            out = SeqDelta(v)
            out.full = prev[:keep] + add
            if not copied:
                seqs = dict(seqs)
                copied = True
            seqs[key] = out.full
            parent[last] = out
    return seqs


def _where(effect: dict[str, Any], path: tuple[str, ...]) -> str:
    return f"{effect['type']}.{'.'.join(path)}"


def _delta_problem(where: str, key: Any, history: str, keep: Any, add: Any, length: int) -> str:
    """What is wrong with the history delta at ``where``."""
    if key != history:
        return f"{where} is a delta of the {key!r} history, not of {history!r}"
    if type(add) is not list:
        return f"{where} adds {kind_of(add)}, not a list of items"
    return f"{where} keeps {keep!r} items of a {key} history of {length}"
