"""``agentcore eval DATASET --agent MODULE:FACTORY``: run an eval from the command line, print its
table, save its report, compare it with a baseline (exit 1 when a case fails or regresses)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from .common import UsageError, import_target, positive

__all__ = ["add_commands"]


def _agent(spec: str) -> Any:
    target, _, attr = spec.partition(":")
    if not target or not attr:
        raise UsageError(f"--agent expects MODULE:FACTORY or FILE.py:FACTORY, not {spec!r}")
    module = import_target(target, spec, "--agent")
    try:
        return getattr(module, attr)
    except AttributeError:
        raise UsageError(f"--agent {spec}: {target} has no attribute {attr!r}") from None


def _cmd_eval(args: argparse.Namespace) -> int:
    from ..evals import Dataset, EvalReport, evaluate

    try:
        dataset = Dataset.from_file(args.dataset)
    except (OSError, ValueError, ImportError) as exc:
        raise UsageError(str(exc)) from None
    agent = _agent(args.agent)
    baseline = None
    if args.baseline:
        try:
            baseline = EvalReport.load(args.baseline)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    transcripts = args.transcripts or str(Path(args.dataset).with_suffix("")) + "-runs"
    report = evaluate(dataset, agent, repeat=args.repeat, concurrency=args.concurrency, transcripts=transcripts,
                      mode=args.mode, timeout=args.timeout, executor="ray" if args.ray else None)
    print(report.table())
    if args.out:
        report.save(args.out)
        print(f"\nReport: {args.out}")
    if args.html:
        report.html(args.html)
        print(f"Page: {args.html}")
    code = 0 if report.passed else 1
    if baseline is not None:
        changes = report.compare(baseline)
        print("\nAgainst the baseline:")
        for change in changes:
            print(change)
        if any(c.verdict == "regressed" for c in changes):
            code = 1
    if code:
        print("agentcore: the eval " + ("failed" if not report.passed else "regressed against the baseline"),
              file=sys.stderr)
    return code


def add_commands(sub: Any, common: argparse.ArgumentParser) -> None:
    """``eval``."""
    ev = sub.add_parser("eval", parents=[common], help="run an eval: a dataset's cases against an agent",
                        description="Run every case of DATASET (YAML or JSON) against the agent the factory "
                                    "gives (MODULE:FACTORY, a function of the case returning an "
                                    "interpreters.evals.AgentSpec, or an AgentSpec), recording each run; print the "
                                    "table; exit 1 when a case fails or regresses against --baseline.")
    ev.add_argument("dataset", metavar="DATASET")
    ev.add_argument("--agent", required=True, metavar="MODULE:FACTORY")
    ev.add_argument("--repeat", type=positive, default=1, metavar="N", help="runs per case (default 1)")
    ev.add_argument("--concurrency", type=positive, default=8, metavar="N", help="runs at a time (default 8)")
    ev.add_argument("--mode", choices=("none", "once", "all", "refresh"), default="once",
                    help="none: replay only; once: record what is missing (default); all: run everything live; "
                         "refresh: run live into candidates")
    ev.add_argument("--transcripts", metavar="DIR", help="where runs are recorded (default: DATASET-runs)")
    ev.add_argument("--timeout", type=float, default=300.0, metavar="SECONDS", help="each run's limit")
    ev.add_argument("--ray", action="store_true", help="run the cases on a Ray cluster (RAY_ADDRESS, or a local one)")
    ev.add_argument("--baseline", metavar="REPORT.json", help="compare with this report")
    ev.add_argument("--out", metavar="REPORT.json", help="save the report")
    ev.add_argument("--html", metavar="OUT.html", help="write the report as a page linking each run's transcript")
    ev.set_defaults(func=_cmd_eval)
