"""The offline demo: a small real agent with a scripted model playing the LLM.

Real Python tools (a calculator and a unit converter) run in parallel, a steering message arrives
while they run, the reply streams, and the run is recorded to a transcript that is then replayed
strictly to show that the replay matches.
"""

from __future__ import annotations

import ast
import operator
import time
from collections.abc import Callable
from typing import Any, Literal

from agentcore import (
    AgentContext,
    AgentEvent,
    AgentLoopConfig,
    AgentTool,
    AssistantMessage,
    LlmContext,
    Model,
    ToolResultMessage,
    UserMessage,
)
from agentcore.records import replace

from ..streams.scripted import Reply, ScriptedModel
from ..tool import tool

__all__ = [
    "DEMO_MODEL",
    "DEMO_PROMPT",
    "STEERING",
    "calculator",
    "convert_units",
    "demo_config",
    "demo_context",
    "demo_model",
    "demo_tools",
    "is_demo_model",
]

DEMO_PROMPT = "I drive 120 km at 80 km/h, then 30 miles at 45 mph. How long is the trip in total?"
STEERING = "Also tell me the total distance in kilometres."

_OPS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.Pow: operator.pow, ast.Mod: operator.mod,
}


def _evaluate(node: ast.AST) -> float:
    if isinstance(node, ast.Expression):
        return _evaluate(node.body)
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
        return float(node.value)
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        return float(_OPS[type(node.op)](_evaluate(node.left), _evaluate(node.right)))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_evaluate(node.operand)
    raise ValueError(f"unsupported expression element: {ast.dump(node)[:40]}")


@tool
def calculator(expression: str) -> str:
    """Evaluate an arithmetic expression.

    Args:
        expression: Numbers with + - * / ** % and parentheses, e.g. "120 / 80".
    """
    value = _evaluate(ast.parse(expression, mode="eval"))
    return f"{expression} = {value:g}"


_FACTORS = {("mi", "km"): 1.609344, ("km", "mi"): 1 / 1.609344, ("h", "min"): 60.0, ("min", "h"): 1 / 60}


@tool
def convert_units(value: float, from_unit: Literal["mi", "km", "h", "min"],
                  to_unit: Literal["mi", "km", "h", "min"]) -> str:
    """Convert a value between units.

    Args:
        value: The quantity to convert.
        from_unit: Unit of the value.
        to_unit: Unit to convert to.
    """
    if from_unit == to_unit:
        return f"{value:g} {to_unit}"
    factor = _FACTORS.get((from_unit, to_unit))
    if factor is None:
        raise ValueError(f"cannot convert {from_unit} to {to_unit}")
    return f"{value:g} {from_unit} = {value * factor:g} {to_unit}"


def _script(context: LlmContext, call: int) -> Reply:
    """The model's part: a function of what it was sent, like a real model (``call``, the
    model's call count, is not used: a resumed run makes its first call mid-conversation)."""
    seen_steering = any(isinstance(m, UserMessage) and m.text == STEERING for m in context.messages)
    results = [m.text for m in context.messages if isinstance(m, ToolResultMessage)]
    replies = sum(isinstance(m, AssistantMessage) for m in context.messages)
    if replies == 0:
        return Reply(
            thinking="Two legs: time = distance / speed. The second leg is in miles per hour.",
            text="Let me work out both legs.",
            tool_calls=(("calculator", {"expression": "120 / 80"}, "call_1"),
                        ("calculator", {"expression": "30 / 45"}, "call_2")),
        )
    if replies == 1 and seen_steering:
        return Reply(
            text="Adding up the time, and converting the miles for the distance.",
            tool_calls=(("calculator", {"expression": "1.5 + 0.666667"}, "call_3"),
                        ("convert_units", {"value": 30, "from_unit": "mi", "to_unit": "km"}, "call_4")),
        )
    total = next((r for r in results if r.startswith("1.5 + ")), "")
    km = next((r for r in results if r.startswith("30 mi = ")), "")
    hours = float(total.rsplit("= ", 1)[1]) if total else 0.0
    dist = 120 + (float(km.split("= ")[1].split()[0]) if km else 0.0)
    return Reply(text=(
        f"The trip takes {hours:.2f} hours (about {int(hours)} h {round((hours % 1) * 60)} min): "
        f"1.5 h for the first leg and 0.67 h for the second. "
        f"The total distance is {dist:.1f} km."
    ))


def demo_model(delay: float = 0.0) -> ScriptedModel:
    """The scripted model of the demo (``delay`` seconds between stream events)."""
    return ScriptedModel(_script, chunk_size=6, delay=delay)


DEMO_MODEL = Model(id="demo-model", name="Scripted demo model")
"""The model the demo's transcripts name (``api`` and ``provider`` are ``scripted``)."""

DEMO_SYSTEM_PROMPT = "You are a careful travel assistant. Use tools for arithmetic."


def is_demo_model(model: Model) -> bool:
    """Whether ``model`` is the demo's scripted model (e.g. read back from a transcript header)."""
    return model.id == DEMO_MODEL.id and model.api == DEMO_MODEL.api


def _slowed(t: AgentTool, seconds: float) -> AgentTool:
    """``t`` taking ``seconds`` longer (cut short by an abort): time to watch it run."""
    inner = t.execute

    def execute(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> Any:
        if signal is not None:
            signal.wait(seconds)
        else:
            time.sleep(seconds)
        return inner(tool_call_id, args, signal, on_update)

    return replace(t, execute=execute)


def demo_tools(latency: float = 0.0) -> list[AgentTool]:
    """The demo's tools; ``latency`` seconds are added to each call (the results are the same)."""
    tools = [calculator, convert_units]
    return [_slowed(t, latency) for t in tools] if latency > 0 else tools


def demo_context(tool_latency: float = 0.0) -> AgentContext:
    return AgentContext(DEMO_SYSTEM_PROMPT, (), demo_tools(tool_latency))


def demo_config(steering: list[Any]) -> AgentLoopConfig:
    """The loop config; ``steering`` is the queue the steering message is put on."""

    def poll() -> list[Any]:
        out = list(steering)
        steering.clear()
        return out

    return AgentLoopConfig(model=DEMO_MODEL, get_steering_messages=poll)


def steer_when_tools_start(steering: list[Any], clock: Callable[[], int]) -> Callable[[AgentEvent], None]:
    """A listener that types the steering message while the first tools run, as a user would."""
    sent = False

    def listen(event: AgentEvent) -> None:
        nonlocal sent
        if not sent and event.type == "tool_execution_start":
            sent = True
            steering.append(UserMessage(STEERING, timestamp=clock()))

    return listen


def final_answer(messages: list[Any]) -> str:
    last = messages[-1] if messages else None
    return last.text if isinstance(last, AssistantMessage) else ""
