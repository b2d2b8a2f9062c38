"""Fixtures for the ``agentcore`` command tests (the real console script, in subprocesses)."""

from __future__ import annotations

from pathlib import Path

import pytest

from .cli_helpers import APPROVAL_TOOLS, DEFERRED_TOOLS, demo_env, run_cli


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


@pytest.fixture
def approval_tools(tmp_path: Path) -> str:
    """``--tools`` for the demo's tools, its calculator requiring approval."""
    path = tmp_path / "approval_tools.py"
    path.write_text(APPROVAL_TOOLS)
    return f"{path}:TOOLS"


@pytest.fixture
def deferred_tools(tmp_path: Path) -> str:
    """``--tools`` for the demo's tools, its calculator deferred."""
    path = tmp_path / "deferred_tools.py"
    path.write_text(DEFERRED_TOOLS)
    return f"{path}:TOOLS"


@pytest.fixture
def suspended_transcript(approval_tools: str, tmp_path: Path) -> Path:
    """``agentcore run`` of the demo with ``approval_tools``, recorded: it ends suspended on
    call_1 and call_2 (the calculator waits for an approval)."""
    record = tmp_path / "run.jsonl"
    proc = run_cli("run", "How long is my trip?", "--model", "demo", "--tools", approval_tools, "--record",
                   str(record), env=demo_env())
    assert proc.returncode == 3, proc.stderr
    return record
