"""Parameter descriptions from docstrings: the first paragraph describes the tool, and a
Google-style ``Args:`` section, reST ``:param x:`` fields or a numpy-style ``Parameters``
section describe the parameters (:func:`parse_docstring`)."""

from __future__ import annotations

import inspect
import re

__all__ = ["parse_docstring"]


_GOOGLE_ARGS = re.compile(
    r"^(Args|Arguments|Parameters|Params|Keyword Args|Keyword Arguments|Other Parameters):\s*$"
)
_GOOGLE_SECTION = re.compile(r"^[A-Z][A-Za-z ]*:\s*$")
_GOOGLE_ENTRY = re.compile(r"^\*{0,2}(\w+)\s*(?:\([^)]*\))?\s*:(?:\s+(.*))?$")
_REST_FIELD = re.compile(r"^:(\w+)(?:\s+([^:]*?))?:\s*(.*)$")
_NUMPY_RULE = re.compile(r"^-{3,}\s*$")
_NUMPY_ENTRY = re.compile(r"^\*{0,2}(\w+)\s*(?::.*)?$")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """The description (first paragraph) and the parameter descriptions of a docstring.

    >>> parse_docstring('''Search files.
    ...
    ... More text.
    ...
    ... Args:
    ...     pattern (str): A glob,
    ...         like *.py.
    ...     limit: At most this many.
    ... Returns:
    ...     The paths.
    ... ''')
    ('Search files.', {'pattern': 'A glob, like *.py.', 'limit': 'At most this many.'})
    >>> parse_docstring(':param x: The x.\\n:type x: int')
    ('', {'x': 'The x.'})
    """
    lines = inspect.cleandoc(doc).splitlines()
    summary: list[str] = []
    for line in lines:
        stripped = line.strip()
        if not stripped:
            if summary:
                break
            continue
        if _GOOGLE_SECTION.match(stripped) or stripped.startswith(":"):
            break
        if _NUMPY_RULE.match(stripped):
            summary = summary[:-1]
            break
        summary.append(stripped)
    params: dict[str, str] = {}
    _google_params(lines, params)
    _rest_params(lines, params)
    _numpy_params(lines, params)
    return " ".join(summary), params


def _google_params(lines: list[str], out: dict[str, str]) -> None:
    i = 0
    while i < len(lines):
        line = lines[i]
        if not _GOOGLE_ARGS.match(line.strip()):
            i += 1
            continue
        header_indent = _indent(line)
        entry_indent: int | None = None
        current: str | None = None
        i += 1
        while i < len(lines):
            line = lines[i]
            stripped = line.strip()
            if not stripped:
                i += 1
                continue
            ind = _indent(line)
            if ind <= header_indent:
                break
            if entry_indent is None:
                entry_indent = ind
            if ind <= entry_indent:
                m = _GOOGLE_ENTRY.match(stripped)
                current = m.group(1) if m else None
                if current is not None and current in out:
                    current = None  # described twice: the first one wins
                elif current is not None:
                    out[current] = (m.group(2) or "").strip() if m else ""
            elif current is not None:
                out[current] = (out[current] + " " + stripped).strip()
            i += 1


def _rest_params(lines: list[str], out: dict[str, str]) -> None:
    current: str | None = None
    current_indent = 0
    for line in lines:
        stripped = line.strip()
        m = _REST_FIELD.match(stripped)
        if m:
            current = None
            field, arg, text = m.group(1), m.group(2), m.group(3)
            if field in ("param", "parameter", "arg", "argument", "key", "keyword") and arg:
                name = arg.split()[-1]
                if name not in out:
                    out[name] = text.strip()
                    current = name
                    current_indent = _indent(line)
            continue
        if current is not None and stripped and _indent(line) > current_indent:
            out[current] = (out[current] + " " + stripped).strip()
        else:
            current = None


def _numpy_params(lines: list[str], out: dict[str, str]) -> None:
    i = 0
    while i + 1 < len(lines):
        if lines[i].strip() in ("Parameters", "Other Parameters") and _NUMPY_RULE.match(
            lines[i + 1].strip()
        ):
            base = _indent(lines[i])
            i += 2
            current: str | None = None
            while i < len(lines):
                line = lines[i]
                stripped = line.strip()
                if i + 1 < len(lines) and _NUMPY_RULE.match(lines[i + 1].strip()):
                    break  # the next section's title
                if stripped and _indent(line) <= base:
                    m = _NUMPY_ENTRY.match(stripped)
                    current = m.group(1) if m else None
                    if current is not None and current in out:
                        current = None
                    elif current is not None:
                        out[current] = ""
                elif stripped and current is not None:
                    out[current] = (out[current] + " " + stripped).strip()
                i += 1
        else:
            i += 1
