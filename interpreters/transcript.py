"""Transcripts: an append-only JSONL journal of one run, and its reader.

Theory of operation
-------------------

The core is a pure function, so a run is fully described by its initial state and the inputs
fed to it. A transcript stores exactly that, plus the effects the core asked for (so a replay
can tell when the code now behaves differently). The format is described, with examples and a
compatibility promise, in ``docs/transcript-format.md``. In short::

    {"transcript": "agentcore-fx", "version": 1, ..., "initial_state": {...}}     header, line 1
    {"step": 1, "input": {...}, "effects": [{...}, ...]}                            one per step
    {"resumed_from_step": 12, "at": 1700000000000}                                   resume marker

:class:`TranscriptRecorder` implements the driver's ``Journal`` protocol: give it to any
interpreter as ``journal=``. Every line is written whole, with one ``write`` call of the complete
line including its ``"\\n"``: a line without its newline is a torn write from a crash, and
:func:`read_transcript` drops it with a warning.

Two things keep a transcript linear in the size of the run:

- stream events are stored without their partial message (``to_json(..., partials=False)``)
  and an ``emit`` of ``message_update`` is stored as ``{"type": "message_update"}`` only: it is
  the input's own stream event and the partial the core folded from it;
- message histories inside effects (``call_llm.messages``, hook contexts) are stored as a delta
  against the previous history written under the same key: ``{"$seq": "llm", "keep": 41,
  "add": [...]}`` means "the first 41 messages of the previous ``llm`` history, then these".

Secrets never reach the core (API keys are resolved by the interpreter), but text can carry
them (a tool error quoting a key, say): every line is scrubbed of the run's known secrets
(``config.api_key``, header values) and of key-shaped strings before it is written.
"""

from __future__ import annotations

import asyncio
import json
import operator
import os
import re
import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from itertools import islice
from pathlib import Path
from typing import Any, Final, Literal

from agentcore import (
    AgentContext,
    AgentLoopConfig,
    Effect,
    Input,
    LoopState,
    __version__,
    initial_state,
)
from agentcore.codec import CodecError, PartialFold, from_json, to_json
from agentcore.config import hooks_set
from agentcore.effects import (
    AfterToolCall,
    BeforeToolCall,
    CallLlm,
    ConvertToLlm,
    Emit,
    PrepareNextTurn,
    ShouldStopAfterTurn,
    TransformContext,
)
from agentcore.events import MessageUpdateEvent, TurnEndEvent
from agentcore.effects import RunEnded
from agentcore.inputs import StreamEventReceived
from agentcore.stream import DoneEvent, TextDeltaEvent, ThinkingDeltaEvent, ToolCallDeltaEvent

__all__ = [
    "FORMAT",
    "VERSION",
    "Entry",
    "EffectEncoder",
    "Transcript",
    "TranscriptError",
    "TranscriptRecorder",
    "expand",
    "read_transcript",
    "record_to",
]

FORMAT: Final = "agentcore-fx"
VERSION: Final = 1
REDACTED: Final = "[REDACTED]"

FlushMode = Literal["entry", "turn"]


class TranscriptError(ValueError):
    """A file that is not a readable v1 transcript; the message names the line and the problem."""


# --------------------------------------------------------------------------- secrets

_KEY_SHAPES: Final = re.compile(
    r"sk-ant-[A-Za-z0-9_\-]{16,}"          # Anthropic
    r"|sk-(?:proj-|svcacct-)?[A-Za-z0-9_\-]{20,}"  # OpenAI and look-alikes
    r"|AIza[0-9A-Za-z_\-]{30,}"            # Google
    r"|gh[pousr]_[A-Za-z0-9]{30,}"         # GitHub tokens
    r"|xox[abprs]-[A-Za-z0-9\-]{10,}"      # Slack
    r"|(?i:bearer)\s+[A-Za-z0-9._~+/\-]{16,}=*"
)
_SENSITIVE_HEADER: Final = re.compile(r"auth|key|token|secret|cookie|session|password", re.I)


def _known_secrets(config: AgentLoopConfig | None, extra: Sequence[str]) -> tuple[str, ...]:
    found: list[str] = [s for s in extra if s]
    if config is not None:
        if config.api_key:
            found.append(config.api_key)
        for headers in (config.headers, config.model.headers):
            for name, value in (headers or {}).items():
                if isinstance(value, str) and len(value) >= 8 and _SENSITIVE_HEADER.search(str(name)):
                    found.append(value)
                    if value.lower().startswith("bearer "):
                        found.append(value[7:])
    # Longest first, so a secret that contains another is replaced whole.
    return tuple(sorted(set(found), key=len, reverse=True))


def scrub(line: str, secrets: Sequence[str] = ()) -> str:
    """``line`` with the known ``secrets`` and every key-shaped string replaced by ``[REDACTED]``."""
    for secret in secrets:
        if secret in line:
            line = line.replace(secret, REDACTED)
    if any(hint in line for hint in _KEY_HINTS) and _KEY_SHAPES.search(line) is not None:
        line = _KEY_SHAPES.sub(REDACTED, line)
    return line


_KEY_HINTS: Final = ("sk-", "AIza", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "xox", "earer ", "EARER ")


# --------------------------------------------------------------------------- encoding

_DUMPS: Final = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), check_circular=False).encode
_DELTAS: Final = (TextDeltaEvent, ThinkingDeltaEvent, ToolCallDeltaEvent)
_UPDATE: Final = {"type": "emit", "event": {"type": "message_update"}}
_DELTA_LINE: Final = ('{"step":%d,"input":{"type":"stream_event_received","id":%d,"event":{"type":"%s",'
                      '"content_index":%d,"delta":%s},"at":%d},"effects":[{"type":"emit","event":'
                      '{"type":"message_update"}}]}\n')
_json_str: Final[Any] = json.encoder.encode_basestring


def encode_input(inp: Input) -> Any:
    """An input as transcript JSON: the codec's, without stream partials (fast path for deltas)."""
    if type(inp) is StreamEventReceived:
        ev = inp.event
        if type(ev) in _DELTAS:
            return {"type": "stream_event_received", "id": inp.id,
                    "event": {"type": ev.type, "content_index": ev.content_index, "delta": ev.delta},  # type: ignore[union-attr]
                    "at": inp.at}
    return to_json(inp, partials=False)


def _common_prefix(seq: Sequence[Any], prev: Sequence[Any]) -> int:
    """How many leading elements ``seq`` and ``prev`` share, by identity (C-speed scan)."""
    n = min(len(seq), len(prev))
    if n == 0:
        return 0
    if seq is prev:
        return n
    same = list(map(operator.is_, islice(seq, n), islice(prev, n)))
    try:
        return same.index(False)
    except ValueError:
        return n


class _Memo:
    """to_json of recently seen records, by identity (a message is encoded once, not once per
    event that carries it)."""

    __slots__ = ("cache",)

    def __init__(self) -> None:
        self.cache: dict[int, tuple[Any, Any]] = {}

    def __call__(self, value: Any) -> Any:
        hit = self.cache.get(id(value))
        if hit is not None and hit[0] is value:
            return hit[1]
        data = to_json(value, partials=False)
        if len(self.cache) > 512:
            self.cache.clear()
        self.cache[id(value)] = (value, data)
        return data


_MESSAGE_EVENTS: Final = ("message_start", "message_end")


@dataclass
class EffectEncoder:
    """Encodes effects for a transcript, delta-encoding the message histories they carry.

    It remembers the last history written under each key, so the same encoder must see the
    effects in transcript order (a replay uses its own one, fed in the same order).
    """

    previous: dict[str, Sequence[Any]] = field(default_factory=dict)
    memo: _Memo = field(default_factory=_Memo)

    def copy(self) -> EffectEncoder:
        return EffectEncoder(dict(self.previous), self.memo)

    def event(self, event: Any) -> Any:
        kind = event.type
        m = self.memo
        if kind in _MESSAGE_EVENTS:
            return {"type": kind, "message": m(event.message)}
        if kind == "turn_end":
            return {"type": kind, "message": m(event.message), "tool_results": [m(r) for r in event.tool_results]}
        if kind == "agent_end":
            return {"type": kind, "messages": [m(x) for x in event.messages]}
        return to_json(event, partials=False)

    def input(self, inp: Input) -> Any:
        if type(inp) is StreamEventReceived:
            ev = inp.event
            if type(ev) is DoneEvent:
                return {"type": "stream_event_received", "id": inp.id,
                        "event": {"type": "done", "reason": ev.reason, "message": self.memo(ev.message)},
                        "at": inp.at}
        return encode_input(inp)

    def seq(self, key: str, messages: Sequence[Any]) -> Any:
        prev = self.previous.get(key)
        keep = _common_prefix(messages, prev) if prev is not None else 0
        self.previous[key] = messages
        m = self.memo
        return {"$seq": key, "keep": keep, "add": [m(x) for x in islice(messages, keep, None)]}

    def context(self, ctx: AgentContext) -> Any:
        return {"type": "AgentContext", "system_prompt": ctx.system_prompt,
                "messages": self.seq("ctx", ctx.messages), "tools": self.seq("ctx_tools", ctx.tools)}

    def encode(self, effect: Effect) -> Any:
        kind = type(effect)
        e: Any = effect
        if kind is Emit:
            if type(e.event) is MessageUpdateEvent:
                return _UPDATE
            return {"type": "emit", "event": self.event(e.event)}
        if kind is CallLlm:
            return {"type": "call_llm", "id": e.id, "model": self.memo(e.model), "thinking_level": e.thinking_level,
                    "system_prompt": e.system_prompt, "messages": self.seq("llm", e.messages),
                    "tools": self.seq("tools", e.tools)}
        if kind is TransformContext or kind is ConvertToLlm:
            return {"type": e.type, "id": e.id, "messages": self.seq("ctx", e.messages)}
        if kind is BeforeToolCall or kind is AfterToolCall:
            out = to_json(_without_context(e.context))
            out["context"] = self.context(e.context.context)
            return {"type": e.type, "id": e.id, "context": out}
        if kind is PrepareNextTurn or kind is ShouldStopAfterTurn:
            p = e.context
            return {"type": e.type, "id": e.id, "context": {
                "type": "PrepareNextTurnContext", "message": to_json(p.message),
                "tool_results": to_json(p.tool_results), "context": self.context(p.context),
                "new_messages": self.seq("new", p.new_messages)}}
        return to_json(effect, partials=False)


def _without_context(ctx: Any) -> Any:
    """A hook context with an empty ``context`` (the encoder writes that one as a delta)."""
    return replace(ctx, context=_EMPTY_CONTEXT)


_EMPTY_CONTEXT: Final = AgentContext()


# --------------------------------------------------------------------------- the recorder


def _header(state: LoopState, config: AgentLoopConfig | None, interpreter: str, created_at: int) -> dict[str, Any]:
    hooks = sorted(hooks_set(config)) if config is not None else sorted(state.hooks)
    return {
        "transcript": FORMAT,
        "version": VERSION,
        "library_version": __version__,
        "created_at": created_at,
        "model": to_json(state.model),
        "system_prompt": state.system_prompt,
        "tools": to_json(state.tools),
        "hooks": hooks,
        "interpreter": interpreter,
        "initial_state": to_json(state),
    }


def _now_ms() -> int:
    import time

    return time.time_ns() // 1_000_000


def _which_interpreter() -> str:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return "sync"
    return "asyncio"


class TranscriptRecorder:
    """Writes a run's transcript; pass it as ``journal=`` to any interpreter.

    >>> import tempfile, os
    >>> from agentcore import AgentContext, AgentLoopConfig, Model
    >>> from interpreters import ScriptedModel, run_agent_loop
    >>> path = os.path.join(tempfile.mkdtemp(), "run.jsonl")
    >>> ctx, cfg = AgentContext(), AgentLoopConfig(model=Model(id="m"))
    >>> _ = run_agent_loop("hi", ctx, cfg, emit=lambda e: None,
    ...                    stream_fn=ScriptedModel(["Hello!"]), journal=TranscriptRecorder(path, ctx, cfg))
    >>> read_transcript(path).steps > 0
    True

    ``context`` and ``config`` must be the ones given to the run: they give the header (model,
    system prompt, tools, hooks, initial state) and the secrets to scrub. The header is written on
    the first step, when the recorder also sees which interpreter runs it. ``flush="entry"``
    writes each step as it happens; ``flush="turn"`` buffers the lines of a turn and writes them
    with one call at its end (faster; a crash loses at most the current turn). ``fsync=True``
    also forces each write to disk. ``secrets`` adds strings that must never be written.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        context: AgentContext | None = None,
        config: AgentLoopConfig | None = None,
        *,
        state: LoopState | None = None,
        flush: FlushMode = "entry",
        fsync: bool = False,
        interpreter: str | None = None,
        secrets: Sequence[str] = (),
    ) -> None:
        if flush not in ("entry", "turn"):
            raise ValueError(f"flush must be 'entry' or 'turn', not {flush!r}")
        if state is None:
            if context is None or config is None:
                raise TypeError("TranscriptRecorder needs the run's context and config (or state=)")
            state = initial_state(context, config)
        self.path = Path(path)
        self.flush_mode: FlushMode = flush
        self.fsync = fsync
        self.interpreter = interpreter
        self.secrets = _known_secrets(config, secrets)
        self.encoder = EffectEncoder()
        self.steps = 0
        self._state: LoopState | None = state
        self._config = config
        self._file: Any = None
        self._buffer: list[str] = []
        self._offset = 0

    @classmethod
    def _appending(cls, path: str | os.PathLike[str], config: AgentLoopConfig | None, *, base_step: int,
                   encoder: EffectEncoder, marker: dict[str, Any], flush: FlushMode = "entry",
                   fsync: bool = False, secrets: Sequence[str] = ()) -> TranscriptRecorder:
        """A recorder that goes on writing an existing transcript after ``base_step`` (resume)."""
        self = cls.__new__(cls)
        self.path = Path(path)
        self.flush_mode = flush
        self.fsync = fsync
        self.interpreter = None
        self.secrets = _known_secrets(config, secrets)
        self.encoder = encoder
        self.steps = base_step
        self._state = None
        self._config = config
        self._file = open(self.path, "ab", buffering=0)
        self._buffer = []
        self._offset = base_step
        self._write(_DUMPS(marker) + "\n", now=True)
        return self

    # -- the Journal protocol

    def record(self, step: int, input: Input, effects: Sequence[Effect]) -> None:
        if self._file is None:
            self._open()
        n = self._offset + step
        self.steps = n
        if type(input) is StreamEventReceived and len(effects) == 1 and type(input.event) in _DELTAS:
            e0 = effects[0]
            if type(e0) is Emit and type(e0.event) is MessageUpdateEvent:
                ev: Any = input.event
                self._write(_DELTA_LINE % (n, input.id, ev.type, ev.content_index, _json_str(ev.delta), input.at),
                            now=False)
                return
        enc = self.encoder.encode
        line = '{"step":%d,"input":%s,"effects":%s}\n' % (
            n, _DUMPS(self.encoder.input(input)), _DUMPS([enc(e) for e in effects]))
        end_of_turn = False
        if self.flush_mode == "turn":
            for e in effects:
                if type(e) is RunEnded or (type(e) is Emit and type(e.event) is TurnEndEvent):
                    end_of_turn = True
                    break
        self._write(line, now=end_of_turn)

    def _open(self) -> None:
        assert self._state is not None
        interpreter = self.interpreter or _which_interpreter()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file = open(self.path, "wb", buffering=0)
        header = _header(self._state, self._config, interpreter, _now_ms())
        self._write(_DUMPS(header) + "\n", now=True)

    def _write(self, line: str, *, now: bool) -> None:
        line = scrub(line, self.secrets)
        if self.flush_mode == "turn" and not now:
            self._buffer.append(line)
            return
        if self._buffer:
            self._buffer.append(line)
            line = "".join(self._buffer)
            self._buffer.clear()
        self._file.write(line.encode("utf-8"))
        if self.fsync:
            os.fsync(self._file.fileno())

    def flush(self) -> None:
        """Write what ``flush="turn"`` holds back."""
        if self._buffer and self._file is not None:
            data = "".join(self._buffer)
            self._buffer.clear()
            self._file.write(data.encode("utf-8"))
            if self.fsync:
                os.fsync(self._file.fileno())

    def close(self) -> None:
        self.flush()
        if self._file is not None:
            self._file.close()
            self._file = None

    def __enter__(self) -> TranscriptRecorder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass


def record_to(path: str | os.PathLike[str], context: AgentContext, config: AgentLoopConfig,
              **options: Any) -> TranscriptRecorder:
    """``TranscriptRecorder(path, context, config, **options)``: reads well in a call."""
    return TranscriptRecorder(path, context, config, **options)


# --------------------------------------------------------------------------- reading


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
    _effects: tuple[Effect, ...] | None = None

    @property
    def effects(self) -> tuple[Effect, ...]:
        """The recorded effects, decoded (``message_update`` emits come back as the input's event)."""
        if self._effects is None:
            self._effects = tuple(_decode_effect(e, self.input) for e in self.effects_json)
        return self._effects


class SeqDelta(dict[str, Any]):
    """A ``{"$seq": key, "keep": n, "add": [...]}`` delta as read back; ``full`` is the whole
    history it stands for (compares equal to the plain JSON object)."""

    full: list[Any]


def expand(value: Any) -> Any:
    """Recorded effect JSON with every ``$seq`` delta replaced by the whole history."""
    if isinstance(value, dict):
        if "$seq" in value:
            full = getattr(value, "full", None)
            if full is None:
                raise ValueError("a $seq delta that was not read by read_transcript")
            return list(full)
        return {k: expand(v) for k, v in value.items()}
    if isinstance(value, list):
        return [expand(v) for v in value]
    return value


def _decode_effect(data: Any, inp: Input) -> Effect:
    if data is _UPDATE or data == _UPDATE:
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

    @property
    def version(self) -> int:
        return int(self.header["version"])

    @property
    def steps(self) -> int:
        return len(self.entries)

    @property
    def initial_state(self) -> LoopState:
        return decode_state(self.header["initial_state"])

    @property
    def inputs(self) -> list[Input]:
        return [e.input for e in self.entries]

    def __iter__(self) -> Iterator[Entry]:
        return iter(self.entries)

    def __len__(self) -> int:
        return len(self.entries)


def decode_state(data: Mapping[str, Any]) -> LoopState:
    """``from_json`` for a ``LoopState``, checked."""
    decoded: LoopState = from_json(data)
    return decoded


def _fail(line: int, problem: str) -> TranscriptError:
    return TranscriptError(f"line {line}: {problem}")


def read_transcript(path: str | os.PathLike[str]) -> Transcript:
    """Read a transcript file.

    A last line without its newline (a write torn by a crash) is dropped with a warning; a
    damaged line anywhere else, an unknown version or a file that is not a transcript raises
    :class:`TranscriptError` naming the line.
    """
    p = Path(path)
    data = p.read_bytes()
    return parse_transcript(data, p)


def parse_transcript(data: bytes, path: Path | None = None) -> Transcript:
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
            "stopped while writing it); it is ignored", RuntimeWarning, stacklevel=3)
        lines.pop()
    if not lines:
        raise _fail(1, "empty file: not an agentcore-fx transcript")
    try:
        header = json.loads(lines[0])
    except ValueError:
        raise _fail(1, "not an agentcore-fx transcript (the header is not JSON)") from None
    if not isinstance(header, dict) or header.get("transcript") != FORMAT:
        raise _fail(1, "not an agentcore-fx transcript (no {\"transcript\": \"agentcore-fx\"} header)")
    version = header.get("version")
    if version != VERSION:
        raise _fail(1, f"unsupported transcript version {version!r} (this reader reads version {VERSION})")
    if "initial_state" not in header:
        raise _fail(1, "the header has no initial_state")
    entries: list[Entry] = []
    seqs: dict[str, list[Any]] = {}
    folds: dict[int, PartialFold] = {}
    resumed: list[int] = []
    for index in range(1, len(lines)):
        lineno = index + 1
        raw = lines[index]
        try:
            text = raw.decode("utf-8")
            obj = json.loads(text)
        except ValueError as exc:
            raise _fail(lineno, f"damaged line (not JSON: {exc})") from None
        if not isinstance(obj, dict):
            raise _fail(lineno, "damaged line (not a JSON object)")
        if "resumed_from_step" in obj:
            n = obj["resumed_from_step"]
            if not isinstance(n, int) or not 0 <= n <= len(entries):
                raise _fail(lineno, f"resumed_from_step {n!r} is not a recorded step")
            del entries[n:]
            seqs = dict(entries[-1].seqs) if entries else {}
            folds.clear()
            resumed.append(n)
            continue
        if "step" not in obj:
            continue  # a line kind from a newer minor revision: ignored
        n = obj["step"]
        if n != len(entries) + 1:
            raise _fail(lineno, f"step {n!r} out of order (expected step {len(entries) + 1})")
        inp_json = obj.get("input")
        effects = obj.get("effects", [])
        if not isinstance(inp_json, dict) or not isinstance(effects, list):
            raise _fail(lineno, "damaged step (input must be an object and effects a list)")
        try:
            inp = from_json(inp_json)
            if type(inp) is StreamEventReceived:
                fold = folds.get(inp.id)
                if fold is None:
                    fold = folds[inp.id] = PartialFold()
                event = fold.apply(inp.event)
                if event is not inp.event:
                    inp = StreamEventReceived(inp.id, event, inp.at)
        except (CodecError, TypeError, KeyError) as exc:
            raise _fail(lineno, f"cannot decode the input: {exc}") from None
        try:
            seqs = _resolve(effects, seqs)
        except (KeyError, TypeError, ValueError) as exc:
            raise _fail(lineno, f"damaged history delta: {exc}") from None
        entries.append(Entry(n, lineno, inp, inp_json, effects, text, seqs))
    return Transcript(path, header, entries, torn, tuple(resumed), size)


def _resolve(value: list[Any], seqs: dict[str, list[Any]]) -> dict[str, list[Any]]:
    """Replace each ``$seq`` delta by a :class:`SeqDelta` knowing its whole history, in order;
    returns the new last-history-per-key map (copied on write: each entry keeps its own)."""
    copied = False

    def delta(v: dict[str, Any]) -> SeqDelta:
        nonlocal seqs, copied
        key, keep, add = v["$seq"], v["keep"], v["add"]
        prev = seqs.get(key, [])
        if not isinstance(keep, int) or not 0 <= keep <= len(prev) or not isinstance(add, list):
            raise ValueError(f"keeps {keep!r} items of a {key} history of {len(prev)}")
        out = SeqDelta(v)
        out.full = prev[:keep] + add
        if not copied:
            seqs = dict(seqs)
            copied = True
        seqs[key] = out.full
        return out

    def walk(v: Any) -> None:
        if isinstance(v, dict):
            for k, x in v.items():
                if isinstance(x, dict) and "$seq" in x:
                    v[k] = delta(x)
                else:
                    walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)

    for item in value:
        if isinstance(item, dict) and item.get("type") != "emit":
            walk(item)
    return seqs
