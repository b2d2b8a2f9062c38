"""Deciding a recorded suspension with ``agentcore transcript resume FILE``: the decisions given
as options (``--approve ID[=ARGS]``, ``--deny ID[:REASON]``, ``--output ID=TEXT``,
``--approve-all``, ``--deny-all[=REASON]``) or, on a terminal without any of them, asked for
call by call as ``agentcore chat`` asks. The resumed run goes on at the end of the same
transcript (``resume_suspended(..., transcript=FILE)``): a suspension is resumed at most once,
and a later attempt is refused in one line. Decisions that are missing, for calls that do not
wait, or of the wrong kind are refused before anything runs, as a usage error naming them.

The resumed run keeps the hooks and the limits (turns, tokens, cost) it was recorded with, so
that its transcript replays strictly as one run.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from collections.abc import Callable, Sequence
from typing import Any

from agentcore import (
    AgentContext,
    AgentEvent,
    AgentLoopConfig,
    Approve,
    Decision,
    Deny,
    PendingCall,
    Suspension,
    ToolOutput,
)
from agentcore.frozen import thaw
from agentcore.hooks import GET_FOLLOW_UP_MESSAGES, GET_STEERING_MESSAGES
from agentcore.records import replace
from agentcore.state import Suspended

from ..render import LiveRenderer, isatty, make_renderer
from ..render.conversation import decision_text
from ..signal import AbortSignal
from .common import (
    EXIT_SUSPENDED,
    JsonLines,
    Setup,
    UsageError,
    ask_decision,
    drive,
    resume_options,
    run_outcome,
    suspension_report,
)

__all__ = [
    "DECISION_OPTIONS",
    "add_decision_options",
    "decide_recorded",
    "decide_suspension",
    "decisions_from_args",
    "decisions_given",
    "had_finished",
    "run_resumed",
]

DECISION_OPTIONS = "(--approve ID, --deny ID[:REASON], --output ID=TEXT, --approve-all, --deny-all[=REASON])"
"""The options that decide waiting calls, as the errors name them."""

_NONE_GIVEN = "leave out --approve, --deny, --output, --approve-all and --deny-all"


def add_decision_options(p: argparse.ArgumentParser) -> None:
    """The options of ``transcript resume`` that decide the calls a suspended run waits on
    (``--approve-all`` is added with the run options)."""
    p.add_argument("--approve", action="append", metavar="ID[=ARGS]",
                   help="approve the waiting call ID; with =ARGS (a JSON object: --approve 'ID={\"path\": \"x\"}') "
                        "run it with these arguments instead (repeatable)")
    p.add_argument("--deny", action="append", metavar="ID[:REASON]",
                   help="deny the waiting call ID; the model is told REASON (repeatable)")
    p.add_argument("--output", action="append", metavar="ID=TEXT",
                   help="TEXT is the result of the deferred call ID (repeatable)")
    p.add_argument("--deny-all", nargs="?", const="", default=None, metavar="REASON",
                   help="deny every waiting call not decided otherwise (write --deny-all=REASON)")


def decisions_given(args: argparse.Namespace) -> bool:
    """Whether the command line decides waiting calls."""
    return bool(args.approve or args.deny or args.output or args.approve_all or args.deny_all is not None)


def _describe(p: PendingCall) -> str:
    arguments = json.dumps(thaw(p.arguments), ensure_ascii=False, default=str)
    waits = "an approval" if p.waits_for == "approval" else "its result"
    return f"{p.tool_call_id} ({p.tool_name} {arguments}, waits for {waits})"


def _call(value: str, sep: str, ids: Sequence[str], option: str) -> tuple[str, str | None]:
    """The waiting call ``value`` names (``ID`` or ``ID<sep>REST``, matched against the waiting
    ids, so an id may hold ``sep``) and what follows the separator (``None``: nothing)."""
    if value in ids:
        return value, None
    found = [i for i in ids if value.startswith(i + sep)]
    if found:
        call_id = max(found, key=len)
        return call_id, value[len(call_id) + 1:]
    raise UsageError(f"{option}: no waiting call has the id {value.partition(sep)[0]} "
                     f"(the run waits on {', '.join(ids)})")


_JSON_KINDS = ((bool, "a JSON boolean"), (str, "a JSON string"), ((int, float), "a JSON number"),
               (list, "a JSON array"), (type(None), "JSON null"))


def _arguments(text: str, option: str, p: PendingCall) -> Any:
    shown = json.dumps(thaw(p.arguments), ensure_ascii=False, default=str)
    example = f"e.g. --approve {shlex.quote(f'{p.tool_call_id}={shown}')}"
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise UsageError(f"{option}: the arguments are not JSON ({exc}): give them as a JSON object, "
                         f"{example}") from None
    if not isinstance(value, dict):
        kind = next(name for types, name in _JSON_KINDS if isinstance(value, types))
        raise UsageError(f"{option}: the arguments are {kind}, not an object: give them as a JSON object, {example}")
    return value


def decisions_from_args(args: argparse.Namespace, pending: Sequence[PendingCall]) -> dict[str, Decision]:
    """The decision for every waiting call, from the command line (empty: it gives none).
    Anything that cannot be taken as it is (an id that does not wait, a decision of the wrong
    kind, two for one call, arguments that are not a JSON object, a call left undecided) is a
    :class:`UsageError` naming it."""
    if args.approve_all and args.deny_all is not None:
        raise UsageError("--approve-all and --deny-all: give one of them (and --approve, --deny or --output for the "
                         "calls to decide otherwise)")
    ids = [p.tool_call_id for p in pending]
    by_id = {p.tool_call_id: p for p in pending}
    given: dict[str, tuple[str, Decision]] = {}

    def put(call_id: str, option: str, decision: Decision) -> None:
        if call_id in given:
            raise UsageError(f"more than one decision for {call_id} ({given[call_id][0]}, {option}): give one")
        given[call_id] = (option, decision)

    for value in args.approve or ():
        option = f"--approve {value}"
        call_id, rest = _call(value, "=", ids, option)
        p = by_id[call_id]
        if p.waits_for != "approval":
            raise UsageError(f"{option}: {call_id} ({p.tool_name}) waits for its result, not an approval: give it "
                             f"with --output {call_id}=TEXT, or --deny {call_id}[:REASON]")
        put(call_id, option, Approve() if rest is None else Approve(arguments=_arguments(rest, option, p)))
    for value in args.deny or ():
        option = f"--deny {value}"
        call_id, reason = _call(value, ":", ids, option)
        put(call_id, option, Deny(reason or None))
    for value in args.output or ():
        option = f"--output {value}"
        call_id, text = _call(value, "=", ids, option)
        p = by_id[call_id]
        if p.waits_for != "result":
            raise UsageError(f"{option}: {call_id} ({p.tool_name}) waits for an approval, not a result: "
                             f"--approve {call_id}, or --deny {call_id}[:REASON]")
        if text is None:
            raise UsageError(f"{option}: give the result after an equals sign: --output {call_id}=TEXT")
        put(call_id, option, ToolOutput(text))
    for p in pending:
        if p.tool_call_id in given:
            continue
        if args.approve_all and p.waits_for == "approval":
            given[p.tool_call_id] = ("--approve-all", Approve())
        elif args.deny_all is not None:
            given[p.tool_call_id] = ("--deny-all", Deny(args.deny_all or None))
    if not decisions_given(args):
        return {}
    missing = [p for p in pending if p.tool_call_id not in given]
    if missing:
        raise UsageError(f"no decision for {', '.join(map(_describe, missing))}: a run goes on only with a decision "
                         f"for every waiting call {DECISION_OPTIONS}; nothing was run")
    return {p.tool_call_id: given[p.tool_call_id][1] for p in pending}


# --------------------------------------------------------------------------- the run


def _nothing() -> list[Any]:
    return []


def _limit(option: str, value: Any) -> str:
    return f"no {option}" if value is None else f"{option} {value:g}"


def resumed_config(args: argparse.Namespace, setup: Setup, suspension: Suspension) -> AgentLoopConfig:
    """The config the suspension goes on with: the command line's model, key and options, and
    the hooks and limits the run was recorded with (a transcript resumed with others would not
    replay); a limit given on the command line that differs is a :class:`UsageError`."""
    run = suspension.state.run
    for option, given, recorded in (("--max-turns", args.max_turns, run.max_turns),
                                    ("--max-cost", args.max_cost, run.max_cost_usd)):
        if given is not None and given != recorded:
            raise UsageError(f"{_limit(option, given)}: a suspended run goes on with the limits it was recorded with "
                             f"({_limit(option, recorded)}), so that its transcript replays as one run; leave "
                             f"{option} out")
    return replace(setup.config,
                   get_steering_messages=_nothing if GET_STEERING_MESSAGES.name in run.hooks else None,
                   get_follow_up_messages=_nothing if GET_FOLLOW_UP_MESSAGES.name in run.hooks else None,
                   decide_tool_call=None, max_turns=run.max_turns, max_total_tokens=run.max_total_tokens,
                   max_cost_usd=run.max_cost_usd)


def _turns(t: Any) -> int:
    return sum(1 for e in t.entries for x in e.effects_json if isinstance(x, dict)
               and x.get("type") == "emit" and (x.get("event") or {}).get("type") == "turn_start")


def run_resumed(args: argparse.Namespace, t: Any, stream: Any, signal: AbortSignal, decided: str = "") -> list[Any]:
    """Render the live part of a resumed run (appended to the transcript ``t``), after a rule
    naming where it goes on and ``decided`` (the decisions it goes on with); its messages."""
    render: Callable[[AgentEvent], Any] = JsonLines() if args.json else make_renderer()
    if isinstance(render, LiveRenderer):
        turns = _turns(t)
        render.turn = turns
        render.assistant_seen = True
        render.line(f"── resuming {args.file} after step {t.steps} (turn {turns}){decided}", "rule")
    try:
        messages = drive(stream, [render], signal)
    finally:
        if isinstance(render, LiveRenderer):
            render.close()
    if not args.json:
        print(f"Resumed {args.file}: the run has {len(messages)} new messages; the transcript was appended to.")
    return messages


def _typed(question: str) -> str | None:
    try:
        return input(question)
    except EOFError:
        print()
        return None


def decide_suspension(args: argparse.Namespace, t: Any, setup: Setup, suspension: Suspension) -> int:
    """Decide the suspension the transcript ``t`` ends with, from the command line or (on a
    terminal, without decision options) by asking, and go on with the run at the end of the
    transcript; the exit code. Without decisions, nothing is run or written: the waiting calls
    and how to decide them are printed, exit code 3."""
    from ..replay.recovery import AlreadyResumed
    from ..sync import resume_suspended
    from ..transcript import TranscriptError

    config = resumed_config(args, setup, suspension)
    pending = suspension.pending
    decisions = decisions_from_args(args, pending)
    options = resume_options(args, model=True)
    if not decisions:
        if args.json or not isatty(sys.stdin):
            sys.stderr.write(suspension_report(pending, args.file, options=options))
            return EXIT_SUSPENDED
        n = len(pending)
        print(f"{args.file}: the run is suspended: {n} tool call{'s wait' if n != 1 else ' waits'} for a decision")
        for p in pending:
            decision = ask_decision(p, _typed, lambda text, style: print(text))
            if decision is None:  # the input ended
                print("(end of input: nothing was decided; the run stays suspended)")
                sys.stdout.flush()
                sys.stderr.write(suspension_report(pending, args.file, answered=decisions, options=options))
                return EXIT_SUSPENDED
            decisions[p.tool_call_id] = decision
    signal = AbortSignal()
    try:
        stream = resume_suspended(suspension, decisions, context=AgentContext(tools=setup.tools), config=config,
                                  signal=signal, stream_fn=setup.stream_fn, transcript=args.file)
    except (AlreadyResumed, TranscriptError) as exc:
        print(f"agentcore: {exc}", file=sys.stderr)
        return 1
    decided = ", ".join(f"{p.tool_call_id} {decision_text(p, decisions[p.tool_call_id])}" for p in pending)
    messages = run_resumed(args, t, stream, signal, f": {decided}")
    if stream.suspension is not None:
        sys.stdout.flush()
        sys.stderr.write(suspension_report(stream.suspension.pending, args.file, options=options))
        return EXIT_SUSPENDED
    code, problem = run_outcome(messages)
    if code:
        print(f"agentcore: {problem}", file=sys.stderr)
    return code


def decide_recorded(args: argparse.Namespace, t: Any, setup: Setup | None, no_setup: str = "") -> int:
    """``transcript resume`` with decision options: the transcript must end suspended (it is
    replayed strictly to see). One whose suspension was resumed already is refused with the
    library's ``AlreadyResumed`` (one line, exit code 1); one that never suspended is a usage
    error, unless it finished and the options decide every call without naming one
    (``--approve-all``, ``--deny-all``: there is none), which says so and exits with the run's
    code. Nothing is run or written then. ``setup`` is ``None`` when the command line gives no
    way to go on with the run (``no_setup`` says why): only a run that is suspended needs one."""
    from ..replay import ReplayDivergence, replay

    try:
        result = replay(t)
    except ReplayDivergence as exc:
        print(f"agentcore: {args.file} no longer replays with this code, so it cannot be resumed:", file=sys.stderr)
        print(exc.report, file=sys.stderr)
        return 1
    phase = result.state.phase
    if isinstance(phase, Suspended):
        if setup is None:
            raise UsageError(no_setup)
        return decide_suspension(args, t, setup, Suspension(result.state, phase.pending))
    return _not_suspended(args, t, setup, result)


def had_finished(args: argparse.Namespace, messages: Sequence[Any]) -> int:
    """Say that the transcript's run had finished and nothing was appended: the run's exit code."""
    if not args.json:
        print(f"{args.file}: the recorded run had finished: there is nothing to resume; nothing was appended.")
    code, problem = run_outcome(messages)
    if code:
        print(f"agentcore: {problem}", file=sys.stderr)
    return code


def _not_suspended(args: argparse.Namespace, t: Any, setup: Setup | None, result: Any) -> int:
    from ..replay import state_at
    from ..replay.recovery import AlreadyResumed, continue_transcript
    from ..transcript import TranscriptBusy, TranscriptError

    finished = result.finished
    how = "it finished" if finished else "it stopped before its end"
    entries = t.entries
    resumed = [i for i in range(len(entries) - 1)
               if any(isinstance(e, dict) and e.get("type") == "run_suspended" for e in entries[i].effects_json)
               and entries[i + 1].input.type == "resumed"]
    if not resumed:
        if finished and not (args.approve or args.deny or args.output):
            return had_finished(args, result.messages)  # every call of none decided
        raise UsageError(f"{args.file}: the recorded run is not suspended ({how}): there is no tool call to decide; "
                         f"{_NONE_GIVEN}")
    state = state_at(t, entries[resumed[-1]].step)
    assert isinstance(state.phase, Suspended)
    try:  # the library's check of a suspension resumed already: it refuses this one
        recorder = continue_transcript(args.file, Suspension(state, state.phase.pending),
                                       setup.config if setup is not None else None)
    except AlreadyResumed as exc:
        hint = ""
        if not finished and not isinstance(exc.__cause__, TranscriptBusy):
            hint = (f"; the resumed run stopped before its end: "
                    f"'agentcore transcript resume {shlex.quote(args.file)}' without decisions goes on with it")
        print(f"agentcore: {exc}{hint}", file=sys.stderr)
        return 1
    except TranscriptError as exc:
        print(f"agentcore: {exc}", file=sys.stderr)
        return 1
    recorder.close()  # not reached: a transcript that does not end suspended is not resumed into
    raise UsageError(f"{args.file}: the recorded run is not suspended ({how}): there is no tool call to decide; "
                     f"{_NONE_GIVEN}")
