"""Fixtures: a scripted HTTP server per test.

This directory is deliberately not a package: as a package it would be imported as ``http``
and shadow the standard library. pytest puts it on ``sys.path`` (so ``harness`` imports); the
server is ``tests/http_script_server.py``, shared with the CLI and provider tests.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator

import pytest

from http_script_server import ScriptServer


@pytest.fixture
def server(request: pytest.FixtureRequest) -> Iterator[ScriptServer]:
    seed = zlib.crc32(request.node.nodeid.encode())
    with ScriptServer(seed=seed) as srv:
        yield srv
