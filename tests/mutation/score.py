"""Mutation score of one module: run mutmut on it, then print killed / total and every survivor.

Run from the repository root (see docs/mutation.md)::

    python tests/mutation/score.py agentcore/codec.py            # fresh run, then report
    python tests/mutation/score.py agentcore/codec.py --keep     # reuse mutants/ (faster, see below)
    python tests/mutation/score.py agentcore/codec.py --report   # report the last run only
    python tests/mutation/score.py agentcore/codec.py --sample 150 --seed 1   # a seeded sample
    python tests/mutation/score.py agentcore/machine.py:120 agentcore/batch.py:100 --seed 23
                                                  # a seeded sample of each module, in one run

A fresh run deletes ``mutants/`` first: mutmut keeps test files there that were since renamed or
removed, and reuses the test-to-function map of an earlier run. mutmut's own summary line counts
every mutated file; this reads the results mutmut keeps for the chosen module
(``mutants/<module>.meta``) and counts that module alone. A survivor that docs/mutation.md lists
as equivalent is shown as such; any other survivor makes the exit status 1.

``--sample N`` tests N of the module's mutants, drawn with ``random.Random(seed).sample`` from
their sorted names (mutmut makes the mutants first: a run for a name that matches nothing
generates them and collects the test map, then stops). The report then counts the sample only.
Several modules can be named at once, each as ``path:N`` for a sample of N of its mutants (each
drawn as above, with the same seed) or as ``path`` for all of them (or ``--sample N``): mutmut
then runs them all in one go, and the report gives each module's score and their total.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import random
import re
import shutil
import subprocess
import sys
from collections import Counter
from typing import Any

# mutmut's exit codes (the statuses it shows in ``mutmut results``), but for pytest's 2: mutmut
# calls it "check was interrupted by user", and in a run nobody interrupts it means the tests could
# not be collected (a mutant broke code that runs when the test modules import): a kill.
STATUS = {1: "killed", 2: "killed", 3: "killed", 0: "survived", 5: "no tests", 33: "no tests", 34: "skipped",
          36: "timeout", -24: "timeout", 24: "timeout", 152: "timeout", 255: "timeout", 37: "caught by type check",
          None: "not checked"}
DOC = pathlib.Path("docs/mutation.md")


def mutant_prefix(module: str) -> str:
    """The dotted prefix of a module's mutant names.

    >>> mutant_prefix("agentcore/codec.py")
    'agentcore.codec.'
    """
    return module.removesuffix(".py").replace("/", ".") + "."


def statuses(module: str) -> dict[str, str]:
    meta = pathlib.Path("mutants") / (module + ".meta")
    data: dict[str, Any] = json.loads(meta.read_text())
    return {name: STATUS.get(code, "suspicious") for name, code in data["exit_code_by_key"].items()}


def listed_equivalents(prefix: str) -> set[str]:
    """Mutant names that docs/mutation.md records as equivalent (written in backticks there)."""
    if not DOC.exists():
        return set()
    return {m for m in re.findall(r"`([\w.\u01c1]+__mutmut_\d+)`", DOC.read_text()) if m.startswith(prefix)}


def report(module: str, sample: list[str] | None = None) -> tuple[int, int, int]:
    """Print the module's score and every mutant not killed; return (killed, tested, unexplained)."""
    prefix = mutant_prefix(module)
    by_name = statuses(module)
    if sample is not None:
        by_name = {name: by_name[name] for name in sample}
    counts = Counter(by_name.values())
    tested = len(by_name) - counts["skipped"]
    detected = counts["killed"] + counts["timeout"]
    score = 100.0 * detected / tested if tested else 0.0
    print(f"{module}: {detected}/{tested} mutants killed ({score:.1f} %)  "
          + ", ".join(f"{status} {n}" for status, n in sorted(counts.items())))
    equivalent = listed_equivalents(prefix)
    unexplained = 0
    for name, status in sorted(by_name.items()):
        if status in ("killed", "timeout"):
            continue
        if status == "survived" and name in equivalent:
            print(f"  {status:12} {name}  (equivalent, see {DOC})")
            continue
        unexplained += 1
        print(f"  {status:12} {name}")
    stale = sorted(equivalent - {n for n, s in by_name.items() if s == "survived"}) if sample is None else []
    for name in stale:
        print(f"  listed as equivalent in {DOC} but not a survivor of this run: {name}")
    print(f"{unexplained} survivor(s) not recorded as equivalent")
    return detected, tested, unexplained


def parse_target(text: str, default: int | None) -> tuple[str, int | None]:
    """``path`` or ``path:N`` (a sample of N mutants).

    >>> parse_target("agentcore/batch.py:100", None), parse_target("agentcore/batch.py", 5)
    (('agentcore/batch.py', 100), ('agentcore/batch.py', 5))
    """
    path, colon, n = text.partition(":")
    if not colon:
        return path, default
    if not n.isdigit() or int(n) < 1:
        raise SystemExit(f"score.py: {text!r}: the sample size after ':' must be a positive whole number")
    return path, int(n)


def draw(module: str, n: int | None, seed: int) -> list[str] | None:
    """The module's sample of ``n`` mutant names (``None``: all its mutants)."""
    if n is None:
        return None
    names = sorted(statuses(module))
    if n > len(names):
        raise SystemExit(f"score.py: {module} has {len(names)} mutants, fewer than the sample of {n}")
    return sorted(random.Random(seed).sample(names, n))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("modules", nargs="+", metavar="module[:N]",
                        help="a file listed in [tool.mutmut] only_mutate, e.g. agentcore/codec.py; "
                             "with :N, a seeded sample of N of its mutants")
    parser.add_argument("--keep", action="store_true", help="reuse mutants/ from an earlier run")
    parser.add_argument("--report", action="store_true", help="only report the last run's results")
    parser.add_argument("--sample", type=int, metavar="N", help="test a seeded sample of N mutants of each module")
    parser.add_argument("--seed", type=int, default=1, help="the sample's seed (default 1)")
    args = parser.parse_args(argv)
    targets = [parse_target(text, args.sample) for text in args.modules]
    # The mutmut command beside this interpreter ("python -m mutmut" re-imports mutmut's __main__).
    beside = pathlib.Path(sys.executable).parent / "mutmut"
    mutmut = [str(beside) if beside.exists() else shutil.which("mutmut") or "mutmut", "run", "--max-children", "1"]
    if not args.report:
        if not args.keep:
            shutil.rmtree("mutants", ignore_errors=True)
        if any(n is not None for _, n in targets):  # mutmut makes the mutants first: generate only
            subprocess.run([*mutmut, mutant_prefix(targets[0][0]) + "no_such_mutant"], capture_output=True)
        names: list[str] = []
        for module, n in targets:  # named mutants are always run again: this re-checks the module
            names += draw(module, n, args.seed) or [mutant_prefix(module) + "*"]
        done = subprocess.run([*mutmut, *names])
        if done.returncode != 0:
            return done.returncode
    killed = tested = unexplained = 0
    for module, n in targets:
        k, t, u = report(module, draw(module, n, args.seed))
        killed, tested, unexplained = killed + k, tested + t, unexplained + u
    if len(targets) > 1:
        score = 100.0 * killed / tested if tested else 0.0
        print(f"total: {killed}/{tested} mutants killed ({score:.1f} %), "
              f"{unexplained} survivor(s) not recorded as equivalent")
    return 1 if unexplained else 0


if __name__ == "__main__":
    sys.exit(main())
