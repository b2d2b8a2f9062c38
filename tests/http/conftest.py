"""Fixtures: a scripted HTTP server per test.

This directory is deliberately not a package: as a package it would be imported as ``http``
and shadow the standard library.
"""

from __future__ import annotations

import sys
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest

_HERE = Path(__file__).resolve().parent
for _p in (str(_HERE), str(_HERE.parent), str(_HERE.parents[1])):
    if _p not in sys.path:
        sys.path.insert(0, _p)

from http_script_server import ScriptServer  # noqa: E402


@pytest.fixture
def server(request: pytest.FixtureRequest) -> Iterator[ScriptServer]:
    seed = zlib.crc32(request.node.nodeid.encode())
    with ScriptServer(seed=seed) as srv:
        yield srv
