"""Mutation score of one module: run mutmut on it, then print killed / total and every survivor.

Run from the repository root (see docs/mutation.md)::

    python tests/mutation/score.py agentcore/codec.py            # fresh run, then report
    python tests/mutation/score.py agentcore/codec.py --keep     # reuse mutants/ (faster, see below)
    python tests/mutation/score.py agentcore/codec.py --report   # report the last run only
    python tests/mutation/score.py agentcore/codec.py --sample 150 --seed 1   # a seeded sample

A fresh run deletes ``mutants/`` first: mutmut keeps test files there that were since renamed or
removed, and reuses the test-to-function map of an earlier run. mutmut's own summary line counts
every mutated file; this reads the results mutmut keeps for the chosen module
(``mutants/<module>.meta``) and counts that module alone. A survivor that docs/mutation.md lists
as equivalent is shown as such; any other survivor makes the exit status 1.

``--sample N`` tests N of the module's mutants, drawn with ``random.Random(seed).sample`` from
their sorted names (mutmut makes the mutants first: a run for a name that matches nothing
generates them and collects the test map, then stops). The report then counts the sample only.
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


def report(module: str, sample: list[str] | None = None) -> int:
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
    return 1 if unexplained else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("module", help="a file listed in [tool.mutmut] only_mutate, e.g. agentcore/codec.py")
    parser.add_argument("--keep", action="store_true", help="reuse mutants/ from an earlier run")
    parser.add_argument("--report", action="store_true", help="only report the last run's results")
    parser.add_argument("--sample", type=int, metavar="N", help="test a seeded sample of N mutants")
    parser.add_argument("--seed", type=int, default=1, help="the sample's seed (default 1)")
    args = parser.parse_args(argv)
    prefix = mutant_prefix(args.module)
    # The mutmut command beside this interpreter ("python -m mutmut" re-imports mutmut's __main__).
    beside = pathlib.Path(sys.executable).parent / "mutmut"
    mutmut = [str(beside) if beside.exists() else shutil.which("mutmut") or "mutmut", "run", "--max-children", "1"]
    sample: list[str] | None = None
    if not args.report:
        if not args.keep:
            shutil.rmtree("mutants", ignore_errors=True)
        names = [prefix + "*"]  # named mutants are always run again: this re-checks the module
        if args.sample is not None:
            subprocess.run([*mutmut, prefix + "no_such_mutant"], capture_output=True)  # generate only
            names = sample = sorted(random.Random(args.seed).sample(sorted(statuses(args.module)), args.sample))
        done = subprocess.run([*mutmut, *names])
        if done.returncode != 0:
            return done.returncode
    elif args.sample is not None:
        sample = sorted(random.Random(args.seed).sample(sorted(statuses(args.module)), args.sample))
    return report(args.module, sample)


if __name__ == "__main__":
    sys.exit(main())
