"""``agentcore run --base-url ... --record`` against llama-server, then ``agentcore transcript replay``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from .helpers import ROOT as _ROOT
from .helpers import free_port


def cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_COLOR": "1", "PYTHONPATH": _ROOT}
    return subprocess.run([sys.executable, "-m", "interpreters.cli", *args], capture_output=True,
                          text=True, timeout=timeout, env=env, cwd=_ROOT, stdin=subprocess.DEVNULL)


def test_run_recorded_then_replayed(chat_server: Any, tmp_path: Path) -> None:
    path = tmp_path / "cli.jsonl"
    run = cli("run", "Say hi.", "--model", "llama.cpp/tiny", "--base-url", chat_server.v1,
              "--record", str(path), "--json")
    assert run.returncode == 0, run.stderr
    events = [json.loads(line) for line in run.stdout.splitlines() if line.strip()]
    assert events[0]["type"] == "agent_start" and events[-1]["type"] == "agent_end"
    ends = [e for e in events if e["type"] == "message_end" and e["message"]["type"] == "assistant"]
    assert ends and ends[-1]["message"]["stop_reason"] == "stop"
    assert ends[-1]["message"]["usage"]["input"] > 0
    replayed = cli("transcript", "replay", str(path))
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert "identical" in replayed.stdout
    shown = cli("transcript", "show", str(path))
    assert shown.returncode == 0, shown.stderr
    assert "tiny" in shown.stdout


def test_run_against_a_server_that_is_down_fails_in_one_line(tmp_path: Path) -> None:
    port = free_port()
    run = cli("run", "hi", "--model", "llama.cpp/tiny", "--base-url", f"http://127.0.0.1:{port}/v1",
              "--record", str(tmp_path / "down.jsonl"))
    assert run.returncode == 1
    assert f"127.0.0.1:{port}" in run.stdout + run.stderr
    assert "Traceback" not in run.stderr
    replayed = cli("transcript", "replay", str(tmp_path / "down.jsonl"))
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
