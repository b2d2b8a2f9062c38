"""Every text the core writes into a conversation or an error: one place to read and change them.

Tool results the core makes up (a call it did not run), the error message of a reply the core
had to end itself, and what it says about a stream function that broke the stream protocol.
The texts are part of the library's behaviour (a model reads them, tests compare them): change
them here only on purpose.

>>> timed_out_text("fetch", 250)
'Tool "fetch" timed out after 250 ms'
>>> print(stream_order_text("text_delta", "before the start event"))  # doctest: +NORMALIZE_WHITESPACE
Stream protocol error: text_delta arrived before the start event (expected start first, then content block
events, then done or error)
"""

from __future__ import annotations

from typing import Any, Final

from .stream import arguments_problem

__all__ = [
    "ABORTED_TEXT",
    "CONTINUE_EMPTY_TEXT",
    "CONTINUE_FROM_ASSISTANT_TEXT",
    "BLOCKED_TEXT",
    "DENIED_TEXT",
    "SUSPENDED_TEXT",
    "approval_required_text",
    "budget_reached_text",
    "bad_answer_text",
    "bad_decision_text",
    "decisions_problem_text",
    "decisions_shape_text",
    "deferred_text",
    "not_suspended_text",
    "suspension_version_text",
    "length_difference_text",
    "mismatch_text",
    "new_messages_count_text",
    "other_calls_text",
    "other_message_text",
    "other_pending_text",
    "suspension_field_text",
    "suspension_parts_text",
    "value_difference_text",
    "waits_for_text",
    "wrong_decision_text",
    "NO_ERROR_MESSAGE_TEXT",
    "REQUEST_ABORTED_TEXT",
    "STREAM_ENDED_TEXT",
    "hook_failed_text",
    "not_awaited_text",
    "not_expected_text",
    "slot_busy_text",
    "slot_not_waiting_text",
    "invalid_json_text",
    "length_cutoff_text",
    "not_a_stream_event_text",
    "not_found_text",
    "stream_closing_text",
    "stream_order_text",
    "stream_field_text",
    "stream_payload_text",
    "timed_out_text",
]

ABORTED_TEXT: Final = "Operation aborted"
"""The result of a tool call that the run's abort stopped (or kept from starting)."""

BLOCKED_TEXT: Final = "Tool execution was blocked"
"""The result of a call ``before_tool_call`` blocked without giving a reason."""

DENIED_TEXT: Final = "Tool call was denied"
"""The result of a call denied with ``Deny()`` (no reason given)."""

SUSPENDED_TEXT: Final = "before_tool_call suspended the call"
"""The reason of a call ``before_tool_call`` suspended without giving one."""

REQUEST_ABORTED_TEXT: Final = "Request was aborted"
"""The ``error_message`` of a reply cut by an abort."""

STREAM_ENDED_TEXT: Final = "The stream ended without a done or error event"

NO_ERROR_MESSAGE_TEXT: Final = "The stream ended with an error event that gave no error_message"


def not_found_text(name: str) -> str:
    return f"Tool {name} not found"


def timed_out_text(name: str, ms: int) -> str:
    """The result of a call that ran past its ``timeout_ms``."""
    return f'Tool "{name}" timed out after {ms} ms'


def approval_required_text(name: str) -> str:
    """Why a call of a tool with ``requires_approval`` waits."""
    return f'Tool "{name}" requires approval'


def deferred_text(name: str) -> str:
    """Why a call of a deferred tool waits."""
    return f'Tool "{name}" is deferred: its result comes from outside the run'


def budget_reached_text(budget: str, limit: float, used: float) -> str:
    """What ended a run that reached one of its budgets (``AgentLoopConfig.max_*``).

    >>> budget_reached_text("max_turns", 3, 3)
    'Budget reached: max_turns is 3, the run used 3'
    """
    return f"Budget reached: {budget} is {limit:g}, the run used {used:g}"


def hook_failed_text(hook: str, error: str) -> str:
    """The ``error_message`` of the reply that ends a run whose loop hook raised."""
    return f"{hook} failed: {error}"


def invalid_json_text(name: str, raw: str, problem: str | None = None) -> str:
    """The result of a call whose streamed arguments are not a JSON object (``problem`` says why;
    by default the JSON parser's message)."""
    if problem is None:
        problem = arguments_problem(raw) or "they are not a JSON object"
    shown = raw if len(raw) <= 2000 else raw[:2000] + f"... ({len(raw)} characters)"
    return (
        f'Tool call "{name}" was not executed: its arguments are not valid JSON ({problem}). '
        f"Received: {shown}"
    )


def length_cutoff_text(name: str) -> str:
    return (
        f'Tool call "{name}" was not executed: the reply was cut off by the output token limit, '
        "so its arguments may be incomplete. Re-issue the call with complete arguments."
    )


# --------------------------------------------------------------------------- the stream protocol

_EXPECTED: Final = "expected start first, then content block events, then done or error"


def _kind(value: Any) -> str:
    """``a dict``, ``an int``, ``a UserMessage``, ``None``."""
    if value is None:
        return "None"
    name = type(value).__name__
    return f"an {name}" if _vowel_sound(name.lower()) else f"a {name}"


def _vowel_sound(word: str) -> bool:
    """Whether ``word`` starts with a vowel sound (a "u" read "you" does not: usage, unit)."""
    if word[:1] == "u":
        return not (word[1:2] in ("s", "u") or (word[1:2] == "n" and word[2:3] in ("a", "e", "i", "o", "u")))
    return word[:1] in ("a", "e", "i", "o")


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 200 else text[:200] + "..."


def not_a_stream_event_text(item: Any) -> str:
    """A stream function yielded something that is not a stream event."""
    return (
        f"Stream protocol error: the stream function yielded {_kind(item)} ({_shown(item)}), "
        "not a stream event (expected StartEvent, a text/thinking/toolcall start, delta or end "
        "event, DoneEvent or ErrorEvent from agentcore)"
    )


def stream_payload_text(event_type: str, field: str, value: Any) -> str:
    """A stream event whose message field holds something that is not a message."""
    if event_type == "error" and isinstance(value, str):
        return (
            f"{value} (Stream protocol error: the error event's {field} was a str; expected an "
            "AssistantMessage with stop_reason 'error' or 'aborted' and an error_message)"
        )
    return (
        f"Stream protocol error: the {event_type} event's {field} was {_kind(value)} "
        f"({_shown(value)}); expected an AssistantMessage (or a PartialAssistantMessage)"
    )


def stream_field_text(event_type: str, field: str, value: Any, expected: str) -> str:
    """A stream event whose own field holds something of another type.

    >>> print(stream_field_text("text_end", "content", "hi", "TextContent"))
    Stream protocol error: the text_end event's content was a str ('hi'); expected a TextContent
    """
    return (f"Stream protocol error: the {event_type} event's {field} was {_kind(value)} ({_shown(value)}); "
            f"expected {_an(expected)}")


def stream_order_text(event_type: str, problem: str) -> str:
    """A stream event that arrived where the stream protocol does not allow it."""
    return f"Stream protocol error: {event_type} arrived {problem} ({_EXPECTED})"


# --------------------------------------------------------------------------- refusals
#
# Why ``step`` refused an input (a ``Rejection``'s reason): for interpreters and their tests,
# never written into a conversation.

CONTINUE_EMPTY_TEXT: Final = "Cannot continue: no messages in context"
CONTINUE_FROM_ASSISTANT_TEXT: Final = "Cannot continue from message role: assistant"


def not_expected_text(input_type: str, phase: str) -> str:
    return f"{input_type} is not expected while {phase}"


def not_awaited_text(awaited: object, got: object) -> str:
    return f"expected an answer for id {awaited}, got id {got}"


def stream_closing_text(event_type: str) -> str:
    """A stream event other than the final one, fed after an abort that waits for the stream."""
    return (f"the run was aborted while the reply streamed: only the stream's final event (done or error) "
            f"is taken now, not {event_type}")


def slot_not_waiting_text(id: object) -> str:
    return f"no tool call is waiting for an answer with id {id}"


def slot_busy_text(call_id: str, step: str, input_type: str) -> str:
    return f"tool call {call_id} is {step}, it cannot take {input_type}"


def not_suspended_text(phase: str) -> str:
    return f"Cannot resume: the run is not suspended (phase {phase})"


def suspension_version_text(version: object, supported: int) -> str:
    return (f"Cannot resume: the suspension has format version {version!r}; this library reads "
            f"versions 1 to {supported}")


_SUSPENSION_ADVICE: Final = " (resume a suspension as agentcore.codec.to_json wrote it)"


def suspension_field_text(problem: str) -> str:
    """A value of a stored suspension that is not of its field's type (``problem``, as
    :func:`agentcore.records.type_problem` words it).

    >>> print(suspension_field_text("state.run.turns is a str ('x'), not an int"))  # doctest: +NORMALIZE_WHITESPACE
    Cannot resume: in the suspension, state.run.turns is a str ('x'), not an int (resume a suspension as
    agentcore.codec.to_json wrote it)
    """
    return f"Cannot resume: in the suspension, {problem}{_SUSPENSION_ADVICE}"


def suspension_parts_text(detail: str) -> str:
    """Parts of a stored suspension that disagree (``detail`` says which and how)."""
    return f"Cannot resume: the suspension does not hold together: {detail}{_SUSPENSION_ADVICE}"


def mismatch_text(shown: str, shown_value: str, runs: str, runs_value: str, role: str) -> str:
    """What one part of a suspension shows, and what another, the one that acts, holds instead.

    >>> print(mismatch_text("pending[0].arguments.path", '"a"', "slots[1].args.path", '"b"', "what would run"))
    pending[0].arguments.path is "a" but slots[1].args.path (what would run) is "b"
    """
    return f"{shown} is {shown_value} but {runs} ({role}) is {runs_value}"


def value_difference_text(path: str, there: str, mine: str, where: str) -> str:
    """One place where a recorded run and a suspension differ (the values as JSON text)."""
    return f"{path} is {there} in {where}, {mine} in this suspension"


def length_difference_text(path: str, there: int, mine: int, where: str) -> str:
    """A list whose length differs between a recorded run and a suspension."""
    return f"{path} has {there} items in {where}, {mine} in this suspension"


def other_calls_text(ids: list[str]) -> str:
    """A recorded run that suspended on other calls than the suspension's."""
    return f"suspended on other tool calls ({', '.join(ids)})"


def other_pending_text(call_id: str, field: str, detail: str) -> str:
    """A recorded run that suspended on the same call, shown otherwise.

    >>> other_pending_text("c1", "arguments", 'arguments.x is 1 in the transcript, 2 in this suspension')
    'suspended on c1 with other arguments: arguments.x is 1 in the transcript, 2 in this suspension'
    """
    return f"suspended on {call_id} with {'other' if field.endswith('s') else 'another'} {field}: {detail}"


def new_messages_count_text(there: int, mine: int) -> str:
    return f"has {there} new messages, this suspension {mine}"


def other_message_text(index: int, label: str, detail: str) -> str:
    return f"has another new message {index} ({label}): {detail}"


def other_state_text(detail: str) -> str:
    """A recorded run at the same suspension, whose state differs elsewhere (``detail``: where).

    >>> other_state_text('state.run.turns is 1 in the transcript, 0 in this suspension')
    'is at this suspension with another state: state.run.turns is 1 in the transcript, 0 in this suspension'
    """
    return f"is at this suspension with another state: {detail}"


def waits_for_text(call_id: str, name: str, waits_for: str) -> str:
    """A stored suspension whose pending call waits for what its tool, as the resuming code
    declares it, does not make it wait for.

    >>> print(waits_for_text("c4", "ask", "approval"))  # doctest: +NORMALIZE_WHITESPACE
    Cannot resume: the suspension shows tool call c4 waiting for an approval, but ask is a deferred tool in
    the resuming code's tools: its result comes from outside the run, it never runs here (resume a suspension
    as agentcore.codec.to_json wrote it, with the tools of the run that suspended)
    """
    why = ("is a deferred tool in the resuming code's tools: its result comes from outside the run, it never runs here"
           if waits_for == "approval" else "is not a deferred tool in the resuming code's tools: its calls run here")
    return (f"Cannot resume: the suspension shows tool call {call_id} waiting for {_an(waits_for)}, but {name} {why} "
            "(resume a suspension as agentcore.codec.to_json wrote it, with the tools of the run that suspended)")


def wrong_decision_text(call_id: str, waits_for: str, decision: str) -> str:
    """A decision of the wrong kind for one pending call."""
    kinds = "Approve or Deny" if waits_for == "approval" else "ToolOutput or Deny"
    return f"tool call {call_id} waits for {_an(waits_for)} ({kinds}), not {decision}"


def bad_decision_text(call_id: str, decision: str, field: str, value: Any, expected: str) -> str:
    """A decision for one pending call holding what it cannot.

    >>> bad_decision_text("q1", "ToolOutput", "result", 42, "an AgentToolResult or a str")
    'the ToolOutput for tool call q1 has a result that is an int (42), not an AgentToolResult or a str'
    """
    return (f"the {decision} for tool call {call_id} has {_an(field)} that is {_kind(value)} "
            f"({value!r:.60}), not {expected}")


def bad_answer_text(input_type: str, field: str, value: Any, expected: str, within: str | None = None) -> str:
    """An answer holding what it cannot in ``field`` (``within``: in that field of its record).

    >>> bad_answer_text("tool_finished", "result", None, "an AgentToolResult")
    'the result of tool_finished is None (None), not an AgentToolResult'
    >>> bad_answer_text("next_turn_prepared", "model", "big", "a Model or None", within="next_turn")
    "the model of next_turn_prepared's next_turn is a str ('big'), not a Model or None"
    """
    where = f"{input_type}'s {within}" if within else input_type
    return f"the {field} of {where} is {_kind(value)} ({value!r:.60}), not {expected}"


def decisions_shape_text(decisions: Any, index: int | None = None, call_id: bool = False) -> str:
    """What ``Resumed`` was given instead of (tool call id, decision) pairs: the decisions
    themselves, the pair at ``index``, or (``call_id``) that pair's id.

    >>> decisions_shape_text(None)
    'the decisions are None (None), not a tuple of (tool call id, decision) pairs'
    >>> decisions_shape_text(("c1",), 0)
    "decision 0 is a tuple (('c1',)), not a (tool call id, decision) pair"
    """
    if index is None:
        return (f"the decisions are {_kind(decisions)} ({decisions!r:.60}), not a tuple of (tool call id, "
                "decision) pairs")
    if call_id:
        return f"decision {index} has a tool call id that is {_kind(decisions)} ({decisions!r:.60}), not text"
    return f"decision {index} is {_kind(decisions)} ({decisions!r:.60}), not a (tool call id, decision) pair"


def _an(word: str) -> str:
    return f"an {word}" if _vowel_sound(word.lower()) else f"a {word}"


def decisions_problem_text(missing: list[str], extra: list[str], wrong: list[str], repeated: list[str]) -> str:
    """Why the decisions given to a suspended run cannot be taken: every problem, naming the ids.

    >>> decisions_problem_text(["c1", "c2"], ["c9"], [], [])
    'Cannot resume: no decision for pending tool calls c1, c2; no pending tool call c9'
    """
    parts = []
    if missing:
        parts.append(f"no decision for pending tool call{'s' if len(missing) > 1 else ''} {', '.join(missing)}")
    if extra:
        parts.append(f"no pending tool call {', '.join(extra)}")
    if repeated:
        parts.append(f"more than one decision for {', '.join(repeated)}")
    parts.extend(wrong)
    return "Cannot resume: " + "; ".join(parts)
