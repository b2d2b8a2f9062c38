"""The provider codec tests: a line in the summary when the recorded corpus is absent."""

from __future__ import annotations

from pathlib import Path

_ROOT = Path(__file__).resolve().parents[3]


def pytest_terminal_summary(terminalreporter, exitstatus, config):  # type: ignore[no-untyped-def]
    """One line in the summary when the recorded corpus is absent (its tests are skipped)."""
    from tests.support.corpus import corpus_dir

    if corpus_dir() is not None:
        return
    import os

    where = os.environ.get("AGENTCORE_CORPUS") or str(_ROOT / "tests" / "data" / "corpus")
    terminalreporter.write_line(
        f"provider corpus NOT FOUND: expected at {where} (or set AGENTCORE_CORPUS); "
        "the corpus tests (tests/core/providers, tests/interpreters/streams/http, tests/interpreters/cli) "
        "were skipped", yellow=True, bold=True)
