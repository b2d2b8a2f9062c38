"""Reports: what each run of an eval did and scored, the aggregates, and what changed against a
baseline, in behaviour and not only in scores.

A :class:`CaseRun` keeps, per case and repeat, the scores, whether every evaluator passed, the
facts of the trajectory (answer, tool calls with arguments, turns, tokens, cost, stop reason,
error), the duration and the transcript. :meth:`EvalReport.compare` gives each case a verdict:

- ``regressed`` / ``improved``: a score or a pass changed (worse / better);
- ``behavioural``: the tool sequence, a tool's arguments, the number of turns or the stop reason
  changed (each named);
- ``benign``: only the wording (the answer) or the usage (tokens, cost) differ;
- ``same``: nothing differs (durations, which always differ, are not compared).
"""

from __future__ import annotations

import json
import os
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from .dataset import Case
from .evaluators import Evaluator, Score, Trajectory

__all__ = ["CaseRun", "Change", "EvalReport", "Verdict", "rescore", "score_run"]

Verdict = Literal["same", "benign", "behavioural", "improved", "regressed"]


@dataclass
class CaseRun:
    """One run of one case: its scores (by evaluator key), whether all passed, its facts."""

    case: str
    repeat: int
    scores: dict[str, Score]
    passed: bool
    facts: dict[str, Any]
    duration_ms: float
    transcript: str
    error: str | None = None

    def as_json(self) -> dict[str, Any]:
        return {"case": self.case, "repeat": self.repeat, "passed": self.passed,
                "scores": {k: s.as_json() for k, s in self.scores.items()}, "facts": self.facts,
                "duration_ms": self.duration_ms, "transcript": self.transcript, "error": self.error}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CaseRun:
        return cls(data["case"], data["repeat"], {k: Score(**s) for k, s in data["scores"].items()}, data["passed"],
                   data["facts"], data["duration_ms"], data["transcript"], data.get("error"))


def score_run(case: Case | None, repeat: int, run: Trajectory, transcript: Path | str,
              evaluators: Sequence[Evaluator]) -> CaseRun:
    """Score one trajectory with every evaluator (an evaluator that raises scores 0, saying why)."""
    scores: dict[str, Score] = {}
    for e in evaluators:
        try:
            scores[e.key()] = e(run)
        except Exception as exc:
            scores[e.key()] = Score(0.0, False, f"the evaluator raised {type(exc).__name__}: {exc}")
    passed = run.error is None and all(s.passed for s in scores.values())
    name = case.name if case is not None else Path(transcript).parent.name
    return CaseRun(name, repeat, scores, passed, run.facts, run.duration_ms, str(transcript), run.error)


@dataclass(frozen=True)
class Change:
    """How one case changed against the baseline: the verdict and the facts that changed."""

    case: str
    verdict: Verdict
    changes: tuple[str, ...] = ()

    def __str__(self) -> str:
        return f"{self.case}: {self.verdict}" + "".join(f"\n    {c}" for c in self.changes)


@dataclass
class EvalReport:
    """Every run of an eval (:class:`CaseRun`), with aggregates, a table, JSON and comparisons."""

    runs: list[CaseRun]
    mode: str = ""
    meta: dict[str, Any] = field(default_factory=dict)

    # -- aggregates ----------------------------------------------------------------------------

    @property
    def cases(self) -> list[str]:
        return list(dict.fromkeys(r.case for r in self.runs))

    @property
    def passed(self) -> bool:
        return all(r.passed for r in self.runs)

    def pass_rates(self) -> dict[str, float]:
        """Per evaluator, the share of runs it passed."""
        keys = list(dict.fromkeys(k for r in self.runs for k in r.scores))
        return {k: statistics.fmean([r.scores[k].passed for r in self.runs if k in r.scores]) for k in keys}

    def by_case(self) -> dict[str, dict[str, Any]]:
        """Per case: pass rate over its repeats, and the mean and spread (standard deviation) of
        each evaluator's value."""
        out: dict[str, dict[str, Any]] = {}
        for name in self.cases:
            runs = [r for r in self.runs if r.case == name]
            values: dict[str, list[float]] = {}
            for r in runs:
                for k, s in r.scores.items():
                    values.setdefault(k, []).append(s.value)
            out[name] = {"pass_rate": statistics.fmean([r.passed for r in runs]),
                         "scores": {k: {"mean": statistics.fmean(v), "spread": statistics.pstdev(v)}
                                    for k, v in values.items()}}
        return out

    def table(self) -> str:
        """A terminal table: per case, its pass rate, mean turns, tool calls and cost; then the
        pass rate of each evaluator."""
        rows = [("case", "passed", "turns", "tools", "cost $", "failure")]
        for name, agg in self.by_case().items():
            runs = [r for r in self.runs if r.case == name]
            failing = next((r for r in runs if not r.passed), None)
            why = "" if failing is None else (failing.error or next(
                (f"{k}: {s.reason}" for k, s in failing.scores.items() if not s.passed), ""))
            rows.append((name, f"{agg['pass_rate']:.0%}", f"{statistics.fmean(r.facts['turns'] for r in runs):g}",
                         f"{statistics.fmean(len(r.facts['tool_calls']) for r in runs):g}",
                         f"{sum(r.facts['cost'] for r in runs):.4f}", why[:60]))
        widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
        lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]
        lines.append("")
        lines.extend(f"{rate:5.0%}  {key}" for key, rate in self.pass_rates().items())
        return "\n".join(lines)

    # -- files ---------------------------------------------------------------------------------

    def as_json(self) -> dict[str, Any]:
        return {"eval_report": 1, "mode": self.mode, "meta": self.meta, "runs": [r.as_json() for r in self.runs]}

    def save(self, path: str | os.PathLike[str]) -> None:
        Path(path).write_text(json.dumps(self.as_json(), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> EvalReport:
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ValueError(f"{path}: not an eval report: {exc}") from None
        if not isinstance(data, dict) or data.get("eval_report") != 1:
            raise ValueError(f"{path}: not an eval report (no 'eval_report': 1)")
        return cls([CaseRun.from_json(r) for r in data["runs"]], data.get("mode", ""), data.get("meta") or {})

    def html(self, path: str | os.PathLike[str]) -> None:
        """Write the report as one self-contained HTML page; each run links its transcript's
        HTML view, written beside the transcript."""
        from .page import write_page

        write_page(self, Path(path))

    # -- comparing -----------------------------------------------------------------------------

    def compare(self, baseline: EvalReport) -> list[Change]:
        """Per case of this report, how it changed against ``baseline`` (runs paired by repeat)."""
        before = {(r.case, r.repeat): r for r in baseline.runs}
        out = []
        for name in self.cases:
            changes: list[str] = []
            verdicts: set[Verdict] = set()
            for run in (r for r in self.runs if r.case == name):
                old = before.get((run.case, run.repeat))
                if old is None:
                    verdicts.add("behavioural")
                    changes.append(f"repeat {run.repeat}: not in the baseline")
                    continue
                verdict, said = _difference(old, run)
                verdicts.add(verdict)
                changes.extend(f"repeat {run.repeat}: {s}" for s in said)
            order: tuple[Verdict, ...] = ("regressed", "improved", "behavioural", "benign", "same")
            out.append(Change(name, next(v for v in order if v in verdicts), tuple(changes)))
        return out

    def compare_table(self, baseline: EvalReport) -> str:
        return "\n".join(str(c) for c in self.compare(baseline))


def _difference(old: CaseRun, new: CaseRun) -> tuple[Verdict, list[str]]:
    said: list[str] = []
    worse = better = False
    for key in dict.fromkeys([*old.scores, *new.scores]):
        a, b = old.scores.get(key), new.scores.get(key)
        if a is None or b is None or (a.passed, a.value) == (b.passed, b.value):
            continue
        worse |= b.passed < a.passed or (b.passed == a.passed and b.value < a.value)
        better |= b.passed > a.passed or (b.passed == a.passed and b.value > a.value)
        said.append(f"{key}: {a.value:g} ({'pass' if a.passed else 'fail'}) -> {b.value:g} "
                    f"({'pass' if b.passed else 'fail'})")
    if old.passed != new.passed:
        worse |= old.passed and not new.passed
        better |= new.passed and not old.passed
    f, g = old.facts, new.facts
    behaviour: list[str] = []
    names_a, names_b = [c["name"] for c in f["tool_calls"]], [c["name"] for c in g["tool_calls"]]
    if names_a != names_b:
        behaviour.append(f"tool sequence {names_a} -> {names_b}")
    else:
        for i, (x, y) in enumerate(zip(f["tool_calls"], g["tool_calls"], strict=True)):
            if x["arguments"] != y["arguments"]:
                behaviour.append(f"tool {x['name']} (call {i + 1}) arguments {x['arguments']} -> {y['arguments']}")
    for fact in ("turns", "stop_reason"):
        if f[fact] != g[fact]:
            behaviour.append(f"{fact} {f[fact]} -> {g[fact]}")
    said.extend(behaviour)
    if worse:
        return "regressed", said
    if better:
        return "improved", said
    if behaviour:
        return "behavioural", said
    benign = [name for name in ("answer", "tokens", "cost") if f[name] != g[name]]
    if benign:
        return "benign", [f"{name} changed" for name in benign]
    return "same", []  # durations always differ: they are reported, never a change


def rescore(source: EvalReport | str | os.PathLike[str], evaluators: Sequence[Any],
            cases: Sequence[Case] | None = None) -> EvalReport:
    """Score existing transcripts again with ``evaluators``, without running anything: the runs
    of a report (or every ``<case>/<repeat>.jsonl`` under a folder) are read back by strict
    replay. Scores are cached by evaluator (with its arguments) and transcript digest."""
    from ..replay import replay
    from .evaluators import make_evaluator

    chosen = [make_evaluator(e) for e in evaluators]
    by_name = {c.name: c for c in cases or ()}
    if isinstance(source, EvalReport):
        found = [(r.case, r.repeat, Path(r.transcript)) for r in source.runs]
    else:
        root = Path(source)
        found = sorted((p.parent.name, int(p.stem), p) for p in root.glob("*/*.jsonl") if p.stem.isdigit())
        # (judges' recordings, <n>.judge-<key>.jsonl, and candidates are not runs)
    runs = []
    for name, repeat, path in found:
        if not path.exists():
            run = Trajectory([], by_name.get(name), error=f"no transcript at {path}", transcript=path)
        else:
            result = replay(path, check=False)
            run = Trajectory(result.messages, by_name.get(name), transcript=path)
        runs.append(_cached_score(by_name.get(name), name, repeat, run, path, chosen))
    return EvalReport(runs, mode="rescore")


_CACHE: dict[tuple[str, str], Score] = {}


def _cached_score(case: Case | None, name: str, repeat: int, run: Trajectory, path: Path,
                  evaluators: Sequence[Evaluator]) -> CaseRun:
    import hashlib

    digest = hashlib.blake2b(path.read_bytes(), digest_size=16).hexdigest() if path.exists() else ""
    scores: dict[str, Score] = {}
    for e in evaluators:
        key = (e.key(), digest)
        if key not in _CACHE or not digest:
            _CACHE[key] = score_run(case, repeat, run, path, [e]).scores[e.key()]
        scores[e.key()] = _CACHE[key]
    passed = run.error is None and all(s.passed for s in scores.values())
    return CaseRun(name, repeat, scores, passed, run.facts, run.duration_ms, str(path), run.error)
