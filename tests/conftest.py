"""Session-wide test hygiene."""

from __future__ import annotations

import gc
import warnings
from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True, scope="session")
def _close_default_http_clients() -> Iterator[None]:
    """Close the process-wide HTTP clients the default stream functions created.

    The asyncio ones belong to event loops that ``asyncio.run`` already closed: they cannot be
    awaited any more, so their sockets are released by the garbage collector here, at the end
    of the session, instead of at interpreter exit (where they would print ResourceWarnings
    after pytest's summary)."""
    yield
    from interpreters.http import close_default_streamer, forget_default_async_streamers

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        close_default_streamer()
        forget_default_async_streamers()
        gc.collect()


@pytest.fixture(params=("sync", "asyncio"))
def flavour(request: pytest.FixtureRequest) -> str:
    """Each interpreter in turn: ``run(flavour, ...)`` from tests/flavours.py."""
    return str(request.param)
