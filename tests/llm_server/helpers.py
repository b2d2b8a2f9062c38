"""Shared pieces of the real-server tests: models pointing at a server, tools, recorded runs."""

from __future__ import annotations

import json
import socket
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from agentcore import AgentContext, AgentLoopConfig
from agentcore.codec import to_json
from agentcore.messages import AssistantMessage, Model, ToolResultMessage
from interpreters import AbortSignal, tool
from interpreters.replay import replay
from interpreters.streams.http import HttpStreamer
from tests.support.flavours import SYNC, Flavour

ROOT = str(Path(__file__).resolve().parents[2])

TOOL_CALL_END = "</tool_call>"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


Api = Literal["openai-completions", "openai-responses", "anthropic-messages"]


def model_for(server: Any, api: Api = "openai-completions", *, max_tokens: int = 256) -> Model:
    """A model served by ``server`` (provider ``llama.cpp``: no API key)."""
    base = server.url if api == "anthropic-messages" else server.v1
    return Model(id="tiny", name="tiny", api=api, provider="llama.cpp", base_url=base,
                 context_window=4096, max_tokens=max_tokens)


@tool
def pick(color: Literal["red", "green", "blue"]) -> str:
    """Picks a color."""
    return f"picked {color}"


@tool
def ping() -> str:
    """Answers pong."""
    return "pong"


TOOLS = [pick, ping]


def bias_payload(tool_call_id: int, bias: float = 100.0, *, first_only: bool = True,
                 parallel: bool = False, seed: int | None = None,
                 extra: dict[str, Any] | None = None) -> tuple[Callable[..., Any], list[dict[str, Any]]]:
    """An ``on_payload`` hook that lifts the ``<tool_call>`` token (on the first request only, by
    default) and sets llama-server's ``parallel_tool_calls``; returns it and the list of the
    request bodies it saw (as sent)."""
    bodies: list[dict[str, Any]] = []

    def on_payload(body: Any, model: Model) -> Any:
        new = json.loads(json.dumps(body))
        if not first_only or not bodies:
            new["logit_bias"] = {str(tool_call_id): bias}
        new["parallel_tool_calls"] = parallel
        if not parallel:
            # The server's grammar lets the model open call after call (it ignores
            # parallel_tool_calls): a stop at the first closing tag makes one call a reply.
            new["stop"] = [TOOL_CALL_END]
        if seed is not None:
            new["seed"] = seed
        if extra:
            new.update(extra)
        bodies.append(new)
        return new

    return on_payload, bodies


def seeded(seed: int, extra: dict[str, Any] | None = None) -> Callable[..., Any]:
    def on_payload(body: Any, model: Model) -> Any:
        new = dict(body)
        new["seed"] = seed
        new.update(extra or {})
        return new

    return on_payload


@dataclass
class Run:
    messages: list[Any]
    events: list[Any]
    path: Path
    config: AgentLoopConfig
    context: AgentContext
    abort_at: float | None = None
    ended_at: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def assistants(self) -> list[AssistantMessage]:
        return [m for m in self.messages if isinstance(m, AssistantMessage)]

    @property
    def tool_results(self) -> list[ToolResultMessage]:
        return [m for m in self.messages if isinstance(m, ToolResultMessage)]

    def deltas(self, kind: str = "text_delta") -> list[str]:
        out = []
        for e in self.events:
            if e.type == "message_update" and e.assistant_message_event.type == kind:
                out.append(e.assistant_message_event.delta)
        return out


def run_recorded(tmp_path: Path, prompt: str, model: Model, *, flavour: Flavour = SYNC, tools: Sequence[Any] = (),
                 system: str = "", signal: AbortSignal | None = None,
                 streamer: HttpStreamer | None = None, on_event: Callable[[Any], None] | None = None,
                 name: str = "run.jsonl", **config: Any) -> Run:
    """One run against a real server, recorded to ``tmp_path / name``: through ``streamer``, or
    through a streamer of the flavour opened for the run (30 s read timeout, no retries)."""
    context = AgentContext(system_prompt=system, tools=list(tools))
    cfg = AgentLoopConfig(model=model, **config)
    path = tmp_path / name
    http = None if streamer is not None else {"read_timeout": 30.0, "max_retries": 0}
    events, messages = flavour.record(path, prompt, context, cfg, streamer, signal, on_event, http=http)
    return Run(messages, events, path, cfg, context)


def assert_replays(run: Run) -> None:
    """A strict replay of the recorded run is identical, and rebuilds the same messages."""
    result = replay(run.path)
    assert result.finished
    assert to_json(result.messages) == to_json(run.messages)
