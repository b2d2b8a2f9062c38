"""The asyncio runner's I/O helpers: user code called without blocking the event loop (an
``async def`` callable awaited, a sync one on a worker thread), what it gave or raised carried
as a value, and how to tell a cancellation of the run's task from user code raising it."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from typing import Any

from .hooks import Returned
from .run import END
from .steps import Raised

__all__ = ["awaited", "awaited_value", "boxed", "call_in_task", "is_async", "may_block", "on_loop", "read_in_thread",
           "really_cancelled"]


def boxed(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Returned:
    """Call ``fn`` in a worker thread: what it returns or raises, as a value (asyncio cannot
    carry some exceptions, ``StopIteration`` among them, out of a thread into a task)."""
    try:
        return Returned(fn(*args, **kwargs))
    except BaseException as exc:
        return Returned(error=exc)


def really_cancelled() -> bool:
    """Whether the running task is being cancelled (not user code raising ``CancelledError``)."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


def on_loop(loop: asyncio.AbstractEventLoop) -> bool:
    """Whether the caller runs on ``loop`` (not in another thread)."""
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False


def is_async(fn: Any) -> bool:
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(getattr(fn, "__call__", None))


async def call_in_task(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Await an ``async def`` callable in this task; run a sync one in a worker thread. Raises
    what ``fn`` raised."""
    if is_async(fn):
        return await fn(*args, **kwargs)
    value = (await asyncio.to_thread(boxed, fn, args, kwargs)).get()
    if inspect.isawaitable(value):
        value = await value
    return value


def may_block(stream_fn: Any) -> bool:
    """Whether ``stream_fn`` is called on a worker thread: a sync one may block before it returns
    (connecting to a server, say), unless it says it does not (``blocking = False``, as
    ``ScriptedModel`` does). An ``async def`` one is called on the loop."""
    return getattr(stream_fn, "blocking", True) is not False and not is_async(stream_fn)


async def awaited(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Returned:
    """What ``await fn(*args, **kwargs)`` gives, or what it raises (a ``CancelledError`` goes
    on: the caller tells a cancellation of its task from user code raising it)."""
    try:
        return Returned(await fn(*args, **kwargs))
    except asyncio.CancelledError:
        raise
    except BaseException as exc:
        return Returned(error=exc)


async def awaited_value(value: Any) -> Any:
    return await value


def read_in_thread(source: Any) -> Any:
    """In a worker thread: the next event of a sync stream, ``END``, or what it raised."""
    try:
        return next(source, END)
    except BaseException as exc:
        return Raised(exc)
