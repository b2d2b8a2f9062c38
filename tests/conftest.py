"""Session-wide test hygiene.

The tests mirror the packages: ``tests/core`` for ``agentcore`` (``tests/core/providers`` for
``agentcore.providers``), ``tests/interpreters`` for ``interpreters`` (one folder per
subpackage: ``tests/interpreters/streams/http`` for ``interpreters.streams.http``). Every folder
is a package of the package ``tests``, so a test module is imported by its full name
(``tests.interpreters.streams.http.test_http_loop``) and no folder of tests can be taken for
the library or the standard library. The helpers several suites share are the package
``tests.support``. pytest puts the folder that holds the package ``tests``, the repository, on
``sys.path`` (which also runs the tests without installing the library).
"""

from __future__ import annotations

import gc
import warnings
from collections.abc import Iterator

import pytest

from tests.support.flavours import FLAVOURS, Flavour


@pytest.fixture(autouse=True, scope="session")
def _close_default_http_clients() -> Iterator[None]:
    """Close the process-wide HTTP clients the default stream functions created.

    The asyncio ones belong to event loops that ``asyncio.run`` already closed: they cannot be
    awaited any more, so their sockets are released by the garbage collector here, at the end
    of the session, instead of at interpreter exit (where they would print ResourceWarnings
    after pytest's summary)."""
    yield
    from interpreters.streams.http import close_default_streamer, forget_default_async_streamers

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        close_default_streamer()
        forget_default_async_streamers()
        gc.collect()


@pytest.fixture(params=FLAVOURS, ids=str)
def flavour(request: pytest.FixtureRequest) -> Flavour:
    """Each interpreter in turn (ids ``sync``, ``asyncio``): one object with the same calls for
    both (tests/support/flavours.py)."""
    return request.param  # type: ignore[no-any-return]
