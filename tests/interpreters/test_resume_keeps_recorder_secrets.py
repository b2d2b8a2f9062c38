"""What a transcript's recorder was told never to write, the run that goes on in it never writes.

``TranscriptRecorder(path, ..., secrets=[pw])`` keeps ``pw`` out of every line. A transcript
cannot hold the secrets themselves, only how many its recorder was given: a resume into it
(``resume_suspended(..., transcript=path)``, a crash ``resume``) takes them again with
``secrets=``, and fewer than were given is refused before anything runs or is written. The
recorder that recorded the run up to its suspension, given again as the resumed run's journal,
goes on in its own file with its own secrets.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agentcore import AgentContext, AgentLoopConfig, Approve, Model
from interpreters import ScriptedModel, tool
from interpreters.replay import aresume, fork, replay, resume
from interpreters.replay.recovery import AlreadyResumed
from interpreters.streams.scripted import Reply, ScriptedCall
from interpreters.transcript import TranscriptRecorder, read_transcript
from tests.support.clocks import clock
from tests.support.flavours import Flavour

PASSWORD = "correct-horse-battery-staple"
TOKEN = "tok-0123456789-abcdef"
CONNECTED: list[str] = []


@tool(requires_approval=True)
def connect(database: str) -> str:
    """Connect to a database."""
    CONNECTED.append(database)
    return f"connected to {database} as admin:{PASSWORD} with {TOKEN}"


def reply(context: Any, n: int) -> Any:
    if context.messages[-1].role == "toolResult":
        return "Connected."
    return Reply(tool_calls=[ScriptedCall("connect", {"database": "prod"}, "c1")])


def setup() -> tuple[AgentContext, AgentLoopConfig, ScriptedModel]:
    CONNECTED.clear()
    return AgentContext("s", (), [connect]), AgentLoopConfig(model=Model(id="m")), ScriptedModel(reply, clock=clock)


def refusal(path: Path, needed: int, given: int, fn: str = "resume_suspended") -> str:
    them = "it" if needed == 1 else "them"
    return (f"{path}: its recorder was given {needed} secret{'' if needed == 1 else 's'} to keep out of it "
            f"(secrets=), which the transcript does not hold: give {them} again, {fn}(..., secrets=[...]) "
            f"({given} given), so that the run that goes on in it never writes {them} either")


def suspended(flavour: Flavour, path: Path, secrets: list[str]) -> Any:
    context, config, model = setup()
    _, _, suspension = flavour.start_suspending("Connect to prod", context, config, model, clock=clock,
                                                journal=TranscriptRecorder(path, context, config, secrets=secrets))
    return context, config, model, suspension


def test_a_resume_without_the_recorders_secrets_is_refused_before_anything_runs(flavour: Flavour,
                                                                                tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    context, config, model, suspension = suspended(flavour, path, [PASSWORD, TOKEN])
    assert read_transcript(path).header["caller_secrets"] == 2
    before = path.read_bytes()
    for given in ([], [PASSWORD], [PASSWORD, "", PASSWORD]):
        with pytest.raises(ValueError) as info:
            flavour.resume(suspension, {"c1": Approve()}, context, config, model, clock=clock, transcript=path,
                           secrets=given)
        assert str(info.value) == refusal(path, 2, len(set(given) - {""}))
        assert path.read_bytes() == before and CONNECTED == []
    _, messages, _ = flavour.resume(suspension, {"c1": Approve()}, context, config, model, clock=clock,
                                    transcript=path, secrets=[PASSWORD, TOKEN])
    assert messages[-1].text == "Connected." and CONNECTED == ["prod"]
    text = path.read_text()
    assert PASSWORD not in text and TOKEN not in text and "admin:[REDACTED] with [REDACTED]" in text
    assert replay(path).finished


def test_the_secrets_of_a_resume_count_for_the_next_one(flavour: Flavour, tmp_path: Path) -> None:
    """A resumed run given more secrets than the first recorder: a later resume needs as many."""
    path = tmp_path / "run.jsonl"
    context, config, model = setup()
    twice = ScriptedModel(lambda ctx, n: "Connected." if n >= 2 else Reply(
        tool_calls=[ScriptedCall("connect", {"database": f"db{n}"}, f"c{n}")]), clock=clock)
    _, _, s1 = flavour.start_suspending("Connect", context, config, twice, clock=clock,
                                        journal=TranscriptRecorder(path, context, config, secrets=[PASSWORD]))
    _, _, s2 = flavour.resume(s1, {"c0": Approve()}, context, config, twice, clock=clock, transcript=path,
                              secrets=[PASSWORD, TOKEN])
    assert s2 is not None
    with pytest.raises(ValueError) as info:
        flavour.resume(s2, {"c1": Approve()}, context, config, twice, clock=clock, transcript=path,
                       secrets=[PASSWORD])
    assert str(info.value) == refusal(path, 2, 1)
    flavour.resume(s2, {"c1": Approve()}, context, config, twice, clock=clock, transcript=path,
                   secrets=[PASSWORD, TOKEN])
    text = path.read_text()
    assert PASSWORD not in text and TOKEN not in text
    assert replay(path).finished
    # s2 holds the secrets the transcript redacted: it is still found there, resumed already.
    with pytest.raises(AlreadyResumed, match=r"this suspension \(step \d+\) was already resumed at step \d+ "
                                             r"\(c1 approved\)"):
        flavour.resume(s2, {"c1": Approve()}, context, config, twice, clock=clock, transcript=path,
                       secrets=[PASSWORD, TOKEN])
    assert CONNECTED == ["db0", "db1"]


def test_secrets_without_a_transcript_are_refused(flavour: Flavour, tmp_path: Path) -> None:
    context, config, model, suspension = suspended(flavour, tmp_path / "run.jsonl", [PASSWORD])
    with pytest.raises(ValueError) as info:
        flavour.resume(suspension, {"c1": Approve()}, context, config, model, clock=clock, secrets=[PASSWORD])
    assert str(info.value) == ("resume_suspended(): secrets= is for the transcript the run goes on in "
                               "(transcript=path), and none was given: give a journal's recorder its own secrets=")
    with pytest.raises(TypeError, match="argument 'secrets' must be a list of strings, not a str"):
        flavour.resume(suspension, {"c1": Approve()}, context, config, model, clock=clock,
                       transcript=tmp_path / "run.jsonl", secrets=PASSWORD)
    assert CONNECTED == []


def test_the_recorder_of_the_suspension_goes_on_with_its_own_secrets(flavour: Flavour, tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    context, config, model = setup()
    recorder = TranscriptRecorder(path, context, config, secrets=[PASSWORD])
    _, _, suspension = flavour.start_suspending("Connect to prod", context, config, model, clock=clock,
                                                journal=recorder)
    _, messages, again = flavour.resume(suspension, {"c1": Approve()}, context, config, model, clock=clock,
                                        journal=recorder)
    assert again is None and messages[-1].text == "Connected."
    text = path.read_text()
    assert PASSWORD not in text and "admin:[REDACTED]" in text
    assert replay(path).finished
    assert recorder.steps == read_transcript(path).steps


def test_a_crash_resume_is_refused_without_the_recorders_secrets(flavour: Flavour, tmp_path: Path) -> None:
    @tool
    def plain_connect(database: str) -> str:
        """Connect to a database (no approval)."""
        return f"connected to {database} as admin:{PASSWORD}"

    model = ScriptedModel(lambda ctx, n: "Connected." if ctx.messages[-1].role == "toolResult" else Reply(
        tool_calls=[ScriptedCall("plain_connect", {"database": "prod"}, "c1")]), clock=clock)
    context, config = AgentContext("s", (), [plain_connect]), AgentLoopConfig(model=Model(id="m"))
    full = tmp_path / "full.jsonl"
    flavour.run("Connect", context, config, model, clock=clock,
                journal=TranscriptRecorder(full, context, config, secrets=[PASSWORD]))
    asked = next(e.step for e in read_transcript(full) if any(x["type"] == "execute_tool" for x in e.effects_json))
    cut = fork(full, asked, tmp_path / "cut.jsonl")  # the process died while the tool ran
    before = cut.read_bytes()
    start = resume if not flavour.is_async else aresume
    name = "resume" if not flavour.is_async else "aresume"
    with pytest.raises(ValueError) as info:
        start(cut, config, context.tools, stream_fn=model, clock=clock)
    assert str(info.value) == refusal(cut, 1, 0, name)
    assert cut.read_bytes() == before
    _, messages = flavour.collect(lambda: start(cut, config, context.tools, stream_fn=model, clock=clock,
                                                secrets=[PASSWORD]))
    assert messages[-1].text == "Connected."
    text = cut.read_text()
    assert PASSWORD not in text and "admin:[REDACTED]" in text


def test_the_recorder_of_the_suspension_and_transcript_of_its_file_are_one_writer(flavour: Flavour,
                                                                                   tmp_path: Path) -> None:
    """``journal=`` the recorder of the suspension and ``transcript=`` its file: it goes on once."""
    path = tmp_path / "run.jsonl"
    context, config = AgentContext("s", (), [connect]), AgentLoopConfig(model=Model(id="m"))
    model = ScriptedModel(reply, clock=clock)
    CONNECTED.clear()
    recorder = TranscriptRecorder(path, context, config)
    _, _, suspension = flavour.start_suspending("Connect to prod", context, config, model, clock=clock,
                                                journal=recorder)
    _, messages, _ = flavour.resume(suspension, {"c1": Approve()}, context, config, model, clock=clock,
                                    journal=recorder, transcript=tmp_path / "." / "run.jsonl", secrets=[PASSWORD])
    assert messages[-1].text == "Connected." and CONNECTED == ["prod"]
    text = path.read_text()
    assert text.count('"resumed_suspension"') == 1 and PASSWORD not in text
    assert replay(path).finished
