"""Every code example in README.md and docs/*.md runs as written.

For each Markdown file, the ```python fenced blocks are extracted and run in order in one shared
namespace (a later block may use what an earlier one defined, as a reader following the page
would), in a temporary working directory, with no network: a connection to anything but the
loopback interface raises, and the providers' API key variables are unset. An expression
statement whose comment is a literal (``agent.state.messages[-1].text  # 'Hello!'``) must have
that value.

A block that defines pytest tests (``def test_...``) is run as a reader would run it: the blocks
of the page up to and including it are written to a test module and run with pytest twice
(pytester), so an ``agent_recording`` test records its transcript the first time and replays it
the second.
"""

from __future__ import annotations

import ast
import contextlib
import io
import ipaddress
import pathlib
import re
import socket
import sys
import tokenize
import traceback
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from agentcore.providers import ENV_KEYS

pytest_plugins = ["pytester"]

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<ticks>`{3,}|~{3,})[ \t]*(?P<info>[^\s`]*)[^`]*$")
_PYTHON = {"python", "py", "python3"}


@dataclass(frozen=True)
class Block:
    number: int  # 1-based, counting the file's python blocks
    line: int  # line of the opening fence
    source: str

    @property
    def first_line(self) -> str:
        return next((line for line in self.source.splitlines() if line.strip()), "")

    @property
    def defines_tests(self) -> bool:
        return any(isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test_")
                   for node in ast.walk(ast.parse(self.source)))


def python_blocks(text: str) -> list[Block]:
    """The ```python fenced blocks of a Markdown text, dedented to their fence."""
    blocks: list[Block] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        opening = _FENCE.match(lines[i])
        if opening is None:
            i += 1
            continue
        indent, ticks = len(opening["indent"]), opening["ticks"]
        body: list[str] = []
        j = i + 1
        while j < len(lines):
            closing = _FENCE.match(lines[j])
            if closing is not None and closing["ticks"][0] == ticks[0] and len(closing["ticks"]) >= len(ticks) \
                    and not closing["info"]:
                break
            body.append(lines[j][indent:] if lines[j][:indent].strip() == "" else lines[j])
            j += 1
        if opening["info"].lower() in _PYTHON:
            blocks.append(Block(len(blocks) + 1, i + 1, "\n".join(body) + "\n"))
        i = j + 1
    return blocks


def test_the_extraction_finds_fenced_python_blocks() -> None:
    text = "\n".join([
        "```python", "a = 1", "```",
        "```bash", "echo no", "```",
        "- a list item:", "", "  ```python", "  b = a + 1", "  ```",
        "````python", "c = '```'", "````",
    ])
    assert [b.source for b in python_blocks(text)] == ["a = 1\n", "b = a + 1\n", "c = '```'\n"]
    assert [b.line for b in python_blocks(text)] == [1, 9, 12]


# --------------------------------------------------------------------------- no network


def _is_local(address: Any) -> bool:
    if isinstance(address, str | bytes):  # AF_UNIX
        return True
    host = address[0]
    if host in ("localhost", ""):
        return True
    try:
        return ipaddress.ip_address(host.split("%")[0]).is_loopback
    except ValueError:
        return False


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    real_connect, real_connect_ex = socket.socket.connect, socket.socket.connect_ex
    real_getaddrinfo = socket.getaddrinfo

    def refuse(address: Any) -> None:
        raise OSError(f"the documentation examples run without network (tried to reach {address!r})")

    def connect(self: socket.socket, address: Any) -> None:
        if not _is_local(address):
            refuse(address)
        real_connect(self, address)

    def connect_ex(self: socket.socket, address: Any) -> int:
        if not _is_local(address):
            refuse(address)
        return real_connect_ex(self, address)

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host is not None and not _is_local((host.decode() if isinstance(host, bytes) else host, 0)):
            refuse(host)
        return real_getaddrinfo(host, *args, **kwargs)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket.socket, "connect_ex", connect_ex)
    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    for variable in set(ENV_KEYS.values()):
        monkeypatch.delenv(variable, raising=False)


def test_only_the_loopback_interface_is_reachable(no_network: None) -> None:
    with socket.socket() as sock, pytest.raises(OSError, match="without network"):
        sock.connect(("192.0.2.1", 80))
    with pytest.raises(OSError, match="without network"):
        socket.getaddrinfo("example.com", 443)
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        socket.create_connection(server.getsockname(), timeout=5).close()


@pytest.fixture
def isolated_globals(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Process-wide state an example may set (the OpenTelemetry tracer provider, a Ray cluster)
    is put back afterwards, so the examples do not leak into other tests."""
    try:
        from opentelemetry import trace
        from opentelemetry.util._once import Once
    except ImportError:
        trace = None
    else:
        monkeypatch.setattr(trace, "_TRACER_PROVIDER", None)
        monkeypatch.setattr(trace, "_TRACER_PROVIDER_SET_ONCE", Once())
    ray = sys.modules.get("ray")
    ray_was_running = ray is not None and ray.is_initialized()
    yield
    if trace is not None and trace._TRACER_PROVIDER is not None:
        shutdown = getattr(trace._TRACER_PROVIDER, "shutdown", None)
        if shutdown is not None:
            shutdown()  # flushes and stops the example's span processors
    ray = sys.modules.get("ray")
    if ray is not None and ray.is_initialized() and not ray_was_running:
        ray.shutdown()


# --------------------------------------------------------------------------- the examples


_CLAIM = "__doc_example_claims__"


def _claimed_value(comment: str) -> ast.expr | None:
    """The literal a comment consists of (``# 'Hello!'``, ``# 3``), else ``None``."""
    try:
        node = ast.parse(comment.lstrip("#").strip(), mode="eval").body
        ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
    return node


def _check_claims(tree: ast.Module, source: str) -> ast.Module:
    """An expression statement whose comment is a Python literal (``agent.state.messages[-1].text
    # 'Hello!'``) claims its value, as in a REPL: it is wrapped so that the block fails when the
    value differs. The expression is still evaluated once, where it is. (``print(x)  # ...``
    shows output, not a value, and is left alone.)"""
    comments = {token.start[0]: token.string for token in tokenize.generate_tokens(io.StringIO(source).readline)
                if token.type == tokenize.COMMENT}

    class Claims(ast.NodeTransformer):
        def visit_Expr(self, node: ast.Expr) -> ast.AST:
            value = node.value
            if isinstance(value, ast.Constant | ast.Await | ast.Yield | ast.YieldFrom) or (
                    isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "print"):
                return node
            comment = comments.get(node.end_lineno or node.lineno)
            claimed = None if comment is None else _claimed_value(comment)
            if claimed is None:
                return node
            check = ast.Call(ast.Name(_CLAIM, ast.Load()), [value, claimed, ast.Constant(ast.unparse(value))], [])
            return ast.copy_location(ast.Expr(ast.copy_location(check, value)), node)

    return ast.fix_missing_locations(Claims().visit(tree))


def _claim(actual: Any, claimed: Any, expression: str) -> Any:
    assert actual == claimed, f"the example says {expression} is {claimed!r}, it is {actual!r}"
    return actual


def test_a_commented_literal_is_checked() -> None:
    source = "x = ['a']\nx  # ['a']\nx  # the value\nprint(x)  # 1\nx[0]  # 'b'\n"
    namespace: dict[str, Any] = {_CLAIM: _claim}
    with pytest.raises(AssertionError, match=r"the example says x\[0\] is 'b', it is 'a'"):
        exec(compile(_check_claims(ast.parse(source), source), "<doc>", "exec"), namespace)


def _without_this_frame(exc: BaseException) -> Any:
    tb = exc.__traceback__
    return tb.tb_next if tb is not None and tb.tb_frame.f_code is _run_block.__code__ else tb


def _run_block(block: Block, doc: str, namespace: dict[str, Any]) -> str:
    """Run one block in ``namespace``; returns what it printed. Fails naming the block."""
    out = io.StringIO()
    namespace[_CLAIM] = _claim
    try:
        tree = _check_claims(ast.parse(block.source), block.source)
        # Line numbers of the Markdown file, so a traceback shows the line of the page.
        code = compile(ast.increment_lineno(tree, block.line), str(ROOT / doc), "exec")
        with contextlib.redirect_stdout(out):
            exec(code, namespace)
    except BaseException as exc:  # noqa: BLE001 - reported with the block it came from
        if isinstance(exc, KeyboardInterrupt):
            raise
        pytest.fail(
            f"{doc}: python block {block.number} (line {block.line}) failed\n"
            f"  first line: {block.first_line}\n"
            f"{''.join(traceback.format_exception(type(exc), exc, _without_this_frame(exc))).rstrip()}\n"
            f"--- printed before the failure:\n{out.getvalue()}",
            pytrace=False,
        )
    return out.getvalue()


def test_a_failure_names_the_file_the_block_and_its_first_line() -> None:
    block = Block(2, 7, "x = 1\nraise ValueError('boom')\n")
    with pytest.raises(pytest.fail.Exception) as failed:
        _run_block(block, "docs/example.md", {})
    message = str(failed.value)
    assert "docs/example.md: python block 2 (line 7) failed" in message
    assert "first line: x = 1" in message and "ValueError: boom" in message
    assert f'File "{ROOT / "docs" / "example.md"}", line 9' in message  # the line in the page


def _run_tests_of(block: Block, blocks: list[Block], doc: str, pytester: pytest.Pytester,
                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Run the tests a block defines with pytest, twice: recording, then replaying."""
    preamble = [b for b in blocks if b.number < block.number and not b.defines_tests]
    source = "\n\n".join([*(b.source for b in preamble), block.source])
    module = "test_" + re.sub(r"\W", "_", pathlib.Path(doc).stem) + f"_block{block.number}"
    pytester.makepyfile(**{module: source})
    defined = [node.name for node in ast.parse(block.source).body
               if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test_")]
    with monkeypatch.context() as m:
        m.chdir(pytester.path)
        for attempt in ("first run", "second run"):
            result = pytester.runpytest_inprocess("-p", "no:cacheprovider", f"{module}.py")
            outcomes = result.parseoutcomes()
            if result.ret != 0 or outcomes.get("passed", 0) < max(1, len(defined)) \
                    or set(outcomes) - {"passed", "warnings", "warning"}:
                pytest.fail(
                    f"{doc}: python block {block.number} (line {block.line}) failed under pytest "
                    f"({attempt})\n  first line: {block.first_line}\n" + "\n".join(result.outlines),
                    pytrace=False,
                )
            if attempt == "first run" and "agent_recording" in block.source:
                assert list(pytester.path.glob("transcripts/*.jsonl")), \
                    f"{doc}: python block {block.number}: the first run recorded no transcript"


@pytest.mark.parametrize("path", DOCS, ids=[str(p.relative_to(ROOT)) for p in DOCS])
def test_doc_examples_run(path: pathlib.Path, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch,
                          request: pytest.FixtureRequest, no_network: None, isolated_globals: None) -> None:
    doc = str(path.relative_to(ROOT))
    blocks = python_blocks(path.read_text(encoding="utf-8"))
    monkeypatch.chdir(tmp_path)
    # As in a script: what the examples define lives in __main__ (so Ray pickles it by value).
    namespace: dict[str, Any] = {"__name__": "__main__"}
    printed = []
    for block in blocks:
        printed.append(_run_block(block, doc, namespace))
        if block.defines_tests:
            _run_tests_of(block, blocks, doc, request.getfixturevalue("pytester"), monkeypatch)
    if doc == "README.md":
        assert len(blocks) >= 5
        # The sync loop, the asyncio loop, the replay and the cassette each print the final answer.
        assert "".join(printed).count("2 + 3 = 5") == 4, "".join(printed)
        assert "['drifted', 'drifted']" in "".join(printed)
