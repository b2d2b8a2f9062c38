"""``after_tool_call`` replaces a tool's result field by field: each field it gives replaces the
tool's, each it leaves ``None`` keeps the tool's (content, details, usage, is_error, terminate),
and the tool's ``added_tool_names`` are always kept. Seen through ``step``.

Written against the survivors of the mutation sample (docs/mutation.md)."""

from __future__ import annotations

from typing import Any

import pytest

from agentcore import (
    AfterToolCallDecided,
    AfterToolCallResult,
    AgentContext,
    AgentToolResult,
    Emit,
    Model,
    Started,
    StreamEventReceived,
    TextContent,
    ToolExecutionEndEvent,
    ToolFinished,
    ToolSpec,
    Usage,
    UserMessage,
    initial_state,
    step,
)
from agentcore.effects import AfterToolCall, ExecuteTool

from .world import call, reply, stream_events

ECHO = ToolSpec("echo", parameters={"type": "object"})
TOOLS_RESULT = AgentToolResult((TextContent("tool"),), details={"from": "tool"}, usage=Usage(total_tokens=7),
                               added_tool_names=("more",), terminate=False)


def patched(patch: AfterToolCallResult | None) -> tuple[AgentToolResult, bool, Any]:
    """The result, error flag and result message of a call whose tool returned
    :data:`TOOLS_RESULT` and whose ``after_tool_call`` answered ``patch``."""
    s = initial_state(AgentContext("", (), (ECHO,)), model=Model(id="m"), hooks=frozenset({"after_tool_call"}))
    s, effects = step(s, Started((UserMessage("go"),), 1)).unwrap()
    llm = effects[-1]
    for ev in stream_events(reply(call("c", "echo"))):
        s, effects = step(s, StreamEventReceived(llm.id, ev, 2)).unwrap()
    (execute,) = [e for e in effects if isinstance(e, ExecuteTool)]
    s, effects = step(s, ToolFinished(execute.id, TOOLS_RESULT, 3)).unwrap()
    (after,) = [e for e in effects if isinstance(e, AfterToolCall)]
    s, effects = step(s, AfterToolCallDecided(after.id, patch, 4)).unwrap()
    seen = [e.event for e in effects if isinstance(e, Emit)]
    end = seen[0]
    assert isinstance(end, ToolExecutionEndEvent) and end.tool_call_id == "c"
    message = next(e.message for e in seen if e.type == "message_end")
    return end.result, end.is_error, message


@pytest.mark.parametrize("patch", [None, AfterToolCallResult()])
def test_no_patch_or_an_empty_one_keeps_the_tools_result(patch: AfterToolCallResult | None) -> None:
    result, is_error, message = patched(patch)
    assert (result, is_error) == (TOOLS_RESULT, False)
    assert (message.usage, message.added_tool_names, message.details) == (Usage(total_tokens=7), ("more",),
                                                                          TOOLS_RESULT.details)


def test_a_patch_of_the_content_keeps_every_other_field_of_the_tool() -> None:
    result, is_error, message = patched(AfterToolCallResult(content=(TextContent("patched"),)))
    assert result == AgentToolResult((TextContent("patched"),), details={"from": "tool"}, usage=Usage(total_tokens=7),
                                     added_tool_names=("more",), terminate=False)
    assert (is_error, message.usage) == (False, Usage(total_tokens=7))


def test_a_full_patch_replaces_every_field_but_the_added_tool_names() -> None:
    patch = AfterToolCallResult(content=(TextContent("p"),), details={"from": "hook"}, is_error=True,
                                usage=Usage(total_tokens=1), terminate=True)
    result, is_error, message = patched(patch)
    assert result == AgentToolResult((TextContent("p"),), details={"from": "hook"}, usage=Usage(total_tokens=1),
                                     added_tool_names=("more",), terminate=True)
    assert is_error is True and message.is_error is True and message.usage == Usage(total_tokens=1)
