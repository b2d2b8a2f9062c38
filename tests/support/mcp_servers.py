"""Real MCP servers for the tests: the reference servers (``@modelcontextprotocol/server-everything``
from npm, ``mcp-server-time`` from PyPI) and a probe server written with the SDK for the faults
nobody's server shows on demand (a crash mid-call, a hang, garbage on stdout).

The npm server is installed once into ``~/.cache/agentcore-fx/npm`` (``.ci/run`` does it; a test
run on a fresh machine does it too, with ``npm``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

__all__ = ["EVERYTHING_VERSION", "everything_command", "fixture_repository", "free_port", "git_command",
           "probe_command", "start_everything_http", "time_command"]

EVERYTHING_VERSION = "2026.8.31"
NPM_PREFIX = Path(os.environ.get("AGENTCORE_NPM_PREFIX", Path.home() / ".cache" / "agentcore-fx" / "npm"))


def everything_command() -> list[str]:
    """The command that starts server-everything on stdio (installed first if missing)."""
    exe = NPM_PREFIX / "node_modules" / ".bin" / "mcp-server-everything"
    if not exe.exists():
        npm = shutil.which("npm")
        if npm is None:
            raise RuntimeError("npm is needed to install @modelcontextprotocol/server-everything for the MCP tests")
        NPM_PREFIX.mkdir(parents=True, exist_ok=True)
        subprocess.run([npm, "install", "--silent", "--no-audit", "--no-fund", "--prefix", str(NPM_PREFIX),
                        f"@modelcontextprotocol/server-everything@{EVERYTHING_VERSION}"], check=True, timeout=600)
    return [str(exe), "stdio"]


def time_command() -> list[str]:
    """The reference time server (PyPI ``mcp-server-time``), its clock's zone fixed to UTC."""
    return [sys.executable, "-m", "mcp_server_time", "--local-timezone", "UTC"]


def git_command(repository: str | os.PathLike[str]) -> list[str]:
    """The reference git server (PyPI ``mcp-server-git``) on ``repository``."""
    return [sys.executable, "-m", "mcp_server_git", "--repository", os.fspath(repository)]


def fixture_repository(path: Path) -> Path:
    """A git repository with two commits (fixed author and dates) and one unstaged change."""
    env = {**os.environ, "GIT_AUTHOR_NAME": "Ada", "GIT_AUTHOR_EMAIL": "ada@example.org",
           "GIT_COMMITTER_NAME": "Ada", "GIT_COMMITTER_EMAIL": "ada@example.org",
           "GIT_AUTHOR_DATE": "2026-01-02T03:04:05+00:00", "GIT_COMMITTER_DATE": "2026-01-02T03:04:05+00:00"}

    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=path, env=env, check=True, capture_output=True)

    path.mkdir(parents=True, exist_ok=True)
    git("init", "-q", "-b", "main")
    (path / "notes.txt").write_text("first line\n")
    git("add", "notes.txt")
    git("commit", "-q", "-m", "Start the notes")
    (path / "notes.txt").write_text("first line\nsecond line\n")
    git("commit", "-q", "-am", "Add a second line")
    (path / "notes.txt").write_text("first line\nsecond line\nthird line\n")
    return path


def probe_command(*args: str) -> list[str]:
    """The probe server (``tests/support/mcp_probe.py``) on stdio."""
    return [sys.executable, "-m", "tests.support.mcp_probe", *args]


def free_port() -> int:
    """A TCP port nothing listens on now (loopback)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_everything_http(port: int) -> subprocess.Popen[str]:
    """server-everything over Streamable HTTP at ``http://127.0.0.1:PORT/mcp``, once it listens."""
    command = everything_command()[:1] + ["streamableHttp"]
    proc = subprocess.Popen(command, env={**os.environ, "PORT": str(port)}, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    assert proc.stdout is not None
    for line in proc.stdout:
        if "listening" in line.lower():
            return proc
    proc.wait(timeout=10)
    raise RuntimeError(f"server-everything did not start over HTTP (exit status {proc.returncode})")
