"""Datasets: the cases of an eval, in code or in a YAML or JSON file, and the agent they run
against (:class:`AgentSpec`).

The file form (``docs/evals.md`` has it with an example)::

    evaluators: [NoError, {MaxTurns: {n: 4}}]          # applied to every case
    cases:
      - name: add                                       # unique
        prompt: "2 + 3?"                                # a text, or a list of messages
        expected: "5"                                   # optional: what Equals compares with
        metadata: {topic: arithmetic}                   # optional
        evaluators: [{Contains: {text: "5"}}]           # optional, this case's own

A prompt given as messages is a list of ``{"role": "user" | "assistant", "content": TEXT}``.
Duplicate case names and unknown evaluators are refused, naming them, when the dataset is made.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentcore import AgentContext, AgentLoopConfig, AssistantMessage, TextContent, UserMessage

from .evaluators import Evaluator, make_evaluator

__all__ = ["AgentSpec", "Case", "Dataset"]


@dataclass(frozen=True)
class Case:
    """One case: a name (unique in its dataset), the prompt (a text or messages), what the answer
    should be (``expected``), free ``metadata``, and evaluators of its own."""

    name: str
    prompt: str | Sequence[Any]
    expected: Any = None
    metadata: Mapping[str, Any] | None = None
    evaluators: Sequence[Evaluator] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name or "/" in self.name or self.name in (".", ".."):
            raise ValueError(f"a case's name is a non-empty string without '/', not {self.name!r}")
        object.__setattr__(self, "evaluators", tuple(make_evaluator(e, f"case {self.name}: ")
                                                     for e in self.evaluators))

    def prompts(self) -> Any:
        """The prompt as the loop takes it (a text, or agent messages)."""
        if isinstance(self.prompt, str):
            return self.prompt
        return [_message(m, self.name) for m in self.prompt]


def _message(item: Any, case: str) -> Any:
    if not isinstance(item, Mapping):
        return item  # already an agent message
    role, content = item.get("role"), item.get("content")
    if not isinstance(content, str) or role not in ("user", "assistant"):
        raise ValueError(f"case {case}: a prompt message is {{role: user | assistant, content: TEXT}}, not {item!r}")
    return UserMessage(content) if role == "user" else AssistantMessage((TextContent(content),))


@dataclass(frozen=True)
class Dataset:
    """The cases, and evaluators applied to every case."""

    cases: Sequence[Case]
    evaluators: Sequence[Evaluator] = field(default=())

    def __post_init__(self) -> None:
        object.__setattr__(self, "cases", tuple(self.cases))
        object.__setattr__(self, "evaluators", tuple(make_evaluator(e, "dataset: ") for e in self.evaluators))
        seen: set[str] = set()
        twice = sorted({c.name for c in self.cases if c.name in seen or seen.add(c.name)})  # type: ignore[func-returns-value]
        if twice:
            raise ValueError(f"case names must be unique: {', '.join(map(repr, twice))} given more than once")

    def __len__(self) -> int:
        return len(self.cases)

    # -- files ---------------------------------------------------------------------------------

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> Dataset:
        """A dataset from a ``.yaml`` / ``.yml`` or ``.json`` file (the form in the module doc)."""
        path = Path(path)
        text = path.read_text(encoding="utf-8")
        try:
            if path.suffix in (".yaml", ".yml"):
                data = _yaml().safe_load(text)
            else:
                data = json.loads(text)
        except Exception as exc:
            raise ValueError(f"{path}: not valid {'YAML' if path.suffix in ('.yaml', '.yml') else 'JSON'}: {exc}") \
                from None
        return cls.from_data(data, str(path))

    @classmethod
    def from_data(cls, data: Any, where: str = "dataset") -> Dataset:
        if not isinstance(data, Mapping) or not isinstance(data.get("cases"), list):
            raise ValueError(f"{where}: a dataset is a mapping with a list of cases ('cases: [...]')")
        unknown = set(data) - {"cases", "evaluators"}
        if unknown:
            raise ValueError(f"{where}: unknown field(s) {', '.join(sorted(unknown))} (a dataset has cases and "
                             "evaluators)")
        cases = []
        for i, item in enumerate(data["cases"]):
            if not isinstance(item, Mapping) or "name" not in item or "prompt" not in item:
                raise ValueError(f"{where}: case {i + 1} needs a name and a prompt, not {item!r}")
            extra = set(item) - {"name", "prompt", "expected", "metadata", "evaluators"}
            if extra:
                raise ValueError(f"{where}: case {item['name']!r}: unknown field(s) {', '.join(sorted(extra))}")
            cases.append(Case(item["name"], item["prompt"], item.get("expected"), item.get("metadata"),
                              item.get("evaluators") or ()))
        return cls(cases, data.get("evaluators") or ())

    def to_data(self) -> dict[str, Any]:
        def spec(e: Evaluator) -> Any:
            args = {k: v for k, v in e.arguments.items() if v is not None}
            return {e.name: args} if args else e.name

        def prompt(p: Any) -> Any:
            if isinstance(p, str):
                return p
            return [{"role": m["role"], "content": m["content"]} if isinstance(m, Mapping)
                    else {"role": m.role, "content": m.text} for m in p]

        cases = []
        for c in self.cases:
            item: dict[str, Any] = {"name": c.name, "prompt": prompt(c.prompt)}
            if c.expected is not None:
                item["expected"] = c.expected
            if c.metadata:
                item["metadata"] = dict(c.metadata)
            if c.evaluators:
                item["evaluators"] = [spec(e) for e in c.evaluators]
            cases.append(item)
        out: dict[str, Any] = {"cases": cases}
        if self.evaluators:
            out = {"evaluators": [spec(e) for e in self.evaluators], **out}
        return out

    def to_file(self, path: str | os.PathLike[str]) -> None:
        """Write the dataset as YAML (``.yaml`` / ``.yml``) or JSON (any other name)."""
        path = Path(path)
        data = self.to_data()
        if path.suffix in (".yaml", ".yml"):
            path.write_text(_yaml().safe_dump(data, sort_keys=False, allow_unicode=True), encoding="utf-8")
        else:
            path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def _yaml() -> Any:
    try:
        import yaml
    except ImportError:
        raise ImportError("YAML datasets need PyYAML: pip install 'agentcore-fx[evals]' (or use a .json file)") \
            from None
    return yaml


@dataclass(frozen=True)
class AgentSpec:
    """The agent an eval runs: its context (system prompt, tools), config (model, hooks) and
    stream function (``None``: the HTTP provider of the config's model)."""

    context: AgentContext
    config: AgentLoopConfig
    stream_fn: Callable[..., Any] | None = None
