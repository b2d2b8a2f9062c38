"""Make the repository importable when pytest is run without installing the package."""

from __future__ import annotations

import sys
from pathlib import Path

_ROOT = str(Path(__file__).resolve().parents[2])
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)


def pytest_terminal_summary(terminalreporter, exitstatus, config):  # type: ignore[no-untyped-def]
    """One line in the summary when the recorded corpus is absent (its tests are skipped)."""
    from .corpus import corpus_dir

    if corpus_dir() is not None:
        return
    import os

    where = os.environ.get("AGENTCORE_CORPUS") or str(Path(_ROOT).parent / "shared" / "corpus")
    terminalreporter.write_line(
        f"provider corpus NOT FOUND: expected at {where} (or set AGENTCORE_CORPUS); "
        "the tests/providers corpus tests were skipped", yellow=True, bold=True)
