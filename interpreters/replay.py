"""The replay interpreter: re-run the pure core over a transcript, and compare.

Theory of operation
-------------------

A transcript holds the initial state and every input fed to the core, so the core can be run
again, step by step, with no model, no tools and no clock: that is :func:`replay` (strict mode).
After each step the effects the core asks for now are compared with the recorded ones; the first
difference stops the replay with a :class:`ReplayDivergence` whose ``report`` (a
:class:`Divergence`) names the step, the turn, the expected and actual effect and a diff.

:func:`replay_llm` (LLM-only mode) runs the real sync interpreter with the user's tools and
hooks, but its stream function plays back the recorded model replies, and a journal checks the
effects of each step against the recording as they happen: the mode to test a code change
against a recorded conversation.

:func:`resume` (in :mod:`interpreters.resuming`, and importable from here) reads the transcript
of a run that died, replays it strictly to the last recorded state, and goes on live from there.
See ``docs/replay.md``.
"""

from __future__ import annotations

import difflib
import json
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal

from returns.result import Failure

from agentcore.records import replace
from agentcore import (
    ABORTED_TEXT,
    AbortRequested,
    AgentEvent,
    AgentLoopConfig,
    AgentMessage,
    CallLlm,
    DoneEvent,
    Effect,
    Emit,
    ErrorEvent,
    ExecuteTool,
    Input,
    LoopState,
    RunEnded,
    StreamEventReceived,
    StepResult,
    StreamFailed,
    ToolFailed,
    ToolFinished,
    ToolUpdated,
    step,
)
from agentcore.codec import encode_bytes, parse, to_json
from agentcore.json_diff import MISSING, first_difference
from agentcore.machine import stream_event_problem
from agentcore.events import MessageUpdateEvent
from agentcore.effects import RunSuspended
from agentcore.inputs import Resumed
from agentcore.state import Finished

from .driver import WAIT, AnswerOrder, Journal, Run
from .secrets import known_secrets, scrub_json
from .gc_pause import paused_gc
from .signal import AbortSignal
from .transcript import (
    DIGESTS_VERSION,
    compact_json,
    EffectEncoder,
    Entry,
    Transcript,
    TranscriptError,
    VERSION,
    is_update,
    update_digest,
    expand,
    read_transcript,
)

__all__ = [
    "Comparator",
    "Divergence",
    "RecordedModel",
    "ReplayDivergence",
    "ReplayOptions",
    "ReplayResult",
    "fork",
    "llm_request_at",
    "llm_request_step",
    "replay",
    "replay_llm",
    "areplay_llm",
    "state_at",
    "step_recorded",
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


def _load(source: Source) -> Transcript:
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


def step_recorded(state: LoopState, entry: Entry) -> StepResult:
    """``step`` over a recorded input. The reader checks each line's shape, not every field's
    type; an input damaged inside (a record turned into a plain mapping) that the core cannot
    take is a damaged transcript, named by its line."""
    inp = entry.input
    if type(inp) is StreamEventReceived:
        problem = stream_event_problem(inp.event)  # the recorder only writes real stream events
        if problem is not None:
            raise _damaged(entry, problem)
    try:
        return step(state, inp)
    except (AttributeError, TypeError, KeyError, IndexError, ValueError) as exc:
        raise _damaged(entry, f"{type(exc).__name__}: {exc}") from None


def _damaged(entry: Entry, problem: str) -> TranscriptError:
    return TranscriptError(f"line {entry.line}: the input of step {entry.step} is damaged ({problem})",
                           path=entry.path, line=entry.line)


def replay(source: Source, *, options: ReplayOptions = ReplayOptions(), until: int | None = None,
           check: bool = True) -> ReplayResult:
    """Re-run the core over the recorded inputs (no model, no tools, no clock).

    Returns the events, the run's new messages, the final state and the number of steps
    replayed; raises :class:`ReplayDivergence` at the first effect that differs from the
    recording. ``until`` stops after that step; ``check=False`` skips the comparison.
    """
    t = _load(source)
    state = t.initial_state
    cmp = Comparator(t, options)
    events: list[AgentEvent] = []
    messages: list[AgentMessage] = []
    entries = t.entries if until is None else t.entries[:until]
    with paused_gc():  # only the core runs here, and it builds no cycles (see interpreters.gc_pause)
        for index, entry in enumerate(entries):
            if isinstance(state.phase, Finished):
                raise ReplayDivergence(Divergence(
                    "left_over", entry.step, cmp.turn, entry.input_json, None, "",
                    f"the run ended at step {index}, {len(t.entries) - index} recorded entries remain"), t.version)
            result = step_recorded(state, entry)
            if isinstance(result, Failure):
                raise ReplayDivergence(Divergence(
                    "rejected", entry.step, cmp.turn, entry.input_json, None, "", str(result.failure())), t.version)
            state, effects = result.unwrap()
            if check:
                problem = cmp.check(index, effects)
                if problem is not None:
                    raise ReplayDivergence(problem, t.version)
            for e in effects:
                if type(e) is Emit:
                    events.append(e.event)
                elif type(e) is RunEnded or type(e) is RunSuspended:
                    messages = list(e.messages)
    return ReplayResult(events, messages, state, len(entries), isinstance(state.phase, Finished))


def state_at(transcript: Source, step: int) -> LoopState:
    """The core's state after step ``step`` (0: the initial state)."""
    t = _load(transcript)
    if not 0 <= step <= t.steps:
        raise IndexError(f"step {step} is not in this transcript (it has steps 0..{t.steps})")
    return replay(t, until=step, check=False).state


def llm_request_at(transcript: Source, step: int) -> CallLlm | None:
    """The model call in force at step ``step``: the last ``CallLlm`` asked for at or before it."""
    found = llm_request_step(transcript, step)
    return found[1] if found is not None else None


def llm_request_step(transcript: Source, step: int) -> tuple[int, CallLlm] | None:
    """:func:`llm_request_at` with the step that asked for the call."""
    t = _load(transcript)
    for entry in reversed(t.entries[:step]):
        for i in range(len(entry.effects_json) - 1, -1, -1):
            if entry.effects_json[i].get("type") == "call_llm":
                effect = entry.effects[i]
                assert isinstance(effect, CallLlm)
                return entry.step, effect
    return None


def fork(transcript: Source, step: int, out_path: str | os.PathLike[str]) -> Path:
    """Write a new transcript with the header and the first ``step`` steps (its one history)."""
    t = _load(transcript)
    if not 0 <= step <= t.steps:
        raise IndexError(f"step {step} is not in this transcript (it has steps 0..{t.steps})")
    out = Path(out_path)
    lines = [json.dumps(dict(t.header), ensure_ascii=False, separators=(",", ":"))]
    lines += [e.text for e in t.entries[:step]]
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return out


# --------------------------------------------------------------------------- LLM-only replay


@dataclass(slots=True)
class _Call:
    id: int
    events: list[Any] = field(default_factory=list)
    failure: str | None = None
    aborted: bool = False


class _Stop(BaseException):
    """Unwinds a live run at its first divergence (a ``BaseException``, so that the interpreter's
    ``except Exception`` around model calls does not turn it into a failed stream)."""


class _LiveChecker(Journal):
    """A journal that checks each live step against the recording (first divergence sticks)."""

    def __init__(self, transcript: Transcript, options: ReplayOptions, secrets: Sequence[str]) -> None:
        self.transcript = transcript
        self.cmp = Comparator(transcript, options, secrets)
        self.index = 0
        self.failure: Divergence | None = None
        self.signal: AbortSignal | None = None
        """The live run's signal, fired where the recording has an abort next."""

    def fail(self, report: Divergence) -> _Stop:
        if self.failure is None:
            self.failure = report
        return _Stop()

    def record(self, step: int, input: Input, effects: Sequence[Effect]) -> None:
        if self.failure is not None:
            raise _Stop()
        entries = self.transcript.entries
        if step > len(entries):
            raise self.fail(Divergence(
                "out_of_recording", step, self.cmp.turn, None, to_json(input, partials=False), "",
                f"the run went on past the {len(entries)} recorded steps (input {input.type})"))
        problem = self.cmp.check(step - 1, effects)
        if problem is not None:
            raise self.fail(problem)
        self.index = step
        if (step < len(entries) and type(entries[step].input) is AbortRequested and self.signal is not None
                and not any(type(e) is ExecuteTool for e in effects)):
            # The recorded abort came right after this step: fire it now, so the run feeds it
            # next. (After a step that starts tools, _RecordedOrder fires it: before a tool it
            # stopped from starting, or once the run waits for the tools that did start.)
            self.signal.abort()

    def clock(self) -> int:
        entries = self.transcript.entries
        if not entries:
            return 0
        return entries[min(self.index, len(entries) - 1)].input.at


class RecordedModel:
    """A stream function that plays back the model replies of a transcript, call by call."""

    def __init__(self, transcript: Transcript, checker: _LiveChecker | None = None) -> None:
        self.checker = checker
        self.version = transcript.version
        self.replies: list[_Call] = []
        open_: dict[int, _Call] = {}
        for entry in transcript.entries:
            inp = entry.input
            if type(inp) is StreamEventReceived and inp.id in open_:
                open_[inp.id].events.append(inp.event)
                if isinstance(inp.event, (DoneEvent, ErrorEvent)):
                    del open_[inp.id]
            elif type(inp) is StreamFailed and inp.id in open_:
                open_.pop(inp.id).failure = inp.error
            elif type(inp) is AbortRequested:
                for call in open_.values():
                    call.aborted = True
            for i, e in enumerate(entry.effects_json):
                if e.get("type") == "call_llm":
                    if type(e.get("id")) is not int:
                        raise TranscriptError(f"line {entry.line}: effect {i} (call_llm) has no id",
                                              path=transcript.path, line=entry.line)
                    call = _Call(e["id"])
                    self.replies.append(call)
                    open_[call.id] = call
        self.calls = 0

    def __call__(self, model: Any, context: Any, options: Any = None) -> Iterator[Any]:
        n = self.calls
        self.calls += 1
        if n >= len(self.replies):
            report = Divergence("out_of_recording", (self.checker.index + 1) if self.checker else 0,
                                self.checker.cmp.turn if self.checker else 0, None, None, "",
                                f"model call {n + 1} was made, the recording has {len(self.replies)}")
            raise self.checker.fail(report) if self.checker else ReplayDivergence(report, self.version)
        return self._play(self.replies[n], getattr(options, "signal", None))

    @staticmethod
    def _play(call: _Call, signal: Any) -> Iterator[Any]:
        yield from call.events
        if call.failure is not None:
            raise RuntimeError(call.failure)
        if call.aborted and signal is not None:
            signal.abort()
            yield None  # never fed: the interpreter sees the abort first


_TOOL_ANSWERS = (ToolUpdated, ToolFinished, ToolFailed)


class _RecordedOrder(AnswerOrder):
    """Feeds live tool answers in the order the recording has them (both interpreters).

    In an LLM-only replay the tools run live, so a parallel batch may finish in another order
    than when it was recorded. That order is not what the replay tests (the answers are), so an
    answer is held back until the recording expects it, and stamped with the recorded time when
    it is fed. When what the recording expects never comes (the code under test changed), the
    held answers are fed as they arrived and the checker reports the divergence.

    An abort the recording has while tools ran is fired when the run waits for them (tools
    never run inline here, so the run does wait), and answers are held until it is fed.
    """

    __slots__ = ("recorded", "held", "unstarted")

    runs_tools_inline = False

    def __init__(self, transcript: Transcript) -> None:
        self.recorded = [entry.input for entry in transcript.entries]
        self.held: list[Any] = []
        self.unstarted = {inp.id for inp in self.recorded if type(inp) is ToolFailed and inp.error == ABORTED_TEXT}
        """Tool calls a recorded abort stopped before they started (answered ``ABORTED_TEXT``)."""

    def tool_starting(self, run: Run, effect: ExecuteTool) -> None:
        """A tool the recorded abort stopped before it started: the abort comes first again."""
        if effect.id in self.unstarted:
            run.signal.abort()

    def _next(self, run: Run) -> Any:
        step = run.driver.steps
        return self.recorded[step] if step < len(self.recorded) else None

    def due(self, run: Run) -> Any:
        """A held answer to feed now (stamped with the run's clock: the recorded time), or WAIT."""
        want, held = self._next(run), self.held
        if type(want) is AbortRequested:
            run.signal.abort()  # its wake-up comes through the inbox (a no-op if it already fired)
            return WAIT
        if not isinstance(want, _TOOL_ANSWERS):
            return _stamped(run, held.pop(0)) if held else WAIT
        for i, item in enumerate(held):
            if type(item) is type(want) and item.id == want.id:
                return _stamped(run, held.pop(i))
        ended = sum(isinstance(h, (ToolFinished, ToolFailed)) for h in held)
        if held and ended >= len(run.running):
            return _stamped(run, held.pop(0))  # nothing else can come: feed in arrival order
        return WAIT

    def arrived(self, run: Run, item: Any) -> Any:
        """An item from the inbox: feed it now, or hold it (WAIT). A tool answer is held while
        the recording expects a tool answer (it may be another's) or an abort (first)."""
        if not isinstance(item, _TOOL_ANSWERS):
            return item
        want = self._next(run)
        if type(want) is not AbortRequested and not isinstance(want, _TOOL_ANSWERS):
            return _stamped(run, item)
        self.held.append(item)
        return self.due(run)


def _stamped(run: Run, item: Any) -> Any:
    return replace(item, at=run.clock())


def _stream_grace(t: Transcript, run: Run) -> float:
    """The live run's grace period for a stream after an abort: none when the recording's abort
    dropped the reply's stream at once (recorded without one, or by a library before it)."""
    for entry in t.entries:
        inp = entry.input
        if (type(inp) is AbortRequested and not inp.wait_for_stream
                and any(e.get("type") == "cancel_llm" for e in entry.effects_json)):
            return 0.0
    return run.stream_grace


def _llm_setup(source: Source, options: ReplayOptions, config: AgentLoopConfig,
               secrets: Sequence[str]) -> tuple[Transcript, _LiveChecker, RecordedModel]:
    t = _load(source)
    if not t.entries:
        raise TranscriptError("line 1: the transcript has no steps to replay")
    checker = _LiveChecker(t, options, known_secrets(config, secrets))
    return t, checker, RecordedModel(t, checker)


def _llm_result(t: Transcript, checker: _LiveChecker, run: Any, events: list[AgentEvent],
                messages: list[AgentMessage]) -> ReplayResult:
    if checker.failure is not None:
        raise ReplayDivergence(checker.failure, t.version)
    if checker.index < t.steps:
        nxt = t.entries[checker.index]
        raise ReplayDivergence(Divergence(
            "left_over", nxt.step, checker.cmp.turn, nxt.input_json, None, "",
            f"the run ended after step {checker.index}; {t.steps - checker.index} recorded steps are left"), t.version)
    return ReplayResult(events, messages, run.driver.state, checker.index, run.finished)


def _recorded_resume(t: Transcript, run: Run) -> Resumed | None:
    """The recorded decisions that resumed the run here, when it suspended (else ``None``)."""
    step = run.driver.steps
    if run.suspension is None or step >= len(t.entries):
        return None
    inp = t.entries[step].input
    return inp if type(inp) is Resumed else None


def _resumed_run(kind: Any, run: Run, resumed: Resumed, tools: Sequence[Any], config: AgentLoopConfig,
                 signal: AbortSignal | None, model: RecordedModel, checker: _LiveChecker,
                 order: _RecordedOrder) -> Any:
    """The live run that goes on from a recorded suspension with the recorded decisions (its
    steps numbered on from the suspended run's, as the recording has them)."""
    nxt = kind(run.driver.state, tools, config, resumed, signal, model, checker, checker.clock, order=order)
    nxt.driver.steps = run.driver.steps
    nxt.stream_grace = run.stream_grace
    return nxt


def replay_llm(source: Source, config: AgentLoopConfig, tools: Sequence[Any] = (), *,
               options: ReplayOptions = ReplayOptions(), signal: AbortSignal | None = None,
               secrets: Sequence[str] = ()) -> ReplayResult:
    """Replay with recorded model replies and live tools and hooks (the sync interpreter).

    Raises :class:`ReplayDivergence` at the first step whose effects differ from the recording,
    when the run asks for more than the recording has, or when it ends before the recording.
    The effects are compared scrubbed of secrets as the recorder scrubbed the recording's: the
    config's keys and headers, and ``secrets`` (give the recorder's ``secrets=``).
    """
    from .sync import AgentEventStream, SyncRun

    t, checker, model = _llm_setup(source, options, config, secrets)
    order = _RecordedOrder(t)
    run = SyncRun(t.initial_state, tools, config, t.entries[0].input, signal, model, checker, checker.clock,
                  order=order)
    run.stream_grace = _stream_grace(t, run)
    events: list[AgentEvent] = []
    try:
        while True:
            checker.signal = run.signal
            stream = AgentEventStream(run)
            events.extend(stream)
            messages = stream.result()
            resumed = _recorded_resume(t, run)
            if resumed is None:
                break
            run = _resumed_run(SyncRun, run, resumed, tools, config, signal, model, checker, order)
    except _Stop:
        assert checker.failure is not None
        raise ReplayDivergence(checker.failure, checker.transcript.version) from None
    return _llm_result(t, checker, run, events, messages)


async def areplay_llm(source: Source, config: AgentLoopConfig, tools: Sequence[Any] = (), *,
                      options: ReplayOptions = ReplayOptions(), signal: AbortSignal | None = None,
                      secrets: Sequence[str] = ()) -> ReplayResult:
    """:func:`replay_llm` on the asyncio interpreter (``async def`` tools and hooks awaited)."""
    from .aio import AgentEventStream, AsyncRun

    t, checker, model = _llm_setup(source, options, config, secrets)
    order = _RecordedOrder(t)
    run = AsyncRun(t.initial_state, tools, config, t.entries[0].input, signal, model, checker, checker.clock,
                   order=order)
    run.stream_grace = _stream_grace(t, run)
    events: list[AgentEvent] = []
    try:
        while True:
            checker.signal = run.signal
            stream = AgentEventStream(run)
            events.extend([event async for event in stream])
            messages = await stream.result()
            resumed = _recorded_resume(t, run)
            if resumed is None:
                break
            run = _resumed_run(AsyncRun, run, resumed, tools, config, signal, model, checker, order)
    except _Stop:
        assert checker.failure is not None
        raise ReplayDivergence(checker.failure, checker.transcript.version) from None
    return _llm_result(t, checker, run, events, messages)


def __getattr__(name: str) -> object:
    """``interpreters.replay.resume`` and ``aresume``, which live in :mod:`interpreters.resuming`
    (imported when first asked for: that module is built on this one)."""
    if name in ("resume", "aresume"):
        from . import resuming

        return getattr(resuming, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
