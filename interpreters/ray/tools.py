"""Tools that need cluster resources: :func:`remote_tool` runs each call of a tool as its own Ray
task with resource options, awaited by the loop like any ``async`` tool."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Mapping
from typing import Any

from agentcore import AgentTool, AgentToolResult
from agentcore.records import replace

from ..runtime.hooks import failure_text
from ..signal import AbortSignal
from .cluster import ray_module

__all__ = ["RemoteToolError", "remote_tool"]


class RemoteToolError(RuntimeError):
    """A remote tool raised: the message is the tool's own error text (no Ray traceback), so
    the tool result the model sees is the same as when the tool runs in the worker."""


def _execute_remotely(tool: AgentTool, tool_call_id: str, args: Any) -> tuple[bool, Any]:
    """The body of a remote tool's Ray task: (True, value) or (False, error text)."""
    signal = AbortSignal()
    try:
        value = tool.execute(tool_call_id, args, signal, lambda partial: None)
        if inspect.isawaitable(value):
            async def wait() -> Any:
                return await value

            value = asyncio.run(wait())
    except Exception as exc:
        return False, failure_text(exc)
    return True, value


_REMOTE_FN: Any = None


def _remote_fn() -> Any:
    global _REMOTE_FN
    if _REMOTE_FN is None:
        _REMOTE_FN = ray_module().remote(_execute_remotely)
    return _REMOTE_FN


def remote_tool(
    tool: AgentTool,
    *,
    num_cpus: float = 1,
    num_gpus: float = 0,
    memory: int | None = None,
    resources: Mapping[str, float] | None = None,
    max_retries: int = 0,
    **ray_options: Any,
) -> AgentTool:
    """``tool``, with each call run as its own Ray task that reserves the given resources.

    The loop sees an ordinary ``async`` tool: ``execute`` submits the task and awaits its
    result (under any interpreter in a process connected to Ray: a :func:`run_many` worker, or
    your own driver). ``memory`` is in bytes; ``resources`` are custom resources; other keyword
    arguments go to ``ray.remote(...).options`` (``runtime_env``, ``scheduling_strategy``...).
    ``max_retries`` (default 0: tools have side effects) retries a call whose process died.

    The tool must pickle. Its progress updates (``on_update``) are not forwarded; an abort
    cancels the task. An exception in the tool becomes an error result with its text, as locally.
    """
    options: dict[str, Any] = {"num_cpus": num_cpus, "num_gpus": num_gpus, "max_retries": max_retries}
    if memory is not None:
        options["memory"] = memory
    if resources:
        options["resources"] = dict(resources)
    options.update(ray_options)

    async def execute(tool_call_id: str, args: Any, signal: AbortSignal | None = None,
                      on_update: Callable[[Any], None] | None = None) -> Any:
        ray = ray_module()
        ref = _remote_fn().options(**options).remote(tool, tool_call_id, args)
        if signal is not None:
            signal.add_callback(lambda: ray.cancel(ref))
        try:
            ok, value = await ref
        except asyncio.CancelledError:
            ray.cancel(ref)
            raise
        if not ok:
            raise RemoteToolError(value)
        if not isinstance(value, (AgentToolResult, str)):
            raise TypeError(f"tool {tool.name} returned {type(value).__name__}, expected AgentToolResult")
        return value

    setattr(execute, "reports_progress", False)
    setattr(execute, "ray_options", dict(options))
    return replace(tool, execute=execute)
