"""The stream function of a recording: a transcript's model replies played back call by call."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from agentcore import AbortRequested, DoneEvent, ErrorEvent, StreamEventReceived, StreamFailed

from ..transcript import Transcript, TranscriptError

__all__ = ["RecordedModel", "Reply", "play", "replies"]


@dataclass(slots=True)
class Reply:
    """One recorded model call: the step whose effects asked for it, the ``call_llm`` effect as
    written (JSON), the stream events fed for it, how its stream failed, whether an abort came
    while it streamed."""

    id: int
    step: int
    request: Any
    events: list[Any] = field(default_factory=list)
    failure: str | None = None
    aborted: bool = False


def replies(transcript: Transcript) -> list[Reply]:
    """Every model call of the transcript, in order, with what its stream gave."""
    out: list[Reply] = []
    open_: dict[int, Reply] = {}
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
                call = Reply(e["id"], entry.step, e)
                out.append(call)
                open_[call.id] = call
    return out


def play(reply: Reply, signal: Any) -> Iterator[Any]:
    """The recorded stream again, event for event: a failed stream fails again, an abort that
    came while it streamed fires ``signal`` again."""
    yield from reply.events
    if reply.failure is not None:
        raise RuntimeError(reply.failure)
    if reply.aborted and signal is not None:
        signal.abort()
        yield None  # never fed: the interpreter sees the abort first


class RecordedModel:
    """A stream function that plays back the model replies of a transcript, call by call: the
    n-th model call gets the n-th recorded reply, event for event (a failed stream fails again,
    an abort that came while it streamed fires the call's signal again). A call past the last
    recorded one raises what ``past_end(n, recorded)`` returns (``n``: the call's number from 1;
    default: a ``LookupError`` saying so)."""

    def __init__(self, transcript: Transcript,
                 past_end: Callable[[int, int], BaseException] | None = None) -> None:
        self.past_end = past_end
        self.replies = replies(transcript)
        self.calls = 0

    def __call__(self, model: Any, context: Any, options: Any = None) -> Iterator[Any]:
        n = self.calls
        self.calls += 1
        if n >= len(self.replies):
            if self.past_end is not None:
                raise self.past_end(n + 1, len(self.replies))
            raise LookupError(f"model call {n + 1} was made, the recording has {len(self.replies)}")
        return play(self.replies[n], getattr(options, "signal", None))
