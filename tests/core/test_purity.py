"""The one boundary: ``agentcore`` performs no I/O and never imports the interpreters."""

from __future__ import annotations

import ast
import pathlib
import subprocess
import sys

import agentcore

FORBIDDEN = {
    "interpreters", "httpx", "asyncio", "threading", "socket", "subprocess", "random", "time", "os",
    "uuid", "datetime", "concurrent", "ray", "multiprocessing", "io", "pathlib", "shutil", "tempfile",
    "urllib", "http", "requests", "selectors", "signal", "secrets", "logging", "sys",
}

PACKAGE = pathlib.Path(agentcore.__file__).parent


def imported_modules(path: pathlib.Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module))
    return found


def test_no_module_of_agentcore_imports_io_clock_randomness_threads_or_interpreters() -> None:
    offenders = []
    files = sorted(PACKAGE.rglob("*.py"))
    assert len(files) > 10
    for path in files:
        for line, module in imported_modules(path):
            if module.split(".")[0] in FORBIDDEN:
                offenders.append(f"{path.relative_to(PACKAGE.parent)}:{line} imports {module}")
    assert offenders == []


def test_no_builtin_io_calls() -> None:
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and node.func.id in {"open", "print", "input"}):
                offenders.append(f"{path.name}:{node.lineno} calls {node.func.id}()")
    assert offenders == []


def test_importing_agentcore_loads_neither_httpx_nor_asyncio() -> None:
    code = (
        "import sys, agentcore, agentcore.providers, agentcore.codec\n"
        "bad = sorted(m for m in ('httpx', 'asyncio', 'threading', 'socket', 'interpreters', 'jsonschema') "
        "if m in sys.modules)\n"
        "print(','.join(bad))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == ""
