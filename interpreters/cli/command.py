"""The ``agentcore`` command: its parser (each command group adds its own subcommands) and
:func:`main`, which maps what happens to an exit code."""

from __future__ import annotations

import argparse
import sys
import traceback
from collections.abc import Sequence
from typing import TYPE_CHECKING, TypeGuard

from . import chat, evals, run, transcript
from .common import Interrupted, Parser, UsageError

if TYPE_CHECKING:
    from ..transcript import TranscriptError

__all__ = [
    "build_parser",
    "main",
]


def _debug_requested(argv: Sequence[str]) -> bool:
    return "--debug" in argv


def build_parser() -> argparse.ArgumentParser:
    common = Parser(add_help=False)
    common.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                        help="show tracebacks of errors")
    parser = Parser(prog="agentcore", description="Run LLM agents and debug their transcripts.",
                     epilog="Exit codes: 0 ok, 1 the run failed, a replay diverged or a suspension was resumed "
                            "already, 2 usage error, 3 the run is suspended (tool calls wait for a decision: "
                            "'transcript resume FILE --approve ID' decides them), 130 interrupted.",
                     parents=[common])
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    sub.required = True
    run.add_commands(sub, common)
    chat.add_commands(sub, common)
    transcript.add_commands(sub, common)
    evals.add_commands(sub, common)
    return parser


def _one_line(text: str) -> str:
    """User errors are one line: the first line of a multi-line message, marked as cut."""
    first, _, rest = text.strip().partition("\n")
    return first + (" [...]" if rest.strip() else "")


def main(argv: Sequence[str] | None = None) -> int:
    """The console script. Returns the exit code."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    debug = _debug_requested(args_list)
    try:
        args = build_parser().parse_args(args_list)
        return int(args.func(args))
    except SystemExit as exc:  # --help, or argparse itself
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    except UsageError as exc:
        if debug:
            traceback.print_exc()
        print(f"agentcore: {_one_line(str(exc))}", file=sys.stderr)
        return 2
    except (Interrupted, KeyboardInterrupt):
        print("\nagentcore: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 1
    except Exception as exc:
        if _damaged_line(exc):  # met while replaying, past what reading it checks
            if debug:
                traceback.print_exc()
            print(f"agentcore: {exc.path} is not a usable transcript: {_one_line(exc.problem)}", file=sys.stderr)
            return 2
        if debug:
            traceback.print_exc()
        print(f"agentcore: {type(exc).__name__}: {_one_line(str(exc))} (run with --debug for the traceback)",
              file=sys.stderr)
        return 1


def _damaged_line(exc: Exception) -> TypeGuard[TranscriptError]:
    """Whether ``exc`` says that a line of a transcript is damaged (as reading it says it)."""
    from ..transcript import TranscriptError

    return type(exc) is TranscriptError and exc.path is not None and exc.line is not None
