"""docs/architecture.md shows the core's tables as the code has them: the effects and the inputs
that answer them (``agentcore.hooks``), and how one tool call goes (``agentcore.batch.CALL``)."""

from __future__ import annotations

import re
from pathlib import Path

from agentcore.batch import CALL
from agentcore.hooks import HOOK_OF_EFFECT

PAGE = (Path(__file__).resolve().parent.parent / "docs" / "architecture.md").read_text()


def table_rows(header: str) -> list[list[str]]:
    """The cells of the rows of the table under ``header`` (a Markdown table's first line)."""
    body = PAGE.split(header + "\n")[1].split("\n\n")[0].splitlines()[1:]  # without the |---| line
    return [[cell.strip() for cell in row.strip("|").split("|")] for row in body]


def test_the_architecture_page_lists_every_effect_and_the_inputs_that_answer_it() -> None:
    answered: dict[str, set[str]] = {}
    for effects, answers in table_rows("| effect | answered by |"):
        names, inputs = re.findall(r"[A-Z][A-Za-z]+", effects), re.findall(r"[A-Z][A-Za-z]+", answers)
        if len(names) > 1 and len(inputs) == len(names):  # `A`, `B` | `AnswerOfA`, `AnswerOfB`
            answered.update({name: {inp} for name, inp in zip(names, inputs)})
        else:
            answered.update({name: set(inputs) for name in names})
    for hook in HOOK_OF_EFFECT.values():
        assert answered[hook.effect.__name__] == {hook.answer.__name__}, hook
    assert answered["CallLlm"] == {"StreamEventReceived", "StreamFailed"}
    assert answered["ExecuteTool"] == {"ToolUpdated", "ToolFinished", "ToolFailed", "ToolTimedOut"}
    assert ["any hook effect", "or `HookFailed`"] in table_rows("| effect | answered by |")


def test_the_architecture_page_shows_the_call_table() -> None:
    shown = [(stage.strip("`"), step.strip("`")) for stage, step, *_ in
             table_rows("| stage | the call's step | asks | then |")]
    assert shown == [(stage.name, stage.step or "—") for stage in CALL]
