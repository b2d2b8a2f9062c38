"""Fixtures: a scripted HTTP server per test (``tests/support/http_script_server.py``, shared
with the CLI and provider tests)."""

from __future__ import annotations

import zlib
from collections.abc import Iterator

import pytest

from tests.support.http_script_server import ScriptServer


@pytest.fixture
def server(request: pytest.FixtureRequest) -> Iterator[ScriptServer]:
    seed = zlib.crc32(request.node.nodeid.encode())
    with ScriptServer(seed=seed) as srv:
        yield srv
