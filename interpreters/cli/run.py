"""``agentcore demo`` (the offline demo, recorded, then replayed strictly) and ``agentcore run``
(one run against a real provider, rendered as it streams or as JSON lines)."""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agentcore import AgentContext, AgentEvent

from ..render import LiveRenderer, make_renderer
from ..signal import AbortSignal
from .common import (
    EXIT_SUSPENDED,
    JsonLines,
    UsageError,
    drive,
    open_recorder,
    resume_options,
    run_options,
    run_outcome,
    setup_from_args,
    suspension_report,
)

__all__ = [
    "add_commands",
]


def _cmd_demo(args: argparse.Namespace) -> int:
    from ..replay import ReplayDivergence, replay
    from ..runtime.clock import now_ms
    from ..sync import agent_loop
    from .demo import DEMO_PROMPT, demo_config, demo_context, demo_model, steer_when_tools_start

    if args.record:
        path = Path(args.record)
    else:
        path = Path(tempfile.mkdtemp(prefix="agentcore-demo-")) / "demo.jsonl"
    if args.delay < 0 or args.tool_latency < 0:
        raise UsageError("--delay and --tool-latency must not be negative")
    steering: list[Any] = []
    context = demo_context(tool_latency=args.tool_latency)
    config = demo_config(steering)
    recorder = open_recorder(path, context, config)
    render = make_renderer(plain=args.plain)
    print("agentcore demo: a scripted model (no key, no network) drives real Python tools.", flush=True)
    signal = AbortSignal()
    stream = agent_loop(DEMO_PROMPT, context, config, signal, demo_model(delay=args.delay), journal=recorder)
    try:
        messages = drive(stream, [steer_when_tools_start(steering, now_ms), render], signal,
                         on_abort=lambda: render.line("aborting… (Ctrl-C again to quit)", "err"))
    finally:
        recorder.close()
        render.close()
    code, problem = run_outcome(messages)
    print(f"\nTranscript: {path}")
    if code:
        print(f"agentcore: {problem}", file=sys.stderr)
        return code
    try:
        result = replay(path)
    except ReplayDivergence as exc:
        print(f"Replay of {path}: DIVERGED\n{exc.report}")
        return 1
    if not result.finished or result.messages != messages:
        print(f"Replay of {path}: {result.steps} steps, but the replayed messages differ from the run's")
        return 1
    print(f"Replay of {path}: {result.steps} steps, identical")
    print(f"Look inside: agentcore transcript show {path}  (or: transcript html {path} -o demo.html)")
    return 0


def _cmd_run(args: argparse.Namespace) -> int:
    from ..sync import agent_loop

    setup = setup_from_args(args)
    context = AgentContext(setup.system_prompt, (), setup.tools)
    recorder = open_recorder(Path(args.record), context, setup.config) if args.record else None
    render: Callable[[AgentEvent], Any] = JsonLines() if args.json else make_renderer()
    signal = AbortSignal()
    stream = agent_loop(args.prompt, context, setup.config, signal, setup.stream_fn, journal=recorder)

    def on_abort() -> None:
        print("agentcore: aborting… (Ctrl-C again to quit)", file=sys.stderr, flush=True)

    try:
        messages = drive(stream, [render], signal, on_abort)
    finally:
        if recorder is not None:
            recorder.close()
        if isinstance(render, LiveRenderer):
            render.close()
    if recorder is not None and not args.json:
        print(f"Transcript: {args.record}")
    if stream.suspension is not None:
        sys.stdout.flush()
        sys.stderr.write(suspension_report(
            stream.suspension.pending, args.record, options=resume_options(args),
            unrecorded="the run was not recorded, so nothing can decide these calls after this command: record it "
                       "(--record FILE) to decide them later with 'agentcore transcript resume FILE', or answer "
                       "them as they come in 'agentcore chat'"))
        return EXIT_SUSPENDED
    code, problem = run_outcome(messages)
    if code:
        print(f"agentcore: {problem}", file=sys.stderr)
    return code


def add_commands(sub: Any, common: argparse.ArgumentParser) -> None:
    """``demo`` and ``run``."""
    demo = sub.add_parser("demo", parents=[common], help="the offline demo: no key, no network",
                          description="Run the demo agent (a scripted model with a calculator and a unit "
                                      "converter, parallel tool calls, a steering message), record it, "
                                      "and replay the transcript strictly.")
    demo.add_argument("--record", metavar="PATH", help="transcript path (default: demo.jsonl in a new temp dir)")
    demo.add_argument("--delay", type=float, default=0.01, help="seconds between stream events (default 0.01)")
    demo.add_argument("--tool-latency", type=float, default=0.4,
                      help="seconds each tool call takes, to watch it run (default 0.4)")
    demo.add_argument("--plain", action="store_true", help="plain text output even on a terminal")
    demo.set_defaults(func=_cmd_demo)

    run = sub.add_parser("run", parents=[common], help="one run against a real provider",
                         description="Run the agent once on PROMPT and print the run as it streams.")
    run.add_argument("prompt", metavar="PROMPT")
    run_options(run, model_required=True, json_flag=True)
    run.add_argument("--record", metavar="FILE", help="record the run's transcript to FILE")
    run.set_defaults(func=_cmd_run)
