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

__all__ = ["EVERYTHING_VERSION", "everything_command", "probe_command", "time_command"]

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


def probe_command(*args: str) -> list[str]:
    """The probe server (``tests/support/mcp_probe.py``) on stdio."""
    return [sys.executable, "-m", "tests.support.mcp_probe", *args]
