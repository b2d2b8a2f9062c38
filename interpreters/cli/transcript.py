"""``agentcore transcript show|replay|diff|state|fork|resume|html|match|accept|rerecord``:
inspect, check, continue and re-record recorded runs (every problem with a file is a one-line
usage error)."""

from __future__ import annotations

import argparse
import difflib
import json
import os
import sys
import warnings
from pathlib import Path
from typing import Any, Final

from agentcore import (
    AgentEvent,
    AssistantMessage,
    CallLlm,
    Emit,
    FrozenDict,
    LlmContext,
    Model,
    StreamOptions,
    ToolResultMessage,
)
from agentcore.codec import CodecError, from_json, to_json
from agentcore.hooks import GET_API_KEY, GET_FOLLOW_UP_MESSAGES, GET_STEERING_MESSAGES
from agentcore.records import replace
from agentcore.state import Finished, Suspended

from ..render import (
    build_conversation,
    conversation_html,
    conversation_text,
    format_args,
    message_text,
)
from ..signal import AbortSignal
from .common import (
    EXIT_SUSPENDED,
    Parser,
    UsageError,
    resume_options,
    run_options,
    run_outcome,
    setup_from_args,
    suspension_report,
    writable,
)
from .deciding import (
    add_decision_options,
    decide_recorded,
    decide_suspension,
    decisions_given,
    had_finished,
    run_resumed,
)

__all__ = [
    "add_commands",
    "read",
    "recorded_decisions",
    "recorded_events",
]


def read(path_text: str) -> Any:
    """Read a transcript; every problem is a one-line usage error."""
    from ..transcript import TranscriptError, read_transcript

    path = Path(path_text)
    if not path.exists():
        raise UsageError(f"no such file: {path_text}")
    if path.is_dir():
        raise UsageError(f"{path_text} is a directory, not a transcript")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            t = read_transcript(path)
        except TranscriptError as exc:
            raise UsageError(f"{path_text} is not a usable transcript: {exc.problem}") from exc
        except (UnicodeDecodeError, OSError) as exc:
            raise UsageError(f"cannot read {path_text}: {exc}") from exc
    for w in caught:
        print(f"agentcore: note: {path_text}: {w.message}", file=sys.stderr)
    return t


def recorded_events(t: Any) -> list[AgentEvent]:
    """The events the recorded run emitted (``message_update`` left out), from the recording
    itself: what happened then, whatever the code does now."""
    from ..transcript import expand

    events: list[AgentEvent] = []
    for entry in t.entries:
        for effect in entry.effects_json:
            if not isinstance(effect, dict) or effect.get("type") != "emit":
                continue
            event = effect.get("event") or {}
            if event.get("type") == "message_update":
                continue
            try:
                decoded = from_json(expand(effect))
            except (CodecError, ValueError, KeyError, TypeError) as exc:
                raise UsageError(f"{t.path} is not a usable transcript: line {entry.line}: "
                                 f"an effect does not decode ({exc})") from exc
            assert isinstance(decoded, Emit)
            events.append(decoded.event)
    return events


def recorded_decisions(t: Any) -> list[tuple[str, Any]]:
    """The decisions the recording's ``Resumed`` inputs gave, by tool call id, in order."""
    return [pair for entry in t.entries if entry.input.type == "resumed" for pair in entry.input.decisions]


def _title(t: Any) -> str:
    return f"Transcript {t.path}"


def _notes(t: Any) -> list[str]:
    notes = []
    if t.torn:
        notes.append("note: the last line was torn (a crash mid-write) and is ignored")
    if t.resumed_from:
        notes.append(f"note: resumed from step(s) {', '.join(map(str, t.resumed_from))}")
    return notes


def _cmd_show(args: argparse.Namespace) -> int:
    from ..render import isatty

    t = read(args.file)
    conv = build_conversation(recorded_events(t), recorded_decisions(t))
    color = isatty(sys.stdout) and not os.environ.get("NO_COLOR")
    sys.stdout.write(conversation_text(conv, t.header, title=_title(t), steps=t.steps, color=color,
                                       notes=_notes(t)))
    return 0


def _cmd_html(args: argparse.Namespace) -> int:
    t = read(args.file)
    out = Path(args.output) if args.output else Path(args.file).with_suffix(".html")
    if out.resolve() == Path(args.file).resolve():
        raise UsageError("the HTML file would overwrite the transcript; choose another -o")
    writable(out, "the HTML page")
    conv = build_conversation(recorded_events(t), recorded_decisions(t))
    out.write_text(conversation_html(conv, t.header, title=f"Transcript {Path(args.file).name}",
                                     steps=t.steps, notes=_notes(t)), encoding="utf-8")
    print(f"Wrote {out} ({len(conv.turns)} turns, {len(conv.tool_calls)} tool calls)")
    return 0


def _replay_options(args: argparse.Namespace) -> Any:
    from ..replay import ReplayOptions

    return ReplayOptions(ignore_timestamps=args.ignore_timestamps,
                         ignore_system_prompt=args.ignore_system_prompt,
                         tool_calls_only=args.tool_calls_only)


def _cmd_replay(args: argparse.Namespace) -> int:
    from ..replay import ReplayDivergence, replay

    t = read(args.file)
    try:
        result = replay(t, options=_replay_options(args))
    except ReplayDivergence as exc:
        print(f"Replay of {args.file}: DIVERGED")
        print(exc.report)
        return 1
    if isinstance(result.state.phase, Suspended):
        n = len(result.state.phase.pending)
        tail = f" (the recorded run is suspended: {n} tool call{'s wait' if n != 1 else ' waits'} for a decision)"
    elif not result.finished:
        tail = " (the recorded run did not finish; 'transcript resume' goes on from there)"
    else:
        tail = ""
    print(f"Replay of {args.file}: {result.steps} steps, identical{tail}")
    return 0


_TIMESTAMP_KEYS = frozenset({"at", "timestamp"})


def _strip(value: Any, keys: frozenset[str]) -> Any:
    if isinstance(value, dict):
        return {k: _strip(v, keys) for k, v in value.items() if k not in keys}
    if isinstance(value, list):
        return [_strip(v, keys) for v in value]
    return value


def _pretty(value: Any) -> list[str]:
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False).splitlines()


def _what(value: Any) -> str:
    if not isinstance(value, dict):
        return repr(value)
    kind = str(value.get("type", "?"))
    event = value.get("event")
    if isinstance(event, dict):
        return f"{kind} {event.get('type', '?')}"
    return kind


def _cmd_diff(args: argparse.Namespace) -> int:
    from ..transcript import expand

    a, b = read(args.a), read(args.b)
    keys = frozenset() if args.exact else _TIMESTAMP_KEYS

    def norm(value: Any) -> Any:
        return _strip(expand(value), keys) if keys else expand(value)

    for field in ("model", "system_prompt", "tools", "hooks"):
        if norm(a.header.get(field)) != norm(b.header.get(field)):
            print(f"header: {field} differs")
    turn = 0
    for ea, eb in zip(a.entries, b.entries):
        turn += sum(1 for e in ea.effects_json if isinstance(e, dict) and e.get("type") == "emit"
                    and (e.get("event") or {}).get("type") == "turn_start")
        ia, ib = norm(ea.input_json), norm(eb.input_json)
        if ia != ib:
            print(f"first divergence at step {ea.step} (turn {turn}): the input differs "
                  f"({_what(ia)} in {args.a}, {_what(ib)} in {args.b})")
            _print_diff(ia, ib, args.a, args.b)
            return 1
        fa, fb = norm(ea.effects_json), norm(eb.effects_json)
        if fa != fb:
            k = next((i for i, (x, y) in enumerate(zip(fa, fb)) if x != y), min(len(fa), len(fb)))
            x = fa[k] if k < len(fa) else None
            y = fb[k] if k < len(fb) else None
            print(f"first divergence at step {ea.step} (turn {turn}): effect {k} differs "
                  f"({_what(x) if x is not None else 'nothing'} in {args.a}, "
                  f"{_what(y) if y is not None else 'nothing'} in {args.b})")
            _print_diff(x, y, args.a, args.b)
            return 1
    if a.steps != b.steps:
        shorter, longer = (args.a, args.b) if a.steps < b.steps else (args.b, args.a)
        n = min(a.steps, b.steps)
        print(f"first divergence at step {n + 1}: {shorter} ends after step {n}, "
              f"{longer} goes on to step {max(a.steps, b.steps)}")
        return 1
    print(f"{args.a} and {args.b}: {a.steps} steps, identical")
    return 0


def _print_diff(x: Any, y: Any, name_a: str, name_b: str) -> None:
    lines = difflib.unified_diff(_pretty(x), _pretty(y), fromfile=name_a, tofile=name_b, lineterm="", n=3)
    for line in lines:
        print(line)


def _http_request(req: CallLlm) -> Any:
    """The HTTP request a provider codec builds for this call (no API key), or ``None``."""
    from agentcore.providers import CODECS

    codec = CODECS.get(req.model.api)
    if codec is None:
        return None
    try:
        request = codec.build_request(req.model, LlmContext(req.system_prompt, tuple(req.messages), req.tools),
                                      StreamOptions(thinking_level=req.thinking_level))
    except Exception:
        return None
    return {"method": request.method, "url": request.url, "body": request.body}


def _brief(m: Any) -> str:
    role = getattr(m, "role", type(m).__name__)
    if isinstance(m, AssistantMessage):
        calls = "".join(f" → {c.name}({format_args(c.arguments, 60)})" for c in m.tool_calls)
        text = " ".join(m.text.split())
        extra = f" [{m.stop_reason}: {m.error_message}]" if m.stop_reason in ("error", "aborted") else ""
        return f"{role}: {text[:100]}{calls}{extra}"
    if isinstance(m, ToolResultMessage):
        return f"{role} {m.tool_name}: {' '.join(m.text.split())[:100]}" + (" [error]" if m.is_error else "")
    return f"{role}: {' '.join(message_text(m).split())[:120]}"


def _cmd_state(args: argparse.Namespace) -> int:
    from ..replay import llm_request_step, state_at

    t = read(args.file)
    n = args.step if args.step >= 0 else t.steps + 1 + args.step
    if not 0 <= n <= t.steps:
        raise UsageError(f"--step {args.step} is not in {args.file} (it has steps 0..{t.steps})")
    state = state_at(t, n)
    found = llm_request_step(t, n)
    if args.json:
        out = {"step": n, "steps": t.steps, "phase": state.phase.name, "state": to_json(state),
               "llm_request": to_json(found[1]) if found else None,
               "llm_request_step": found[0] if found else None,
               "http_request": _http_request(found[1]) if found else None}
        print(json.dumps(out, ensure_ascii=False, indent=2))
        return 0
    print(f"{args.file}: state after step {n} of {t.steps}")
    if n:
        entry = t.entries[n - 1]
        print(f"input at step {n}: {_what(entry.input_json)}")
    print(f"phase: {state.phase.name}")
    run = state.run
    print(f"model: {run.model.provider}/{run.model.id}, thinking {run.thinking_level}, "
          f"tools: {', '.join(s.name for s in run.tools) or 'none'}")
    print(f"context: {len(run.messages)} messages ({len(run.new_messages)} added by this run)")
    for i, m in enumerate(run.messages):
        print(f"  [{i}] {_brief(m)}")
    if run.aborted:
        print("the run was aborted")
    if found is None:
        print("\nno model call was made up to this step")
        return 0
    at, req = found
    print(f"\nLLM request in force (call_llm id {req.id}, asked at step {at}):")
    print(json.dumps(to_json(req), ensure_ascii=False, indent=2))
    http = _http_request(req)
    if http is not None:
        print(f"\nas HTTP ({http['method']} {http['url']}, without the API key):")
        print(json.dumps(http["body"], ensure_ascii=False, indent=2))
    return 0


def _fork_into(t: Any, source: str, step: int, option: str, out: Path, what: str, choose: str) -> None:
    """Write the first ``step`` steps of ``t`` (read from ``source``) into ``out``, as ``fork``
    and ``rerecord`` do: a step not in the file, or ``out`` being the source, is a usage error."""
    from ..replay import fork

    if not 0 <= step <= t.steps:
        raise UsageError(f"{option} {step} is not in {source} (it has steps 0..{t.steps})")
    if out.exists() and out.resolve() == Path(source).resolve():
        raise UsageError(f"{what} would overwrite its source; choose another {choose}")
    writable(out, what)
    fork(t, step, out)


def _cmd_fork(args: argparse.Namespace) -> int:
    t = read(args.file)
    out = Path(args.output)
    if 0 <= args.step <= t.steps and out.exists() and not args.force:
        raise UsageError(f"{out} exists; choose another -o or pass --force")
    _fork_into(t, args.file, args.step, "--step", out, "the fork", "-o")
    print(f"Wrote {out}: steps 1..{args.step} of {args.file}. "
          f"Go on from there with: agentcore transcript resume {out} [--model ...] [--tools ...]")
    return 0


def _cmd_match(args: argparse.Namespace) -> int:
    from ..streams.cassette import Cassette

    read(args.new)  # a damaged file is a usage error naming it
    try:
        report = Cassette(args.recorded, match=args.match).match(args.new)
    except (FileNotFoundError, ValueError) as exc:
        raise UsageError(str(exc)) from None
    print(report)
    return 1 if "miss" in report.labels else 0


CANDIDATE: Final = ".candidate.jsonl"


def _cmd_accept(args: argparse.Namespace) -> int:
    candidate = Path(args.candidate)
    if not candidate.name.endswith(CANDIDATE):
        raise UsageError(f"{candidate} is not a candidate (a name ending in {CANDIDATE}, as written by "
                         "--agentcore-record-mode=refresh or agentcore transcript rerecord)")
    read(args.candidate)  # only a transcript that reads back replaces its original
    original = candidate.with_name(candidate.name[: -len(CANDIDATE)] + ".jsonl")
    os.replace(candidate, original)
    print(f"Accepted {candidate} as {original}")
    return 0


def _cmd_rerecord(args: argparse.Namespace) -> int:
    t = read(args.file)
    source = Path(args.file)
    out = Path(args.candidate) if args.candidate else source.with_name(source.name.removesuffix(".jsonl") + CANDIDATE)
    _fork_into(t, args.file, args.from_step, "--from-step", out, "the candidate", "--candidate")
    print(f"Kept steps 1..{args.from_step} of {args.file} in {out}; recording the rest live.", file=sys.stderr)
    args.file = str(out)
    code = _cmd_resume(args)
    print(f"Wrote {out}. Compare: agentcore transcript match {source} {out}; "
          f"keep it: agentcore transcript accept {out}", file=sys.stderr)
    return code


_POLLS = frozenset({GET_STEERING_MESSAGES.name, GET_FOLLOW_UP_MESSAGES.name, GET_API_KEY.name})


def _cmd_resume(args: argparse.Namespace) -> int:
    from ..replay import ReplayDivergence
    from ..replay.recovery import resume
    from ..secrets import REDACTED
    from .demo import is_demo_model

    t = read(args.file)
    header_model: Model | None = None
    try:
        decoded = from_json(t.header.get("model"))
        header_model = decoded if isinstance(decoded, Model) else None
        if header_model is not None and header_model.headers:  # a redacted header is not sent
            kept = {k: v for k, v in header_model.headers.items() if v != REDACTED}
            header_model = replace(header_model, headers=FrozenDict(kept) if kept else None)
    except (CodecError, ValueError, TypeError):
        header_model = None
    no_model = ""
    if args.model:
        setup = setup_from_args(args)
    elif header_model is None:
        no_model = f"{args.file} names no usable model; pass --model PROVIDER/MODEL"
    elif header_model.api == "scripted" and not is_demo_model(header_model):
        no_model = (f"{args.file} was recorded with a scripted model ({header_model.id}); "
                    f"pass --model PROVIDER/MODEL to go on with a real one")
    else:
        setup = setup_from_args(args, model=header_model)
    if no_model:  # only a run that goes on needs a model: a finished one, or one resumed already, does not
        if decisions_given(args):
            return decide_recorded(args, t, None, no_model)
        from ..replay import replay

        try:
            recorded = replay(t)
        except ReplayDivergence:
            raise UsageError(no_model) from None
        if not recorded.finished:
            raise UsageError(no_model)
        return had_finished(args, recorded.messages)
    recorded_tools = [str(x.get("name")) for x in t.header.get("tools") or () if isinstance(x, dict)]
    have = {tool.name for tool in setup.tools}
    missing = [name for name in recorded_tools if name not in have]
    if missing:
        raise UsageError(f"the run used the tool(s) {', '.join(missing)}: pass --tools MODULE[:ATTR] "
                         f"providing them")
    hooks = set(t.header.get("hooks") or ())
    unsupported = sorted(hooks - _POLLS)
    if unsupported:
        raise UsageError(f"the run used the hook(s) {', '.join(unsupported)}, which the command line "
                         f"cannot provide; resume it from Python (interpreters.replay.resume)")
    if decisions_given(args):
        return decide_recorded(args, t, setup)
    config = replace(setup.config, get_steering_messages=lambda: [],
                                 get_follow_up_messages=lambda: [])
    signal = AbortSignal()
    try:
        stream = resume(args.file, config, setup.tools, stream_fn=setup.stream_fn, signal=signal)
    except ReplayDivergence as exc:
        print(f"agentcore: {args.file} no longer replays with this code, so it cannot be resumed:",
              file=sys.stderr)
        print(exc.report, file=sys.stderr)
        return 1
    if stream.suspension is not None:  # it waits for decisions: asked for on a terminal
        return decide_suspension(args, t, setup, stream.suspension)
    if isinstance(stream.state.phase, Finished):
        return had_finished(args, stream.result())
    messages = run_resumed(args, t, stream, signal)
    if stream.suspension is not None:
        sys.stdout.flush()
        sys.stderr.write(suspension_report(stream.suspension.pending, args.file,
                                           options=resume_options(args, model=True)))
        return EXIT_SUSPENDED
    code, problem = run_outcome(messages)
    if code:
        print(f"agentcore: {problem}", file=sys.stderr)
    return code


def _replay_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--ignore-timestamps", action="store_true", help="ignore every 'at' and 'timestamp'")
    p.add_argument("--ignore-system-prompt", action="store_true", help="ignore the system prompt")
    p.add_argument("--tool-calls-only", action="store_true",
                   help="compare only tool names and arguments")


def add_commands(sub: Any, common: argparse.ArgumentParser) -> None:
    """``transcript show|replay|diff|state|fork|resume|html|match|accept|rerecord``."""
    tr = sub.add_parser("transcript", parents=[common], help="inspect, replay, fork and resume transcripts",
                        description="Work with recorded transcripts (JSONL).")
    tsub = tr.add_subparsers(dest="action", metavar="ACTION", parser_class=Parser)
    tsub.required = True

    show = tsub.add_parser("show", parents=[common], help="the conversation: turns, tool calls, usage",
                           description="Print the recorded conversation: turns, messages, tool calls with "
                                       "arguments and results, usage and cost per turn and in total.")
    show.add_argument("file", metavar="FILE")
    show.set_defaults(func=_cmd_show)

    rp = tsub.add_parser("replay", parents=[common], help="strict replay: exit 0 if identical, 1 if not",
                         description="Re-run the pure core over the recorded inputs and compare every "
                                     "effect with the recording.")
    rp.add_argument("file", metavar="FILE")
    _replay_flags(rp)
    rp.set_defaults(func=_cmd_replay)

    df = tsub.add_parser("diff", parents=[common], help="the first divergence between two transcripts",
                         description="Compare two transcripts step by step and show the first difference "
                                     "(exit 0 identical, 1 different).")
    df.add_argument("a", metavar="A")
    df.add_argument("b", metavar="B")
    df.add_argument("--exact", action="store_true",
                    help="compare timestamps too (by default every 'at' and 'timestamp' is ignored: two "
                         "runs never happen at the same milliseconds)")
    df.set_defaults(func=_cmd_diff)

    stt = tsub.add_parser("state", parents=[common], help="core state and LLM request at a step",
                          description="Print the core's state after step N (0: initial; negative counts "
                                      "from the end) and the exact model request in force at that point.")
    stt.add_argument("file", metavar="FILE")
    stt.add_argument("--step", "-n", type=int, required=True, metavar="N")
    stt.add_argument("--json", action="store_true", help="print everything as one JSON object")
    stt.set_defaults(func=_cmd_state)

    fk = tsub.add_parser("fork", parents=[common], help="a new transcript with the first N steps",
                         description="Write a new transcript holding the header and the first N steps; "
                                     "'transcript resume' goes on live from there.")
    fk.add_argument("file", metavar="FILE")
    fk.add_argument("--step", "-n", type=int, required=True, metavar="N")
    fk.add_argument("--output", "-o", required=True, metavar="NEW")
    fk.add_argument("--force", action="store_true", help="overwrite NEW if it exists")
    fk.set_defaults(func=_cmd_fork)

    rs = tsub.add_parser("resume", parents=[common], help="go on live from the end of a transcript",
                         description="Replay the transcript strictly, then go on live from where it "
                                     "stopped, appending to it. The model defaults to the recorded one; "
                                     "tools must be given again (the transcript holds no code). A run that "
                                     "ends suspended goes on with the decisions given as options, or asked "
                                     "for on a terminal; without them it is left as it is (exit code 3).")
    rs.add_argument("file", metavar="FILE")
    run_options(rs, model_required=False, json_flag=True,
                approve_all_help="approve every waiting call that needs an approval (a suspended run)")
    add_decision_options(rs)
    rs.set_defaults(func=_cmd_resume)

    ht = tsub.add_parser("html", parents=[common], help="one self-contained HTML page",
                         description="Write the conversation as one self-contained HTML file (no "
                                     "network resources): turns, collapsible tool calls and thinking, "
                                     "usage and cost, errors highlighted.")
    ht.add_argument("file", metavar="FILE")
    ht.add_argument("--output", "-o", metavar="OUT.html", help="default: FILE with .html")
    ht.set_defaults(func=_cmd_html)

    mt = tsub.add_parser("match", parents=[common], help="how NEW's model calls match RECORDED's",
                         description="Answer each model call of NEW from RECORDED as a cassette would, "
                                     "without running anything: per call its label (exact, drifted, "
                                     "reordered, miss) and the fields that differ. Exit 1 on a miss.")
    mt.add_argument("recorded", metavar="RECORDED", help="a transcript, or a folder of them")
    mt.add_argument("new", metavar="NEW")
    mt.add_argument("--match", choices=("strict", "forgiving", "structural"), default="forgiving",
                    help="which fields must match (default: forgiving)")
    mt.set_defaults(func=_cmd_match)

    ac = tsub.add_parser("accept", parents=[common], help="promote a candidate over its original",
                         description="Replace NAME.jsonl by NAME.candidate.jsonl (written by the pytest "
                                     "plugin's refresh mode or by rerecord), once it reads back.")
    ac.add_argument("candidate", metavar="CANDIDATE")
    ac.set_defaults(func=_cmd_accept)

    rr = tsub.add_parser("rerecord", parents=[common], help="keep the first N steps, record the rest live",
                         description="Write FILE's first N steps into a candidate (FILE with "
                                     ".candidate.jsonl), then go on live from there as resume does; the "
                                     "original is never touched (promote the candidate with accept).")
    rr.add_argument("file", metavar="FILE")
    rr.add_argument("--from-step", "-n", type=int, required=True, metavar="N")
    rr.add_argument("--candidate", metavar="PATH", help="where to write it (default: FILE with .candidate.jsonl)")
    run_options(rr, model_required=False, json_flag=True,
                approve_all_help="approve every waiting call that needs an approval (a suspended run)")
    add_decision_options(rr)
    rr.set_defaults(func=_cmd_rerecord)
