"""Pausing Python's cyclic garbage collector around work that builds no reference cycles.

Reading a long transcript and replaying it build hundreds of thousands of small objects that all
live on (the entries, the states). The cyclic collector traverses every tracked object again
each time enough new ones pile up, which took half the time of reading a 1,000-turn transcript
and did not find anything: records, JSON data and the core's states hold no cycles. Reference
counting still frees everything as usual while the collector is paused.

>>> import gc
>>> with paused_gc():
...     gc.isenabled()
False
>>> gc.isenabled()
True
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["paused_gc"]


@contextmanager
def paused_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector for the ``with`` block (if it was running)."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()
