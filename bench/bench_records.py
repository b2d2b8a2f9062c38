"""The records as they are (frozen, slotted dataclasses) against msgspec Structs: a measurement.

Run: ``python bench/bench_records.py`` (``--quick``: fewer rounds; ``--profile``: also a cProfile
of the tool-loop turn of ``bench/bench_loop.py``, sync and asyncio). Needs ``pip install msgspec``
in the venv; msgspec is not a dependency of agentcore-fx and nothing in the library changes.

Prints three things:

1. One table of medians, ns per operation, for representative real records (a tool call and its
   reply, its result, a stream delta with its partial, a ``message_update``, effects, an input, the
   loop state): build, ``replace``, ``==``, ``hash``, encode to JSON text, decode. Columns: today's
   class; a frozen ``msgspec.Struct`` with the same fields and tag (``gc=False``) without and with
   the class's ``__post_init__`` ported (``msgspec.structs.force_setattr``); a plain slotted,
   non-frozen dataclass; for encoding, the codec (``agentcore.codec.dumps``), the transcript's
   hand-written encoder (``interpreters.transcript``) and ``msgspec.json`` on the Struct and on
   today's dataclasses (with an ``enc_hook``); for decoding, ``agentcore.codec.loads`` and
   ``msgspec.json`` into a tagged union of Structs. The cases run interleaved, in rounds.
2. What one tool turn and one stream delta construct, class by class (counted by wrapping every
   record class's ``__init__`` during a run), and what those constructions cost with each kind of
   class, timed from the very values the run built.
3. With ``--profile``: the top functions by own time under cProfile, and the shares of record
   construction, the core's step logic, the interpreter and the scripted model.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import dataclasses
import functools
import importlib
import os
import pkgutil
import statistics
import sys
import timeit
from collections import Counter
from collections.abc import Callable
from typing import Any, Union

try:
    import msgspec
    from msgspec import Struct
    from msgspec.structs import force_setattr
except ImportError:  # pragma: no cover - the script's only extra requirement
    sys.exit("bench_records.py needs msgspec: pip install msgspec")
from pyrsistent import PVector, pvector

import agentcore
import interpreters
from agentcore import (
    AgentContext,
    AssistantMessage,
    Model,
    Started,
    StreamEventReceived,
    TextContent,
    ToolCall,
    ToolResultMessage,
    ToolSpec,
    Usage,
    initial_state,
    step,
)
from agentcore.codec import dumps, loads
from agentcore.effects import Emit, ExecuteTool
from agentcore.events import MessageEndEvent, MessageUpdateEvent
from agentcore.frozen import FrozenDict, freeze
from agentcore.messages import Cost
from agentcore.stream import PartialAssistantMessage, TextDeltaEvent
from interpreters import ScriptedModel, agent_loop, aio
from interpreters.transcript import EffectEncoder

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_loop  # noqa: E402  (the tool-loop case this script profiles)

# --------------------------------------------------------------------------- Struct mirrors
#
# The same fields, in the same order, with the same defaults and the codec's type tags, so that
# msgspec.json.encode gives the codec's JSON text. Annotations are what msgspec decodes into.
# Each class with a __post_init__ today has the same one here (force_setattr instead of
# object.__setattr__, which a Struct refuses); the "no __post_init__" column uses a copy without.


class _Rec(Struct, frozen=True, gc=False, tag_field="type"):
    pass


class TextContentS(_Rec, tag="text"):
    text: str
    text_signature: str | None = None


class ThinkingContentS(_Rec, tag="thinking"):
    thinking: str
    thinking_signature: str | None = None
    redacted: bool = False


class ImageContentS(_Rec, tag="image"):
    data: str
    mime_type: str


class ToolCallS(_Rec, tag="toolCall"):
    id: str
    name: str
    arguments: Any = msgspec.field(default_factory=FrozenDict)
    thought_signature: str | None = None
    invalid_json: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.arguments, FrozenDict):
            force_setattr(self, "arguments", freeze(self.arguments))


ContentS = Union[TextContentS, ThinkingContentS, ImageContentS, ToolCallS]
UserContentS = Union[TextContentS, ImageContentS]
AssistantContentS = Union[TextContentS, ThinkingContentS, ToolCallS]


class CostS(_Rec, tag="Cost"):
    input: float = 0.0
    output: float = 0.0
    cache_read: float = 0.0
    cache_write: float = 0.0
    total: float = 0.0


class UsageS(_Rec, tag="Usage"):
    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    total_tokens: int = 0
    cost: CostS = msgspec.field(default_factory=CostS)


ZERO_USAGE_S = UsageS()


class AssistantMessageS(_Rec, tag="assistant"):
    content: tuple[AssistantContentS, ...] = ()
    api: str = ""
    provider: str = ""
    model: str = ""
    usage: UsageS = ZERO_USAGE_S
    stop_reason: str = "stop"
    error_message: str | None = None
    response_id: str | None = None
    timestamp: int = 0

    def __post_init__(self) -> None:
        if isinstance(self.content, list):
            force_setattr(self, "content", tuple(self.content))


class UserMessageS(_Rec, tag="user"):
    content: Union[str, tuple[UserContentS, ...]]
    timestamp: int = 0

    def __post_init__(self) -> None:
        if isinstance(self.content, list):
            force_setattr(self, "content", tuple(self.content))


class ToolResultMessageS(_Rec, tag="toolResult"):
    tool_call_id: str
    tool_name: str
    content: tuple[UserContentS, ...] = ()
    details: Any = None
    is_error: bool = False
    usage: UsageS | None = None
    added_tool_names: tuple[str, ...] | None = None
    timestamp: int = 0

    def __post_init__(self) -> None:
        if isinstance(self.content, list):
            force_setattr(self, "content", tuple(self.content))
        force_setattr(self, "details", freeze(self.details))


MessageS = Union[UserMessageS, AssistantMessageS, ToolResultMessageS]


class PartialS(Struct, frozen=True, gc=False):
    """The partial message's four fields (not encoded: the codec writes it as a message)."""

    header: Any
    blocks: tuple = ()
    chunks: tuple = ()
    _content: Any = None


class TextDeltaEventS(_Rec, tag="text_delta"):
    content_index: int
    delta: str
    partial: Any = None  # decoded events have none, as the codec's (partials=False)


class TextDeltaWireS(_Rec, tag="text_delta"):
    """A delta as journals write it: without its partial."""

    content_index: int
    delta: str


class StreamEventReceivedS(_Rec, tag="stream_event_received"):
    id: int
    event: TextDeltaEventS
    at: int = 0


class StreamEventReceivedWireS(_Rec, tag="stream_event_received"):
    id: int
    event: TextDeltaWireS
    at: int = 0


class MessageUpdateEventS(_Rec, tag="message_update"):
    message: Any
    assistant_message_event: Any


class MessageEndEventS(_Rec, tag="message_end"):
    message: MessageS


class EmitS(_Rec, tag="emit"):
    event: MessageEndEventS


class ExecuteToolS(_Rec, tag="execute_tool"):
    id: int
    tool_call: ToolCallS
    args: Any = None

    def __post_init__(self) -> None:  # decoded arguments: frozen, as the codec's raw fields
        force_setattr(self, "args", freeze(self.args))


class ModelCostS(_Rec, tag="ModelCost"):
    input: float = 0.0
    output: float = 0.0
    cache_read: float = 0.0
    cache_write: float = 0.0


class ModelS(_Rec, tag="Model", kw_only=True):
    id: str
    name: str = ""
    api: str = "scripted"
    provider: str = "scripted"
    base_url: str = ""
    reasoning: bool = False
    input: tuple[str, ...] = ("text",)
    cost: ModelCostS = ModelCostS()
    context_window: int = 128_000
    max_tokens: int = 16_384
    headers: Any = None


class ToolSpecS(_Rec, tag="ToolSpec"):
    name: str
    description: str = ""
    parameters: Any = msgspec.field(default_factory=lambda: FrozenDict({"type": "object"}))
    label: str = ""
    execution_mode: str | None = None
    has_prepare_arguments: bool = False

    def __post_init__(self) -> None:
        force_setattr(self, "parameters", freeze(self.parameters))


class StreamingS(_Rec, tag="Streaming"):
    id: int
    partial: AssistantMessageS | None = None
    blocks: tuple[str, ...] = ()


class IdleS(_Rec, tag="Idle"):
    pass


class CompletedTurnS(_Rec, tag="CompletedTurn"):
    message: AssistantMessageS
    tool_results: tuple[ToolResultMessageS, ...]


class RunStateS(_Rec, tag="RunState"):
    """``RunState`` without ``tool_index`` (derived: the codec skips it and rebuilds it)."""

    model: ModelS
    thinking_level: str
    tool_execution: str
    hooks: frozenset[str]
    system_prompt: str
    tools: tuple[ToolSpecS, ...]
    messages: tuple[MessageS, ...]  # a PVector in memory (see __post_init__)
    llm_messages: tuple[MessageS, ...] | None
    new_messages: tuple[MessageS, ...] = ()
    has_more_tool_calls: bool = False
    last_turn: CompletedTurnS | None = None
    turn_open: bool = False
    aborted: bool = False
    next_id: int = 1

    def __post_init__(self) -> None:  # decoded histories become PVectors, as the codec's
        for name in ("messages", "llm_messages", "new_messages"):
            value = getattr(self, name)
            if type(value) is tuple:
                force_setattr(self, name, pvector(value))


class LoopStateS(_Rec, tag="LoopState"):
    phase: Union[StreamingS, IdleS]
    run: RunStateS


@functools.cache
def _bare(cls: type) -> type:
    """A copy of Struct ``cls`` (fields, defaults, tag, config) without its ``__post_init__``."""
    info = msgspec.structs.fields(cls)
    specs = []
    for f in info:
        if f.default_factory is not msgspec.NODEFAULT:
            specs.append((f.name, Any, msgspec.field(default_factory=f.default_factory)))
        elif f.default is not msgspec.NODEFAULT:
            specs.append((f.name, Any, f.default))
        else:
            specs.append((f.name, Any))
    cfg = cls.__struct_config__
    return msgspec.defstruct(cls.__name__ + "Bare", specs, frozen=True, gc=False, tag_field=cfg.tag_field,
                             tag=cfg.tag, kw_only=cls is ModelS)


@functools.cache
def _plain(cls: type) -> type:
    """A plain slotted, non-frozen dataclass with the fields of dataclass ``cls`` (no __post_init__)."""
    specs = []
    for f in dataclasses.fields(cls):
        kwargs: dict[str, Any] = {"kw_only": f.kw_only}
        if f.default is not dataclasses.MISSING:
            kwargs["default"] = f.default
        if f.default_factory is not dataclasses.MISSING:
            kwargs["default_factory"] = f.default_factory
        specs.append((f.name, Any, dataclasses.field(**kwargs)))
    return dataclasses.make_dataclass(cls.__name__ + "Plain", specs, slots=True)


MIRROR: dict[type, type] = {
    TextContent: TextContentS,
    ToolCall: ToolCallS,
    Cost: CostS,
    Usage: UsageS,
    AssistantMessage: AssistantMessageS,
    ToolResultMessage: ToolResultMessageS,
    agentcore.UserMessage: UserMessageS,
    PartialAssistantMessage: PartialS,
    TextDeltaEvent: TextDeltaEventS,
    StreamEventReceived: StreamEventReceivedS,
    MessageUpdateEvent: MessageUpdateEventS,
    MessageEndEvent: MessageEndEventS,
    Emit: EmitS,
    ExecuteTool: ExecuteToolS,
    agentcore.ModelCost: ModelCostS,
    Model: ModelS,
    ToolSpec: ToolSpecS,
    agentcore.state.Streaming: StreamingS,
    agentcore.state.Idle: IdleS,
    agentcore.state.CompletedTurn: CompletedTurnS,
    agentcore.state.RunState: RunStateS,
    agentcore.LoopState: LoopStateS,
}


def to_struct(value: Any) -> Any:
    """Today's record tree as the Struct mirrors (FrozenDict and other values kept as they are)."""
    if type(value) is PartialAssistantMessage:  # its content cache is not part of its value
        return PartialS(to_struct(value.header), to_struct(value.blocks), value.chunks)
    cls = MIRROR.get(type(value))
    if cls is not None:
        return cls(**{f: to_struct(getattr(value, f)) for f in cls.__struct_fields__})
    if type(value) is tuple:
        return tuple(to_struct(v) for v in value)
    if isinstance(value, PVector):
        return pvector(to_struct(v) for v in value)
    return value


def enc_hook(value: Any) -> Any:
    """What msgspec needs for the library's values: FrozenDict (a Mapping, not a dict) and
    pyrsistent's PVector."""
    if type(value) is FrozenDict:
        return value._data
    if isinstance(value, PVector):
        return value.tolist()
    raise NotImplementedError(f"msgspec cannot encode a {type(value).__name__}")


def dec_hook(kind: type, value: Any) -> Any:
    if kind is FrozenDict:
        return freeze(value)
    raise NotImplementedError(kind)


# --------------------------------------------------------------------------- the records


def fixtures() -> list[tuple[str, Any]]:
    """Representative records as a run builds them."""
    call = ToolCall("call_7", "lookup", {"query": "weather in Paris", "limit": 3})
    usage = Usage(input=1200, output=35, cache_read=800, cache_write=0, total_tokens=2035,
                  cost=Cost(0.0012, 0.00035, 0.0001, 0.0, 0.00165))
    reply = AssistantMessage((TextContent("Let me look that up."), call), api="openai-completions",
                             provider="openai", model="gpt-4o-mini", usage=usage, stop_reason="toolUse",
                             response_id="chatcmpl-123", timestamp=1_764_547_200_000)
    result = ToolResultMessage("call_7", "lookup", (TextContent("Sunny, 21 °C"),), details={"source": "cache"},
                               timestamp=1_764_547_200_120)
    p = PartialAssistantMessage.begin(api="openai-completions", provider="openai", model="gpt-4o-mini",
                                      timestamp=1_764_547_200_000, usage=usage)
    ev: Any = p.text_start()
    for word in "It is sunny in Paris today, twenty-one degrees".split():
        ev = ev.partial.text_delta(0, word + " ")
    delta = ev  # a real TextDeltaEvent, its partial holding 8 deltas of text
    update = MessageUpdateEvent(delta.partial, delta)
    received = StreamEventReceived(3, delta, 1_764_547_200_050)
    execute = ExecuteTool(12, call, call.arguments)
    emit = Emit(MessageEndEvent(reply))
    spec = ToolSpec("lookup", "Look something up.", {"type": "object", "properties": {"query": {"type": "string"},
                                                                                        "limit": {"type": "integer"}}})
    history = []
    for i in range(5):
        c = ToolCall(f"h{i}", "lookup", {"query": f"q{i}", "limit": 1})
        history.append(AssistantMessage((c,), usage=usage, stop_reason="toolUse", timestamp=i))
        history.append(ToolResultMessage(f"h{i}", "lookup", (TextContent("ok"),), timestamp=i))
    state0 = initial_state(AgentContext("You are a benchmark.", history, [spec]), model=Model(id="bench"))
    state = step(state0, Started((agentcore.UserMessage("go", timestamp=9),), 9)).unwrap()[0]
    return [
        ("TextContent", TextContent("The weather in Paris is sunny.")),
        ("ToolCall", call),
        ("AssistantMessage (text, call, usage)", reply),
        ("ToolResultMessage", result),
        ("TextDeltaEvent + new partial", delta),
        ("MessageUpdateEvent", update),
        ("StreamEventReceived (a delta)", received),
        ("ExecuteTool effect", execute),
        ("Emit(MessageEndEvent) effect", emit),
        ("RunState (11 messages)", state.run),
        ("LoopState", state),
    ]


# --------------------------------------------------------------------------- timing

NA = None


class Case:
    """One timed statement; ``minus`` is a statement whose time is subtracted (cache emptying).
    ``differs``: what it gives is not what today's code gives (shown with a ``≠``)."""

    differs = False

    def __init__(self, stmt: str, ns: dict[str, Any], minus: str | None = None) -> None:
        self.timer = timeit.Timer(stmt, globals=ns)
        self.minus = timeit.Timer(minus, globals=ns) if minus else None
        self.number = 1
        self.samples: list[float] = []
        self.timer.timeit(1)  # fail early

    def calibrate(self, target: float) -> None:
        n = 1
        while True:
            t = self.timer.timeit(n)
            if t >= target / 4 or n >= 1 << 22:
                break
            n *= 4
        self.number = max(1, int(n * target / max(t, 1e-9)))

    def run(self) -> None:
        t = self.timer.timeit(self.number)
        if self.minus is not None:
            t -= self.minus.timeit(self.number)
        self.samples.append(t / self.number * 1e9)

    @property
    def median(self) -> float:
        return statistics.median(self.samples)


def _unfrozen(value: Any) -> bool:
    """Whether a record tree holds a plain dict or list (a decoder that did not freeze)."""
    if isinstance(value, (dict, list)):
        return True
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return any(_unfrozen(getattr(value, f.name)) for f in dataclasses.fields(value))
    if isinstance(value, (tuple, FrozenDict)):
        return any(_unfrozen(v) for v in (value.values() if isinstance(value, FrozenDict) else value))
    return False


def run_cases(cases: list[Case], rounds: int, target: float) -> None:
    for c in cases:
        c.calibrate(target)
    for _ in range(rounds):
        for c in cases:
            c.run()


def _call_text(cls: type, value: Any, ns: dict[str, Any], prefix: str) -> str:
    """``Cls(v0, v1, k=v2)`` from the fields of today's record ``value``, positional fields
    positionally (a field the Struct mirror lacks, RunState's derived ``tool_index``, left out)."""
    ns[prefix] = cls
    parts = []
    known = getattr(cls, "__struct_fields__", None)
    for i, f in enumerate(dataclasses.fields(type(value))):
        if not f.init or (known is not None and f.name not in known):
            continue
        ns[f"{prefix}_{i}"] = getattr(value, f.name)
        parts.append(f"{f.name}={prefix}_{i}" if f.kw_only else f"{prefix}_{i}")
    return f"{prefix}({', '.join(parts)})"


def _build_stmt(value: Any, ns: dict[str, Any], kind: str) -> str:
    """The statement that builds ``value`` anew with ``kind`` of class (today/struct/bare/plain).
    A delta event is built with its new partial, as ``PartialAssistantMessage.text_delta`` does."""
    def cls_for(v: Any) -> type:
        t = type(v)
        if kind == "today":
            return t
        if kind == "plain":
            return _plain(t)
        return MIRROR[t] if kind == "struct" and "__post_init__" in t.__dict__ else _bare(MIRROR[t])

    if type(value) is TextDeltaEvent:
        p = value.partial
        ns["p_h"], ns["p_b"], ns["p_c"], ns["P"] = p.header, p.blocks, p.chunks, cls_for(p)
        ns["E"], ns["e_i"], ns["e_d"] = cls_for(value), value.content_index, value.delta
        return "E(e_i, e_d, P(p_h, p_b, p_c))"
    return _call_text(cls_for(value), value, ns, "C")


def _deep_copy(value: Any) -> Any:
    """An equal record tree that shares no record with ``value`` (for equality)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        if type(value) is PartialAssistantMessage:
            return PartialAssistantMessage(_deep_copy(value.header), tuple(_deep_copy(b) for b in value.blocks),
                                           value.chunks)
        return type(value)(**{f.name: _deep_copy(getattr(value, f.name))
                              for f in dataclasses.fields(value) if f.init})
    if type(value) is tuple:
        return tuple(_deep_copy(v) for v in value)
    if isinstance(value, PVector):
        return pvector(_deep_copy(v) for v in value)
    if type(value) is FrozenDict:
        return FrozenDict({k: _deep_copy(v) for k, v in value.items()})
    return value


def _plain_tree(value: Any) -> Any:
    """Today's record tree as the plain-dataclass copies (top level only: enough for eq/hash)."""
    cls = _plain(type(value))
    return cls(**{f.name: getattr(value, f.name) for f in dataclasses.fields(value) if f.init})


REPLACE = {
    "TextContent": "text_signature='sig'",
    "ToolCall": "thought_signature='sig'",
    "AssistantMessage (text, call, usage)": "stop_reason='error'",
    "ToolResultMessage": "is_error=True",
    "TextDeltaEvent + new partial": "delta='y'",
    "MessageUpdateEvent": "message=None",
    "StreamEventReceived (a delta)": "at=1",
    "ExecuteTool effect": "id=13",
    "Emit(MessageEndEvent) effect": "event=None",
    "RunState (11 messages)": "next_id=99",
    "LoopState": "phase=None",
}

COLUMNS = ("today", "Struct", "Struct, no post_init", "plain dc", "codec", "transcript", "msgspec(Struct)",
           "msgspec(dc)")


def table(rounds: int, target: float) -> list[tuple[str, str, dict[str, Any]]]:
    """Rows (record, operation, {column: Case | note})."""
    rows: list[tuple[str, str, dict[str, Any]]] = []
    struct_enc = msgspec.json.Encoder(enc_hook=enc_hook)
    transcript = EffectEncoder(digests=False)
    memo = transcript.memo

    def clear() -> None:
        memo.cache.clear()
        memo.texts.clear()
        memo.raws.clear()
        memo.strs.clear()
        memo.history.clear()

    decoders = {
        "content": msgspec.json.Decoder(ContentS, dec_hook=dec_hook),
        "message": msgspec.json.Decoder(MessageS, dec_hook=dec_hook),
        "input": msgspec.json.Decoder(StreamEventReceivedS, dec_hook=dec_hook),
        "effect": msgspec.json.Decoder(Union[ExecuteToolS, EmitS], dec_hook=dec_hook),
        "state": msgspec.json.Decoder(Union[LoopStateS, RunStateS], dec_hook=dec_hook),
    }
    kinds = {"TextContent": "content", "ToolCall": "content", "AssistantMessage (text, call, usage)": "message",
             "ToolResultMessage": "message", "StreamEventReceived (a delta)": "input", "ExecuteTool effect": "effect",
             "Emit(MessageEndEvent) effect": "effect", "RunState (11 messages)": "state", "LoopState": "state"}
    for name, value in fixtures():
        post = "__post_init__" in type(value).__dict__
        # The Struct as today's class would be: with a __post_init__ only where today has one (the
        # mirrors of ExecuteTool and RunState have one for decoding only: freezing, PVectors).
        s = to_struct(value)
        if not post:
            s = _bare(type(s))(**msgspec.structs.asdict(s))
        # build
        build: dict[str, Any] = {}
        for col, kind in (("today", "today"), ("Struct", "struct"), ("Struct, no post_init", "bare"),
                          ("plain dc", "plain")):
            if kind == "bare" and not post and type(value) is not TextDeltaEvent:
                build[col] = "= Struct"
                continue
            ns: dict[str, Any] = {}
            build[col] = Case(_build_stmt(value, ns, kind), ns)
        rows.append((name, "build", build))
        # replace, eq, hash
        change = REPLACE[name]
        other = _deep_copy(value)
        other_s = to_struct(other)
        if not post:
            other_s = _bare(type(other_s))(**msgspec.structs.asdict(other_s))
        plain, plain2 = _plain_tree(value), _plain_tree(other)
        ns = {"x": value, "y": other, "s": s, "t": other_s, "pl": plain, "p2": plain2,
              "dreplace": dataclasses.replace, "sreplace": msgspec.structs.replace}
        rows.append((name, "replace", {"today": Case(f"dreplace(x, {change})", ns),
                                       "Struct": Case(f"sreplace(s, {change})", ns),
                                       "plain dc": Case(f"dreplace(pl, {change})", ns)}))
        assert value == other and s == other_s, name
        rows.append((name, "== (equal, distinct)", {"today": Case("x == y", ns), "Struct": Case("s == t", ns),
                                                   "plain dc": Case("pl == p2", ns)}))
        hashes: dict[str, Any] = {}
        for col, var in (("today", "x"), ("Struct", "s"), ("plain dc", "pl")):
            try:
                hash(ns[var])
                hashes[col] = Case(f"hash({var})", ns)
            except TypeError:
                hashes[col] = "unhashable"
        rows.append((name, "hash", hashes))
        # encode and decode
        if type(value) in (TextDeltaEvent, MessageUpdateEvent):
            continue  # written inside an input / as a digest: see the StreamEventReceived row
        text = dumps(value, partials=False)
        enc: dict[str, Any] = {}
        ns = {"x": value, "s": s, "dumps": dumps, "enc": struct_enc.encode, "clear": clear, "make": memo._make,
              "effect_text": transcript.effect_text, "input_text": transcript.input_text,
              "W": StreamEventReceivedWireS, "D": TextDeltaWireS}
        enc["codec"] = Case("dumps(x, partials=False)", ns)
        if isinstance(value, (Emit, ExecuteTool)):
            clear()
            assert transcript.effect_text(value) == text, name
            enc["transcript"] = Case("clear(); effect_text(x)", ns, minus="clear()")
        elif isinstance(value, StreamEventReceived):
            clear()
            assert transcript.input_text(value) == text, name
            enc["transcript"] = Case("clear(); input_text(x)", ns, minus="clear()")
        elif isinstance(value, (agentcore.LoopState, agentcore.state.RunState)):
            enc["transcript"] = "codec"
        else:
            clear()
            assert memo._make(value) == text, name
            enc["transcript"] = Case("clear(); make(x)", ns, minus="clear()")
        if isinstance(value, StreamEventReceived):
            # A Struct event holding its partial: the journal's form is a partial-less copy.
            stmt = "enc(W(s.id, D(s.event.content_index, s.event.delta), s.at))"
            ns_eval = eval(stmt.replace("enc(", "(", 1), ns)  # noqa: S307 - our own statement
            same = struct_enc.encode(ns_eval) == text.encode()
            enc["msgspec(Struct)"] = Case(stmt, ns)
            enc["msgspec(dc)"] = "n/a: partial"
        else:
            same = struct_enc.encode(s) == text.encode()
            enc["msgspec(Struct)"] = Case("enc(s)", ns)
            enc["msgspec(dc)"] = Case("enc(x)", ns)
        enc["same JSON"] = "yes" if same else "no"
        rows.append((name, "encode to JSON text", enc))
        dec: dict[str, Any] = {}
        ns = {"text": text, "btext": text.encode(), "loads": loads, "dec": decoders[kinds[name]].decode}
        dec["codec"] = Case("loads(text)", ns)
        back = decoders[kinds[name]].decode(text.encode())
        expect = to_struct(loads(text))
        dec["msgspec(Struct)"] = Case("dec(btext)", ns)
        dec["same value"] = "yes" if back == expect else "no"
        try:
            dc_dec = msgspec.json.Decoder(type(value), dec_hook=dec_hook)
            got = dc_dec.decode(text.encode())
            ns["dcdec"] = dc_dec.decode
            dec["msgspec(dc)"] = Case("dcdec(btext)", ns)
            # Fields typed Any (ExecuteTool.args, details) come back as plain dicts, not frozen.
            dec["msgspec(dc)"].differs = got != loads(text) or _unfrozen(got)
        except (TypeError, msgspec.ValidationError) as exc:
            dec["msgspec(dc)"] = "n/a: " + ("union" if "union" in str(exc).lower() else type(exc).__name__)
        rows.append((name, "decode from JSON text", dec))
    cases = [c for _, _, cols in rows for c in cols.values() if isinstance(c, Case)]
    print(f"timing {len(cases)} cases, {rounds} interleaved rounds ...", file=sys.stderr, flush=True)
    run_cases(cases, rounds, target)
    return rows


def fmt_ns(v: float) -> str:
    return f"{v:,.0f}" if v >= 100 else f"{v:.1f}" if v >= 10 else f"{v:.2f}"


def print_rows(rows: list[tuple[str, str, dict[str, Any]]]) -> None:
    cols = ["today", "Struct", "Struct, no post_init", "plain dc", "codec", "transcript", "msgspec(Struct)",
            "msgspec(dc)", "same"]
    head = ["record", "operation", *cols, "Struct/today"]
    lines = [head]
    for name, op, values in rows:
        cells = []
        for c in cols:
            v = values.get("same JSON", values.get("same value")) if c == "same" else values.get(c)
            if isinstance(v, Case):
                cells.append(fmt_ns(v.median) + (" ≠" if v.differs else ""))
            else:
                cells.append("" if v is None else str(v))
        a = values.get("today") if op in ("build", "replace", "== (equal, distinct)", "hash") else values.get("codec")
        b = values.get("Struct") if op in ("build", "replace", "== (equal, distinct)", "hash") else (
            values.get("msgspec(Struct)"))
        ratio = f"{b.median / a.median:.2f}" if isinstance(a, Case) and isinstance(b, Case) else ""
        lines.append([name, op, *cells, ratio])
    widths = [max(len(r[i]) for r in lines) for i in range(len(head))]
    for i, r in enumerate(lines):
        print("  ".join(c.ljust(w) if j < 2 else c.rjust(w) for j, (c, w) in enumerate(zip(r, widths))))
        if i == 0:
            print("  ".join("-" * w for w in widths))
    print("\nns per operation, medians. 'codec' = agentcore.codec (dumps partials=False / loads);"
          " 'transcript' = interpreters.transcript's hand-written encoder, caches emptied first (subtracted);"
          " msgspec(dc) = msgspec.json on today's dataclasses (enc_hook for FrozenDict and PVector; no type tags;"
          " ≠: the value decoded is not today's, its Any fields left as plain dicts)."
          " Struct/today: build..hash against today's class, encode/decode against the codec.")


# --------------------------------------------------------------------------- what a turn builds


def record_classes() -> list[type]:
    out = []
    for pkg in (agentcore, interpreters):
        for info in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + "."):
            try:
                mod = importlib.import_module(info.name)
            except ImportError:
                continue  # optional extras (ray, otel) not installed
            for obj in vars(mod).values():
                if (isinstance(obj, type) and dataclasses.is_dataclass(obj) and obj.__module__ == mod.__name__
                        and "__init__" in obj.__dict__ and obj not in out):
                    out.append(obj)
    return out


def census(run: Callable[[], None]) -> tuple[Counter[type], dict[type, Any]]:
    """How many instances of each record class ``run()`` builds, and the last one of each."""
    counts: Counter[type] = Counter()
    last: dict[type, Any] = {}
    originals = {}
    for cls in record_classes():
        init = cls.__init__

        def counted(self: Any, *args: Any, __init: Any = init, **kwargs: Any) -> None:
            __init(self, *args, **kwargs)
            counts[type(self)] += 1
            last[type(self)] = self

        originals[cls] = init
        cls.__init__ = counted  # type: ignore[misc]
    try:
        run()
    finally:
        for cls, init in originals.items():
            cls.__init__ = init  # type: ignore[misc]
    return counts, last


@functools.cache
def _any_struct(cls: type, gc: bool = False) -> type:
    """A frozen Struct with the fields of dataclass ``cls`` (construction cost only)."""
    return msgspec.defstruct(cls.__name__ + "AnyS", [(f.name, Any) for f in dataclasses.fields(cls) if f.init],
                             frozen=True, gc=gc)


def construction_costs(samples: dict[type, Any], rounds: int, target: float, extra: list[Case]
                       ) -> dict[type, dict[str, float]]:
    """ns per construction of each class, timed from ``samples`` (the run's own values); the
    ``extra`` cases (the runs themselves) are timed in the same interleaved rounds."""
    cases: dict[type, dict[str, Case]] = {}
    for cls, value in samples.items():
        ns: dict[str, Any] = {}
        today = _call_text(cls, value, ns, "C")
        ns["S"], ns["SG"], ns["PL"] = _any_struct(cls), _any_struct(cls, True), _plain(cls)
        cases[cls] = {"today": Case(today, ns), "Struct": Case("S" + today[1:], ns),
                      "Struct gc": Case("SG" + today[1:], ns), "plain dc": Case("PL" + today[1:], ns)}
        post = cls.__dict__.get("__post_init__")
        if post is not None:
            ns["post"], ns["v"] = post, value
            cases[cls]["post_init"] = Case("post(v)", ns)
    run_cases([c for d in cases.values() for c in d.values()] + extra, rounds, target)
    return {cls: {k: c.median for k, c in d.items()} for cls, d in cases.items()}


def _tool_loop_sync(turns: int) -> Callable[[], None]:
    def run() -> None:
        ctx = AgentContext("", bench_loop.history(10), [bench_loop.noop])
        model = ScriptedModel(bench_loop.script(turns, "noop"), chunk_size=0)
        agent_loop("go", ctx, bench_loop.CONFIG, stream_fn=model).result()
    return run


def _tool_loop_aio(turns: int) -> Callable[[], None]:
    def run() -> None:
        ctx = AgentContext("", bench_loop.history(10), [bench_loop.anoop])
        model = ScriptedModel(bench_loop.script(turns, "anoop"), chunk_size=0)

        async def main() -> None:
            await aio.agent_loop("go", ctx, bench_loop.CONFIG, stream_fn=model).result()
        asyncio.run(main())
    return run


def _stream_sync(deltas: int) -> Callable[[], None]:
    def run() -> None:
        model = ScriptedModel(["x" * deltas], chunk_size=1)
        for _ in agent_loop("go", AgentContext("", [], []), bench_loop.CONFIG, stream_fn=model):
            pass
    return run


def _stream_aio(deltas: int) -> Callable[[], None]:
    def run() -> None:
        model = ScriptedModel(["x" * deltas], chunk_size=1)

        async def main() -> None:
            async for _ in aio.agent_loop("go", AgentContext("", [], []), bench_loop.CONFIG, stream_fn=model):
                pass
        asyncio.run(main())
    return run


def print_census(rounds: int, target: float) -> None:
    turns, deltas = 300, 10_000
    runs = [("sync tool turn", _tool_loop_sync(turns), turns), ("asyncio tool turn", _tool_loop_aio(turns), turns),
            ("sync delta", _stream_sync(deltas), deltas), ("asyncio delta", _stream_aio(deltas), deltas)]
    counted = [(label, *census(run), n) for label, run, n in runs]
    samples: dict[type, Any] = {}
    for _, _, last, _ in counted:
        samples.update(last)
    print(f"timing construction of {len(samples)} record classes ...", file=sys.stderr, flush=True)
    whole_cases = {label: Case("run()", {"run": run}) for label, run, _ in runs}  # unwrapped, interleaved
    cost = construction_costs(samples, rounds, target, list(whole_cases.values()))
    whole = {label: whole_cases[label].median / 1000 / n for label, _, n in runs}  # µs per unit
    for i, (label, counts, _, n) in enumerate(counted):
        if i % 2 == 1 and counts == counted[i - 1][1]:
            print(f"\n{label}: the same records as the {counted[i - 1][0]}; the {label} itself:"
                  f" {whole[label]:.1f} µs (median, unwrapped)")
            continue
        print(f"\n{label}: records built per unit (counted over {n:,} units), ns per construction from the run's"
              " own values (Struct: frozen, gc=False; +post_init: the class's __post_init__ on its own)")
        head = ["class", "per unit", "today", "Struct", "+post_init", "plain dc"]
        lines = [head]
        tot: Counter[str] = Counter()
        for cls, k in sorted(counts.items(), key=lambda kv: -kv[1] * cost[kv[0]]["today"]):
            per = k / n
            c = cost[cls]
            post = c.get("post_init", 0.0)
            tot["today"] += per * c["today"]
            tot["Struct"] += per * (c["Struct"] + post)
            tot["Struct gc"] += per * (c["Struct gc"] + post)
            tot["plain"] += per * (c["plain dc"] + post)
            tot["core today"] += per * c["today"] if cls.__module__.startswith("agentcore") else 0
            tot["core Struct"] += per * (c["Struct"] + post) if cls.__module__.startswith("agentcore") else 0
            if per < 0.05:
                continue
            lines.append([f"{cls.__module__}.{cls.__qualname__}", f"{per:.2f}", fmt_ns(c["today"]),
                          fmt_ns(c["Struct"]), fmt_ns(post) if post else "", fmt_ns(c["plain dc"])])
        widths = [max(len(r[k]) for r in lines) for k in range(len(head))]
        for k, r in enumerate(lines):
            print("  ".join(c.ljust(w) if j == 0 else c.rjust(w) for j, (c, w) in enumerate(zip(r, widths))))
            if k == 0:
                print("  ".join("-" * w for w in widths))
        unit = whole[label]
        print(f"the {label} itself: {unit:.1f} µs (median, unwrapped). Its record construction (each with its"
              f" class's __post_init__ work): today {tot['today'] / 1000:.2f} µs ({tot['today'] / 1000 / unit:.0%}),"
              f" as Structs {tot['Struct'] / 1000:.2f} µs (gc=True: {tot['Struct gc'] / 1000:.2f} µs), as plain"
              f" dataclasses {tot['plain'] / 1000:.2f} µs;"
              f" agentcore's own records alone {tot['core today'] / 1000:.2f} -> {tot['core Struct'] / 1000:.2f} µs")


# --------------------------------------------------------------------------- profile

CATEGORIES = ("record construction (dataclass __init__, __post_init__, replace)", "record eq/hash",
              "frozen values (freeze/thaw, FrozenDict)", "core step logic (agentcore/)",
              "interpreter (interpreters/)", "scripted model (interpreters/streams/scripted.py)", "asyncio",
              "other (stdlib, pyrsistent, validators)")


def category(code: Any) -> str | None:
    """The category of a profiled function (``None``: a builtin, charged to its callers)."""
    if isinstance(code, str):
        return None
    path, name = code.co_filename.replace(os.sep, "/"), code.co_name
    if path == "<string>":  # code made by exec: dataclass methods, compiled validators
        if name == "__init__":
            return CATEGORIES[0]
        return CATEGORIES[1] if name in ("__eq__", "__hash__") else CATEGORIES[7]
    if name == "__post_init__" or (path.endswith("/dataclasses.py") and name in ("replace", "_replace")):
        return CATEGORIES[0]
    if path.endswith("agentcore/frozen.py"):
        return CATEGORIES[2]
    if "/agentcore/" in path:
        return CATEGORIES[3]
    if path.endswith("interpreters/streams/scripted.py"):
        return CATEGORIES[5]
    if "/interpreters/" in path:
        return CATEGORIES[4]
    if "/asyncio/" in path:
        return CATEGORIES[6]
    return CATEGORIES[7]


def _label(code: Any, inits: dict[Any, type]) -> tuple[str, str]:
    if isinstance(code, str):
        return code.removeprefix("<").removesuffix(">")[:44], "builtin"
    cls = inits.get(code)
    if cls is not None:
        return f"{cls.__qualname__}.__init__ (dataclass)", f"{cls.__module__}"
    where = code.co_filename if code.co_filename == "<string>" else os.path.basename(code.co_filename)
    return code.co_qualname[:44], f"{where}:{code.co_firstlineno}"


def profile(label: str, run: Callable[[], None], turns: int) -> None:
    """cProfile's raw entries, one per code object (``pstats`` would merge the many dataclass
    ``__init__`` methods, which share the file name ``<string>`` and line 2, into one)."""
    run()  # warm
    prof = cProfile.Profile()
    prof.enable()
    run()
    prof.disable()
    entries = prof.getstats()
    inits = {cls.__init__.__code__: cls for cls in record_classes()}
    total = sum(e.inlinetime for e in entries)
    shares: Counter[str] = Counter()
    for e in entries:
        cat = category(e.code)
        if cat is not None:
            shares[cat] += e.inlinetime
        for sub in e.calls or ():
            if isinstance(sub.code, str):  # a builtin this function called: charged to it
                shares[cat or CATEGORIES[7]] += sub.inlinetime
    print(f"\ncProfile, {label}: {turns} turns, {total * 1e6 / turns:.0f} µs per turn under the profiler")
    print(f"  {'top 25 by own time':44} {'where':28} {'calls/turn':>10} {'µs/turn':>8} {'share':>6}")
    for e in sorted(entries, key=lambda e: -e.inlinetime)[:25]:
        name, where = _label(e.code, inits)
        print(f"  {name:44} {where[:28]:28} {e.callcount / turns:10.1f} {e.inlinetime * 1e6 / turns:8.2f}"
              f" {e.inlinetime / total:6.1%}")
    print("  by category (builtins charged to their callers):")
    for cat in CATEGORIES:
        print(f"    {cat:66} {shares[cat] * 1e6 / turns:8.2f} µs/turn {shares[cat] / total:6.1%}")


# --------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer rounds")
    parser.add_argument("--profile", action="store_true", help="also cProfile the tool-loop turn")
    args = parser.parse_args(argv)
    if isinstance(TextContent("x"), msgspec.Struct):
        sys.exit("bench_records.py compares the frozen-dataclass records of agentcore-fx 0.3.0 with msgspec "
                 "Structs, and this checkout's records are Structs already (0.4.0 adopted them). To reproduce "
                 "the evaluation, run it in a checkout of the evaluated code: git worktree add ../agentcore-0.3 "
                 "939b26f && cd ../agentcore-0.3 && pip install -e . msgspec && python bench/bench_records.py")
    rounds, target = (5, 0.002) if args.quick else (15, 0.005)
    print(f"Python {sys.version.split()[0]}, msgspec {msgspec.__version__}; {rounds} rounds per case\n")
    print_rows(table(rounds, target))
    print_census(rounds, target)
    if args.profile:
        profile("sync interpreter", _tool_loop_sync(300), 300)
        profile("asyncio interpreter", _tool_loop_aio(300), 300)


if __name__ == "__main__":
    main()
