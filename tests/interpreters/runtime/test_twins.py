"""The two runners are twins (as httpx keeps ``Client`` and ``AsyncClient``): what a run decides
is shared (``runtime/run.py``, ``runtime/steps.py``), each runner only carries out the I/O, and
the two modules read line for line alike.

The measure: each module's lines, stripped of indentation, blank lines left out, with the
asyncio spelling taken away (``async `` and ``await ``, and the ``a``/``Async``-prefixed twin
names: ``aclose``, ``__anext__``, ``AsyncIterator``, ``AsyncRun``...), compared with
``difflib.SequenceMatcher`` (no junk heuristic): its ratio, 2 × matching lines / all lines."""

from __future__ import annotations

import difflib
import re
from pathlib import Path

RUNTIME = Path(__file__).parents[3] / "interpreters" / "runtime"

_TWIN_NAMES = (
    (re.compile(r"\b(async|await) "), ""),
    (re.compile(r"\ba(close|stream_http)\b"), r"\1"),
    (re.compile(r"__a(iter|next)__"), r"__\1__"),
    (re.compile(r"\bAsync(Iterator|Generator|Run)\b"), r"\1"),
    (re.compile(r"\bSyncRun\b"), "Run"),
)


def lines(name: str) -> list[str]:
    found = []
    for line in (RUNTIME / name).read_text().splitlines():
        for pattern, replacement in _TWIN_NAMES:
            line = pattern.sub(replacement, line)
        if line.strip():
            found.append(line.strip())
    return found


def parallel_ratio() -> float:
    return difflib.SequenceMatcher(None, lines("threads.py"), lines("tasks.py"), autojunk=False).ratio()


def test_the_runners_are_at_least_80_percent_line_parallel() -> None:
    assert parallel_ratio() >= 0.80


def test_each_runner_is_at_most_250_lines() -> None:
    counts = {name: len((RUNTIME / name).read_text().splitlines()) for name in ("threads.py", "tasks.py")}
    assert max(counts.values()) <= 250, counts


def test_no_module_of_the_engine_is_over_400_lines() -> None:
    counts = {p.name: len(p.read_text().splitlines()) for p in RUNTIME.glob("*.py")}
    assert max(counts.values()) <= 400, counts


def test_the_measure_sees_a_difference() -> None:
    assert lines("threads.py") != lines("tasks.py")
    assert difflib.SequenceMatcher(None, lines("threads.py"), lines("run.py"), autojunk=False).ratio() < 0.5
