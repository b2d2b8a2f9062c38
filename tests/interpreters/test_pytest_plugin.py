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


def test_a_changed_tool_result_fails_naming_the_call_and_the_field(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_recorded_agent=TEST_FILE)
    run_pytest(pytester).assert_outcomes(passed=1)
    pytester.makepyfile(test_recorded_agent=TEST_FILE.replace('SUFFIX = "!"', 'SUFFIX = "?"'))
    result = run_pytest(pytester)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "*agent run left its recording test_agent.jsonl:",
        "model call 2 has no recording (policy 'forgiving').",
        "  nearest recorded request: */transcripts/test_agent.jsonl step 8 (model call 2)",
        "  first differing key field: messages.2.content.0.text",
        '    recorded: "HI!"',
        '    now:      "HI?"',
        "If the change is intended, record the run again: run this test with "
        "--agentcore-record-mode=new_episodes (keeps what matches, records the rest) or =all "
        "(re-records everything), or delete */transcripts/test_agent.jsonl.",
    ])
    failures = result.stdout.str().split("short test summary info")[0]
    assert failures.count("first differing key field") == 1  # the report once, not again as a chained exception
    assert "During handling of the above exception" not in failures


def test_none_mode_without_transcript_fails(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_recorded_agent=TEST_FILE)
    result = run_pytest(pytester, "--agentcore-record-mode=none")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*no recorded transcript at *test_agent.jsonl (record mode 'none')*"])


ANSWERS_BY_CONTEXT = TEST_FILE.replace(
    'model = ScriptedModel([tool_call("shout", {"word": "hi"}), "Done."])',
    'model = ScriptedModel(lambda ctx, i: "Done." if len(ctx.messages) > 1 else tool_call("shout", {"word": "hi"}))')


def test_all_and_new_episodes_record_again(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_recorded_agent=ANSWERS_BY_CONTEXT)
    run_pytest(pytester).assert_outcomes(passed=1)
    run_pytest(pytester, "--agentcore-record-mode=all").stdout.fnmatch_lines(["*RECORDED 2*"])
    pytester.makepyfile(test_recorded_agent=ANSWERS_BY_CONTEXT.replace('SUFFIX = "!"', 'SUFFIX = "?"').replace(
        '"HI!"', '"HI?"'))
    result = run_pytest(pytester, "--agentcore-record-mode=new_episodes")
    result.assert_outcomes(passed=1)
    # The first call matched and was replayed; only the second (after the changed result) went live.
    result.stdout.fnmatch_lines(["*RECORDED 1 calls=hi*"])
    run_pytest(pytester, "--agentcore-record-mode=none").stdout.fnmatch_lines(["*REPLAYED 0*"])


def test_a_changed_prompt_misses_and_a_reworded_system_prompt_replays_with_a_warning(
        pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_recorded_agent=TEST_FILE)
    run_pytest(pytester).assert_outcomes(passed=1)
    pytester.makepyfile(test_recorded_agent=TEST_FILE.replace('"Shout hi"', '"Whisper hi"'))
    changed = run_pytest(pytester)
    changed.assert_outcomes(failed=1)
    changed.stdout.fnmatch_lines(["*first differing key field: messages.0.content", '*recorded: "Shout hi"',
                                  '*now:      "Whisper hi"'])
    pytester.makepyfile(test_recorded_agent=TEST_FILE.replace('"Be loud."', '"Be very loud."'))
    drifted = run_pytest(pytester)
    drifted.assert_outcomes(passed=1, warnings=1)
    drifted.stdout.fnmatch_lines(["*AgentRecordingDrift: agent run replayed from test_agent.jsonl with differences:",
                                  "*model call 1: drifted from */test_agent.jsonl step 1 (model call 1)",
                                  '*system_prompt: recorded "Be loud.", now "Be very loud."'])
    strict = run_pytest(pytester, "--agentcore-match=strict")
    strict.assert_outcomes(failed=1)
    strict.stdout.fnmatch_lines(["*model call 1 has no recording (policy 'strict').",
                                 "*first differing key field: system_prompt"])
    rerecorded = run_pytest(pytester, "--agentcore-record-mode=new_episodes", "--agentcore-match=strict")
    rerecorded.assert_outcomes(passed=1)
    rerecorded.stdout.fnmatch_lines(["*RECORDED 2 calls=hi*"])


def test_a_marker_sets_the_match_policy(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_recorded_agent=TEST_FILE)
    run_pytest(pytester).assert_outcomes(passed=1)
    marked = TEST_FILE.replace("def test_agent(",
                               "import pytest\n@pytest.mark.agent_match('structural')\ndef test_agent(")
    pytester.makepyfile(test_recorded_agent=marked.replace('"Shout hi"', '"Please shout hi"'))
    result = run_pytest(pytester)
    result.assert_outcomes(passed=1, warnings=1)
    result.stdout.fnmatch_lines(['*messages.0.content: recorded "Shout hi", now "Please shout hi"'])


def test_recorded_calls_never_asked_for_fail_unless_allowed(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_recorded_agent=TEST_FILE)
    run_pytest(pytester).assert_outcomes(passed=1)
    # One turn only: the recording's second model call is never asked for.
    one_turn = TEST_FILE.replace('AgentLoopConfig(model=Model(id="m"))',
                                 'AgentLoopConfig(model=Model(id="m"), max_turns=1)'
                                 ).replace('assert messages[-1].text == "Done."', "")
    pytester.makepyfile(test_recorded_agent=one_turn)
    result = run_pytest(pytester)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*agent run replayed from test_agent.jsonl but never asked for 1 recorded model "
                                 "call(s):",
                                 "*/test_agent.jsonl step 8 (model call 2)",
                                 "*The run ended sooner than it was recorded. If that is intended, record it again, "
                                 "or mark the test with @pytest.mark.agent_allow_unused."])
    allowed = one_turn.replace("def test_agent(", "import pytest\n@pytest.mark.agent_allow_unused\ndef test_agent(")
    pytester.makepyfile(test_recorded_agent=allowed)
    run_pytest(pytester).assert_outcomes(passed=1)


def test_refresh_writes_a_candidate_and_never_overwrites(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_recorded_agent=TEST_FILE)
    run_pytest(pytester).assert_outcomes(passed=1)
    transcript = pytester.path / "transcripts" / "test_agent.jsonl"
    before = transcript.read_bytes()
    pytester.makepyfile(test_recorded_agent=TEST_FILE.replace('"Be loud."', '"Be very loud."'))
    result = run_pytest(pytester, "--agentcore-record-mode=refresh")
    result.assert_outcomes(passed=1, warnings=1)
    result.stdout.fnmatch_lines([
        "*AgentRecordingRefreshed: test_agent.candidate.jsonl written beside test_agent.jsonl (not overwritten); "
        "its model calls against the recording:",
        "*model call 1: drifted from */test_agent.jsonl step 1 (model call 1)",
        "*Promote it with: agentcore transcript accept */test_agent.candidate.jsonl"])
    assert transcript.read_bytes() == before
    assert (pytester.path / "transcripts" / "test_agent.candidate.jsonl").exists()


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
