"""pytest plugin: record an agent run once, replay it in every later test run.

Enable it with the entry point ``[project.entry-points.pytest11] agentcore =
"interpreters.pytest_plugin"`` (or ``pytest_plugins = ["interpreters.pytest_plugin"]``). A test
asks for the ``agent_recording`` fixture and runs its agent through it::

    def test_weather(agent_recording):
        messages = agent_recording.run("Weather in Paris?", context, config, stream_fn=real_model)
        assert "sunny" in messages[-1].text

The transcript lives next to the test file, in ``transcripts/<test name>.jsonl``. A replay runs
the agent with its own tools and hooks and answers its model calls through a
:class:`~interpreters.streams.cassette.Cassette` of the transcript: each call by what it asks
(``--agentcore-match=strict|forgiving|structural``, default ``forgiving``; the marker
``@pytest.mark.agent_match("structural")`` or ``agent_match(MatchPolicy(...))`` per test), so a
reworded system prompt replays with a warning naming the field, and a changed tool result fails
the test with the call, the nearest recording and the first differing field. A recording the
run never asked for fails the test too (``@pytest.mark.agent_allow_unused`` allows it).

What happens depends on ``--agentcore-record-mode``:

- ``once`` (default): replay when the transcript exists, else run live and record it;
- ``none``: always replay; a missing transcript fails the test;
- ``new_episodes``: replay the calls that match, go live (``stream_fn``) from the first that
  does not, and rewrite the transcript with the run (only when something went live);
- ``all``: always run live and record (refreshes every transcript);
- ``refresh``: run live and write ``<name>.candidate.jsonl`` beside the transcript, never
  overwriting it; a warning says how the new run's calls match the recorded ones
  (``agentcore transcript accept`` promotes a candidate).
"""

from __future__ import annotations

import os
import re
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Final

import pytest

from agentcore import AgentContext, AgentEvent, AgentLoopConfig, AgentMessage

from .replay.compare import ReplayOptions
from .streams.cassette import Cassette, CassetteMiss, CassetteReport, MatchPolicy
from .streams.cassette.request import PRESETS, FieldClass
from .transcript import TranscriptRecorder

__all__ = ["AgentRecording", "AgentRecordingDrift", "AgentRecordingRefreshed", "MODES", "policy_of"]

MODES: Final = ("none", "once", "new_episodes", "all", "refresh")


class AgentRecordingDrift(UserWarning):
    """A replayed run asked something its recording did not quite ask (checked fields differ)."""


class AgentRecordingRefreshed(UserWarning):
    """``refresh`` wrote a candidate transcript: how its calls match the recorded ones."""


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("agentcore", "agentcore-fx transcripts")
    group.addoption(
        "--agentcore-record-mode", action="store", default="once", choices=MODES,
        help="record agent runs: none (replay only), once (record missing transcripts, default), "
             "new_episodes (replay what matches, record the rest live), all (record everything again), "
             "refresh (run live into <name>.candidate.jsonl, never overwrite)")
    group.addoption(
        "--agentcore-match", action="store", default="forgiving", choices=PRESETS,
        help="how a replayed model call must match its recording: strict, forgiving (default) or structural")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "agent_match(policy): how this test's model calls must match their "
                                       "recording (a preset name or an interpreters.MatchPolicy)")
    config.addinivalue_line("markers", "agent_replay_options(**options): deprecated, use agent_match "
                                       "(tool_calls_only: structural; ignore_system_prompt: the system prompt "
                                       "ignored; timestamps never matter)")
    config.addinivalue_line("markers", "agent_allow_unused: recorded model calls the run never asks for do not "
                                       "fail the test")
    config.addinivalue_line("markers", "agent_record_failed_runs: keep the recording of a run that "
                                       "ends in an error (a test of the failure itself)")


class AgentRecording:
    """Runs one agent per test, recording or replaying according to the mode."""

    def __init__(self, path: Path, mode: str, match: str | MatchPolicy | ReplayOptions = "forgiving",
                 keep_failed: bool = False, allow_unused: bool = False) -> None:
        self.path = path
        self.keep_failed = keep_failed
        self.mode = mode
        self.match = policy_of(match)
        self.allow_unused = allow_unused
        self.events: list[AgentEvent] = []
        self.replayed = False
        self.report: CassetteReport | None = None
        """How the cassette answered the run's model calls (a replay, ``new_episodes``)."""
        self._runs = 0

    def run(
        self,
        prompts: Any,
        context: AgentContext,
        config: AgentLoopConfig,
        stream_fn: Callable[..., Any] | None = None,
        *,
        tools: Sequence[Any] | None = None,
        clock: Callable[[], int] | None = None,
    ) -> list[AgentMessage]:
        """Run the agent (live and recorded, or replayed); returns the run's new messages."""
        from agentcore import replace

        self._runs += 1
        if self._runs > 1:
            raise RuntimeError("agent_recording records one run per test; split the test")
        if tools is not None:
            context = replace(context, tools=list(tools))
        exists = self.path.exists()
        if self.mode == "none" and not exists:
            pytest.fail(f"no recorded transcript at {self.path} (record mode 'none')", pytrace=False)
        if self.mode == "refresh":
            return self._refresh(prompts, context, config, stream_fn, clock)
        if not exists or self.mode == "all":
            return self._record(self.path, prompts, context, config, stream_fn, clock)
        if self.mode == "new_episodes":
            cassette = Cassette(self.path, match=self.match, on_miss="live", live=stream_fn or _no_model)
            fresh = self.path.with_name(self.path.stem + ".new.jsonl")
            try:
                messages = self._record(fresh, prompts, context, config, cassette, clock)
                report = self.report = cassette.report()
                if "live" in report.labels or report.unused:
                    os.replace(fresh, self.path)
                    return messages
            finally:
                fresh.unlink(missing_ok=True)
            self.replayed = True
            self._judge(report)
            return messages
        cassette = Cassette(self.path, match=self.match)
        failure: CassetteMiss | None = None
        try:
            messages = self._go(prompts, context, config, cassette, clock)
        except CassetteMiss as miss:
            failure = miss
        if failure is not None:  # outside the except: the report is printed once, not as a chained exception
            pytest.fail(f"agent run left its recording {self.path.name}:\n{failure}\n\n"
                        f"{_RERECORD.format(path=self.path)}", pytrace=False)
        self.replayed = True
        self.report = cassette.report()
        self._judge(self.report)
        return messages

    def _judge(self, report: CassetteReport) -> None:
        """A warning for drifted answers; a failure for recordings never served."""
        drifted = [a for a in report.answers if a.differences]
        if drifted:
            warnings.warn(AgentRecordingDrift(
                f"agent run replayed from {self.path.name} with differences:\n"
                + "\n".join(str(a) for a in drifted)), stacklevel=3)
        if report.unused and not self.allow_unused:
            pytest.fail(f"agent run replayed from {self.path.name} but never asked for {len(report.unused)} "
                        "recorded model call(s):\n" + "\n".join(f"    {r}" for r in report.unused)
                        + "\nThe run ended sooner than it was recorded. If that is intended, record it again, "
                        "or mark the test with @pytest.mark.agent_allow_unused.", pytrace=False)

    def _go(self, prompts: Any, context: AgentContext, config: AgentLoopConfig, stream_fn: Any,
            clock: Callable[[], int] | None, journal: Any = None) -> list[AgentMessage]:
        from .runtime.clock import now_ms
        from .sync import agent_loop

        stream = agent_loop(prompts, context, config, stream_fn=stream_fn, journal=journal, clock=clock or now_ms)
        self.events = list(stream)
        return stream.result()

    def _record(self, path: Path, prompts: Any, context: AgentContext, config: AgentLoopConfig, stream_fn: Any,
                clock: Callable[[], int] | None) -> list[AgentMessage]:
        path.parent.mkdir(parents=True, exist_ok=True)
        failure: str | None = None
        try:
            with TranscriptRecorder(path, context, config, overwrite=True) as recorder:  # records again
                messages = self._go(prompts, context, config, stream_fn, clock, recorder)
        except Exception as exc:
            failure = f"{type(exc).__name__}: {exc}"
        else:
            last = messages[-1] if messages else None
            if getattr(last, "stop_reason", None) == "error" and not self.keep_failed:
                failure = str(getattr(last, "error_message", None) or "the reply was an error")
        if failure is not None:
            # A recording of a broken run would be replayed, without a word, after the fix.
            path.unlink(missing_ok=True)
            pytest.fail(f"recording not saved: the run failed: {failure}. Fix the run and record again, "
                        "or mark the test with @pytest.mark.agent_record_failed_runs if the failure is "
                        "what it tests.", pytrace=False)
        return messages

    def _refresh(self, prompts: Any, context: AgentContext, config: AgentLoopConfig, stream_fn: Any,
                 clock: Callable[[], int] | None) -> list[AgentMessage]:
        candidate = self.path.with_name(self.path.stem + ".candidate.jsonl")
        messages = self._record(candidate, prompts, context, config, stream_fn, clock)
        if self.path.exists():
            report = Cassette(self.path, match=self.match).match(candidate)
            warnings.warn(AgentRecordingRefreshed(
                f"{candidate.name} written beside {self.path.name} (not overwritten); its model calls against the "
                f"recording:\n{report}\nPromote it with: agentcore transcript accept {candidate}"), stacklevel=3)
        return messages


_RERECORD = ("If the change is intended, record the run again: run this test with "
             "--agentcore-record-mode=new_episodes (keeps what matches, records the rest) or =all "
             "(re-records everything), or delete {path}.")


def policy_of(match: str | MatchPolicy | ReplayOptions) -> MatchPolicy:
    """The match policy of a preset, a policy, or the replay options of 0.5's plugin (deprecated:
    ``tool_calls_only`` is ``structural``, ``ignore_system_prompt`` ignores the system prompt,
    ``ignore_timestamps`` is what every policy does)."""
    if not isinstance(match, ReplayOptions):
        return MatchPolicy.of(match)
    fields: dict[str, FieldClass] = {"system_prompt": "ignored"} if match.ignore_system_prompt else {}
    return MatchPolicy("structural" if match.tool_calls_only else "forgiving", fields)


def _no_model(model: Any, context: Any, options: Any = None) -> Any:
    raise RuntimeError("the run asks what its recording does not hold and the test gave no stream_fn to ask live")


def _file_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.\-]+", "_", name).strip("_") or "test"


@pytest.fixture
def agent_recording(request: pytest.FixtureRequest) -> AgentRecording:
    """Record the agent run of this test once; replay it afterwards (see the module doc)."""
    mode = str(request.config.getoption("--agentcore-record-mode"))
    marker = request.node.get_closest_marker("agent_match")
    old = request.node.get_closest_marker("agent_replay_options")
    match: str | MatchPolicy | ReplayOptions = (
        marker.args[0] if marker is not None and marker.args
        else ReplayOptions(**old.kwargs) if old is not None
        else str(request.config.getoption("--agentcore-match")))
    directory = Path(str(request.node.path)).parent / "transcripts"
    # The test's id within its module ("TestA::test_x"), so equal names in two classes differ.
    name = request.node.nodeid.split("::", 1)[-1].replace("::", "__")
    keep_failed = request.node.get_closest_marker("agent_record_failed_runs") is not None
    allow_unused = request.node.get_closest_marker("agent_allow_unused") is not None
    return AgentRecording(directory / f"{_file_name(name)}.jsonl", mode, match, keep_failed, allow_unused)
