"""Session-wide test hygiene, and the layout's import rules.

The tests mirror the packages: ``tests/core`` for ``agentcore`` (``tests/core/providers`` for
``agentcore.providers``), ``tests/interpreters`` for ``interpreters`` (one folder per
subpackage). The helpers several suites share are modules of this directory, which pytest puts
on ``sys.path`` (this file is not in a package). ``tests/interpreters`` and
``tests/interpreters/http`` are not packages: they would be imported as ``interpreters`` and
``http``, shadowing the library and the standard library; so that a folder named
``interpreters`` on ``sys.path`` cannot be taken for the library either, the repository comes
first on ``sys.path`` (which also runs the tests without installing the package).
"""

from __future__ import annotations

import gc
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = str(Path(__file__).resolve().parents[1])
if sys.path[:1] != [ROOT]:
    sys.path.insert(0, ROOT)

from flavours import FLAVOURS, Flavour  # noqa: E402


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
    both (tests/flavours.py)."""
    return request.param  # type: ignore[no-any-return]
