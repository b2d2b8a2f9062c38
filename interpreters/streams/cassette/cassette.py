"""The cassette: a stream function that answers each model call from recorded transcripts by
what the call asks, not by its number.

How a call is answered (theory of operation):

1. The request (model, thinking level, system prompt, messages, tools, sampling options) is put
   in canonical form under the cassette's :class:`~.request.MatchPolicy`
   (:mod:`~interpreters.streams.cassette.request`): a digest of its key fields, one of its
   checked fields, its position (how many assistant messages it shows) and its history.
2. The recordings whose key digest is equal and that have not answered yet are the candidates.
   A run *follows* the transcript that answered its previous call (found from the history the
   request shows: it extends the history of that call), or, on its first call, whichever
   recording answers it. The candidate at the same position in a transcript the run follows
   is preferred, then one at the same position anywhere (a first call), then the run's own
   transcript elsewhere, then any other, each in the order the recordings were given.
3. The answer is labelled: ``exact`` (same position, checked fields equal), ``drifted`` (same
   position, checked fields differ: the differences are kept) or ``reordered`` (from another
   position, or another transcript than the one the run follows). The recording then plays
   back event for event (deltas, usage, ids, stop reason, a failed stream, an abort).
4. No candidate is a **miss**: ``on_miss="fail"`` raises :class:`CassetteMiss` naming the call,
   the nearest recording and the first differing key field; ``"live"`` hands this call and
   every later call of the same run to ``live`` (label ``live``); a stream function given as
   ``on_miss`` answers this one call (label ``stub``).

Each recording answers once; a request recorded several times is answered by its recordings in
turn. The cassette is safe to share between concurrent runs (threads or asyncio tasks).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal, TypeAlias

from agentcore import AgentTool
from agentcore.codec import to_json

from ...runtime.gc_pause import paused_gc
from ...secrets import header_secrets, secret_forms
from ...signal import StopRun
from ...transcript import Transcript, TranscriptError, read_transcript
from ...transcript.read import SeqDelta
from ..recorded import Reply, play, replies
from .request import Canonicalizer, Difference, MatchPolicy, Request, differences, first_difference, shown
from .tools import RecordedTools, ToolAnswer, ToolRecording, tool_miss_text

__all__ = ["Answer", "Cassette", "CassetteMiss", "CassetteReport", "Label", "Recording", "ToolAnswer", "ToolRecording"]

Label: TypeAlias = Literal["exact", "drifted", "reordered", "live", "stub", "miss"]
"""How a call was answered; ``miss`` only in :meth:`Cassette.match` reports (a run's miss raises,
or is answered live or by a stub)."""
StreamFn: TypeAlias = Callable[..., Any]


@dataclass(frozen=True)
class Recording:
    """Where a recorded model call lives: the transcript, the step whose effects asked for it, and
    which model call of that run it was (from 1)."""

    path: str
    step: int
    call: int

    def __str__(self) -> str:
        return f"{self.path} step {self.step} (model call {self.call})"


@dataclass(frozen=True)
class Answer:
    """How the cassette answered one model call (``call``: the order in which it was asked, from
    1): the label, the recording that answered (``None`` for ``live`` and ``stub``) and the fields
    that differ from it (checked fields for ``drifted``; for ``reordered``, the checked fields
    that differ too)."""

    call: int
    label: Label
    recording: Recording | None
    differences: tuple[Difference, ...] = ()

    def __str__(self) -> str:
        where = f" from {self.recording}" if self.recording is not None else ""
        text = f"model call {self.call}: {self.label}{where}"
        return text + "".join(f"\n    {d}" for d in self.differences)


@dataclass(frozen=True)
class CassetteReport:
    """Every answer the cassette gave, in order, and the recordings it never served."""

    answers: tuple[Answer, ...]
    unused: tuple[Recording, ...]
    tool_answers: tuple[ToolAnswer, ...] = ()
    """How each call of the cassette's tools (:meth:`Cassette.tools`) was answered."""
    unused_tools: tuple[ToolRecording, ...] = ()
    """The recorded tool calls never served (empty unless the cassette's tools were used)."""

    @property
    def labels(self) -> list[Label]:
        return [a.label for a in self.answers]

    def __str__(self) -> str:
        lines = [str(a) for a in self.answers] or ["no model call was made"]
        lines.extend(str(a) for a in self.tool_answers)
        if self.unused:
            lines.append(f"{len(self.unused)} recorded call(s) never served:")
            lines.extend(f"    {r}" for r in self.unused)
        if self.tool_answers and self.unused_tools:
            lines.append(f"{len(self.unused_tools)} recorded tool call(s) never served:")
            lines.extend(f"    {r}" for r in self.unused_tools)
        return "\n".join(lines)


class CassetteMiss(AssertionError, StopRun):
    """A model call no recording answers (it stops the run, which ends, and then reaches the
    caller): ``call`` (its order), ``nearest`` (the recording whose
    key fields agree longest, or ``None``) and ``difference`` (its first differing key field)."""

    def __init__(self, message: str, call: int, nearest: Recording | ToolRecording | None,
                 difference: Difference | None) -> None:
        super().__init__(message)
        self.call, self.nearest, self.difference = call, nearest, difference

    def __reduce__(self) -> tuple[Any, ...]:
        return type(self), (self.args[0], self.call, self.nearest, self.difference)


@dataclass(eq=False)
class _Recorded:
    recording: Recording
    transcript: int
    request: Request
    reply: Reply
    served: bool = False


_ON_MISS: Final = ("fail", "live")


class Cassette:
    """A stream function that answers model calls from recorded transcripts.

    ``paths``: a transcript, a folder of them (every ``*.jsonl`` below it but candidates,
    ``*.candidate.jsonl``) or a sequence of both. ``match``: a preset (``"strict"``,
    ``"forgiving"``, ``"structural"``) or a :class:`MatchPolicy`. ``on_miss``: ``"fail"``,
    ``"live"`` (with ``live=`` a stream function) or a stream function that answers misses.
    ``secrets``: values the recordings were scrubbed of (the run's key and sensitive headers are
    known without it).

    >>> import tempfile, pathlib
    >>> from agentcore import AgentContext, AgentLoopConfig, Model
    >>> from interpreters import ScriptedModel, TranscriptRecorder, agent_loop
    >>> config = AgentLoopConfig(model=Model(id="m"))
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "run.jsonl"
    >>> context = AgentContext(system_prompt="Be brief.")
    >>> with TranscriptRecorder(path, context, config) as rec:
    ...     _ = agent_loop("Hi", context, config, stream_fn=ScriptedModel(["Hello."]), journal=rec).result()
    >>> cassette = Cassette(path)
    >>> agent_loop("Hi", AgentContext(system_prompt="Be very brief."), config,
    ...            stream_fn=cassette).result()[-1].text
    'Hello.'
    >>> print(cassette.report())
    model call 1: drifted from ...run.jsonl step 1 (model call 1)
        system_prompt: recorded "Be brief.", now "Be very brief."
    """

    def __init__(self, paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]], *,
                 match: str | MatchPolicy = "forgiving", on_miss: str | StreamFn = "fail",
                 live: StreamFn | None = None, secrets: Sequence[str] = ()) -> None:
        self.policy = MatchPolicy.of(match)
        if not callable(on_miss) and on_miss not in _ON_MISS:
            raise ValueError("on_miss must be 'fail', 'live' or a stream function that answers misses, "
                             f"not {on_miss!r}")
        if on_miss == "live" and live is None:
            raise ValueError("on_miss='live' needs live=: the stream function that answers from the first miss on "
                             "(for example an HTTP provider)")
        if live is not None and not callable(live):
            raise TypeError(f"live must be a stream function, not {type(live).__name__}")
        self.on_miss, self.live = on_miss, live
        self._stub: StreamFn | None = on_miss if callable(on_miss) else None
        self.secrets = tuple(s for s in secrets if s)
        self._canonical = Canonicalizer(self.policy)
        self._recorded: list[_Recorded] = []
        self._by_key: dict[bytes, list[_Recorded]] = {}
        self._tools = RecordedTools(_tool_miss)
        self.paths = tuple(_transcript_paths(paths))
        with paused_gc():  # many small objects, no cycles (see runtime.gc_pause)
            for index, path in enumerate(self.paths):
                self._load(index, path)
        self._lock = threading.Lock()
        self._answers: list[Answer] = []
        self._asked = 0
        self._followed: dict[bytes, list[int]] = {}
        self._live_runs: set[bytes] = set()
        self._secrets_of: dict[Any, tuple[str, ...]] = {}
        self._heads: dict[tuple[Any, ...], tuple[tuple[Any, ...], dict[str, Any]]] = {}
        """Request heads by the identity of what they are made of (kept alive with them)."""

    # -- loading --------------------------------------------------------------------------------

    def _load(self, index: int, path: Path) -> None:
        transcript = read_transcript(path)
        self._tools.load(transcript, str(path))
        options = transcript.header.get("options")
        for n, reply in enumerate(replies(transcript), 1):
            recorded = _Recorded(Recording(str(path), reply.step, n), index,
                                 self._canonical.request(*_recorded_request(reply, options, transcript)), reply)
            self._recorded.append(recorded)
            self._by_key.setdefault(recorded.request.key, []).append(recorded)

    # -- answering ------------------------------------------------------------------------------

    def __call__(self, model: Any, context: Any, options: Any = None) -> Any:
        request = self.request(model, context, options)
        with self._lock:
            self._asked += 1
            call = self._asked
            fn: StreamFn | None = None
            if request.thread is not None and request.thread in self._live_runs:
                fn, answer = self.live, Answer(call, "live", None)
            else:
                served = self._serve(call, request)
                if served is not None:
                    return play(served.reply, getattr(options, "signal", None))
                miss = self._miss(call, request)
                if self.on_miss == "fail":
                    raise miss
                if self.on_miss == "live":
                    fn, answer = self.live, Answer(call, "live", None)
                else:
                    fn, answer = self._stub, Answer(call, "stub", None)
            if answer.label == "live":
                self._live_runs.add(request.history)
            self._answers.append(answer)
        assert fn is not None
        return fn(model, context, options)

    def _serve(self, call: int, request: Request) -> _Recorded | None:
        """Answer ``request`` from a recording (marked served, the answer kept), or ``None``."""
        found = self._choose(request)
        if found is None:
            return None
        recorded, label = found
        recorded.served = True
        self._followed.setdefault(request.history, []).append(recorded.transcript)
        diffs = () if recorded.request.checked == request.checked else tuple(
            differences(recorded.request, request, "checked"))
        self._answers.append(Answer(call, "drifted" if label == "exact" and diffs else label,
                                    recorded.recording, diffs))
        return recorded

    def match(self, path: str | os.PathLike[str]) -> CassetteReport:
        """Answer the model calls another transcript made, without playing anything: the report
        says, call by call, how this cassette would have answered them (a call no recording
        answers is labelled ``miss``, with the nearest recording and the first differing key
        field)."""
        other = read_transcript(path)
        options = other.header.get("options")
        for reply in replies(other):
            request = self._canonical.request(*_recorded_request(reply, options, other))
            with self._lock:
                self._asked += 1
                if self._serve(self._asked, request) is None:
                    miss = self._miss(self._asked, request)
                    self._answers.append(Answer(self._asked, "miss", miss.nearest,  # type: ignore[arg-type]
                                                () if miss.difference is None else (miss.difference,)))
        return self.report()

    def request(self, model: Any, context: Any, options: Any = None) -> Request:
        """The canonical form of a model call's request, as this cassette compares it."""
        tools = getattr(context, "tools", ())
        budgets = getattr(options, "thinking_budgets", None)
        parts = (model, tools, budgets)
        ident = (*map(id, parts), getattr(context, "system_prompt", ""), getattr(options, "thinking_level", "off"),
                 getattr(options, "temperature", None), getattr(options, "max_tokens", None))
        cached = self._heads.get(ident)
        if cached is None or any(a is not b for a, b in zip(cached[0], parts, strict=True)):
            head = request_head(to_json(model), ident[4], ident[3], to_json(tuple(tools)),
                                {name: to_json(getattr(options, name, None)) for name in _SAMPLING})
            if len(self._heads) > 64:
                self._heads.clear()
            cached = self._heads[ident] = (parts, head)
        return self._canonical.request(cached[1], getattr(context, "messages", ()), self._secrets(model, options))

    def _secrets(self, model: Any, options: Any) -> tuple[str, ...]:
        key = (getattr(options, "api_key", None), _frozen(getattr(options, "headers", None)),
               _frozen(getattr(model, "headers", None)))
        found = self._secrets_of.get(key)
        if found is None:
            found = self._secrets_of[key] = _run_secrets(model, options, self.secrets)
        return found

    def _choose(self, request: Request) -> tuple[_Recorded, Label] | None:
        followed = self._followed.get(request.thread, ()) if request.thread is not None else ()
        best: tuple[int, _Recorded] | None = None
        for recorded in self._by_key.get(request.key, ()):
            if recorded.served:
                continue
            same = recorded.request.position == request.position
            if followed:
                rank = (0 if same else 2) if recorded.transcript in followed else (3 if same else 4)
            else:
                rank = 0 if same else 4
            if best is None or rank < best[0]:
                best = (rank, recorded)
                if rank == 0:
                    break
        if best is None:
            return None
        return best[1], ("exact" if best[0] == 0 else "reordered")

    def _miss(self, call: int, request: Request) -> CassetteMiss:
        same_key = [r for r in self._by_key.get(request.key, ())]
        if same_key:
            listed = ", ".join(str(r.recording) for r in same_key)
            return CassetteMiss(
                f"model call {call} matches {len(same_key)} recording(s), each already served: {listed}. "
                "A recording answers once; record the run again to answer it more often.",
                call, same_key[0].recording, None)
        nearest: tuple[tuple[int, int], _Recorded, Difference | None] | None = None
        for recorded in self._recorded:
            agree, diff = first_difference(recorded.request, request)
            score = (agree, int(recorded.request.position == request.position))
            if nearest is None or score > nearest[0]:
                nearest = (score, recorded, diff)
        where = f" (policy {self.policy.base!r})"
        if nearest is None:
            return CassetteMiss(f"model call {call} has no recording{where}: the cassette holds no model calls",
                                call, None, None)
        _, recorded, diff = nearest
        text = (f"model call {call} has no recording{where}.\n"
                f"  nearest recorded request: {recorded.recording}")
        if diff is not None:
            text += (f"\n  first differing key field: {diff.path}\n"
                     f"    recorded: {shown(diff.recorded)}\n    now:      {shown(diff.now)}")
        return CassetteMiss(text, call, recorded.recording, diff)

    def tools(self, names: Sequence[str] | None = None, *, live: Sequence[AgentTool] = ()) -> list[AgentTool]:
        """Tools that answer from the recorded tool results, by tool name and arguments (the
        tools the transcripts' headers declare, or those ``names``): a run whose tools reach the
        outside world replays with no network. A call no recording answers raises
        :class:`CassetteMiss`, or is handed to the tool of that name in ``live``."""
        return self._tools.tools(names, live)

    # -- what it did ----------------------------------------------------------------------------

    def report(self) -> CassetteReport:
        """Every answer so far and the recordings not served."""
        with self._lock:
            return CassetteReport(tuple(self._answers),
                                  tuple(r.recording for r in self._recorded if not r.served),
                                  self._tools.answers(), self._tools.unused())

    def __repr__(self) -> str:
        return (f"Cassette({len(self.paths)} transcript(s), {len(self._recorded)} model call(s), "
                f"match={self.policy.base!r}, on_miss={self.on_miss!r})")


_SAMPLING: Final = ("temperature", "max_tokens", "thinking_budgets")


def request_head(model: Any, thinking_level: Any, system_prompt: Any, tools: Any,
                 options: Mapping[str, Any] | None) -> dict[str, Any]:
    """The header part of a canonical request, from JSON: the model (id, provider, api), the
    thinking level, the system prompt, the tools by name (name, description, parameters) and,
    when known, the sampling options."""
    model = model if isinstance(model, dict) else {}
    head: dict[str, Any] = {
        "model": {k: model.get(k) for k in ("id", "provider", "api")},
        "thinking_level": thinking_level,
        "system_prompt": system_prompt,
        "tools": {str(t.get("name")): {"name": t.get("name"), "description": t.get("description"),
                                       "parameters": t.get("parameters")}
                  for t in (tools or ()) if isinstance(t, dict)},
    }
    if options is not None:
        head["options"] = {name: options.get(name) for name in _SAMPLING}
    return head


def _transcript_paths(paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]]) -> Iterator[Path]:
    given = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    if not given:
        raise ValueError("a cassette needs at least one transcript (a path or a folder of them)")
    for item in given:
        path = Path(item)
        if path.is_dir():
            found = sorted(p for p in path.rglob("*.jsonl") if not p.name.endswith(".candidate.jsonl"))
            if not found:
                raise ValueError(f"{path}: the folder holds no transcripts (*.jsonl)")
            yield from found
        elif path.exists():
            yield path
        else:
            raise FileNotFoundError(f"{path}: no such transcript or folder")


def _run_secrets(model: Any, options: Any, extra: Sequence[str]) -> tuple[str, ...]:
    """The forms of the secrets a model call carries (its key, sensitive headers), plus ``extra``."""
    key = getattr(options, "api_key", None)
    return secret_forms([*extra, *([key] if key else []),
                         *header_secrets(getattr(options, "headers", None), getattr(model, "headers", None))])


def _recorded_request(reply: Reply, options: Mapping[str, Any] | None, transcript: Transcript
                      ) -> tuple[dict[str, Any], list[Any]]:
    """The head and messages of a recorded model call's request."""
    effect = reply.request
    items, tools = (_history(effect.get(name)) for name in ("messages", "tools"))
    if not isinstance(items, list) or not isinstance(tools, list):
        raise TranscriptError(f"step {reply.step}: the model call's messages or tools are not lists",
                              path=transcript.path)
    return request_head(effect.get("model"), effect.get("thinking_level"), effect.get("system_prompt"), tools,
                        options), items


def _tool_miss(name: str, call: int, args: Any, nearest: ToolRecording | None, diff: Difference | None
               ) -> CassetteMiss:
    return CassetteMiss(tool_miss_text(name, call, args, nearest, diff), call, nearest, diff)


def _history(value: Any) -> Any:
    """A recorded history as a list: a ``$seq`` delta read back knows its whole history."""
    return value.full if isinstance(value, SeqDelta) else value


def _frozen(value: Any) -> Any:
    return tuple(sorted(value.items())) if isinstance(value, Mapping) else value
