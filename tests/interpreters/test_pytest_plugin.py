"""The agent_recording fixture, driven through pytest's own pytester."""

from __future__ import annotations

import json

import pytest

pytest_plugins = ["pytester"]

TEST_FILE = '''
from agentcore import AgentContext, AgentLoopConfig, Model
from interpreters import ScriptedModel, tool
from interpreters.streams.scripted import tool_call

CALLS = []

@tool
def shout(word: str) -> str:
    """Shout a word."""
    CALLS.append(word)
    return word.upper() + SUFFIX

SUFFIX = "!"

def test_agent(agent_recording):
    model = ScriptedModel([tool_call("shout", {"word": "hi"}), "Done."])
    context = AgentContext("Be loud.", [], [shout])
    config = AgentLoopConfig(model=Model(id="m"))
    messages = agent_recording.run("Shout hi", context, config, stream_fn=model)
    assert messages[-1].text == "Done."
    assert messages[2].content[0].text == "HI!"
    print("REPLAYED" if agent_recording.replayed else "RECORDED", model.calls, "calls=" + ",".join(CALLS))
'''


def run_pytest(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest("-s", *args)  # the plugin comes in through its pytest11 entry point


def test_records_once_then_replays(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_recorded_agent=TEST_FILE)
    first = run_pytest(pytester)
    first.assert_outcomes(passed=1)
    first.stdout.fnmatch_lines(["*RECORDED 2 calls=hi*"])
    transcript = pytester.path / "transcripts" / "test_agent.jsonl"
    header = json.loads(transcript.read_text().splitlines()[0])
    assert header["transcript"] == "agentcore-fx" and header["tools"][0]["name"] == "shout"

    second = run_pytest(pytester)
    second.assert_outcomes(passed=1)
    # The model is not called; the tool runs live.
    second.stdout.fnmatch_lines(["*REPLAYED 0 calls=hi*"])
    third = run_pytest(pytester, "--agentcore-record-mode=none")
    third.assert_outcomes(passed=1)


def test_divergence_fails_with_the_diff(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_recorded_agent=TEST_FILE)
    run_pytest(pytester).assert_outcomes(passed=1)
    pytester.makepyfile(test_recorded_agent=TEST_FILE.replace('SUFFIX = "!"', 'SUFFIX = "?"'))
    result = run_pytest(pytester)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "*agent run diverged from test_agent.jsonl:*",
        "replay diverged at step * (turn 1), effect 0 (emit tool_execution_end): "
        "tool_execution_end.result.content[[]0[]].text: recorded 'HI!', now 'HI?'",
        '*-*"text": "HI!",*',
        '*+*"text": "HI?",*',
        "If the change is intended, record the run again: run this test with "
        "--agentcore-record-mode=new_episodes (re-records what diverges) or =all (re-records "
        "everything), or delete */transcripts/test_agent.jsonl.",
    ])
    failures = result.stdout.str().split("short test summary info")[0]
    assert failures.count("replay diverged at step") == 1  # the report once, not again as a chained exception
    assert "During handling of the above exception" not in failures


def test_none_mode_without_transcript_fails(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_recorded_agent=TEST_FILE)
    result = run_pytest(pytester, "--agentcore-record-mode=none")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*no recorded transcript at *test_agent.jsonl (record mode 'none')*"])


def test_all_and_new_episodes_record_again(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_recorded_agent=TEST_FILE)
    run_pytest(pytester).assert_outcomes(passed=1)
    run_pytest(pytester, "--agentcore-record-mode=all").stdout.fnmatch_lines(["*RECORDED 2*"])
    pytester.makepyfile(test_recorded_agent=TEST_FILE.replace('SUFFIX = "!"', 'SUFFIX = "?"').replace('"HI!"', '"HI?"'))
    result = run_pytest(pytester, "--agentcore-record-mode=new_episodes")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*RECORDED 2*"])
    run_pytest(pytester, "--agentcore-record-mode=none").stdout.fnmatch_lines(["*REPLAYED 0*"])


def test_a_changed_prompt_or_system_prompt_is_not_replayed_against_the_old_recording(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_recorded_agent=TEST_FILE)
    run_pytest(pytester).assert_outcomes(passed=1)
    pytester.makepyfile(test_recorded_agent=TEST_FILE.replace('"Shout hi"', '"Whisper hi"'))
    changed = run_pytest(pytester)
    changed.assert_outcomes(failed=1)
    changed.stdout.fnmatch_lines(["*agent run diverged from test_agent.jsonl: the prompt changed since it was "
                                  "recorded; re-record it with --agentcore-record-mode=new_episodes*"])
    pytester.makepyfile(test_recorded_agent=TEST_FILE.replace('"Be loud."', '"Be quiet."'))
    changed = run_pytest(pytester)
    changed.assert_outcomes(failed=1)
    changed.stdout.fnmatch_lines(["*the context or config changed since it was recorded (system_prompt)*"])
    rerecorded = run_pytest(pytester, "--agentcore-record-mode=new_episodes")
    rerecorded.assert_outcomes(passed=1)
    rerecorded.stdout.fnmatch_lines(["*RECORDED 2 calls=hi*"])


def test_equal_test_names_in_two_classes_get_two_transcripts(pytester: pytest.Pytester) -> None:
    body = TEST_FILE.replace("def test_agent(agent_recording):", "def _body(agent_recording):")
    body += '''
class TestA:
    def test_same(self, agent_recording):
        _body(agent_recording)

class TestB:
    def test_same(self, agent_recording):
        _body(agent_recording)
'''
    pytester.makepyfile(test_recorded_agent=body)
    run_pytest(pytester).assert_outcomes(passed=2)
    names = sorted(p.name for p in (pytester.path / "transcripts").iterdir())
    assert names == ["TestA__test_same.jsonl", "TestB__test_same.jsonl"]


def test_a_recording_with_secrets_in_its_start_replays(pytester: pytest.Pytester) -> None:
    """The transcript's start is scrubbed; the comparison with the test's start scrubs it alike."""
    secret_file = TEST_FILE.replace(
        'config = AgentLoopConfig(model=Model(id="m"))',
        'config = AgentLoopConfig(model=Model(id="m", headers={"Authorization": "Bearer abcdefgh12345678abcd"}),'
        ' api_key="myVerySecretApiKey42")').replace(
        'context = AgentContext("Be loud.", [], [shout])',
        'context = AgentContext("Be loud. The key is myVerySecretApiKey42.", [], [shout])').replace(
        '"Shout hi"', '"Shout hi with sk-proj-' + "a" * 30 + '"')
    assert secret_file != TEST_FILE
    pytester.makepyfile(test_recorded_agent=secret_file)
    run_pytest(pytester).stdout.fnmatch_lines(["*RECORDED 2 calls=hi*"])
    transcript = (pytester.path / "transcripts" / "test_agent.jsonl").read_text()
    assert "myVerySecretApiKey42" not in transcript and "abcdefgh12345678abcd" not in transcript
    second = run_pytest(pytester)
    second.assert_outcomes(passed=1)
    second.stdout.fnmatch_lines(["*REPLAYED 0 calls=hi*"])


FAILING_TEST = '''
import pytest
from agentcore import AgentContext, AgentLoopConfig, Model
from interpreters import ScriptedModel
from interpreters.streams.scripted import error

def test_agent(agent_recording):
    model = ScriptedModel([error("the provider is down")])
    agent_recording.run("hi", AgentContext(), AgentLoopConfig(model=Model(id="m")), stream_fn=model)

@pytest.mark.agent_record_failed_runs
def test_the_failure(agent_recording):
    model = ScriptedModel([error("the provider is down")])
    messages = agent_recording.run("hi", AgentContext(), AgentLoopConfig(model=Model(id="m")), stream_fn=model)
    assert messages[-1].error_message == "the provider is down"
'''


def test_a_run_that_failed_is_not_recorded(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_failing_agent=FAILING_TEST)
    result = run_pytest(pytester)
    result.assert_outcomes(failed=1, passed=1)
    result.stdout.fnmatch_lines(["*recording not saved: the run failed: the provider is down. Fix the run and "
                                 "record again, or mark the test with @pytest.mark.agent_record_failed_runs if "
                                 "the failure is what it tests.*"])
    transcripts = sorted(p.name for p in (pytester.path / "transcripts").iterdir())
    assert transcripts == ["test_the_failure.jsonl"]  # the marked test keeps its recording
    run_pytest(pytester).assert_outcomes(failed=1, passed=1)  # still not recorded, still replays the other
