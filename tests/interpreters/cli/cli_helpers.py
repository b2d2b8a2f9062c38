"""Run the ``agentcore`` command in subprocesses, with pipes or on a pseudo-terminal."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import subprocess
import sys
import termios
import time
from pathlib import Path

from agentcore.providers import ENV_KEYS

COMMAND = [sys.executable, "-m", "interpreters.cli"]
APPROVAL_TOOLS = '''
from interpreters import tool
from interpreters.cli.demo import convert_units


@tool(requires_approval=True)
def calculator(expression: str) -> str:
    """Evaluate an arithmetic expression."""
    value = eval(expression, {"__builtins__": {}})
    return f"{expression} = {value:g}"


TOOLS = [calculator, convert_units]
'''
"""A tools module (``TOOLS``): the demo's tools, its calculator requiring approval."""

DEFERRED_TOOLS = '''
from interpreters import tool
from interpreters.cli.demo import convert_units


@tool(deferred=True)
def calculator(expression: str) -> str:
    """Evaluate an arithmetic expression (a person answers)."""
    raise AssertionError("a deferred tool is never called")


TOOLS = [calculator, convert_units]
'''
"""A tools module (``TOOLS``): the demo's tools, its calculator deferred (a person answers)."""

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07|\r")


def clean_env(**extra: str) -> dict[str, str]:
    """The environment without any provider API key, plus ``extra``."""
    keys = set(ENV_KEYS.values())
    env = {k: v for k, v in os.environ.items() if k not in keys and k != "AGENTCORE_DEMO_DELAY"}
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra)
    return env


def demo_env() -> dict[str, str]:
    """:func:`clean_env` with the demo model streaming without delay."""
    return clean_env(AGENTCORE_DEMO_DELAY="0")


def run_cli(*args: str, env: dict[str, str] | None = None, cwd: str | Path | None = None,
            timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """``python -m interpreters.cli ARGS`` (what the console script runs), output captured, no
    input (never a terminal's)."""
    return subprocess.run([*COMMAND, *args], capture_output=True, text=True, stdin=subprocess.DEVNULL,
                          env=env if env is not None else clean_env(), cwd=cwd, timeout=timeout)


def strip_ansi(text: str) -> str:
    return ANSI.sub("", text)


class PtySession:
    """The command on a pseudo-terminal that is its controlling terminal, so that a typed
    Ctrl-C (``\\x03``) reaches it as SIGINT through the terminal's line discipline."""

    def __init__(self, *args: str, env: dict[str, str] | None = None, cols: int = 120) -> None:
        master, slave = pty.openpty()
        import struct

        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, cols, 0, 0))

        def make_controlling_tty() -> None:  # runs in the child, after setsid()
            fcntl.ioctl(0, termios.TIOCSCTTY, 0)

        environment = env if env is not None else clean_env()
        environment.setdefault("TERM", "xterm-256color")
        self.proc = subprocess.Popen([*COMMAND, *args], stdin=slave, stdout=slave, stderr=slave,
                                     env=environment, start_new_session=True,
                                     preexec_fn=make_controlling_tty, close_fds=True)
        os.close(slave)
        self.master = master
        self.raw = ""
        self.pos = 0  # how far expect() has consumed (in the ANSI-stripped text)

    @property
    def text(self) -> str:
        return strip_ansi(self.raw)

    def _read(self, timeout: float) -> bool:
        ready, _, _ = select.select([self.master], [], [], timeout)
        if not ready:
            return False
        try:
            data = os.read(self.master, 65536)
        except OSError:  # EIO: the child closed the terminal
            return False
        if not data:
            return False
        self.raw += data.decode("utf-8", "replace")
        return True

    def expect(self, pattern: str, timeout: float = 20) -> str:
        """Wait until ``pattern`` (a regex) appears after what earlier calls matched."""
        regex = re.compile(pattern)
        deadline = time.monotonic() + timeout
        while True:
            match = regex.search(self.text, self.pos)
            if match:
                self.pos = match.end()
                return match.group(0)
            left = deadline - time.monotonic()
            if left <= 0:
                break
            if not self._read(min(left, 0.2)) and self.proc.poll() is not None:
                while self._read(0.05):
                    pass
                if regex.search(self.text, self.pos) is None:
                    break
        raise AssertionError(f"{pattern!r} did not appear (exit code {self.proc.poll()}); "
                             f"output after the last match:\n{self.text[self.pos:]}")

    def send(self, text: str) -> None:
        os.write(self.master, text.encode())

    def wait(self, timeout: float = 20) -> int:
        deadline = time.monotonic() + timeout
        while self.proc.poll() is None and time.monotonic() < deadline:
            self._read(0.1)
        while self._read(0.05):
            pass
        return self.proc.wait(max(0.1, deadline - time.monotonic()))

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        os.close(self.master)
