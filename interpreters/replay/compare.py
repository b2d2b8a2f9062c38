"""Comparing a replay with its recording: the options that relax the comparison, the report of
where a run stopped matching (:class:`Divergence`, raised as :class:`ReplayDivergence`) and the
:class:`Comparator` that checks each step's effects against the recorded ones, with the headline
and diff that say what changed. Every mode of replay (strict, LLM-only, crash resume) compares
through it."""

from __future__ import annotations

import difflib
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

from agentcore import (
    AgentEvent,
    AgentMessage,
    Effect,
    Emit,
    LoopState,
)
from agentcore.codec import encode_bytes, parse, to_json
from agentcore.events import MessageUpdateEvent
from agentcore.json_diff import MISSING, first_difference
from agentcore.records import replace

from ..secrets import scrub_json
from ..transcript import (
    DIGESTS_VERSION,
    VERSION,
    EffectEncoder,
    Entry,
    Transcript,
    compact_json,
    expand,
    is_update,
    read_transcript,
    update_digest,
)

__all__ = [
    "LOOP_ORDER_VERSION",
    "OLD_LOOP_ORDER",
    "Comparator",
    "Divergence",
    "DivergenceKind",
    "ReplayDivergence",
    "ReplayOptions",
    "ReplayResult",
    "Source",
    "load",
]

DivergenceKind = Literal["effect", "rejected", "out_of_recording", "left_over"]
Source = Transcript | str | os.PathLike[str]


@dataclass(frozen=True, slots=True)
class ReplayOptions:
    """Relaxations of the comparison (all off: exact)."""

    ignore_timestamps: bool = False
    """Ignore every ``at`` and ``timestamp`` field."""
    ignore_system_prompt: bool = False
    """Ignore every ``system_prompt`` field."""
    tool_calls_only: bool = False
    """Compare only the tool calls: name and arguments of each ``execute_tool`` and of the
    tool calls of each assistant message."""


@dataclass(frozen=True, slots=True)
class Divergence:
    """Where a replay stopped matching its recording."""

    kind: DivergenceKind
    step: int
    turn: int
    expected: Any
    actual: Any
    diff: str
    detail: str
    recorded_version: int = VERSION
    """The format version of the transcript (older ones were recorded by an older loop)."""

    def __str__(self) -> str:
        head = {
            "effect": "replay diverged",
            "rejected": "replay diverged: the core rejected a recorded input",
            "out_of_recording": "replay ran out of recorded entries",
            "left_over": "replay finished with recorded entries left over",
        }[self.kind]
        lines = [f"{head} at step {self.step} (turn {self.turn}), {self.detail}"
                 if self.kind == "effect" and self.detail.startswith("effect ")
                 else f"{head} at step {self.step} (turn {self.turn}): {self.detail}"]
        if self.recorded_version < LOOP_ORDER_VERSION:
            lines.append(OLD_LOOP_ORDER.format(version=self.recorded_version))
        if self.diff:
            lines.append(self.diff)
        return "\n".join(lines)


LOOP_ORDER_VERSION: Final = 3
"""The first transcript version recorded with today's turn order."""

OLD_LOOP_ORDER: Final = (
    "note: this transcript has format version {version}: it was recorded by a library whose loop "
    "ran prepare_next_turn after should_stop_after_turn and polled steering again before each "
    "turn. Today's loop (format version 3 on) runs prepare_next_turn right after turn_end and polls "
    "steering once per turn, so a run that used those hooks, or a thinking level with a model "
    "that does not reason, replays differently. Record it again with this version."
)


class ReplayDivergence(AssertionError):
    """A replay stopped: ``report`` says where and how. ``version`` is the transcript's format
    version (a report on an older transcript says what changed since)."""

    def __init__(self, report: Divergence, version: int | None = None) -> None:
        if version is not None and version != report.recorded_version:
            report = replace(report, recorded_version=version)
        super().__init__(str(report))
        self.report = report


@dataclass(slots=True)
class ReplayResult:
    events: list[AgentEvent]
    messages: list[AgentMessage]
    state: LoopState
    steps: int
    finished: bool


# --------------------------------------------------------------------------- comparing


def load(source: Source) -> Transcript:
    return source if isinstance(source, Transcript) else read_transcript(source)


def _pretty(value: Any) -> str:
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False, default=str)


def _udiff(expected: Any, actual: Any, label: str = "effect") -> str:
    return "\n".join(difflib.unified_diff(
        _pretty(expected).splitlines(), _pretty(actual).splitlines(),
        f"recorded {label}", f"replayed {label}", lineterm="", n=3))


def _strip(value: Any, keys: frozenset[str]) -> Any:
    if isinstance(value, dict):
        return {k: _strip(v, keys) for k, v in value.items() if k not in keys}
    if isinstance(value, list):
        return [_strip(v, keys) for v in value]
    return value


def _full(effect: Effect) -> Any:
    if type(effect) is Emit and type(effect.event) is MessageUpdateEvent:
        return {"type": "emit", "event": {"type": "message_update"}}
    return to_json(effect, partials=False)


def _tool_view(effects: Sequence[Any]) -> list[Any]:
    out: list[Any] = []
    for e in effects:
        if not isinstance(e, dict):
            continue
        if e.get("type") == "execute_tool":
            out.append(["execute_tool", e["tool_call"]["name"], e["args"]])
        elif e.get("type") == "emit":
            ev = e.get("event", {})
            msg = ev.get("message") if ev.get("type") == "message_end" else None
            if isinstance(msg, dict) and msg.get("type") == "assistant":
                calls = [[c.get("name"), c.get("arguments")] for c in msg.get("content", [])
                         if isinstance(c, dict) and "arguments" in c]
                out.append(["assistant_tool_calls", calls])
    return out


def _describe(effect: Any) -> str:
    if not isinstance(effect, dict):
        return repr(effect)
    kind = effect.get("type", "?")
    if kind == "emit":
        return f"emit {effect.get('event', {}).get('type', '?')}"
    if kind == "execute_tool":
        return f"execute_tool {effect.get('tool_call', {}).get('name')}"
    return str(kind)


def _shown(value: Any) -> str:
    """A JSON value in a headline: Python's repr, cut at 80 characters."""
    if value is MISSING:
        return "nothing"
    text = repr(value) if not isinstance(value, (dict, list)) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 80 else text[:77] + "..."


def _streamed(event: Any) -> str:
    """A stream event in a headline: its type, block and own fields."""
    kind = event.type
    where = f"{kind} of block {getattr(event, 'content_index', '?')}"
    if kind == "text_end":
        return f"{where}: {_shown(event.content.text)}"
    if kind == "thinking_end":
        return f"{where}: {_shown(event.content.thinking)}" + (" (redacted)" if event.content.redacted else "")
    if kind == "thinking_start":
        return where + (" (redacted)" if event.redacted else "")
    if kind == "toolcall_start":
        return f"{where}: {_shown(event.name)} (id {_shown(event.id)})"
    if kind == "toolcall_end":
        call = event.tool_call
        return f"{where}: {_shown(call.name)} with {_shown(to_json(call.arguments))} (id {_shown(call.id)})"
    if hasattr(event, "delta"):
        return f"{where}: {_shown(event.delta)}"
    if hasattr(event, "content_index"):
        return where
    return _shown(to_json(event, partials=False))


def _update_headline(index: int, first: int, last: int, expected: Any, actual: Any,
                     updates: Sequence[MessageUpdateEvent]) -> str:
    """The headline for ``message_update`` effects whose digest differs: the steps it covers,
    both digests, and what the replay streamed in them."""
    steps = f"step {last}" if first == last else f"steps {first}-{last}"
    events = [u.assistant_message_event for u in updates]
    deltas = [getattr(e, "delta", None) for e in events]
    if all(type(d) is str for d in deltas) and len({(e.type, e.content_index) for e in events}) == 1:  # type: ignore[union-attr]
        e0: Any = events[0]
        now = f"{e0.type} of block {e0.content_index}: {_shown(''.join(deltas))}"  # type: ignore[arg-type]
    else:
        now = "; ".join(_streamed(e) for e in events[:3]) + ("; ..." if len(events) > 3 else "")
    return (f"effect {index} (emit message_update): message_update.digest of {steps}: "
            f"recorded {_shown(expected['event'].get('digest'))}, now {_shown(actual['event']['digest'])}; "
            f"the replay streamed {now}")


def _headline(index: int, expected: Any, actual: Any) -> str:
    """``effect I (KIND): PATH: recorded X, now Y``, the path rooted at the event or effect type."""
    if _describe(expected) != _describe(actual):
        return f"effect {index}: recorded {_describe(expected)}, now {_describe(actual)}"
    what = f"effect {index} ({_describe(expected)})"
    if expected.get("type") == "emit" and actual.get("type") == "emit":
        exp, act = expected.get("event", {}), actual.get("event", {})
    else:
        exp, act = expected, actual
    root = str(exp.get("type", "effect")) if exp.get("type") == act.get("type") else "effect"
    found = first_difference(exp, act, root)
    if found is None:
        return f"{what} differs"
    where, was, now, length = found
    return f"{what}: {where}{' (length)' if length else ''}: recorded {_shown(was)}, now {_shown(now)}"


class Comparator:
    """Compares the effects of each step with the recording, in transcript order."""

    def __init__(self, transcript: Transcript, options: ReplayOptions,
                 secrets: Sequence[str] | None = None) -> None:
        self.entries = transcript.entries
        self.options = options
        self.secrets = secrets
        """Set when the inputs are live (LLM-only): the effects are scrubbed as the recorder
        scrubbed the recording's, so a secret a live tool prints again is not a difference."""
        self.encoder = EffectEncoder(digests=False)  # check() digests the updates (in segments)
        self.digests = transcript.version >= DIGESTS_VERSION
        self.version = transcript.version
        self.pending: list[MessageUpdateEvent] = []
        """The updates emitted since the last recorded digest, from step ``pending_from`` on."""
        self.pending_from = 0
        keys: set[str] = set()
        if options.ignore_timestamps:
            keys |= {"at", "timestamp"}
        if options.ignore_system_prompt:
            keys.add("system_prompt")
        self.strip_keys = frozenset(keys)
        self.turn = 0

    def _same_text(self, entry: Entry, effects: Sequence[Effect], texts: list[bytes], digests: dict[int, str]) -> bool:
        """Whether the effects are the recorded ones as text (what a transcript written by this
        version gives, unless something changed): each effect's JSON text is the line's, each
        update's digest the recorded one."""
        recorded = entry.effects_json
        if len(recorded) != len(texts):
            return False
        written: list[bytes] | None = None
        for i, e in enumerate(effects):
            if type(e) is Emit and type(e.event) is MessageUpdateEvent:
                mine = recorded[i]
                if not is_update(mine) or digests.get(i) != mine["event"].get("digest"):
                    return False
                continue
            if written is None:
                written = entry.effects_text
                if written is None:
                    return False
            if texts[i] != written[i]:
                return False
        return True

    def _norm(self, value: Any) -> Any:
        return _strip(value, self.strip_keys) if self.strip_keys else value

    def _scrubbed(self, value: Any) -> Any:
        if self.secrets is None:
            return value
        text = compact_json(value)
        clean = scrub_json(text, self.secrets)
        return value if clean == text else json.loads(clean)

    def check(self, index: int, effects: Sequence[Effect]) -> Divergence | None:
        entry = self.entries[index]
        recorded = entry.effects_json
        texts = [encode_bytes(self.encoder.effect(e)) for e in effects]
        digests: dict[int, str] = {}
        segments: dict[int, tuple[int, list[MessageUpdateEvent]]] = {}
        if self.digests:
            for i, e in enumerate(effects):
                if type(e) is Emit and type(e.event) is MessageUpdateEvent:
                    if not self.pending:
                        self.pending_from = entry.step
                    self.pending.append(e.event)
                    mine: Any = recorded[i] if i < len(recorded) else None
                    if is_update(mine) and "digest" in mine["event"]:
                        digests[i] = update_digest(self.pending, self.secrets, version=self.version)
                        segments[i] = (self.pending_from, self.pending)
                        self.pending = []
        if self.secrets is None and not self.strip_keys and not self.options.tool_calls_only \
                and self._same_text(entry, effects, texts, digests):
            self.turn += sum(1 for e in recorded if e["type"] == "emit" and e["event"]["type"] == "turn_start")
            return None
        encoded = [self._scrubbed(parse(t)) for t in texts]
        for i, digest in digests.items():
            encoded[i] = {"type": "emit", "event": {"type": "message_update", "digest": digest}}
        base = self.turn
        starts = [i for i, e in enumerate(recorded) if e["type"] == "emit" and e["event"]["type"] == "turn_start"]
        self.turn += len(starts)
        turn = max(self.turn, 1)
        if self.options.tool_calls_only:
            exp_v = _tool_view([expand(e) for e in recorded])
            act_v = _tool_view([self._scrubbed(_full(e)) for e in effects])
            if exp_v != act_v:
                return Divergence("effect", entry.step, turn, exp_v, act_v, _udiff(exp_v, act_v, "tool calls"),
                                  "the tool calls differ")
            return None
        if not self.strip_keys and encoded == recorded:
            return None
        for i in range(max(len(encoded), len(recorded))):
            turn = max(1, base + sum(1 for j in starts if j <= i))
            if i >= len(recorded):
                act = self._scrubbed(_full(effects[i]))
                return Divergence("effect", entry.step, turn, None, act, _udiff(None, act),
                                  f"effect {i} ({_describe(act)}) was not recorded")
            if i >= len(encoded):
                exp = expand(recorded[i])
                return Divergence("effect", entry.step, turn, exp, None, _udiff(exp, None),
                                  f"recorded effect {i} ({_describe(exp)}) was not asked for")
            if self._norm(encoded[i]) == self._norm(recorded[i]):
                continue
            if i in segments:
                first, updates = segments[i]
                return Divergence("effect", entry.step, turn, recorded[i], encoded[i], _udiff(recorded[i], encoded[i]),
                                  _update_headline(i, first, entry.step, recorded[i], encoded[i], updates))
            exp, act = self._norm(expand(recorded[i])), self._norm(self._scrubbed(_full(effects[i])))
            if exp == act:
                continue  # same content, shared differently (e.g. histories rebuilt by a hook)
            return Divergence("effect", entry.step, turn, exp, act, _udiff(exp, act), _headline(i, exp, act))
        return None


# --------------------------------------------------------------------------- strict replay


