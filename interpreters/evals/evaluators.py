"""Evaluators: what a run is scored on, computed from its trajectory (the whole conversation the
transcript holds), so no tracing backend is needed.

A :class:`Trajectory` is what one run did: its messages, and facts read from them (the final
answer, the tool calls with their arguments, the turns, the tokens and cost, the stop reason, the
error). An evaluator is a callable ``(trajectory) -> Score``; each has a ``name`` and its
``arguments`` (JSON), which is how a dataset file names it and how a report and the rescoring
cache tell evaluators apart.

Built in: :class:`Contains`, :class:`Equals`, :class:`Regex` (the final answer),
:class:`ToolCalled`, :class:`ToolSequence`, :class:`MaxToolCalls`, :class:`MaxTurns`,
:class:`MaxCost`, :class:`NoError`. Any function ``(trajectory) -> Score | bool | float``
decorated with :func:`evaluator` is one too, and can be named in files.

>>> from agentcore import AssistantMessage, TextContent, UserMessage
>>> run = Trajectory([UserMessage("2 + 2?"), AssistantMessage((TextContent("It is 4."),))])
>>> Contains("4")(run)
Score(value=1.0, passed=True, reason="the answer contains '4'")
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal

from agentcore.frozen import thaw

__all__ = [
    "Contains",
    "Equals",
    "EVALUATORS",
    "Evaluator",
    "MaxCost",
    "MaxToolCalls",
    "MaxTurns",
    "NoError",
    "Regex",
    "Score",
    "ToolCalled",
    "ToolSequence",
    "Trajectory",
    "evaluator",
    "make_evaluator",
]


@dataclass(frozen=True)
class Score:
    """One evaluator's verdict on one run: a value (1.0 / 0.0 for a check, any number for a
    measure), whether it passed, and why."""

    value: float
    passed: bool
    reason: str = ""

    def as_json(self) -> dict[str, Any]:
        return {"value": self.value, "passed": self.passed, "reason": self.reason}


@dataclass
class Trajectory:
    """What one run did, read from its messages (``case``: the case it ran, when known)."""

    messages: Sequence[Any]
    case: Any = None
    error: str | None = None
    """Why the run failed (it raised, timed out or suspended), or ``None``."""
    duration_ms: float = 0.0
    transcript: Path | None = None
    """Where the run is recorded (an evaluator that calls a model records its calls beside it)."""
    facts: dict[str, Any] = field(init=False)

    def __post_init__(self) -> None:
        assistants = [m for m in self.messages if getattr(m, "role", None) == "assistant"]
        calls = [(c.name, thaw(c.arguments)) for m in assistants for c in m.tool_calls]
        last = assistants[-1] if assistants else None
        usage = [m.usage for m in assistants if getattr(m, "usage", None) is not None]
        self.facts = {
            "answer": last.text if last is not None else "",
            "tool_calls": [{"name": n, "arguments": a} for n, a in calls],
            "turns": len(assistants),
            "tokens": sum(u.total_tokens for u in usage),
            "cost": sum(u.cost.total for u in usage),
            "stop_reason": last.stop_reason if last is not None else None,
            "error": self.error or (last.error_message if last is not None and last.stop_reason in ("error", "aborted")
                                    else None),
        }

    @property
    def answer(self) -> str:
        return str(self.facts["answer"])

    @property
    def tool_names(self) -> list[str]:
        return [c["name"] for c in self.facts["tool_calls"]]


class Evaluator:
    """Base of the built-in evaluators: ``name`` (its class's) and ``arguments`` (JSON)."""

    name: str = ""

    @property
    def arguments(self) -> dict[str, Any]:
        return {k: v for k, v in vars(self).items() if not k.startswith("_")}

    def key(self) -> str:
        """The evaluator with its arguments, as one string (a report's column, a cache key)."""
        args = ", ".join(f"{k}={v!r}" for k, v in sorted(self.arguments.items()))
        return f"{self.name}({args})"

    def __call__(self, run: Trajectory) -> Score:
        raise NotImplementedError

    def __repr__(self) -> str:
        return self.key()

    def __eq__(self, other: object) -> bool:
        """Evaluators are equal when they are of one kind with equal arguments."""
        return isinstance(other, Evaluator) and (type(self), self.key()) == (type(other), other.key())

    def __hash__(self) -> int:
        return hash((type(self), self.key()))


def _check(ok: bool, yes: str, no: str) -> Score:
    return Score(1.0 if ok else 0.0, ok, yes if ok else no)


class Contains(Evaluator):
    """The final answer contains ``text`` (``case_sensitive=False`` ignores case)."""

    name = "Contains"

    def __init__(self, text: str, case_sensitive: bool = True) -> None:
        self.text, self.case_sensitive = text, case_sensitive

    def __call__(self, run: Trajectory) -> Score:
        answer, text = run.answer, self.text
        if not self.case_sensitive:
            answer, text = answer.lower(), text.lower()
        return _check(text in answer, f"the answer contains {self.text!r}",
                      f"the answer does not contain {self.text!r}")


class Equals(Evaluator):
    """The final answer is ``text`` (``None``: the case's ``expected``), surrounding blanks aside."""

    name = "Equals"

    def __init__(self, text: str | None = None) -> None:
        self.text = text

    def __call__(self, run: Trajectory) -> Score:
        want = self.text if self.text is not None else getattr(run.case, "expected", None)
        if want is None:
            return Score(0.0, False, "Equals has no text and the case no expected answer")
        return _check(run.answer.strip() == str(want).strip(), "the answer is the expected one",
                      f"the answer is {run.answer.strip()[:80]!r}, not {str(want).strip()[:80]!r}")


class Regex(Evaluator):
    """The final answer matches ``pattern`` (``re.search``)."""

    name = "Regex"

    def __init__(self, pattern: str) -> None:
        re.compile(pattern)
        self.pattern = pattern

    def __call__(self, run: Trajectory) -> Score:
        return _check(re.search(self.pattern, run.answer) is not None, f"the answer matches {self.pattern!r}",
                      f"the answer does not match {self.pattern!r}")


class ToolCalled(Evaluator):
    """Tool ``name`` was called (with exactly these ``arguments``, when given)."""

    name = "ToolCalled"

    def __init__(self, tool: str, arguments: Mapping[str, Any] | None = None) -> None:
        self.tool, self.arguments_ = tool, dict(arguments) if arguments is not None else None

    @property
    def arguments(self) -> dict[str, Any]:
        return {"tool": self.tool, "arguments": self.arguments_}

    def __call__(self, run: Trajectory) -> Score:
        calls = [c for c in run.facts["tool_calls"] if c["name"] == self.tool]
        if self.arguments_ is not None:
            calls = [c for c in calls if c["arguments"] == self.arguments_]
        what = self.tool if self.arguments_ is None else f"{self.tool} with {self.arguments_}"
        return _check(bool(calls), f"{what} was called", f"{what} was never called")


class ToolSequence(Evaluator):
    """The tools called, in order: ``exact`` (the whole sequence), ``in_order`` (these, in this
    order, others between allowed) or ``any_order`` (each of these, in any order)."""

    name = "ToolSequence"

    def __init__(self, names: Sequence[str], mode: Literal["exact", "in_order", "any_order"] = "exact") -> None:
        if mode not in ("exact", "in_order", "any_order"):
            raise ValueError(f"ToolSequence mode must be 'exact', 'in_order' or 'any_order', not {mode!r}")
        self.names, self.mode = list(names), mode

    def __call__(self, run: Trajectory) -> Score:
        called = run.tool_names
        if self.mode == "exact":
            ok = called == self.names
        elif self.mode == "in_order":
            it = iter(called)
            ok = all(name in it for name in self.names)
        else:
            ok = all(called.count(n) >= self.names.count(n) for n in set(self.names))
        return _check(ok, f"the tools were called as expected ({self.mode})",
                      f"the tools called were {called}, expected {self.names} ({self.mode})")


class MaxToolCalls(Evaluator):
    """At most ``n`` tool calls."""

    name = "MaxToolCalls"

    def __init__(self, n: int) -> None:
        self.n = n

    def __call__(self, run: Trajectory) -> Score:
        count = len(run.facts["tool_calls"])
        return _check(count <= self.n, f"{count} tool call(s), at most {self.n}",
                      f"{count} tool call(s), more than {self.n}")


class MaxTurns(Evaluator):
    """At most ``n`` turns (model replies)."""

    name = "MaxTurns"

    def __init__(self, n: int) -> None:
        self.n = n

    def __call__(self, run: Trajectory) -> Score:
        turns = run.facts["turns"]
        return _check(turns <= self.n, f"{turns} turn(s), at most {self.n}", f"{turns} turn(s), more than {self.n}")


class MaxCost(Evaluator):
    """At most ``usd`` dollars (from the usage the model reported)."""

    name = "MaxCost"

    def __init__(self, usd: float) -> None:
        self.usd = usd

    def __call__(self, run: Trajectory) -> Score:
        cost = run.facts["cost"]
        return _check(cost <= self.usd, f"${cost:.6f}, at most ${self.usd}", f"${cost:.6f}, more than ${self.usd}")


class NoError(Evaluator):
    """The run ended without an error (no failed reply, no failure of the run itself)."""

    name = "NoError"

    def __call__(self, run: Trajectory) -> Score:
        error = run.facts["error"]
        return _check(error is None, "no error", f"the run failed: {error}")


class _Function(Evaluator):
    def __init__(self, fn: Callable[[Trajectory], Any], name: str, arguments: Mapping[str, Any]) -> None:
        self._fn, self.name, self._arguments = fn, name, dict(arguments)

    @property
    def arguments(self) -> dict[str, Any]:
        return dict(self._arguments)

    def __call__(self, run: Trajectory) -> Score:
        value = self._fn(run, **self._arguments)
        if isinstance(value, Score):
            return value
        if isinstance(value, bool):
            return Score(1.0 if value else 0.0, value, "")
        if isinstance(value, (int, float)):
            return Score(float(value), bool(value), "")
        raise TypeError(f"evaluator {self.name} returned {type(value).__name__}: return a Score, a bool or a number")


EVALUATORS: Final[dict[str, Callable[..., Evaluator]]] = {
    cls.name: cls for cls in (Contains, Equals, Regex, ToolCalled, ToolSequence, MaxToolCalls, MaxTurns, MaxCost,
                              NoError)
}
"""Evaluators by the name a dataset file gives them (the built-ins and every ``@evaluator``)."""


def evaluator(fn: Callable[..., Any]) -> Callable[..., Evaluator]:
    """Make ``fn(trajectory, **arguments) -> Score | bool | number`` an evaluator, named after
    the function in dataset files: ``@evaluator def short(run, words=50): ...`` is used as
    ``short()`` or ``short(words=20)``, and named ``short`` in a file."""
    name = fn.__name__

    def make(**arguments: Any) -> Evaluator:
        return _Function(fn, name, arguments)

    make.__name__ = make.__qualname__ = name
    make.__doc__ = fn.__doc__
    EVALUATORS[name] = make
    return make


def make_evaluator(spec: Any, where: str = "") -> Evaluator:
    """An evaluator from its file form: ``"NoError"``, ``{"Contains": {"text": "4"}}`` or
    ``{"name": "Contains", "args": {"text": "4"}}``; unknown names are refused, naming them."""
    if isinstance(spec, Evaluator):
        return spec
    args: Any
    if isinstance(spec, str):
        name, args = spec, {}
    elif isinstance(spec, Mapping) and set(spec) <= {"name", "args"} and "name" in spec:
        name, args = spec["name"], spec.get("args") or {}
    elif isinstance(spec, Mapping) and len(spec) == 1:
        (name, args), = spec.items()
        args = args or {}
    else:
        raise ValueError(f"{where}an evaluator is a name or {{name: {{arguments}}}}, not {spec!r}")
    if name not in EVALUATORS:
        raise ValueError(f"{where}unknown evaluator {name!r}: known are {', '.join(sorted(EVALUATORS))} "
                         "(a function of yours needs @evaluator, and to be imported first)")
    if not isinstance(args, Mapping):
        raise ValueError(f"{where}the arguments of {name} must be a mapping, not {args!r}")
    try:
        return EVALUATORS[name](**args)
    except TypeError as exc:
        raise ValueError(f"{where}{name}: {exc}") from None
