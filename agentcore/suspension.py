"""A suspended run as data: its JSON form, the check of a stored one, its match with a recording.

**The JSON form.** A suspended state holds a tool call's arguments many times over: in the
reply in the conversation (``messages``), in the run's ``new_messages`` and in the model's view
of the conversation (``llm_messages``), in the batch's reply, in the call's slot (the call, the
validated arguments, the pending entry), in the phase's pending calls and in the suspension's.
Format 2 (:data:`~agentcore.state.SUSPENSION_VERSION`) writes each value once and leaves out
what the rest gives back:

- ``new_messages`` is ``{"last": n}`` when it is the last ``n`` messages; ``llm_messages`` is
  left out when it is the default conversion of ``messages`` (``None`` when a hook converts);
- a message that is in ``messages`` (the batch's reply, the last turn's reply and results) is
  its index there;
- a slot leaves out its ``call`` when it is the reply's tool call at the slot's position, its
  ``args`` when they are the call's arguments, its ``pending`` entry's id, name and arguments
  (``{"reason": ..., "waits_for": ...}``) when they are the call's and the slot's, and writes
  its ``message`` as ``"$result"`` when it is the result message of its result;
- the phase's ``pending`` and the suspension's are left out when they are the batch's pending
  calls, in order.

A part is left out only when what is written gives it back with the same JSON, so ``from_json``
of ``to_json`` gives an equal suspension; anything else is written in full. A suspension of
format 1 (``version=1``: read from a stored one) is written as format 1 wrote it, every part in
full. Reading takes either: a part that is there is taken as it is.

**The check** (:func:`problem`): a stored suspension may have been edited. Every field must hold
a value of its type, and what the suspension shows must be what would run: the pending calls an
approver is shown (``pending``) are those the run waits on, with the arguments its calls would
run with, and the calls are the reply's, in the conversation as it is.

**The match** (:func:`difference`): a transcript is replayed to the state it records, where
every value is what its JSON gives back (a datetime is its text, NaN is ``null``). A suspension
is at that state when its pending calls and new messages have the same JSON form.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Final

from pyrsistent import PVector

from .codec import CodecError, decode_at, encode_bytes, parse, plain_json, prepared, register_form
from .config import AgentLoopConfig, hooks_set
from .convert import convert_message
from .inputs import RunSettings
from .json_diff import MISSING, Difference, differences
from .json_tags import freeze_read
from .messages import AssistantMessage, ToolCall, ToolResultMessage, Usage
from .records import Message, messages_problem, replace, type_problem
from .state import (
    RUN_FIELDS,
    SUSPENSION_CHECKS,
    SUSPENSION_VERSION,
    CompletedTurn,
    LoopState,
    RunningTools,
    RunState,
    Suspended,
    Suspension,
    ToolSlot,
    llm_view,
)
from .texts import (
    length_difference_text,
    mismatch_text,
    new_messages_count_text,
    not_suspended_text,
    other_calls_text,
    other_message_text,
    other_pending_text,
    other_state_text,
    suspension_field_text,
    suspension_parts_text,
    suspension_version_text,
    value_difference_text,
)
from .tools import AgentTool, AgentToolResult, PendingCall, ToolSpec, spec_of, tool_policies

__all__ = ["difference", "problem", "run_settings"]


def _tag(cls: type) -> str:
    tag: str = cls.__struct_config__.tag  # type: ignore[attr-defined]
    return tag


_SUSPENSION, _STATE, _RUN, _SUSPENDED = _tag(Suspension), _tag(LoopState), _tag(RunState), _tag(Suspended)
_BATCH, _SLOT, _TURN = _tag(RunningTools), _tag(ToolSlot), _tag(CompletedTurn)
_FROM_RESULT: Final = "$result"


# --------------------------------------------------------------------------- JSON form


def _json(value: Any) -> bytes:
    return encode_bytes(prepared(value, partials=False))


def _same(a: Any, b: Any) -> bool:
    """``a`` and ``b`` are equal and written as the same JSON (so either reads back as the other)."""
    if a is b:
        return True
    try:
        equal = bool(a == b)
    except Exception:  # details may hold objects whose == is not a truth value (an array)
        return False
    return equal and _json(a) == _json(b)


def _same_json(a: Any, b: Any) -> bool:
    """``a`` and ``b`` are written as the same JSON (a datetime and its text are)."""
    return a is b or _json(a) == _json(b)


def _same_items(a: Any, b: Any) -> bool:
    return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))


def _result_message(slot: ToolSlot) -> ToolResultMessage | None:
    """The result message of a slot that is done (as the batch makes it)."""
    result = slot.result
    if not isinstance(result, AgentToolResult) or not isinstance(slot.call, ToolCall):
        return None
    return ToolResultMessage(slot.call.id, slot.call.name, result.content, details=result.details,
                             is_error=slot.is_error, usage=result.usage,
                             added_tool_names=result.added_tool_names or None, timestamp=slot.at)


def _paused_on(batch: RunningTools) -> tuple[PendingCall, ...]:
    """The pending calls of a paused batch, in call order."""
    return tuple(slot.pending for slot in batch.slots if slot.step == "pending" and slot.pending is not None)


class _Messages:
    """Finds a message in the conversation: by identity, else an equal one from the end."""

    def __init__(self, messages: Any) -> None:
        self.messages = messages
        self.index = {id(m): i for i, m in enumerate(messages)}

    def ref(self, message: Any) -> Any:
        """The index of ``message`` in the conversation, or its prepared form."""
        i = self.index.get(id(message))
        if i is None:
            i = next((j for j in range(len(self.messages) - 1, -1, -1) if _same(self.messages[j], message)), None)
        return i if i is not None else _literal(message)


def _literal(value: Any) -> Any:
    """``value`` prepared, written so that it cannot be read as what format 2 leaves out (an
    index, ``"$result"``, a pending call's reason): a mapping, a number or a string as the
    codec's plain JSON value."""
    if isinstance(value, (Mapping, int, str)) and not isinstance(value, bool):
        return plain_json(value)
    return prepared(value)


def _encode(s: Suspension) -> dict[str, Any]:
    state = s.state
    if (s.version != SUSPENSION_VERSION or not isinstance(state, LoopState) or not isinstance(state.run, RunState)
            or not isinstance(state.run.messages, PVector)):
        # Format 1 (or what is not a state): every part in full, as format 1 wrote it.
        return {"type": _SUSPENSION, "state": prepared(s.state), "pending": prepared(s.pending),
                "version": prepared(s.version)}
    run, phase = state.run, state.phase
    messages = _Messages(run.messages)
    out: dict[str, Any] = {"type": _SUSPENSION, "state": {"type": _STATE, "phase": _encode_phase(phase, messages),
                                                          "run": _encode_run(run, messages)}}
    if not (isinstance(phase, Suspended) and isinstance(s.pending, tuple) and isinstance(phase.pending, tuple)
            and _same_items(s.pending, phase.pending)):
        out["pending"] = prepared(s.pending)
    out["version"] = prepared(s.version)
    return out


def _encode_run(run: RunState, messages: _Messages) -> dict[str, Any]:
    out: dict[str, Any] = {"type": _RUN}
    for name in RUN_FIELDS:
        value = getattr(run, name)
        if name == "tool_index" or name == "call_ids":
            continue  # rebuilt from the tools, from the conversation
        if name == "new_messages" and isinstance(value, PVector):
            n, all_ = len(value), run.messages
            if n <= len(all_) and _same_items(value, all_[len(all_) - n:]):
                out[name] = {"last": n}
                continue
        elif name == "llm_messages" and isinstance(run.hooks, frozenset) and isinstance(value, (PVector, type(None))):
            view = llm_view(run.messages, run.hooks)
            if (value is None and view is None) or (value is not None and view is not None
                                                    and _same_items(value, view)):
                continue
        elif name == "last_turn" and isinstance(value, CompletedTurn) and isinstance(value.tool_results, tuple):
            out[name] = {"type": _TURN, "message": messages.ref(value.message),
                         "tool_results": [messages.ref(m) for m in value.tool_results]}
            continue
        out[name] = prepared(value)
    return out


def _encode_phase(phase: Any, messages: _Messages) -> Any:
    if not isinstance(phase, Suspended) or not isinstance(phase.batch, RunningTools):
        return prepared(phase)
    batch = phase.batch
    if not isinstance(batch.slots, tuple) or not all(isinstance(slot, ToolSlot) for slot in batch.slots):
        return prepared(phase)
    reply = batch.message
    calls = reply.tool_calls if isinstance(reply, AssistantMessage) and isinstance(reply.content, tuple) else ()
    slots = [_encode_slot(slot, calls[i] if i < len(calls) else None) for i, slot in enumerate(batch.slots)]
    out: dict[str, Any] = {"type": _SUSPENDED, "batch": {
        "type": _BATCH, "message": messages.ref(reply), "sequential": prepared(batch.sequential), "slots": slots,
        "cursor": prepared(batch.cursor)}}
    if not (isinstance(phase.pending, tuple) and _same_items(phase.pending, _paused_on(batch))):
        out["pending"] = prepared(phase.pending)
    return out


def _encode_slot(slot: ToolSlot, reply_call: ToolCall | None) -> Any:
    call = slot.call
    out: dict[str, Any] = {"type": _SLOT}
    if reply_call is None or not _same(call, reply_call):
        out["call"] = prepared(call)
    out["step"], out["wait_id"] = prepared(slot.step), prepared(slot.wait_id)
    if not isinstance(call, ToolCall) or not _same(slot.args, call.arguments):
        out["args"] = prepared(slot.args)
    out["result"], out["is_error"], out["at"] = prepared(slot.result), prepared(slot.is_error), prepared(slot.at)
    if slot.message is not None:
        out["message"] = _FROM_RESULT if _same(slot.message, _result_message(slot)) else _literal(slot.message)
    p = slot.pending
    if p is not None:
        if (isinstance(p, PendingCall) and isinstance(call, ToolCall) and type(p.tool_call_id) is str
                and p.tool_call_id == call.id
                and type(p.tool_name) is str and p.tool_name == call.name and _same(p.arguments, slot.args)):
            out["pending"] = {"reason": prepared(p.reason), "waits_for": prepared(p.waits_for)}
        else:
            out["pending"] = _literal(p)
    return out


def _tagged(obj: Any, tag: str) -> bool:
    return isinstance(obj, Mapping) and obj.get("type") == tag


def _build(cls: type, path: str, **kwargs: Any) -> Any:
    try:
        return cls(**kwargs)
    except TypeError as exc:
        raise CodecError(f"cannot build {_tag(cls)} at {path}: {exc}") from None


def _decode(obj: Mapping[str, Any], path: str) -> Suspension:
    state_obj: Any = obj.get("state")
    if _tagged(state_obj, _STATE):
        run = _decode_run(state_obj.get("run"), f"{path}.state.run")
        phase = _decode_phase(state_obj.get("phase"), run, f"{path}.state.phase")
        state = _build(LoopState, f"{path}.state", phase=phase, run=run)
    else:
        state = decode_at(state_obj, f"{path}.state")
    if "pending" in obj:
        pending = decode_at(obj["pending"], f"{path}.pending")
    elif isinstance(getattr(state, "phase", None), Suspended):
        pending = state.phase.pending
    else:
        raise CodecError(f"Suspension at {path} lacks pending (and its state is not suspended)")
    version = decode_at(obj.get("version", 1), f"{path}.version")
    suspension: Suspension = _build(Suspension, path, state=state, pending=pending, version=version)
    return suspension


def _decode_run(obj: Any, path: str) -> Any:
    if not _tagged(obj, _RUN):
        return decode_at(obj, path)
    fields = dict(obj)
    last = fields.get("new_messages")
    last = fields.pop("new_messages")["last"] if isinstance(last, Mapping) and set(last) == {"last"} else None
    derived_view = "llm_messages" not in fields
    fields.setdefault("llm_messages", None)
    turn = fields.pop("last_turn", None) if _tagged(fields.get("last_turn"), _TURN) else None
    run = decode_at(fields, path)
    messages = getattr(run, "messages", None)
    if not isinstance(messages, PVector):
        return run  # the check says what is wrong with it
    changes: dict[str, Any] = {}
    if last is not None:
        if type(last) is not int or not 0 <= last <= len(messages):
            raise CodecError(f"{path}.new_messages are the last {last!r} messages, and there are {len(messages)}")
        changes["new_messages"] = messages[len(messages) - last:]
    if derived_view and isinstance(run.hooks, frozenset):
        changes["llm_messages"] = llm_view(messages, run.hooks)
    if turn is not None:
        results = turn.get("tool_results", ())
        changes["last_turn"] = _build(
            CompletedTurn, f"{path}.last_turn",
            message=_message(turn.get("message"), messages, f"{path}.last_turn.message"),
            tool_results=tuple(_message(m, messages, f"{path}.last_turn.tool_results[{i}]")
                               for i, m in enumerate(results)) if isinstance(results, list)
            else decode_at(results, f"{path}.last_turn.tool_results"))
    return replace(run, **changes) if changes else run


def _message(value: Any, messages: Any, path: str) -> Any:
    """A message written in full, or as its index in the conversation."""
    if type(value) is not int:
        return decode_at(value, path)
    if not 0 <= value < len(messages):
        raise CodecError(f"{path} is message {value} of the conversation, which has {len(messages)}")
    return messages[value]


def _decode_phase(obj: Any, run: Any, path: str) -> Any:
    if not _tagged(obj, _SUSPENDED) or not _tagged(obj.get("batch"), _BATCH):
        return decode_at(obj, path)
    b, where = obj["batch"], f"{path}.batch"
    messages = getattr(run, "messages", ())
    if "message" not in b:
        raise CodecError(f"{_BATCH} at {where} lacks message")
    reply = _message(b["message"], messages, f"{where}.message")
    calls = reply.tool_calls if isinstance(reply, AssistantMessage) and isinstance(reply.content, tuple) else ()
    slots_obj = b.get("slots", ())
    slots = tuple(_decode_slot(s, calls[i] if i < len(calls) else None, f"{where}.slots[{i}]")
                  for i, s in enumerate(slots_obj)) if isinstance(slots_obj, list) else decode_at(slots_obj, where)
    batch = _build(RunningTools, where, message=reply, sequential=decode_at(b.get("sequential"), f"{where}.sequential"),
                   slots=slots, cursor=decode_at(b.get("cursor", 0), f"{where}.cursor"))
    if "pending" in obj:
        pending = decode_at(obj["pending"], f"{path}.pending")
    else:
        pending = _paused_on(batch) if all(isinstance(s, ToolSlot) for s in batch.slots) else ()
    return _build(Suspended, path, batch=batch, pending=pending)


def _decode_slot(obj: Any, reply_call: ToolCall | None, path: str) -> Any:
    if not _tagged(obj, _SLOT):
        return decode_at(obj, path)
    if "call" in obj:
        call = decode_at(obj["call"], f"{path}.call")
    elif reply_call is not None:
        call = reply_call
    else:
        raise CodecError(f"{_SLOT} at {path} has no call, and the batch's reply has no tool call there")
    args = freeze_read(obj["args"]) if "args" in obj else getattr(call, "arguments", None)
    slot = _build(ToolSlot, path, call=call, step=decode_at(obj.get("step", "waiting"), f"{path}.step"),
                  wait_id=decode_at(obj.get("wait_id", -1), f"{path}.wait_id"), args=args,
                  result=decode_at(obj.get("result"), f"{path}.result"),
                  is_error=decode_at(obj.get("is_error", False), f"{path}.is_error"),
                  at=decode_at(obj.get("at", 0), f"{path}.at"))
    message = obj.get("message")
    if message == _FROM_RESULT:
        message = _result_message(slot)
        if message is None:
            raise CodecError(f"{path}.message is its result's message, and it has no result")
    else:
        message = decode_at(message, f"{path}.message")
    pending = obj.get("pending")
    if isinstance(pending, Mapping) and "type" not in pending:
        pending = _build(PendingCall, f"{path}.pending", tool_call_id=getattr(call, "id", None),
                         tool_name=getattr(call, "name", None), arguments=args,
                         reason=decode_at(pending.get("reason"), f"{path}.pending.reason"),
                         waits_for=decode_at(pending.get("waits_for"), f"{path}.pending.waits_for"))
    else:
        pending = decode_at(pending, f"{path}.pending")
    return replace(slot, message=message, pending=pending)


register_form(Suspension, _encode, _decode)


# --------------------------------------------------------------------------- JSON differences


def _plain(value: Any) -> Any:
    """``value`` as JSON data (what its JSON text reads back as)."""
    return parse(_json(value))


def _shown(value: Any) -> str:
    if value is MISSING:
        return "absent"
    text = encode_bytes(value).decode("utf-8")
    return text if len(text) <= 200 else text[:197] + "..."


def _where(diff: Difference) -> str:
    return diff.path.lstrip(".") or "it"


def _detail(diffs: list[Difference], where: str) -> str:
    parts = []
    for d in diffs:
        if d.length:
            parts.append(length_difference_text(_where(d), d.left, d.right, where))
        else:
            parts.append(value_difference_text(_where(d), _shown(d.left), _shown(d.right), where))
    return "; ".join(parts)


def difference(s: Suspension, state: LoopState, where: str = "the state") -> str | None:
    """How ``state`` is not at the point of its run where ``s`` suspended (``None``: it is):
    suspended on other calls, or on the same ones shown otherwise, or after other new messages,
    or with any other field of the state (the conversation before the run, the system prompt,
    the counters...) holding something else.
    Compared in JSON form, as a transcript holds them; ``where`` names ``state`` in the text."""
    phase = state.phase
    if not isinstance(phase, Suspended):
        return f"is not suspended (phase {phase.name})"
    theirs, mine = phase.pending, s.pending
    ids = [p.tool_call_id for p in theirs]
    if ids != [p.tool_call_id for p in mine]:
        return other_calls_text(ids)
    for there, here in zip(theirs, mine):
        if not _same_json(there, here):
            diffs = differences(_plain(there), _plain(here), limit=3)
            field = _where(diffs[0]).split(".")[0].split("[")[0]
            return other_pending_text(here.tool_call_id, field, _detail(diffs, where))
    there_new, my_new = state.run.new_messages, s.state.run.new_messages
    if len(there_new) != len(my_new):
        return new_messages_count_text(len(there_new), len(my_new))
    for i, (there, here) in enumerate(zip(there_new, my_new)):
        if not _same_json(there, here):
            role = getattr(here, "role", type(here).__name__)
            label = f"{role} {here.tool_call_id}" if isinstance(here, ToolResultMessage) else str(role)
            return other_message_text(i, label, _detail(differences(_plain(there), _plain(here), limit=3), where))
    if not _same_json(state, s.state):  # the rest: the conversation before the run, the counters, the tools...
        return other_state_text(_detail(differences(_plain(state), _plain(s.state), ".state", limit=3), where))
    return None


# --------------------------------------------------------------------------- the check


def problem(s: Any) -> str | None:
    """Why the stored suspension ``s`` cannot be resumed as it is (``None``: it can): a field
    holding a value that is not of its type, a format this library does not read, a state that is
    not suspended, or parts that disagree on what is shown and what would run."""
    detail = type_problem(s, Suspension, "", opaque=_OPAQUE)
    if detail is None:
        run = s.state.run
        detail = (messages_problem(run.messages, "state.run.messages")
                  or messages_problem(run.new_messages, "state.run.new_messages")
                  or messages_problem(run.llm_messages or (), "state.run.llm_messages"))
    if detail is None:
        content = s.state.phase.batch.message.content if isinstance(s.state.phase, Suspended) else ()
        detail = type_problem(content, tuple[Any, ...], "state.phase.batch.message.content")
    if detail is None:
        detail = _message_fields_problem(s.state.run) or _figures_problem(s.state)
    if detail is not None:
        return suspension_field_text(detail)
    if not 1 <= s.version <= SUSPENSION_VERSION:
        return suspension_version_text(s.version, SUSPENSION_VERSION)
    phase = s.state.phase
    if not isinstance(phase, Suspended):
        return not_suspended_text(phase.name)
    detail = _parts_problem(s)
    return suspension_parts_text(detail) if detail is not None else None


_OPAQUE: Final = (Message, Usage)
"""Records checked for their class only: messages (what the conversation holds is the
conversation's; the calls are checked as slots, and a message's figures, timestamps and usage,
are as JSON gave them back: ``None`` for a cost that was not a finite number) and usage."""


def _message_fields_problem(run: RunState) -> str | None:
    """A message of the conversation with a field that is not of its type (checked as JSON
    gives numbers back: a whole number of milliseconds may be a float, a cost that was not a
    finite number ``None``): a stored suspension is data anyone may have edited, and what the
    model is sent next is built from it."""
    for i, message in enumerate(run.messages):
        detail = type_problem(message, type(message), f"state.run.messages[{i}]", read_back=True)
        if detail is not None:
            return detail
    return None


_COUNTERS: Final = ("turns", "total_tokens")
_BUDGETS: Final = ("max_turns", "max_total_tokens")


def _figures_problem(state: LoopState) -> str | None:
    """A counter, budget or effect id out of its range (the types are checked)."""
    run = state.run
    for name in _COUNTERS:
        value = getattr(run, name)
        if value < 0:
            return f"state.run.{name} is {value!r}, not a count (an integer >= 0)"
    if not (math.isfinite(run.cost_usd) and run.cost_usd >= 0):
        return f"state.run.cost_usd is {run.cost_usd!r}, not a cost (a finite number >= 0)"
    for name in _BUDGETS:
        value = getattr(run, name)
        if value is not None and value < 1:
            return f"state.run.{name} is {value!r}, not a budget (None or an integer >= 1)"
    cost = run.max_cost_usd
    if cost is not None and not (math.isfinite(cost) and cost > 0):
        return f"state.run.max_cost_usd is {cost!r}, not a budget (None or a finite number > 0)"
    if run.next_id < 1:
        return f"state.run.next_id is {run.next_id!r}, not an effect id (an integer >= 1)"
    return None


def _mismatch(shown: str, a: Any, runs: str, b: Any, role: str) -> str | None:
    """``a`` (shown at ``shown``) and ``b`` (acted on, at ``runs``) differ: where, said for the user."""
    if _same_json(a, b):
        return None
    path, x, y, length = differences(_plain(a), _plain(b), limit=1)[0]
    if length:
        return mismatch_text(f"{shown}{path}", f"{x} items long", f"{runs}{path}", f"{y} items long", role)
    return mismatch_text(f"{shown}{path}", _shown(x), f"{runs}{path}", _shown(y), role)


def _names(ids: list[str]) -> str:
    return ", ".join(ids) or "(none)"


def _parts_problem(s: Suspension) -> str | None:
    """Which parts of ``s`` (of the right types, suspended) disagree on what would run."""
    phase = s.state.phase
    assert isinstance(phase, Suspended)
    run, batch, b = s.state.run, phase.batch, "state.phase.batch"
    slots, calls = batch.slots, batch.message.tool_calls
    if len(slots) != len(calls):
        return f"{b}.slots has {len(slots)} calls, {b}.message has {len(calls)}"
    if not 0 <= batch.cursor <= len(slots):
        return f"{b}.cursor is {batch.cursor!r}, not a position in the batch's {len(slots)} calls (0 to {len(slots)})"
    seen: dict[str, int] = {}
    for i, call in enumerate(calls):
        if call.id in seen:
            return (f"{b}.message has two tool calls with the id {call.id!r} (calls {seen[call.id]} and {i}): "
                    "a decision names the call it is for by its id")
        seen[call.id] = i
    for i, slot in enumerate(slots):
        if batch.sequential:
            expected = "done" if i < batch.cursor else "pending" if i == batch.cursor else "waiting"
            if slot.step != expected:
                return (f"{b}.slots[{i}].step is {slot.step!r}: in a suspended sequential batch the calls before the "
                        f"cursor ({batch.cursor}) are done, the one at it is pending, the ones after it are waiting")
        elif slot.step not in ("pending", "done"):
            return f"{b}.slots[{i}].step is {slot.step!r}: the calls of a suspended parallel batch are pending or done"
    shown_ids, waited_ids = [p.tool_call_id for p in s.pending], [p.tool_call_id for p in phase.pending]
    if shown_ids != waited_ids:
        return (f"pending names {_names(shown_ids)} but state.phase.pending (what the run waits on) names "
                f"{_names(waited_ids)}")
    for k, (shown, waited) in enumerate(zip(s.pending, phase.pending)):
        if (m := _mismatch(f"pending[{k}]", shown, f"state.phase.pending[{k}]", waited, "what the run waits on")):
            return m
    paused = [(i, slot) for i, slot in enumerate(slots) if slot.step == "pending"]
    if [slot.call.id for _, slot in paused] != waited_ids:
        return (f"state.phase.pending names {_names(waited_ids)} but the batch's pending slots (what would run) "
                f"name {_names([slot.call.id for _, slot in paused])}")
    for k, (i, slot) in enumerate(paused):
        shown, at = s.pending[k], f"{b}.slots[{i}]"
        if slot.pending is None:
            return f"{at}.pending is None: a pending call says what it waits for"
        if (m := _mismatch(f"state.phase.pending[{k}]", phase.pending[k], f"{at}.pending", slot.pending,
                           "what the batch holds")):
            return m
        if (m := _mismatch(f"pending[{k}].tool_name", shown.tool_name, f"{at}.call.name", slot.call.name,
                           "what would run")
                or _mismatch(f"pending[{k}].arguments", shown.arguments, f"{at}.args", slot.args, "what would run")):
            return m
    for i, slot in enumerate(slots):
        if slot.step == "done" and slot.result is None:
            return f"{b}.slots[{i}].result is None: a call that is done has its result"
    content = batch.message.content
    for i, (slot, call) in enumerate(zip(slots, calls)):
        j = next(n for n, block in enumerate(content) if block is call)
        if (m := _mismatch(f"{b}.message.content[{j}]", call, f"{b}.slots[{i}].call", slot.call, "what would run")):
            return m
    if not run.messages:
        return f"state.run.messages is empty: the reply {b}.message is not in the conversation"
    last = len(run.messages) - 1
    if (m := _mismatch(f"state.run.messages[{last}]", run.messages[last], f"{b}.message", batch.message,
                       "what would run")):
        return m
    return _view_problem(run)


def _view_problem(run: RunState) -> str | None:
    """``llm_messages`` (what the model would be sent) is not the default conversion of the
    conversation."""
    if run.llm_messages is None:
        return None
    if llm_view(run.messages, run.hooks) is None:
        return "state.run.llm_messages is set, but state.run.hooks convert the messages themselves"
    view = [(i, c) for i, m in enumerate(run.messages) if (c := convert_message(m)) is not None]
    if len(view) != len(run.llm_messages):
        return (f"state.run.llm_messages (what the model would be sent) has {len(run.llm_messages)} messages but the "
                f"default conversion of state.run.messages has {len(view)}")
    for k, ((i, converted), sent) in enumerate(zip(view, run.llm_messages)):
        if (m := _mismatch(f"the default conversion of state.run.messages[{i}]", converted,
                           f"state.run.llm_messages[{k}]", sent, "what the model would be sent")):
            return m
    return None



def run_settings(config: AgentLoopConfig, tools: Sequence[AgentTool | ToolSpec] | None = None) -> RunSettings:
    """What ``config`` and ``tools`` (the resuming context's; ``None``: keep the suspended
    state's) put in force for the rest of a resumed run (``Resumed.settings``): the model, the
    hooks the config sets, its budgets and ``tool_execution``, the tools' specs and which of
    their calls wait for a decision.

    >>> from agentcore import AgentLoopConfig, AgentTool, Model
    >>> rm = AgentTool("rm", "rm", "", {"type": "object"}, print, requires_approval=True)
    >>> settings = run_settings(AgentLoopConfig(model=Model(id="m"), max_turns=3), [rm])
    >>> settings.model.id, settings.hooks, settings.max_turns, [t.name for t in settings.tools]
    ('m', frozenset(), 3, ['rm'])
    >>> settings.tool_policies
    FrozenDict({'rm': 'approval'})
    """
    cost = config.max_cost_usd
    specs = None if tools is None else tuple(spec_of(t) for t in tools)
    return RunSettings(config.model, hooks_set(config) - {"get_api_key"}, config.max_turns, config.max_total_tokens,
                       float(cost) if cost is not None else None, specs,
                       None if tools is None else tool_policies(tools), config.tool_execution)


SUSPENSION_CHECKS.update(difference=difference, problem=problem)
