"""Fixtures for the ``agentcore`` command tests (the real console script, in subprocesses)."""

from __future__ import annotations

from pathlib import Path

import pytest

from .cli_helpers import run_cli


@pytest.fixture(scope="session")
def demo_transcript(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One demo run recorded (no stream delay, no tool latency), shared: do not modify it."""
    path = tmp_path_factory.mktemp("demo") / "demo.jsonl"
    proc = run_cli("demo", "--record", str(path), "--delay", "0", "--tool-latency", "0")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return path


@pytest.fixture
def demo_copy(demo_transcript: Path, tmp_path: Path) -> Path:
    """A private copy of the demo transcript, for tests that change or append to it."""
    copy = tmp_path / "demo.jsonl"
    copy.write_bytes(demo_transcript.read_bytes())
    return copy
