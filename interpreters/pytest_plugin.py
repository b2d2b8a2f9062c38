"""pytest plugin: record an agent run once, replay it in every later test run.

Enable it with the entry point ``[project.entry-points.pytest11] agentcore =
"interpreters.pytest_plugin"`` (or ``pytest_plugins = ["interpreters.pytest_plugin"]``). A test
asks for the ``agent_recording`` fixture and runs its agent through it::

    def test_weather(agent_recording):
        messages = agent_recording.run("Weather in Paris?", context, config, stream_fn=real_model)
        assert "sunny" in messages[-1].text

The transcript lives next to the test file, in ``transcripts/<test name>.jsonl``. What happens
depends on ``--agentcore-record-mode`` (as in pytest-recording):

- ``once`` (default): replay when the transcript exists, else run live and record it;
- ``none``: always replay; a missing transcript fails the test;
- ``new_episodes``: replay; when the run diverges from the recording, run live and record anew;
- ``all``: always run live and record (refreshes every transcript).

Replay is LLM-only: model replies come from the transcript, tools and hooks run live, so a code
change that changes what the agent does fails the test with the divergence report and its diff.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Final

import pytest

from agentcore import AgentContext, AgentEvent, AgentLoopConfig, AgentMessage

from .replay import ReplayDivergence, ReplayOptions, replay_llm
from .transcript import TranscriptRecorder

__all__ = ["AgentRecording", "MODES"]

MODES: Final = ("none", "once", "new_episodes", "all")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("agentcore", "agentcore-fx transcripts")
    group.addoption(
        "--agentcore-record-mode", action="store", default="once", choices=MODES,
        help="record agent runs: none (replay only), once (record missing transcripts, default), "
             "new_episodes (re-record diverging ones), all (record everything again)")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "agent_replay_options(**options): relax the replay comparison "
                                       "(ignore_timestamps, ignore_system_prompt, tool_calls_only)")
    config.addinivalue_line("markers", "agent_record_failed_runs: keep the recording of a run that "
                                       "ends in an error (a test of the failure itself)")


class AgentRecording:
    """Runs one agent per call, recording or replaying according to the mode."""

    def __init__(self, path: Path, mode: str, options: ReplayOptions, keep_failed: bool = False) -> None:
        self.path = path
        self.keep_failed = keep_failed
        self.mode = mode
        self.options = options
        self.events: list[AgentEvent] = []
        self.replayed = False
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
        from .runtime.clock import now_ms
        from .sync import agent_loop

        self._runs += 1
        if self._runs > 1:
            raise RuntimeError("agent_recording records one run per test; split the test")
        tools = context.tools if tools is None else tools
        exists = self.path.exists()
        if self.mode == "none" and not exists:
            pytest.fail(f"no recorded transcript at {self.path} (record mode 'none')", pytrace=False)
        if exists and self.mode != "all":
            diverged: str | None = None
            try:
                changed = _changed_start(self.path, prompts, context, config)
                if changed is not None:
                    if self.mode != "new_episodes":
                        pytest.fail(f"agent run diverged from {self.path.name}: {changed}; re-record it "
                                    "with --agentcore-record-mode=new_episodes", pytrace=False)
                    raise _Rerecord()
                result = replay_llm(self.path, config, tools, options=self.options)
            except _Rerecord:
                pass
            except ReplayDivergence as exc:
                diverged = str(exc.report)
            else:
                self.replayed = True
                self.events = result.events
                return result.messages
            if diverged is not None and self.mode != "new_episodes":
                # Outside the except: the report is printed once, not as a chained exception.
                pytest.fail(f"agent run diverged from {self.path.name}:\n{diverged}\n\n{_RERECORD.format(path=self.path)}",
                            pytrace=False)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        failure: str | None = None
        try:
            with TranscriptRecorder(self.path, context, config, overwrite=True) as recorder:  # records again
                stream = agent_loop(prompts, context, config, stream_fn=stream_fn, journal=recorder,
                                    clock=clock or now_ms)
                self.events = list(stream)
                messages = stream.result()
        except Exception as exc:
            failure = f"{type(exc).__name__}: {exc}"
        else:
            last = messages[-1] if messages else None
            if getattr(last, "stop_reason", None) == "error" and not self.keep_failed:
                failure = str(getattr(last, "error_message", None) or "the reply was an error")
        if failure is not None:
            # A recording of a broken run would be replayed, without a word, after the fix.
            self.path.unlink(missing_ok=True)
            pytest.fail(f"recording not saved: the run failed: {failure}. Fix the run and record again, "
                        "or mark the test with @pytest.mark.agent_record_failed_runs if the failure is "
                        "what it tests.", pytrace=False)
        return messages


_RERECORD = ("If the change is intended, record the run again: run this test with "
             "--agentcore-record-mode=new_episodes (re-records what diverges) or =all (re-records "
             "everything), or delete {path}.")


class _Rerecord(Exception):
    """The recording no longer fits the test: record it again."""


def _without_timestamps(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_timestamps(v) for k, v in value.items() if k not in ("timestamp", "at")}
    if isinstance(value, list):
        return [_without_timestamps(v) for v in value]
    return value


def _changed_start(path: Path, prompts: Any, context: AgentContext, config: AgentLoopConfig) -> str | None:
    """What differs between the recorded run's start and this test's (``None``: nothing).

    The replay feeds the *recorded* inputs, so a test whose prompt, system prompt, history,
    tools or model changed would otherwise pass against what it no longer sends."""
    from agentcore import Started, initial_state
    from agentcore.codec import to_json

    from .runtime.driver import prompt_messages
    from .secrets import known_secrets, scrub_json
    from .transcript import compact_json, read_transcript

    secrets = known_secrets(config, ())

    def as_recorded(value: Any) -> Any:  # what the recorder writes of it: scrubbed of secrets
        return _without_timestamps(json.loads(scrub_json(compact_json(to_json(value)), secrets)))

    recorded = read_transcript(path)
    now = as_recorded(initial_state(context, config))
    then = _without_timestamps(recorded.header.get("initial_state"))
    if now != then:
        fields = sorted(k for k in set(now.get("run", {})) | set(then.get("run", {}))
                        if now.get("run", {}).get(k) != then.get("run", {}).get(k))
        return f"the context or config changed since it was recorded ({', '.join(fields) or 'state'})"
    first = recorded.entries[0].input if recorded.entries else None
    if isinstance(first, Started):
        mine = as_recorded(list(prompt_messages(prompts, lambda: 0)))
        if mine != _without_timestamps(to_json(list(first.prompts))):
            return "the prompt changed since it was recorded"
    return None


def _file_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.\-]+", "_", name).strip("_") or "test"


@pytest.fixture
def agent_recording(request: pytest.FixtureRequest) -> AgentRecording:
    """Record the agent run of this test once; replay it afterwards (see the module doc)."""
    mode = str(request.config.getoption("--agentcore-record-mode"))
    marker = request.node.get_closest_marker("agent_replay_options")
    options = ReplayOptions(**marker.kwargs) if marker is not None else ReplayOptions()
    directory = Path(str(request.node.path)).parent / "transcripts"
    # The test's id within its module ("TestA::test_x"), so equal names in two classes differ.
    name = request.node.nodeid.split("::", 1)[-1].replace("::", "__")
    keep_failed = request.node.get_closest_marker("agent_record_failed_runs") is not None
    return AgentRecording(directory / f"{_file_name(name)}.jsonl", mode, options, keep_failed)
