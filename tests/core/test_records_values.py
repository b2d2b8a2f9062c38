"""Every record the library defines: its defaults are values of its field types, and it pickles
and round-trips (pickle, and JSON where the codec writes it).

The records are found by walking the modules of ``agentcore`` and ``interpreters``: every
msgspec struct and every dataclass defined there. Sample instances are built from the field
types (:func:`sample`): once with the defaults (only the required fields given) and once with
every field given. What cannot be built or checked is listed, and that fails the test: a new
record is covered the day it is added.
"""

from __future__ import annotations

import collections.abc
import dataclasses
import importlib
import pickle
import pkgutil
import types
import typing
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, ClassVar

import httpx
import msgspec
import msgspec.structs
import pytest
from pyrsistent import PVector, pvector

import agentcore
import interpreters
from agentcore import AgentLoopConfig, Model
from agentcore.call_ids import CallIds, taken_call_ids
from agentcore.codec import CodecError, from_json, to_json
from agentcore.frozen import FrozenDict
from agentcore.records import type_problem
from agentcore.stream import PartialAssistantMessage
from agentcore.tools import AgentTool, spec_of


def _modules() -> Iterator[types.ModuleType]:
    for package in (agentcore, interpreters):
        yield package
        for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            if not info.name.endswith("__main__"):  # the command itself: importing it runs it
                yield importlib.import_module(info.name)


def _records() -> dict[str, type]:
    """``module.Name`` → every struct and dataclass defined in the library's modules."""
    found: dict[str, type] = {}
    for module in _modules():
        for name, obj in vars(module).items():
            if (isinstance(obj, type) and obj.__module__ == module.__name__
                    and (issubclass(obj, msgspec.Struct) or dataclasses.is_dataclass(obj))):
                found[f"{module.__name__}.{name}"] = obj
    return found


def _is_value(cls: type) -> bool:
    """A record (a struct, or a frozen dataclass), not an interpreter's working state."""
    return issubclass(cls, msgspec.Struct) or bool(cls.__dataclass_params__.frozen)  # type: ignore[attr-defined]


RECORDS = _records()

def _public(key: str, cls: type) -> bool:
    return key.rpartition(".")[2] in getattr(importlib.import_module(cls.__module__), "__all__", ())


PUBLIC = {key: cls for key, cls in RECORDS.items() if _is_value(cls) and _public(key, cls)}


def test_the_walk_finds_the_records_of_every_kind() -> None:
    names = {key.rpartition(".")[2] for key in PUBLIC}
    for expected in ("LoopState", "RunState", "Suspended", "Suspension", "Started", "Resumed", "ToolFinished",
                     "CallLlm", "ExecuteTool", "RunSuspended", "AgentStartEvent", "MessageUpdateEvent",
                     "TextDeltaEvent", "AgentLoopConfig", "AgentContext", "BeforeToolCallContext",
                     "AfterToolCallResult", "NextTurn", "UserMessage", "Usage", "Model", "ToolSpec", "AgentTool",
                     "StreamOptions", "ReplayOptions", "RunJob", "RunResult"):
        assert expected in names
    assert len(RECORDS) > 150


def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _field_defaults(cls: type) -> Iterator[tuple[str, str, Any]]:
    """``(field, how, default value)`` for each field that has a default."""
    if issubclass(cls, msgspec.Struct):
        for info in msgspec.structs.fields(cls):
            if info.default is not msgspec.NODEFAULT:
                yield info.name, "default", info.default
            elif info.default_factory is not msgspec.NODEFAULT:
                yield info.name, "default_factory()", info.default_factory()
    else:
        for f in dataclasses.fields(cls):  # type: ignore[arg-type]
            if f.default is not dataclasses.MISSING:
                yield f.name, "default", f.default
            elif f.default_factory is not dataclasses.MISSING:
                yield f.name, "default_factory()", f.default_factory()


def test_every_default_is_a_value_of_its_field_type() -> None:
    wrong: list[str] = []
    unchecked: list[str] = []
    checked = 0
    for key, cls in sorted(RECORDS.items()):
        try:
            hints = _hints(cls)
        except Exception as exc:  # noqa: BLE001 - listed below
            unchecked.append(f"{key}: its field types do not resolve ({type(exc).__name__}: {exc})")
            continue
        for name, how, value in _field_defaults(cls):
            checked += 1
            if isinstance(value, (msgspec.structs.FieldInfo, dataclasses.Field)) or type(value).__name__ == "Field":
                wrong.append(f"{key}.{name}: its {how} is a field specifier ({value!r}), not a value")
                continue
            problem = type_problem(value, hints.get(name, Any), f"{key}.{name} ({how})")
            if problem is not None:
                wrong.append(problem)
    assert not unchecked, "\n".join(unchecked)
    assert not wrong, "\n".join(wrong)
    assert checked > 300


def test_the_config_extra_default_is_an_empty_mapping_of_its_own() -> None:
    one, two = AgentLoopConfig(model=Model(id="m")), AgentLoopConfig(model=Model(id="m"))
    assert isinstance(one.extra, Mapping) and dict(one.extra) == {} and one.extra is not two.extra
    assert pickle.loads(pickle.dumps(one)) == one


# --------------------------------------------------------------------------- samples


def a_function(*args: Any, **kwargs: Any) -> None:
    """A callable sample (module-level, so it pickles by reference)."""


class CannotBuild(Exception):
    pass


def _explicit() -> dict[type, Any]:
    """Samples of the records whose fields are checked against each other (a made-up value of
    each field's type is refused, as it should be), and of abstract field types."""
    from interpreters.evals import NoError
    from interpreters.evals.evaluators import Evaluator
    from interpreters.streams.cassette import MatchPolicy

    return {MatchPolicy: MatchPolicy("strict", {"system_prompt": "key"}), Evaluator: NoError()}


EXPLICIT = _explicit()


def sample(tp: Any, full: bool, depth: int = 0) -> Any:
    """A value of the type ``tp``: the first member of a union, one item in a collection,
    records built with :func:`build`."""
    if depth > 12:
        raise CannotBuild(f"{tp} nests too deep")
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if tp is Any or tp is object:
        return FrozenDict({"key": (1, "value")})
    if tp in EXPLICIT:
        return EXPLICIT[tp]
    if tp is None or tp is type(None):
        return None
    if tp in (str, int, float, bool):
        return {str: "text", int: 3, float: 1.5, bool: True}[tp]
    if tp is bytes:
        return b"bytes"
    if tp is type:
        return str
    if tp is Path:
        return Path("some/path")
    if origin is typing.Literal:
        return args[0]
    if origin is typing.Union or origin is types.UnionType:
        members = [a for a in args if a is not type(None)] if full else list(args)
        problems = []
        for member in members:
            try:
                return sample(member, full, depth + 1)
            except CannotBuild as exc:
                problems.append(str(exc))
        raise CannotBuild("; ".join(problems))
    if origin is ClassVar:
        return sample(args[0], full, depth + 1)
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return (sample(args[0], full, depth + 1),)
        return tuple(sample(a, full, depth + 1) for a in args if a != ())
    if origin in (PVector, collections.abc.Sequence):  # the codec reads a Sequence field as a PVector
        return pvector([sample(args[0] if args else Any, full, depth + 1)])
    if origin in (list, collections.abc.MutableSequence):
        return [sample(args[0] if args else Any, full, depth + 1)]
    if origin in (frozenset, set, collections.abc.Set):
        item = sample(args[0] if args else str, full, depth + 1)
        return frozenset({item}) if origin is not set else {item}
    if tp is CallIds:
        return CallIds(["text"])
    if origin in (dict, collections.abc.Mapping, collections.abc.MutableMapping):
        key_type, value_type = args if args else (str, Any)
        pairs = {sample(key_type, full, depth + 1): sample(value_type, full, depth + 1)}
        return pairs if origin is not collections.abc.Mapping else FrozenDict(pairs)
    if origin is collections.abc.Callable:
        return a_function
    if tp is FrozenDict:
        return FrozenDict({"key": "value"})
    if tp is PartialAssistantMessage:  # a header without content, and the blocks streamed so far
        started = PartialAssistantMessage.begin(model="m", timestamp=3).text_start()
        return PartialAssistantMessage.text_delta(started.partial, 0, "streamed").partial
    if tp is httpx.Request:
        return httpx.Request("POST", "https://example.invalid/v1", json={"key": "value"})
    if isinstance(tp, type) and (issubclass(tp, msgspec.Struct) or dataclasses.is_dataclass(tp)):
        return build(tp, full, depth + 1)
    raise CannotBuild(f"no sample for {tp!r}")


def build(cls: type, full: bool, depth: int = 0) -> Any:
    """An instance of ``cls``: required fields given (every field when ``full``)."""
    if cls in EXPLICIT:
        return EXPLICIT[cls]
    try:
        hints = _hints(cls)
    except Exception as exc:  # noqa: BLE001 - the caller lists it
        raise CannotBuild(f"the field types of {cls.__name__} do not resolve ({type(exc).__name__}: {exc})") from None
    kwargs: dict[str, Any] = {}
    if issubclass(cls, msgspec.Struct):
        fields = [(f.name, f.required) for f in msgspec.structs.fields(cls)]
    else:
        fields = [(f.name, f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING)
                  for f in dataclasses.fields(cls) if f.init]  # type: ignore[arg-type]
    for name, required in fields:
        if required or full:
            kwargs[name] = sample(hints.get(name, Any), full, depth)
    try:
        return cls(**kwargs)
    except Exception as exc:  # noqa: BLE001 - the caller lists it
        raise CannotBuild(f"{cls.__name__}(**{kwargs!r:.200}) raised {type(exc).__name__}: {exc}") from None


def _same(a: Any, b: Any) -> bool:
    """Equal; records that compare by identity (a tool, a partial message), and records that
    hold one, are compared field by field (a partial message as the message it stands for)."""
    if type(a) is not type(b):
        return False
    if a == b:
        return True
    if isinstance(a, PartialAssistantMessage):
        return bool(a.to_message() == b.to_message())
    if isinstance(a, httpx.Request):  # compares by identity
        return (a.method, a.url, a.headers.raw, a.content) == (b.method, b.url, b.headers.raw, b.content)
    if isinstance(a, msgspec.Struct):
        return all(_same(getattr(a, f), getattr(b, f)) for f in a.__struct_fields__)
    if dataclasses.is_dataclass(a):
        return all(_same(getattr(a, f.name), getattr(b, f.name)) for f in dataclasses.fields(a))
    if isinstance(a, (tuple, list, PVector)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, Mapping):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return False


# Records that are not written as JSON by design, and why; every other struct must round-trip.
NOT_JSON: dict[str, str] = {
    "agentcore.records.Record": "the base class of records: never an instance of its own",
    "agentcore.records.Message": "the base class of messages: never an instance of its own",
    "agentcore.batch.BatchDone": "a tool batch's outcome within one step of the core: never in a state, an "
                                 "effect, an input or a transcript",
    "agentcore.batch.BatchPaused": "a tool batch's outcome within one step of the core: never in a state, an "
                                   "effect, an input or a transcript",
}


def as_written(value: Any) -> Any:
    """What the codec promises to read back: a tool is written as its spec (the code does not
    travel in JSON), the tool call ids a run has taken are those of its conversation (derived,
    not written), everything else as it is."""
    if isinstance(value, AgentTool):
        return spec_of(value)
    if isinstance(value, msgspec.Struct):
        changes = {f: as_written(getattr(value, f)) for f in value.__struct_fields__}
        if "call_ids" in changes and "new_messages" in changes:  # a RunState
            changes["call_ids"] = taken_call_ids(changes["messages"], changes["new_messages"])
        changed = {f: v for f, v in changes.items() if v is not getattr(value, f)}
        return msgspec.structs.replace(value, **changed) if changed else value
    if isinstance(value, PVector):
        items = [as_written(x) for x in value]
        return pvector(items) if any(x is not y for x, y in zip(items, value)) else value
    if isinstance(value, tuple):
        items = [as_written(x) for x in value]
        return tuple(items) if any(x is not y for x, y in zip(items, value)) else value
    return value


def _samples() -> tuple[list[tuple[str, Any]], list[str]]:
    built: list[tuple[str, Any]] = []
    failed: list[str] = []
    for key, cls in sorted(PUBLIC.items()):
        for full in (False, True):
            try:
                built.append((f"{key} ({'every field' if full else 'defaults'})", build(cls, full)))
            except CannotBuild as exc:
                failed.append(f"{key}: {exc}")
    return built, failed


SAMPLES, UNBUILT = _samples()


def test_every_public_record_has_samples() -> None:
    assert not UNBUILT, "could not build:\n" + "\n".join(UNBUILT)
    assert {key.partition(" ")[0] for key, _ in SAMPLES} == set(PUBLIC)


@pytest.mark.parametrize(("key", "value"), SAMPLES, ids=[key for key, _ in SAMPLES])
def test_every_public_record_pickles(key: str, value: Any) -> None:
    again = pickle.loads(pickle.dumps(value))
    assert _same(again, value)


@pytest.mark.parametrize(("key", "value"), SAMPLES, ids=[key for key, _ in SAMPLES])
def test_every_record_the_codec_writes_reads_back(key: str, value: Any) -> None:
    name = key.partition(" ")[0]
    try:
        data = to_json(value)
    except CodecError as exc:
        # A dataclass the codec does not take is not sent as JSON; a struct must be.
        assert not isinstance(value, msgspec.Struct) or name in NOT_JSON, f"{key}: {exc}"
        return
    assert name not in NOT_JSON, f"{key} is written after all: take it off NOT_JSON"
    assert _same(from_json(data), as_written(value)), data


def test_the_sample_builder_checks_what_it_builds() -> None:
    """The samples are values of their types (the builder is not fooled by its own output)."""
    for key, value in SAMPLES:
        problem = type_problem(value, type(value), key)
        assert problem is None, problem


def test_a_wrong_default_is_caught() -> None:
    """The check of defaults fails on the mistake it exists for (a field specifier of one kind
    used in a record of the other kind)."""

    @dataclasses.dataclass(frozen=True)
    class Bad:
        extra: Mapping[str, Any] = msgspec.field(default_factory=dict)

    (name, how, value), = _field_defaults(Bad)
    assert type(value).__name__ == "Field"
    assert type_problem(value, _hints_of_local(Bad)["extra"], "Bad.extra") == (
        "Bad.extra is a Field, not an object")


def _hints_of_local(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls, globals())


def test_callables_pickle_by_reference() -> None:
    assert pickle.loads(pickle.dumps(a_function)) is a_function
    assert isinstance(a_function, Callable)  # type: ignore[arg-type]
