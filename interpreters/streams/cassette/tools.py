"""Recorded tool results answered by tool name and arguments: tools that replay a run whose tools
reach the outside world (HTTP APIs, MCP servers, databases) with no network at all.

Each recorded ``execute_tool`` (its tool's name, its validated arguments) and what came back for
it (the result, the error, the progress updates) is one recording. A call is answered by the
first unserved recording of the same name whose arguments are equal in canonical form (JSON,
keys sorted), each recording once; the answer is labelled ``exact`` when it is the next recording
of that tool in recorded order, ``reordered`` when it comes from later (parallel calls whose
results arrived in another order), ``live`` when a live tool answered a miss. A miss without a
live tool raises :class:`~.cassette.CassetteMiss` naming the nearest recording and its first
differing argument.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import msgspec

from agentcore import AgentTool, AgentToolResult
from agentcore.codec import to_json
from agentcore.inputs import ToolFailed, ToolFinished, ToolUpdated

from ...transcript import Transcript
from .request import ABSENT, Difference, Leaf, flatten, path_text, shown

__all__ = ["RecordedTools", "ToolAnswer", "ToolRecording"]


@dataclass(frozen=True)
class ToolRecording:
    """Where a recorded tool call lives: the transcript, the step that started it, its tool."""

    path: str
    step: int
    name: str

    def __str__(self) -> str:
        return f"{self.path} step {self.step} ({self.name})"


@dataclass(frozen=True)
class ToolAnswer:
    """How one tool call was answered (``call``: the order in which tools were called, from 1)."""

    call: int
    name: str
    label: Literal["exact", "reordered", "live"]
    recording: ToolRecording | None

    def __str__(self) -> str:
        where = f" from {self.recording}" if self.recording is not None else ""
        return f"tool call {self.call} ({self.name}): {self.label}{where}"


@dataclass(eq=False)
class _Recorded:
    recording: ToolRecording
    arguments: bytes
    leaves: list[Leaf]
    updates: list[Any]
    outcome: AgentToolResult | str | None = None
    served: bool = False


def _canonical_arguments(args: Any) -> bytes:
    return msgspec.json.encode(args if type(args) is dict else to_json(args), order="sorted")


class RecordedTools:
    """The recorded tool calls of a cassette's transcripts, and the answers given from them."""

    def __init__(self, miss: Callable[[str, int, Any, ToolRecording | None, Difference | None], BaseException]
                 ) -> None:
        self._miss = miss
        self._recorded: list[_Recorded] = []
        self.specs: dict[str, Any] = {}
        self._lock = threading.Lock()
        self._answers: list[ToolAnswer] = []

    def load(self, transcript: Transcript, path: str) -> None:
        """Add the tool calls ``transcript`` recorded (and the tools its header declares)."""
        for spec in transcript.header.get("tools") or ():
            if isinstance(spec, dict) and isinstance(spec.get("name"), str):
                self.specs[spec["name"]] = spec
        running: dict[int, _Recorded] = {}
        for entry in transcript.entries:
            inp = entry.input
            if type(inp) is ToolUpdated and inp.id in running:
                running[inp.id].updates.append(inp.partial_result)
            elif type(inp) is ToolFinished and inp.id in running:
                running.pop(inp.id).outcome = inp.result
            elif type(inp) is ToolFailed and inp.id in running:
                running.pop(inp.id).outcome = inp.error
            for effect in entry.effects_json:
                if effect.get("type") == "execute_tool" and isinstance(effect.get("id"), int):
                    name = str((effect.get("tool_call") or {}).get("name"))
                    args = effect.get("args")
                    leaves: list[Leaf] = []
                    flatten(args, ("arguments",), leaves)
                    recorded = _Recorded(ToolRecording(path, entry.step, name), _canonical_arguments(args), leaves, [])
                    self._recorded.append(recorded)
                    running[effect["id"]] = recorded

    def tools(self, names: Sequence[str] | None, live: Sequence[AgentTool]) -> list[AgentTool]:
        live_by_name = {t.name: t for t in live}
        wanted = list(self.specs) if names is None else list(names)
        unknown = [n for n in wanted if n not in self.specs]
        if unknown:
            raise ValueError(f"the cassette's transcripts declare no tool {', '.join(map(repr, unknown))} "
                             f"(they declare {', '.join(map(repr, self.specs)) or 'none'})")
        return [self._tool(self.specs[n], live_by_name.get(n)) for n in wanted]

    def _tool(self, spec: dict[str, Any], live: AgentTool | None) -> AgentTool:
        name = spec["name"]

        def execute(tool_call_id: str, args: Any, signal: Any = None, on_update: Any = None) -> Any:
            found = self._take(name, args, live is not None)
            if found is None:
                assert live is not None
                return live.execute(tool_call_id, args, signal, on_update)
            for partial in found.updates:
                if on_update is not None:
                    on_update(partial)
            if isinstance(found.outcome, str):
                raise RuntimeError(found.outcome) if found.outcome else RuntimeError()
            return found.outcome

        return AgentTool(name=name, label=str(spec.get("label") or name), description=str(spec.get("description", "")),
                         parameters=spec.get("parameters") or {"type": "object"}, execute=execute)

    def _take(self, name: str, args: Any, has_live: bool) -> _Recorded | None:
        key = _canonical_arguments(args)
        with self._lock:
            call = len(self._answers) + 1
            first_unserved = next((r for r in self._recorded if r.recording.name == name and not r.served
                                   and r.outcome is not None), None)
            found = next((r for r in self._recorded if r.recording.name == name and not r.served
                          and r.outcome is not None and r.arguments == key), None)
            if found is None:
                if has_live:
                    self._answers.append(ToolAnswer(call, name, "live", None))
                    return None
                raise self._miss(name, call, args, *self._nearest(name, args))
            found.served = True
            label: Literal["exact", "reordered"] = "exact" if found is first_unserved else "reordered"
            self._answers.append(ToolAnswer(call, name, label, found.recording))
            return found

    def _nearest(self, name: str, args: Any) -> tuple[ToolRecording | None, Difference | None]:
        now: list[Leaf] = []
        flatten(to_json(args), ("arguments",), now)
        best: tuple[int, _Recorded, Difference | None] | None = None
        for recorded in self._recorded:
            if recorded.recording.name != name:
                continue
            agree, diff = _first(recorded.leaves, now)
            if best is None or agree > best[0]:
                best = (agree, recorded, diff)
        return (None, None) if best is None else (best[1].recording, best[2])

    def answers(self) -> tuple[ToolAnswer, ...]:
        with self._lock:
            return tuple(self._answers)

    def unused(self) -> tuple[ToolRecording, ...]:
        with self._lock:
            return tuple(r.recording for r in self._recorded if not r.served)


def _first(before: list[Leaf], after: list[Leaf]) -> tuple[int, Difference | None]:
    a, b = dict(before), dict(after)
    agree = 0
    for path in sorted(a.keys() | b.keys()):
        x, y = a.get(path, ABSENT), b.get(path, ABSENT)
        if x is ABSENT or y is ABSENT or type(x) is not type(y) or x != y:
            return agree, Difference(path_text(path), x, y, "key")
        agree += 1
    return agree, None


def tool_miss_text(name: str, call: int, args: Any, nearest: ToolRecording | None, diff: Difference | None) -> str:
    """The message of a tool call no recording answers."""
    text = f"tool call {call} ({name} with {shown(to_json(args))}) has no recording"
    if nearest is None:
        return text + f": the cassette holds no call of {name!r}"
    text += f".\n  nearest recorded call: {nearest}"
    if diff is not None:
        text += (f"\n  first differing argument: {diff.path}\n"
                 f"    recorded: {shown(diff.recorded)}\n    now:      {shown(diff.now)}")
    return text
