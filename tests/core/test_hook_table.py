"""Each hook is declared once, in ``agentcore.hooks``: the config's hook names, the turn's and the
tool batch's tables, the effects the core gives and the documentation of their answers agree
with that table."""

from __future__ import annotations

import dataclasses
import random
import re
from typing import Any, get_args

import agentcore.effects
from agentcore import (
    AbortRequested,
    AgentContext,
    AgentLoopConfig,
    AgentTool,
    CallLlm,
    Emit,
    ExecuteTool,
    HookFailed,
    Model,
    RunEnded,
    RunSuspended,
    Started,
    StreamFailed,
    ToolFailed,
    ToolFinished,
    ToolTimedOut,
    ToolUpdated,
    awaits,
    initial_state,
    step,
)
from agentcore.batch import CALL, SlotAsk
from agentcore.config import HOOK_NAMES
from agentcore.effects import Effect
from agentcore.hooks import ASKED_BY_CORE, GET_API_KEY, HOOK_OF_EFFECT, HOOKS
from agentcore.machine import TURN, Ask
from agentcore.state import Finished, LoopState, RunningTools, Suspended

from .test_every_phase_and_input import HOOKS as EVERY_HOOK
from .test_every_phase_and_input import TOOLS, USER, answers, decisions


def test_the_config_s_hooks_are_the_table_s_config_hooks_in_order() -> None:
    assert HOOK_NAMES == tuple(h.name for h in HOOKS if h.on == "config")
    fields = {f.name for f in dataclasses.fields(AgentLoopConfig)}
    assert {h.name for h in HOOKS if h.on == "config"} <= fields
    tool_fields = {f.name for f in dataclasses.fields(AgentTool)}
    assert [h.name for h in HOOKS if h.on == "tool"] == ["prepare_arguments", "requires_approval"]
    assert {h.name for h in HOOKS if h.on == "tool"} <= tool_fields


def test_the_core_asks_every_config_hook_but_get_api_key() -> None:
    assert ASKED_BY_CORE == tuple(n for n in HOOK_NAMES if n != "get_api_key")
    assert GET_API_KEY.effect is None and GET_API_KEY.answer is None and GET_API_KEY.failure is StreamFailed
    assert all(h.failure is HookFailed for h in HOOKS if h is not GET_API_KEY)


def test_every_effect_that_asks_the_user_s_code_is_a_hook_s() -> None:
    with_ids = {t for t in get_args(Effect) if "id" in t.__struct_fields__}
    assert set(HOOK_OF_EFFECT) == with_ids - {CallLlm, ExecuteTool, agentcore.effects.CancelLlm}
    for effect, hook in HOOK_OF_EFFECT.items():
        assert hook.effect is effect
        assert hook.answer is not None and hook.answer.__struct_fields__[:1] == ("id",)


def test_the_turn_s_stages_ask_the_table_s_hooks() -> None:
    asks = [stage for stage in TURN if isinstance(stage, Ask)]
    assert [stage.hook.name for stage in asks] == [
        "get_steering_messages", "get_follow_up_messages", "transform_context", "convert_to_llm",
        "prepare_next_turn", "should_stop_after_turn"]
    assert all(stage.hook in HOOKS and stage.answer is stage.hook.answer for stage in asks)


def test_the_tool_batch_s_stages_ask_the_table_s_hooks() -> None:
    asks = [stage for stage in CALL if isinstance(stage, SlotAsk)]
    assert [(stage.name, stage.hook.name if stage.hook else None) for stage in asks] == [
        ("prepare_arguments", "prepare_arguments"), ("before_tool_call", "before_tool_call"),
        ("approval", "requires_approval"), ("decision", "decide_tool_call"), ("execute", None),
        ("after_tool_call", "after_tool_call")]
    for stage in asks:
        if stage.hook is not None:
            assert stage.hook in HOOKS and list(stage.answers) == [stage.hook.answer]
            assert stage.failure is HookFailed
    execute = next(stage for stage in asks if stage.hook is None)
    assert list(execute.answers) == [ToolFinished, ToolFailed, ToolTimedOut]
    assert execute.updates is ToolUpdated and execute.failure is None


def _asked_effects(seed: int) -> list[tuple[LoopState, Any]]:
    """A random run with every hook set: each effect that waits for an answer, with the state
    that waits for it."""
    r = random.Random(seed)
    mode = "sequential" if seed % 2 else "parallel"
    s = initial_state(AgentContext("sys", (), TOOLS), model=Model(id="m"), hooks=EVERY_HOOK, tool_execution=mode)
    s, effects = step(s, Started((USER,), 1)).unwrap()
    outstanding: dict[int, Any] = {}
    seen: list[tuple[LoopState, Any]] = []
    for _ in range(80):
        for e in effects:
            if not isinstance(e, (Emit, RunEnded, RunSuspended)) and e.type != "cancel_llm":
                outstanding[e.id] = e
                seen.append((s, e))
        if isinstance(s.phase, Finished):
            break
        ids = [i for i in sorted(outstanding) if awaits(s, i)]
        if isinstance(s.phase, Suspended):
            inputs = [decisions(s.phase, r.randrange(3))]
        elif not ids or r.random() < 0.02:
            inputs = [AbortRequested(3)]
        else:
            inputs = answers(outstanding[r.choice(ids)], r.randrange(30))
        for inp in inputs:
            if isinstance(s.phase, Finished):
                break
            s, effects = step(s, inp).unwrap()
    return seen


def test_each_effect_the_core_gives_is_the_one_its_stage_s_hook_declares() -> None:
    turn_asks = {stage.phase: stage for stage in TURN if isinstance(stage, Ask)}
    call_asks = {stage.step: stage for stage in CALL if isinstance(stage, SlotAsk)}
    checked: set[type] = set()
    for seed in range(40):
        for s, effect in _asked_effects(seed):
            if not awaits(s, effect.id):
                continue  # given, then answered within the same step (never here) or dropped by an abort
            phase = s.phase
            if isinstance(phase, RunningTools):
                slot = next(x for x in phase.slots if x.wait_id == effect.id)
                stage = call_asks[slot.step]
                assert type(effect) is (stage.hook.effect if stage.hook else ExecuteTool), (slot.step, effect)
            elif type(effect) is CallLlm:
                assert phase.name == "streaming"
            else:
                assert type(effect) is turn_asks[type(phase)].hook.effect, (phase.name, effect)
            checked.add(type(effect))
    assert checked == set(HOOK_OF_EFFECT) | {CallLlm, ExecuteTool}


def _answer_table(rows: list[tuple[str, str]]) -> dict[str, set[str]]:
    """Effect name → the input names the table's rows say answer it (a row may list several
    effects, with their answers in the same order)."""
    table: dict[str, set[str]] = {}
    for effects, answered_by in rows:
        names = re.findall(r"[A-Z][A-Za-z]+", effects)
        inputs = re.findall(r"[A-Z][A-Za-z]+", answered_by)
        if len(names) > 1 and len(inputs) == len(names):  # `A`, `B` | `AnswerOfA`, `AnswerOfB`
            for name, inp in zip(names, inputs):
                table.setdefault(name, set()).add(inp)
        else:
            for name in names:
                table.setdefault(name, set()).update(inputs)
    return table


EXPECTED_OTHERS = {"CallLlm": {"StreamEventReceived", "StreamFailed"},
                   "ExecuteTool": {"ToolUpdated", "ToolFinished", "ToolFailed", "ToolTimedOut"}}


def test_the_effects_module_docstring_lists_every_effect_and_its_answers() -> None:
    doc = agentcore.effects.__doc__ or ""
    body = doc.split("=====================  ====")[2].strip("=\n ").splitlines()
    table = _answer_table([(line[:23], line[23:]) for line in body])
    expected = {h.effect.__name__: {h.answer.__name__, "HookFailed"} for h in HOOK_OF_EFFECT.values()}
    assert table == {**expected, **EXPECTED_OTHERS}
