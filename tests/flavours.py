"""Run one scenario on either interpreter: the shared helpers of the tests that compare them.

``run(flavour, prompt, context, config, stream_fn, ...)`` runs ``interpreters.agent_loop`` (sync)
or ``interpreters.aio.agent_loop`` (asyncio) to its end and returns ``(events, messages)``. The
``flavour`` fixture (tests/conftest.py) parametrizes a test over both.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from interpreters import AbortSignal, agent_loop, aio

FLAVOURS = ("sync", "asyncio")


def run(flavour: str, prompt: Any, context: Any, config: Any, stream_fn: Any,
        signal: AbortSignal | None = None, on_event: Callable[[Any], None] | None = None,
        **options: Any) -> tuple[list[Any], list[Any]]:
    """Run to the end; ``on_event`` sees each event as it comes (it may abort, steer...)."""
    events: list[Any] = []

    def collect(event: Any) -> None:
        events.append(event)
        if on_event is not None:
            on_event(event)

    if flavour == "sync":
        stream = agent_loop(prompt, context, config, signal, stream_fn, **options)
        for event in stream:
            collect(event)
        return events, stream.result()

    async def main() -> list[Any]:
        astream = aio.agent_loop(prompt, context, config, signal, stream_fn, **options)
        async for event in astream:
            collect(event)
        return await astream.result()

    return events, asyncio.run(main())


def types(events: list[Any]) -> list[str]:
    """The event types, consecutive ``message_update`` s shown once."""
    out: list[str] = []
    for e in events:
        if e.type == "message_update" and out and out[-1] == "message_update":
            continue
        out.append(e.type)
    return out
