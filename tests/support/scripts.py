"""The scripts of ``tests/scripts``: imported as modules, or run in processes of their own.

A script is a module of the package ``tests.scripts``; a new process runs it as
``python -m tests.scripts.<name>`` with the repository first on its ``PYTHONPATH`` (the package
``tests`` and, before an installed copy, the library it tests).
"""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path
from types import ModuleType

__all__ = ["ROOT", "script_command", "script_env", "script_module"]

ROOT = Path(__file__).resolve().parents[2]
"""The repository: the folder that holds the package ``tests``."""


def script_module(name: str) -> ModuleType:
    """``tests/scripts/<name>.py`` imported as a module (its functions, for the tests that also
    run it in another process)."""
    return importlib.import_module(f"tests.scripts.{name}")


def script_command(name: str, *args: str) -> list[str]:
    """The command that runs ``tests/scripts/<name>.py`` with ``args`` (give ``env=script_env()``)."""
    return [sys.executable, "-m", f"tests.scripts.{name}", *args]


def script_env(**extra: str) -> dict[str, str]:
    """This process's environment, the repository first on ``PYTHONPATH``, and ``extra``."""
    path = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), *([path] if path else [])]), **extra}
