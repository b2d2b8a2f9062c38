"""``agentcore demo``: offline, recorded, replayed identically; works without rich."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

from .cli_helpers import PtySession, clean_env, run_cli


def test_demo_records_and_replays_identically(tmp_path: Path) -> None:
    path = tmp_path / "demo.jsonl"
    proc = run_cli("demo", "--record", str(path), "--delay", "0", "--tool-latency", "0")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "\x1b[" not in out  # not a terminal: plain text
    for expected in ("turn 1", "turn 2", "turn 3", "think ", "calculator", "120 / 80 = 1.5",
                     "Also tell me the total distance in kilometres.", "30 mi = 48.2803 km",
                     "The trip takes 2.17 hours", "in / "):
        assert expected in out, expected
    match = re.search(r"Replay of (.+): (\d+) steps, identical", out)
    assert match and Path(match.group(1)) == path and int(match.group(2)) > 50
    again = run_cli("transcript", "replay", str(path))
    assert again.returncode == 0
    assert f"{match.group(2)} steps, identical" in again.stdout


def test_demo_default_transcript_in_a_temp_dir() -> None:
    proc = run_cli("demo", "--delay", "0", "--tool-latency", "0")
    assert proc.returncode == 0, proc.stderr
    match = re.search(r"Replay of (.+\.jsonl): \d+ steps, identical", proc.stdout)
    assert match
    path = Path(match.group(1))
    assert path.is_file() and Path(tempfile.gettempdir()) in path.parents


def test_demo_on_a_terminal_streams_with_a_spinner(tmp_path: Path) -> None:
    session = PtySession("demo", "--record", str(tmp_path / "d.jsonl"), "--tool-latency", "0.3")
    try:
        session.expect(r"think ")
        session.expect(r"running calculator")  # the spinner while the tools run
        session.expect(r"✓ calculator")
        session.expect(r"\d+ steps, identical")
        assert session.wait() == 0
        assert "\x1b[" in session.raw  # styled
    finally:
        session.close()


def test_demo_works_without_rich(tmp_path: Path) -> None:
    """The README's first command runs on the runtime dependencies alone."""
    blocker = tmp_path / "block"
    blocker.mkdir()
    (blocker / "rich.py").write_text("raise ImportError('rich is not installed (blocked by the test)')\n")
    env = clean_env(PYTHONPATH=str(blocker))
    session = PtySession("demo", "--record", str(tmp_path / "d.jsonl"), "--tool-latency", "0", env=env)
    try:
        session.expect(r"⋯ started calculator")  # the plain renderer's line
        session.expect(r"\d+ steps, identical")
        assert session.wait() == 0
    finally:
        session.close()
