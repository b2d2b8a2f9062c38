"""Evals over transcripts (interpreters.evals): datasets, evaluators, recording, offline re-runs,
rescoring and behavioural comparisons, on scripted models."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentcore import AgentContext, AgentLoopConfig, Model
from interpreters import ScriptedModel, tool
from interpreters.evals import (
    AgentSpec,
    Case,
    Contains,
    Dataset,
    EvalReport,
    MaxTurns,
    NoError,
    ToolCalled,
    ToolSequence,
    evaluate,
    evaluator,
    rescore,
)
from interpreters.streams.scripted import tool_call

CONFIG = AgentLoopConfig(model=Model(id="m"))


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def dataset(n: int = 20) -> Dataset:
    cases = [Case(f"sum-{i}", f"What is {i} + {i + 1}?", expected=str(2 * i + 1),
                  evaluators=[Contains(str(2 * i + 1))]) for i in range(n)]
    return Dataset(cases, [NoError(), ToolCalled("add"), MaxTurns(3)])


class Counting:
    """A stream function that counts the model calls it is asked."""

    calls = 0

    def __init__(self, replies: list[Any]) -> None:
        self.model = ScriptedModel(replies)

    def __call__(self, *args: Any) -> Any:
        Counting.calls += 1
        return self.model(*args)


def agent(wording: str = "The sum is {}.", swap: int | None = None) -> Any:
    def make(case: Case) -> AgentSpec:
        i = int(case.name.split("-")[1])
        a, b = (i + 1, i) if swap == i else (i, i + 1)
        model = Counting([tool_call("add", {"a": a, "b": b}), wording.format(2 * i + 1)])
        return AgentSpec(AgentContext("You add.", [], [add]), CONFIG, model)

    return make


def test_twenty_cases_three_repeats_recorded_replayed_rescored_and_compared(tmp_path: Path) -> None:
    data = dataset(20)
    Counting.calls = 0
    recorded = evaluate(data, agent(), repeat=3, transcripts=tmp_path / "t", mode="once")
    assert Counting.calls == 20 * 3 * 2 and recorded.passed and len(recorded.runs) == 60
    assert sorted(p.relative_to(tmp_path / "t").as_posix() for p in (tmp_path / "t").glob("*/*.jsonl"))[:3] == [
        "sum-0/1.jsonl", "sum-0/2.jsonl", "sum-0/3.jsonl"]

    Counting.calls = 0
    offline = evaluate(data, agent(), repeat=3, transcripts=tmp_path / "t", mode="none")
    assert Counting.calls == 0  # no model call: every answer came from the recordings
    assert [(r.case, r.repeat, r.passed, r.facts) for r in offline.runs] == [
        (r.case, r.repeat, r.passed, r.facts) for r in recorded.runs]
    assert [c.verdict for c in offline.compare(recorded)] == ["same"] * 20

    rescored = rescore(tmp_path / "t", [NoError(), ToolSequence(["add"])], cases=data.cases)
    assert len(rescored.runs) == 60 and rescored.passed
    assert list(rescored.runs[0].scores) == ["NoError()", "ToolSequence(mode='exact', names=['add'])"]

    swapped = evaluate(data, agent(swap=4), repeat=3, transcripts=tmp_path / "swapped", mode="all")
    changes = {c.case: c for c in swapped.compare(recorded)}
    assert changes["sum-4"].verdict == "behavioural"
    assert changes["sum-4"].changes[0] == (
        "repeat 1: tool add (call 1) arguments {'a': 4, 'b': 5} -> {'a': 5, 'b': 4}")
    assert {c.verdict for name, c in changes.items() if name != "sum-4"} == {"same"}

    reworded = evaluate(data, agent(wording="Sum: {}"), repeat=3, transcripts=tmp_path / "reworded", mode="all")
    assert {c.verdict for c in reworded.compare(recorded)} == {"benign"}
    assert reworded.compare(recorded)[0].changes[0] == "repeat 1: answer changed"


def test_a_score_change_is_a_regression_naming_the_evaluator(tmp_path: Path) -> None:
    data = dataset(2)
    before = evaluate(data, agent(), transcripts=tmp_path / "a", mode="all")
    after = evaluate(data, agent(wording="I do not know."), transcripts=tmp_path / "b", mode="all")
    change = after.compare(before)[0]
    assert change.verdict == "regressed"
    assert change.changes[0] == "repeat 1: Contains(case_sensitive=True, text='1'): 1 (pass) -> 0 (fail)"
    assert not after.passed
    assert "sum-0  0%" in after.table().replace("   ", "  ")


def test_failed_runs_are_failures_with_their_reason_never_a_crashed_eval(tmp_path: Path) -> None:
    def broken(case: Case) -> AgentSpec:
        def raising(*args: Any) -> Any:
            raise RuntimeError("the provider is down")

        return AgentSpec(AgentContext("", [], [add]), CONFIG, raising)

    report = evaluate(dataset(2), broken, transcripts=tmp_path / "t", mode="all")
    assert not report.passed
    assert report.runs[0].scores["NoError()"].reason == "the run failed: the provider is down"
    missing = evaluate(dataset(1), agent(), transcripts=tmp_path / "nothing", mode="none")
    where = tmp_path / "nothing" / "sum-0" / "1.jsonl"
    assert missing.runs[0].error == f"no recorded transcript at {where} (mode 'none')"


def test_a_report_saves_and_loads(tmp_path: Path) -> None:
    report = evaluate(dataset(3), agent(), repeat=2, transcripts=tmp_path / "t")
    report.save(tmp_path / "report.json")
    again = EvalReport.load(tmp_path / "report.json")
    assert [r.as_json() for r in again.runs] == [r.as_json() for r in report.runs]
    assert again.pass_rates() == {"NoError()": 1.0, "ToolCalled(arguments=None, tool='add')": 1.0,
                                  "MaxTurns(n=3)": 1.0, "Contains(case_sensitive=True, text='1')": 1.0,
                                  "Contains(case_sensitive=True, text='3')": 1.0,
                                  "Contains(case_sensitive=True, text='5')": 1.0}
    (tmp_path / "bad.json").write_text("{}")
    with pytest.raises(ValueError, match=r"bad.json: not an eval report \(no 'eval_report': 1\)"):
        EvalReport.load(tmp_path / "bad.json")


def test_datasets_round_trip_through_yaml_and_json_and_refuse_bad_input(tmp_path: Path) -> None:
    @evaluator
    def short(run: Any, words: int = 5) -> bool:
        return len(run.answer.split()) <= words

    data = Dataset([Case("a", "Hi", expected="Hello", metadata={"k": 1}, evaluators=[short(words=3)]),
                    Case("b", [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Yes?"},
                               {"role": "user", "content": "Go on"}])], [NoError()])
    for name in ("d.yaml", "d.json"):
        data.to_file(tmp_path / name)
        again = Dataset.from_file(tmp_path / name)
        assert again.to_data() == data.to_data()
    assert json.loads((tmp_path / "d.json").read_text())["cases"][0]["evaluators"] == [{"short": {"words": 3}}]
    assert [m.role for m in again.cases[1].prompts()] == ["user", "assistant", "user"]
    with pytest.raises(ValueError, match=r"^case names must be unique: 'a' given more than once$"):
        Dataset([Case("a", "x"), Case("a", "y")])
    (tmp_path / "bad.yaml").write_text("cases:\n  - name: a\n    prompt: x\n    evaluators: [Nope]\n")
    with pytest.raises(ValueError, match=r"^case a: unknown evaluator 'Nope': known are "):
        Dataset.from_file(tmp_path / "bad.yaml")


def test_an_llm_judge_is_recorded_beside_the_run_and_answered_from_it_later(tmp_path: Path) -> None:
    from interpreters.evals import LLMJudge

    judge_model = Counting(["PASS\nIt used the tool and gave the sum."] * 2)
    judge = LLMJudge("The agent must add with the tool.", model=Model(id="judge-1"), stream_fn=judge_model)
    data = Dataset([Case("sum-1", "What is 1 + 2?")], [judge])
    Counting.calls = 0
    first = evaluate(data, agent(), transcripts=tmp_path / "t")
    assert Counting.calls == 3  # the agent's two calls and the judge's one
    score = first.runs[0].scores["LLMJudge(model='judge-1', rubric='The agent must add with the tool.')"]
    assert (score.passed, score.reason) == (True, "It used the tool and gave the sum.")
    judged = sorted(p.name for p in (tmp_path / "t" / "sum-1").iterdir())
    assert judged[0] == "1.jsonl" and judged[1].startswith("1.judge-") and len(judged) == 2
    Counting.calls = 0
    offline = LLMJudge("The agent must add with the tool.", model=Model(id="judge-1"), offline=True)
    again = evaluate(Dataset([Case("sum-1", "What is 1 + 2?")], [offline]), agent(), transcripts=tmp_path / "t",
                     mode="none")
    assert Counting.calls == 0 and again.passed
    rescored = rescore(tmp_path / "t", [offline])
    assert rescored.passed and len(rescored.runs) == 1
    changed = rescore(tmp_path / "t", [LLMJudge("Another rubric.", model=Model(id="judge-1"), offline=True)])
    reason = list(changed.runs[0].scores.values())[0].reason
    assert reason.startswith("no recorded verdict of this judge at ") and reason.endswith(" (offline)")


def test_a_report_as_a_self_contained_page_linking_each_transcript(tmp_path: Path) -> None:
    data = Dataset([Case("sum-1", "What is 1 + 2?"), Case("sum-<2>", "What is 2 + 3?")], [NoError()])

    def make(case: Case) -> AgentSpec:
        return agent()(Case("sum-1" if case.name == "sum-1" else "sum-2", case.prompt))

    report = evaluate(data, make, transcripts=tmp_path / "t")
    report.html(tmp_path / "report.html")
    page = (tmp_path / "report.html").read_text()
    assert "sum-&lt;2&gt;" in page and "sum-<2>" not in page
    assert 'href="t/sum-1/1.html"' in page and 'href="t/sum-&lt;2&gt;/1.html"' in page
    assert (tmp_path / "t" / "sum-1" / "1.html").read_text().startswith("<!DOCTYPE html>")
    assert "http://" not in page and "https://" not in page  # self-contained


def test_bad_arguments_are_refused_before_anything_runs(tmp_path: Path) -> None:
    data = dataset(1)
    with pytest.raises(ValueError, match=r"^mode must be one of 'none', 'once', 'all', 'refresh', not 'live'$"):
        evaluate(data, agent(), transcripts=tmp_path, mode="live")
    with pytest.raises(ValueError, match=r"^repeat must be an int of at least 1, not 0$"):
        evaluate(data, agent(), transcripts=tmp_path, repeat=0)
    with pytest.raises(ValueError, match=r"^executor must be None \(asyncio, here\) or 'ray', not 'dask'$"):
        evaluate(data, agent(), transcripts=tmp_path, executor="dask")
    with pytest.raises(ValueError, match=r"^a case's name is a non-empty string without '/', not 'a/b'$"):
        Case("a/b", "x")
    (tmp_path / "d.json").write_text('{"cases": [{"name": "a", "prompt": "x", "answer": "y"}]}')
    with pytest.raises(ValueError, match=r"d.json: case 'a': unknown field\(s\) answer$"):
        Dataset.from_file(tmp_path / "d.json")
    (tmp_path / "e.json").write_text('{"cases": [{"name": "a"}]}')
    with pytest.raises(ValueError, match=r"e.json: case 1 needs a name and a prompt"):
        Dataset.from_file(tmp_path / "e.json")
    assert not list(tmp_path.glob("*/*.jsonl"))  # nothing ran
