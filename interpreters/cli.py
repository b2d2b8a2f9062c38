"""The ``agentcore`` command: run agents and debug their transcripts from a shell.

Subcommands (``agentcore SUBCOMMAND --help`` for each; ``docs/cli.md`` for the whole story):

* ``demo``: the offline demo (scripted model, real tools, a steering message), recorded to a
  transcript that is then replayed strictly.
* ``run PROMPT --model PROVIDER/MODEL``: one run against a real provider (``--json`` for
  scripts); ``chat``: an interactive session (typing while the agent works steers it).
* ``transcript show|replay|diff|state|fork|resume|html``: inspect, check and continue
  recorded runs.

Conventions: exit code 0 ok, 1 the run failed (or a replay diverged), 2 usage error, 130 when
a second Ctrl-C stopped the command. A user mistake (no API key, unknown model, missing file, a
tools module that does not load, a damaged transcript) prints one line saying what to do and no
traceback; ``--debug`` shows it. Rendering is in :mod:`interpreters.render` (``rich`` on a
terminal when installed, plain text otherwise).
"""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import importlib
import importlib.util
import json
import os
import sys
import tempfile
import threading
import traceback
import warnings
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

from agentcore import (
    AgentContext,
    AgentEvent,
    AgentLoopConfig,
    AgentMessage,
    AgentTool,
    AssistantMessage,
    CallLlm,
    Emit,
    FrozenDict,
    LlmContext,
    MessageUpdateEvent,
    Model,
    StreamOptions,
    ToolResultMessage,
    UserMessage,
)
from agentcore.codec import CodecError, from_json, to_json

from .render import (
    LiveRenderer,
    message_text,
    build_conversation,
    conversation_html,
    conversation_text,
    format_args,
    make_renderer,
)
from .signal import AbortSignal

__all__ = ["UsageError", "main"]

THINKING_LEVELS = ("off", "minimal", "low", "medium", "high", "xhigh")
DEMO_DELAY_ENV = "AGENTCORE_DEMO_DELAY"


class UsageError(Exception):
    """A user mistake: printed as one line, exit code 2."""


class _Interrupted(Exception):
    """A second Ctrl-C: stop now (exit code 130)."""


# --------------------------------------------------------------------------- argument parsing


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see '{self.prog} --help')")


def _debug_requested(argv: Sequence[str]) -> bool:
    return "--debug" in argv


# --------------------------------------------------------------------------- models, keys, tools


@dataclass
class Setup:
    """What a run needs, resolved from the command line."""

    model: Model
    stream_fn: Callable[..., Any] | None
    tools: list[AgentTool]
    config: AgentLoopConfig
    system_prompt: str
    demo: bool = False


def _demo_delay() -> float:
    raw = os.environ.get(DEMO_DELAY_ENV, "0.01")
    try:
        return max(0.0, float(raw))
    except ValueError:
        raise UsageError(f"{DEMO_DELAY_ENV} must be a number of seconds, not {raw!r}") from None


def resolve_model(spec: str, base_url: str | None = None) -> Model:
    """``PROVIDER/MODEL`` (catalog, or any OpenAI-compatible server with ``base_url``)."""
    from agentcore.providers import MODELS, PROVIDER_BASE_URLS, custom_openai_model, get_model

    from .demo import DEMO_MODEL

    if spec == "demo":
        return DEMO_MODEL
    provider, sep, model_id = spec.partition("/")
    if not sep or not provider or not model_id:
        raise UsageError(f"--model must be PROVIDER/MODEL (e.g. anthropic/claude-sonnet-4-5, "
                         f"ollama/llama3.2) or 'demo', not {spec!r}")
    if base_url is not None:
        if not base_url.startswith(("http://", "https://")):
            raise UsageError(f"--base-url must be an http:// or https:// URL, not {base_url!r}")
        try:
            catalog = get_model(provider, model_id)
        except KeyError:
            return custom_openai_model(model_id, base_url, provider=provider)
        if catalog.api == "openai-completions":
            return dataclasses.replace(catalog, base_url=base_url)
        return custom_openai_model(model_id, base_url, provider=provider, name=catalog.name,
                                   reasoning=catalog.reasoning, cost=catalog.cost,
                                   context_window=catalog.context_window, max_tokens=catalog.max_tokens)
    catalog_providers = {p for p, _ in MODELS}
    if provider in catalog_providers:
        try:
            return get_model(provider, model_id)
        except KeyError as exc:
            raise UsageError(str(exc.args[0]) if exc.args else str(exc)) from None
    if provider in PROVIDER_BASE_URLS:
        return custom_openai_model(model_id, provider=provider)
    known = sorted(catalog_providers | set(PROVIDER_BASE_URLS))
    raise UsageError(f"unknown provider {provider!r} (known: {', '.join(known)}); for any other "
                     f"OpenAI-compatible server pass --base-url URL")


def resolve_api_key(model: Model, api_key_env: str | None) -> str | None:
    """The key from ``--api-key-env`` or the provider's usual variable; a missing one is a
    usage error naming the variable to set."""
    from agentcore.providers import ENV_KEYS

    if api_key_env:
        value = os.environ.get(api_key_env)
        if not value:
            raise UsageError(f"the environment variable {api_key_env} (named by --api-key-env) is not set")
        return value
    env = ENV_KEYS.get(model.provider)
    if env is None or model.api == "scripted":
        return None
    value = os.environ.get(env)
    if not value:
        raise UsageError(f"no API key for {model.provider}: set {env} "
                         f"(or name another variable with --api-key-env NAME)")
    return value


def _import_target(target: str, spec: str) -> Any:
    looks_like_file = target.endswith(".py") or "/" in target or os.sep in target
    if looks_like_file:
        path = Path(target).expanduser()
        if not path.is_file():
            raise UsageError(f"--tools {spec}: no such file {target}")
        name = "agentcore_tools_" + "".join(c if c.isalnum() else "_" for c in path.stem)
        module_spec = importlib.util.spec_from_file_location(name, path)
        if module_spec is None or module_spec.loader is None:
            raise UsageError(f"--tools {spec}: cannot load {target} as a Python module")
        module = importlib.util.module_from_spec(module_spec)
        sys.modules[name] = module
        folder = str(path.resolve().parent)
        if folder not in sys.path:
            sys.path.insert(0, folder)
        try:
            module_spec.loader.exec_module(module)
        except Exception as exc:
            del sys.modules[name]
            raise UsageError(f"--tools {spec}: importing {target} failed: {type(exc).__name__}: {exc}") from exc
        return module
    if "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        return importlib.import_module(target)
    except ModuleNotFoundError as exc:
        if exc.name and target.startswith(exc.name):
            raise UsageError(f"--tools {spec}: no module named {exc.name!r} (give an importable module "
                             f"or a path to a .py file)") from exc
        raise UsageError(f"--tools {spec}: importing {target} failed: {exc}") from exc
    except Exception as exc:
        raise UsageError(f"--tools {spec}: importing {target} failed: {type(exc).__name__}: {exc}") from exc


def load_tools(spec: str) -> list[AgentTool]:
    """Tools from ``module:attr`` or ``path/to/file.py:attr``; without ``:attr``, every
    ``AgentTool`` defined at the module's top level. ``attr`` may be a list of tools, one tool,
    or plain functions (made tools with ``@tool``)."""
    from .tool import tool as make_tool

    target, sep, attr = spec.rpartition(":") if ":" in spec else (spec, "", "")
    if not target:
        raise UsageError(f"--tools expects MODULE[:ATTR] or FILE.py[:ATTR], not {spec!r}")
    module = _import_target(target, spec)
    if not attr:
        found = [v for v in vars(module).values() if isinstance(v, AgentTool)]
        if not found:
            raise UsageError(f"--tools {spec}: no AgentTool defined in {target}; name a list with {target}:ATTR")
        return found
    try:
        value = getattr(module, attr)
    except AttributeError:
        raise UsageError(f"--tools {spec}: {target} has no attribute {attr!r}") from None
    items: list[Any]
    if isinstance(value, AgentTool) or callable(value):
        items = [value]
    elif isinstance(value, (list, tuple)):
        items = list(value)
    else:
        raise UsageError(f"--tools {spec}: expected a list of AgentTool or @tool functions, "
                         f"got {type(value).__name__}")
    out: list[AgentTool] = []
    for item in items:
        if isinstance(item, AgentTool):
            out.append(item)
        elif callable(item):
            try:
                out.append(make_tool(item))
            except TypeError as exc:
                raise UsageError(f"--tools {spec}: {exc}") from exc
        else:
            raise UsageError(f"--tools {spec}: {type(item).__name__} {item!r} is not a tool")
    return out


def _tools_from(specs: Sequence[str] | None) -> list[AgentTool]:
    tools: list[AgentTool] = []
    for spec in specs or ():
        tools.extend(load_tools(spec))
    seen: set[str] = set()
    for t in tools:
        if t.name in seen:
            raise UsageError(f"two tools are named {t.name!r}; tool names must be unique")
        seen.add(t.name)
    return tools


def setup_from_args(args: argparse.Namespace, *, model: Model | None = None) -> Setup:
    """Model, stream function, tools and config from the run options."""
    from .demo import DEMO_SYSTEM_PROMPT, demo_model, demo_tools, is_demo_model

    if model is None:
        model = resolve_model(args.model, args.base_url)
    elif args.base_url:
        model = dataclasses.replace(model, base_url=args.base_url)
    tools = _tools_from(args.tools)
    demo = is_demo_model(model)
    if demo:
        stream_fn: Callable[..., Any] | None = demo_model(delay=_demo_delay())
        if not args.tools:
            tools = demo_tools()
        system = args.system if args.system is not None else DEMO_SYSTEM_PROMPT
        api_key = None
    else:
        stream_fn = None
        system = args.system or ""
        api_key = resolve_api_key(model, args.api_key_env)
    limit = getattr(args, "max_turns", None)
    config = AgentLoopConfig(model=model, thinking_level=args.thinking, api_key=api_key,
                             max_tokens=getattr(args, "max_tokens", None),
                             should_stop_after_turn=_turn_limit(limit) if limit else None)
    return Setup(model, stream_fn, tools, config, system, demo)


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of 1 or more, got {text!r}")
    return value


def _turn_limit(limit: int) -> Callable[[Any], bool]:
    """``should_stop_after_turn`` that ends a run after ``limit`` turns (counted in the run's new
    messages, so one hook serves every run of a chat)."""
    def stop(ctx: Any) -> bool:
        return sum(1 for m in ctx.new_messages if getattr(m, "role", None) == "assistant") >= limit
    return stop


# --------------------------------------------------------------------------- running


def _writable(path: Path, what: str = "the transcript") -> Path:
    parent = path.expanduser().resolve().parent
    if not parent.is_dir():
        raise UsageError(f"cannot write {what} to {path}: the directory {parent} does not exist")
    if path.is_dir():
        raise UsageError(f"cannot write {what} to {path}: it is a directory")
    if not os.access(parent, os.W_OK):
        raise UsageError(f"cannot write {what} to {path}: {parent} is not writable")
    return path


def _recorder(path: Path, context: AgentContext, config: AgentLoopConfig) -> Any:
    from .transcript import TranscriptRecorder

    return TranscriptRecorder(_writable(path), context, config)


def event_json(event: AgentEvent) -> Any:
    """One event as JSON for ``--json``: the codec's JSON; a ``message_update`` carries only its
    stream event (the partial message is the fold of the stream events before it)."""
    if isinstance(event, MessageUpdateEvent):
        return {"type": "message_update",
                "assistant_message_event": to_json(event.assistant_message_event, partials=False)}
    return to_json(event, partials=False)


class JsonLines:
    """A listener printing one JSON object per event on stdout."""

    def __init__(self, out: Any = None) -> None:
        self.out = out if out is not None else sys.stdout

    def __call__(self, event: AgentEvent) -> None:
        self.out.write(json.dumps(event_json(event), ensure_ascii=False, separators=(",", ":")) + "\n")
        self.out.flush()


def drive(stream: Iterable[AgentEvent], listeners: Sequence[Callable[[AgentEvent], Any]],
          signal: AbortSignal, on_abort: Callable[[], None] | None = None) -> list[AgentMessage]:
    """Run a sync event stream in a worker thread, handing each event to the listeners; the
    main thread waits and turns the first Ctrl-C into an abort, a second into ``_Interrupted``."""
    outcome: dict[str, Any] = {}
    # The main thread waits on an Event, not Thread.join: a KeyboardInterrupt inside
    # join(timeout) can leave is_alive() false while the worker still runs (CPython 3.11, 3.12),
    # and the run, its transcript included, would be left mid-way.
    done = threading.Event()

    def work() -> None:
        try:
            for event in stream:
                for listen in listeners:
                    listen(event)
            outcome["messages"] = stream.result()  # type: ignore[attr-defined]
        except BaseException as exc:  # handed to the main thread
            outcome["error"] = exc
        finally:
            done.set()

    worker = threading.Thread(target=work, name="agentcore-run", daemon=True)
    worker.start()
    interrupted = False
    while not done.is_set():
        try:
            done.wait(0.1)
        except KeyboardInterrupt:
            if interrupted:
                raise _Interrupted() from None
            interrupted = True
            signal.abort()
            if on_abort is not None:
                on_abort()
    if "error" in outcome:
        raise outcome["error"]
    messages: list[AgentMessage] = outcome.get("messages", [])
    return messages


def _outcome(messages: Sequence[AgentMessage]) -> tuple[int, str]:
    last = next((m for m in reversed(messages) if isinstance(m, AssistantMessage)), None)
    if last is None:
        return 1, "the run produced no reply"
    if last.stop_reason == "aborted":
        return 1, "the run was aborted"
    if last.stop_reason == "error":
        return 1, f"the run failed: {last.error_message}"
    return 0, ""


def _cmd_demo(args: argparse.Namespace) -> int:
    from .demo import DEMO_PROMPT, demo_config, demo_context, demo_model, steer_when_tools_start
    from .clock import now_ms
    from .replay import ReplayDivergence, replay
    from .sync import agent_loop

    if args.record:
        path = Path(args.record)
    else:
        path = Path(tempfile.mkdtemp(prefix="agentcore-demo-")) / "demo.jsonl"
    if args.delay < 0 or args.tool_latency < 0:
        raise UsageError("--delay and --tool-latency must not be negative")
    steering: list[Any] = []
    context = demo_context(tool_latency=args.tool_latency)
    config = demo_config(steering)
    recorder = _recorder(path, context, config)
    render = make_renderer(plain=args.plain)
    print("agentcore demo: a scripted model (no key, no network) drives real Python tools.", flush=True)
    signal = AbortSignal()
    stream = agent_loop(DEMO_PROMPT, context, config, signal, demo_model(delay=args.delay), journal=recorder)
    try:
        messages = drive(stream, [steer_when_tools_start(steering, now_ms), render], signal,
                         on_abort=lambda: render.line("aborting… (Ctrl-C again to quit)", "err"))
    finally:
        recorder.close()
        render.close()
    code, problem = _outcome(messages)
    print(f"\nTranscript: {path}")
    if code:
        print(f"agentcore: {problem}", file=sys.stderr)
        return code
    try:
        result = replay(path)
    except ReplayDivergence as exc:
        print(f"Replay of {path}: DIVERGED\n{exc.report}")
        return 1
    if not result.finished or result.messages != messages:
        print(f"Replay of {path}: {result.steps} steps, but the replayed messages differ from the run's")
        return 1
    print(f"Replay of {path}: {result.steps} steps, identical")
    print(f"Look inside: agentcore transcript show {path}  (or: transcript html {path} -o demo.html)")
    return 0


def _cmd_run(args: argparse.Namespace) -> int:
    from .sync import agent_loop

    setup = setup_from_args(args)
    context = AgentContext(setup.system_prompt, (), setup.tools)
    recorder = _recorder(Path(args.record), context, setup.config) if args.record else None
    render: Callable[[AgentEvent], Any] = JsonLines() if args.json else make_renderer()
    signal = AbortSignal()
    stream = agent_loop(args.prompt, context, setup.config, signal, setup.stream_fn, journal=recorder)

    def on_abort() -> None:
        print("agentcore: aborting… (Ctrl-C again to quit)", file=sys.stderr, flush=True)

    try:
        messages = drive(stream, [render], signal, on_abort)
    finally:
        if recorder is not None:
            recorder.close()
        if isinstance(render, LiveRenderer):
            render.close()
    if recorder is not None and not args.json:
        print(f"Transcript: {args.record}")
    code, problem = _outcome(messages)
    if code:
        print(f"agentcore: {problem}", file=sys.stderr)
    return code


# --------------------------------------------------------------------------- chat


def _numbered(path: Path, n: int) -> Path:
    return path if n == 1 else path.with_name(f"{path.stem}.{n}{path.suffix or '.jsonl'}")


class _Chat:
    """The interactive session: the main thread reads lines, a worker thread runs the agent."""

    def __init__(self, args: argparse.Namespace, setup: Setup) -> None:
        self.args = args
        self.setup = setup
        self.steering: deque[AgentMessage] = deque()
        self.config = dataclasses.replace(setup.config, get_steering_messages=self._poll)
        self.messages: list[AgentMessage] = []
        self.render = make_renderer()
        self.lock = threading.Lock()
        self.running = False
        self.signal: AbortSignal | None = None
        self.worker: threading.Thread | None = None
        self.runs = 0
        self.interrupted = False

    def _poll(self) -> list[AgentMessage]:
        out: list[AgentMessage] = []
        while self.steering:
            out.append(self.steering.popleft())
        return out

    def prompt(self) -> None:
        self.render.line("", "")
        self.render.write("› ", "user")

    def start(self, prompts: list[AgentMessage]) -> None:
        signal = AbortSignal()
        with self.lock:
            self.running = True
            self.signal = signal
        self.worker = threading.Thread(target=self._work, args=(prompts, signal), name="agentcore-chat",
                                       daemon=True)
        self.worker.start()

    def _work(self, prompts: list[AgentMessage], signal: AbortSignal) -> None:
        from .sync import agent_loop

        try:
            while prompts:
                self.runs += 1
                context = AgentContext(self.setup.system_prompt, tuple(self.messages), self.setup.tools)
                recorder = None
                if self.args.record:
                    recorder = _recorder(_numbered(Path(self.args.record), self.runs), context, self.config)
                try:
                    stream = agent_loop(prompts, context, self.config, signal, self.setup.stream_fn,
                                        journal=recorder)
                    for event in stream:
                        self.render(event)
                    self.messages.extend(stream.result())
                finally:
                    if recorder is not None:
                        recorder.close()
                        self.render.line(f"transcript: {recorder.path}", "dim")
                if signal.aborted:
                    break
                # Lines typed after the run's last steering poll start the next run.
                prompts = self._poll()
                if prompts:
                    self.render.line("(sending what was typed as the run ended)", "dim")
        except Exception as exc:  # keep the session alive
            self.render.line(f"error: {type(exc).__name__}: {exc}", "err")
        finally:
            self.render.close()
            with self.lock:
                self.running = False
                self.signal = None
            self.prompt()

    def steer(self, text: str) -> None:
        from .clock import now_ms

        self.steering.append(UserMessage(text, timestamp=now_ms()))
        self.render.line(f"queued: {text}  (the agent reads it after its current step)", "dim")

    def is_running(self) -> bool:
        with self.lock:
            return self.running

    def abort(self) -> None:
        with self.lock:
            signal = self.signal
        if signal is not None:
            signal.abort()

    def finish(self) -> None:
        self.abort()
        if self.worker is not None:
            self.worker.join(5)

    def _interrupt(self) -> bool:
        """Ctrl-C: abort the run, or (the second in a row) exit. True: exit."""
        if self.interrupted:
            return True
        self.interrupted = True
        if self.is_running():
            self.abort()
            self.render.line("aborting… (Ctrl-C again to exit)", "err")
        else:
            self.render.line("(Ctrl-C again or Ctrl-D to exit)", "dim")
            self.prompt()
        return False

    def _line(self, text: str) -> bool:
        """A line typed: a prompt, or a steering message while a run goes on. True: exit."""
        from .clock import now_ms

        if not text:
            if not self.is_running():
                self.prompt()
            return False
        self.interrupted = False
        if text in ("/exit", "/quit"):
            return True
        if self.is_running():
            self.steer(text)
        else:
            self.start([UserMessage(text, timestamp=now_ms())])
        return False

    def loop(self) -> int:
        s = self.setup
        tools = ", ".join(t.name for t in s.tools) or "none"
        self.render.line(f"agentcore chat · model {s.model.provider}/{s.model.id} · tools: {tools}", "rule")
        self.render.line("Enter sends. Typing while the agent works steers it. Ctrl-C aborts the run; "
                         "Ctrl-C twice or Ctrl-D exits.", "dim")
        self.prompt()
        self.interrupted = False
        pending_interrupt = False
        while True:
            # A Ctrl-C may land anywhere in this loop (while printing too): it is always
            # handled at the top of the next iteration.
            try:
                if pending_interrupt:
                    pending_interrupt = False
                    if self._interrupt():
                        break
                    continue
                try:
                    line = input("")
                except EOFError:
                    if self.is_running():
                        self.render.line("(end of input: waiting for the run to finish)", "dim")
                        if self.worker is not None:
                            self.worker.join()
                    break
                if self._line(line.strip()):
                    break
            except KeyboardInterrupt:
                pending_interrupt = True
        self.finish()
        self.render.line("bye", "dim")
        return 0


def _cmd_chat(args: argparse.Namespace) -> int:
    setup = setup_from_args(args)
    if args.record:
        _writable(Path(args.record))
    return _Chat(args, setup).loop()


# --------------------------------------------------------------------------- transcripts


def read(path_text: str) -> Any:
    """Read a transcript; every problem is a one-line usage error."""
    from .transcript import TranscriptError, read_transcript

    path = Path(path_text)
    if not path.exists():
        raise UsageError(f"no such file: {path_text}")
    if path.is_dir():
        raise UsageError(f"{path_text} is a directory, not a transcript")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            t = read_transcript(path)
        except TranscriptError as exc:
            raise UsageError(f"{path_text} is not a usable transcript: {exc}") from exc
        except (UnicodeDecodeError, OSError) as exc:
            raise UsageError(f"cannot read {path_text}: {exc}") from exc
    for w in caught:
        print(f"agentcore: note: {path_text}: {w.message}", file=sys.stderr)
    return t


def recorded_events(t: Any) -> list[AgentEvent]:
    """The events the recorded run emitted (``message_update`` left out), from the recording
    itself: what happened then, whatever the code does now."""
    from .transcript import expand

    events: list[AgentEvent] = []
    for entry in t.entries:
        for effect in entry.effects_json:
            if not isinstance(effect, dict) or effect.get("type") != "emit":
                continue
            event = effect.get("event") or {}
            if event.get("type") == "message_update":
                continue
            try:
                decoded = from_json(expand(effect))
            except (CodecError, ValueError, KeyError, TypeError) as exc:
                raise UsageError(f"{t.path} is not a usable transcript: line {entry.line}: "
                                 f"an effect does not decode ({exc})") from exc
            assert isinstance(decoded, Emit)
            events.append(decoded.event)
    return events


def _title(t: Any) -> str:
    return f"Transcript {t.path}"


def _notes(t: Any) -> list[str]:
    notes = []
    if t.torn:
        notes.append("note: the last line was torn (a crash mid-write) and is ignored")
    if t.resumed_from:
        notes.append(f"note: resumed from step(s) {', '.join(map(str, t.resumed_from))}")
    return notes


def _cmd_show(args: argparse.Namespace) -> int:
    from .render import isatty

    t = read(args.file)
    conv = build_conversation(recorded_events(t))
    color = isatty(sys.stdout) and not os.environ.get("NO_COLOR")
    sys.stdout.write(conversation_text(conv, t.header, title=_title(t), steps=t.steps, color=color,
                                       notes=_notes(t)))
    return 0


def _cmd_html(args: argparse.Namespace) -> int:
    t = read(args.file)
    out = Path(args.output) if args.output else Path(args.file).with_suffix(".html")
    if out.resolve() == Path(args.file).resolve():
        raise UsageError("the HTML file would overwrite the transcript; choose another -o")
    _writable(out, "the HTML page")
    conv = build_conversation(recorded_events(t))
    out.write_text(conversation_html(conv, t.header, title=f"Transcript {Path(args.file).name}",
                                     steps=t.steps, notes=_notes(t)), encoding="utf-8")
    print(f"Wrote {out} ({len(conv.turns)} turns, {len(conv.tool_calls)} tool calls)")
    return 0


def _replay_options(args: argparse.Namespace) -> Any:
    from .replay import ReplayOptions

    return ReplayOptions(ignore_timestamps=args.ignore_timestamps,
                         ignore_system_prompt=args.ignore_system_prompt,
                         tool_calls_only=args.tool_calls_only)


def _cmd_replay(args: argparse.Namespace) -> int:
    from .replay import ReplayDivergence, replay

    t = read(args.file)
    try:
        result = replay(t, options=_replay_options(args))
    except ReplayDivergence as exc:
        print(f"Replay of {args.file}: DIVERGED")
        print(exc.report)
        return 1
    tail = "" if result.finished else " (the recorded run did not finish; 'transcript resume' goes on from there)"
    print(f"Replay of {args.file}: {result.steps} steps, identical{tail}")
    return 0


_TIMESTAMP_KEYS = frozenset({"at", "timestamp"})


def _strip(value: Any, keys: frozenset[str]) -> Any:
    if isinstance(value, dict):
        return {k: _strip(v, keys) for k, v in value.items() if k not in keys}
    if isinstance(value, list):
        return [_strip(v, keys) for v in value]
    return value


def _pretty(value: Any) -> list[str]:
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False).splitlines()


def _what(value: Any) -> str:
    if not isinstance(value, dict):
        return repr(value)
    kind = str(value.get("type", "?"))
    event = value.get("event")
    if isinstance(event, dict):
        return f"{kind} {event.get('type', '?')}"
    return kind


def _cmd_diff(args: argparse.Namespace) -> int:
    from .transcript import expand

    a, b = read(args.a), read(args.b)
    keys = frozenset() if args.exact else _TIMESTAMP_KEYS

    def norm(value: Any) -> Any:
        return _strip(expand(value), keys) if keys else expand(value)

    for field in ("model", "system_prompt", "tools", "hooks"):
        if norm(a.header.get(field)) != norm(b.header.get(field)):
            print(f"header: {field} differs")
    turn = 0
    for ea, eb in zip(a.entries, b.entries):
        turn += sum(1 for e in ea.effects_json if isinstance(e, dict) and e.get("type") == "emit"
                    and (e.get("event") or {}).get("type") == "turn_start")
        ia, ib = norm(ea.input_json), norm(eb.input_json)
        if ia != ib:
            print(f"first divergence at step {ea.step} (turn {turn}): the input differs "
                  f"({_what(ia)} in {args.a}, {_what(ib)} in {args.b})")
            _print_diff(ia, ib, args.a, args.b)
            return 1
        fa, fb = norm(ea.effects_json), norm(eb.effects_json)
        if fa != fb:
            k = next((i for i, (x, y) in enumerate(zip(fa, fb)) if x != y), min(len(fa), len(fb)))
            x = fa[k] if k < len(fa) else None
            y = fb[k] if k < len(fb) else None
            print(f"first divergence at step {ea.step} (turn {turn}): effect {k} differs "
                  f"({_what(x) if x is not None else 'nothing'} in {args.a}, "
                  f"{_what(y) if y is not None else 'nothing'} in {args.b})")
            _print_diff(x, y, args.a, args.b)
            return 1
    if a.steps != b.steps:
        shorter, longer = (args.a, args.b) if a.steps < b.steps else (args.b, args.a)
        n = min(a.steps, b.steps)
        print(f"first divergence at step {n + 1}: {shorter} ends after step {n}, "
              f"{longer} goes on to step {max(a.steps, b.steps)}")
        return 1
    print(f"{args.a} and {args.b}: {a.steps} steps, identical")
    return 0


def _print_diff(x: Any, y: Any, name_a: str, name_b: str) -> None:
    lines = difflib.unified_diff(_pretty(x), _pretty(y), fromfile=name_a, tofile=name_b, lineterm="", n=3)
    for line in lines:
        print(line)


def _find_llm_request(t: Any, n: int) -> tuple[int, CallLlm] | None:
    for entry in reversed(t.entries[:n]):
        for i in range(len(entry.effects_json) - 1, -1, -1):
            if entry.effects_json[i].get("type") == "call_llm":
                effect = entry.effects[i]
                assert isinstance(effect, CallLlm)
                return entry.step, effect
    return None


def _http_request(req: CallLlm) -> Any:
    """The HTTP request a provider codec builds for this call (no API key), or ``None``."""
    from agentcore.providers import CODECS

    codec = CODECS.get(req.model.api)
    if codec is None:
        return None
    try:
        request = codec.build_request(req.model, LlmContext(req.system_prompt, tuple(req.messages), req.tools),
                                      StreamOptions(thinking_level=req.thinking_level))
    except Exception:
        return None
    return {"method": request.method, "url": request.url, "body": request.body}


def _brief(m: Any) -> str:
    role = getattr(m, "role", type(m).__name__)
    if isinstance(m, AssistantMessage):
        calls = "".join(f" → {c.name}({format_args(c.arguments, 60)})" for c in m.tool_calls)
        text = " ".join(m.text.split())
        extra = f" [{m.stop_reason}: {m.error_message}]" if m.stop_reason in ("error", "aborted") else ""
        return f"{role}: {text[:100]}{calls}{extra}"
    if isinstance(m, ToolResultMessage):
        return f"{role} {m.tool_name}: {' '.join(m.text.split())[:100]}" + (" [error]" if m.is_error else "")
    return f"{role}: {' '.join(message_text(m).split())[:120]}"


def _cmd_state(args: argparse.Namespace) -> int:
    from .replay import state_at

    t = read(args.file)
    n = args.step if args.step >= 0 else t.steps + 1 + args.step
    if not 0 <= n <= t.steps:
        raise UsageError(f"--step {args.step} is not in {args.file} (it has steps 0..{t.steps})")
    state = state_at(t, n)
    found = _find_llm_request(t, n)
    if args.json:
        out = {"step": n, "steps": t.steps, "phase": state.phase.name, "state": to_json(state),
               "llm_request": to_json(found[1]) if found else None,
               "llm_request_step": found[0] if found else None,
               "http_request": _http_request(found[1]) if found else None}
        print(json.dumps(out, ensure_ascii=False, indent=2))
        return 0
    print(f"{args.file}: state after step {n} of {t.steps}")
    if n:
        entry = t.entries[n - 1]
        print(f"input at step {n}: {_what(entry.input_json)}")
    print(f"phase: {state.phase.name}")
    run = state.run
    print(f"model: {run.model.provider}/{run.model.id}, thinking {run.thinking_level}, "
          f"tools: {', '.join(s.name for s in run.tools) or 'none'}")
    print(f"context: {len(run.messages)} messages ({len(run.new_messages)} added by this run)")
    for i, m in enumerate(run.messages):
        print(f"  [{i}] {_brief(m)}")
    if run.aborted:
        print("the run was aborted")
    if found is None:
        print("\nno model call was made up to this step")
        return 0
    at, req = found
    print(f"\nLLM request in force (call_llm id {req.id}, asked at step {at}):")
    print(json.dumps(to_json(req), ensure_ascii=False, indent=2))
    http = _http_request(req)
    if http is not None:
        print(f"\nas HTTP ({http['method']} {http['url']}, without the API key):")
        print(json.dumps(http["body"], ensure_ascii=False, indent=2))
    return 0


def _cmd_fork(args: argparse.Namespace) -> int:
    from .replay import fork

    t = read(args.file)
    if not 0 <= args.step <= t.steps:
        raise UsageError(f"--step {args.step} is not in {args.file} (it has steps 0..{t.steps})")
    out = Path(args.output)
    if out.exists() and not args.force:
        raise UsageError(f"{out} exists; choose another -o or pass --force")
    if out.exists() and out.resolve() == Path(args.file).resolve():
        raise UsageError("the fork would overwrite its source; choose another -o")
    _writable(out, "the fork")
    fork(t, args.step, out)
    print(f"Wrote {out}: steps 1..{args.step} of {args.file}. "
          f"Go on from there with: agentcore transcript resume {out} [--model ...] [--tools ...]")
    return 0


_POLLS = frozenset({"get_steering_messages", "get_follow_up_messages", "get_api_key"})


def _cmd_resume(args: argparse.Namespace) -> int:
    from .demo import is_demo_model
    from .replay import ReplayDivergence
    from .resuming import resume
    from .secrets import REDACTED

    t = read(args.file)
    header_model: Model | None = None
    try:
        decoded = from_json(t.header.get("model"))
        header_model = decoded if isinstance(decoded, Model) else None
        if header_model is not None and header_model.headers:  # a redacted header is not sent
            kept = {k: v for k, v in header_model.headers.items() if v != REDACTED}
            header_model = dataclasses.replace(header_model, headers=FrozenDict(kept) if kept else None)
    except (CodecError, ValueError, TypeError):
        header_model = None
    if args.model:
        setup = setup_from_args(args)
    elif header_model is None:
        raise UsageError(f"{args.file} names no usable model; pass --model PROVIDER/MODEL")
    elif header_model.api == "scripted" and not is_demo_model(header_model):
        raise UsageError(f"{args.file} was recorded with a scripted model ({header_model.id}); "
                         f"pass --model PROVIDER/MODEL to go on with a real one")
    else:
        setup = setup_from_args(args, model=header_model)
    recorded_tools = [str(x.get("name")) for x in t.header.get("tools") or () if isinstance(x, dict)]
    have = {tool.name for tool in setup.tools}
    missing = [name for name in recorded_tools if name not in have]
    if missing:
        raise UsageError(f"the run used the tool(s) {', '.join(missing)}: pass --tools MODULE[:ATTR] "
                         f"providing them")
    hooks = set(t.header.get("hooks") or ())
    unsupported = sorted(hooks - _POLLS)
    if unsupported:
        raise UsageError(f"the run used the hook(s) {', '.join(unsupported)}, which the command line "
                         f"cannot provide; resume it from Python (interpreters.replay.resume)")
    config = dataclasses.replace(setup.config, get_steering_messages=lambda: [],
                                 get_follow_up_messages=lambda: [])
    render: Callable[[AgentEvent], Any] = JsonLines() if args.json else make_renderer()
    if isinstance(render, LiveRenderer):
        turns = sum(1 for e in t.entries for x in e.effects_json if isinstance(x, dict)
                    and x.get("type") == "emit" and (x.get("event") or {}).get("type") == "turn_start")
        render.turn = turns
        render.assistant_seen = True
        render.line(f"── resuming {args.file} after step {t.steps} (turn {turns})", "rule")
    signal = AbortSignal()
    try:
        stream = resume(args.file, config, setup.tools, stream_fn=setup.stream_fn, signal=signal)
    except ReplayDivergence as exc:
        print(f"agentcore: {args.file} no longer replays with this code, so it cannot be resumed:",
              file=sys.stderr)
        print(exc.report, file=sys.stderr)
        return 1
    try:
        messages = drive(stream, [render], signal)
    finally:
        if isinstance(render, LiveRenderer):
            render.close()
    if not args.json:
        print(f"Resumed {args.file}: the run has {len(messages)} new messages; the transcript was appended to.")
    code, problem = _outcome(messages)
    if code:
        print(f"agentcore: {problem}", file=sys.stderr)
    return code


# --------------------------------------------------------------------------- the parser


def _run_options(p: argparse.ArgumentParser, *, model_required: bool, json_flag: bool) -> None:
    p.add_argument("--model", "-m", required=model_required, metavar="PROVIDER/MODEL",
                   help="catalog model (e.g. anthropic/claude-sonnet-4-5, openai/gpt-4o-mini), "
                        "an OpenAI-compatible one (ollama/llama3.2, or any name with --base-url), "
                        "or 'demo' for the offline scripted model")
    p.add_argument("--system", "-s", metavar="TEXT", help="system prompt")
    p.add_argument("--tools", "-t", action="append", metavar="MODULE[:ATTR]",
                   help="tools from an importable module or a .py file: ATTR is a list of AgentTool "
                        "or @tool functions; without :ATTR every AgentTool in the module (repeatable)")
    p.add_argument("--thinking", choices=THINKING_LEVELS, default="off", help="thinking level (default off)")
    p.add_argument("--base-url", metavar="URL",
                   help="send the requests to this OpenAI-compatible server (…/v1)")
    p.add_argument("--api-key-env", metavar="NAME",
                   help="environment variable holding the API key (default: the provider's usual one)")
    p.add_argument("--max-tokens", type=_positive, metavar="N",
                   help="at most N output tokens per model reply")
    p.add_argument("--max-turns", type=_positive, metavar="N", default=None,
                   help="stop a run after N turns (model replies); default: no limit")
    if json_flag:
        p.add_argument("--json", action="store_true",
                       help="print one JSON event per line on stdout instead of rendering")


def _replay_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--ignore-timestamps", action="store_true", help="ignore every 'at' and 'timestamp'")
    p.add_argument("--ignore-system-prompt", action="store_true", help="ignore the system prompt")
    p.add_argument("--tool-calls-only", action="store_true",
                   help="compare only tool names and arguments")


def build_parser() -> argparse.ArgumentParser:
    common = _Parser(add_help=False)
    common.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                        help="show tracebacks of errors")
    parser = _Parser(prog="agentcore", description="Run LLM agents and debug their transcripts.",
                     epilog="Exit codes: 0 ok, 1 the run failed or a replay diverged, 2 usage error.",
                     parents=[common])
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True

    demo = sub.add_parser("demo", parents=[common], help="the offline demo: no key, no network",
                          description="Run the demo agent (a scripted model with a calculator and a unit "
                                      "converter, parallel tool calls, a steering message), record it, "
                                      "and replay the transcript strictly.")
    demo.add_argument("--record", metavar="PATH", help="transcript path (default: demo.jsonl in a new temp dir)")
    demo.add_argument("--delay", type=float, default=0.01, help="seconds between stream events (default 0.01)")
    demo.add_argument("--tool-latency", type=float, default=0.4,
                      help="seconds each tool call takes, to watch it run (default 0.4)")
    demo.add_argument("--plain", action="store_true", help="plain text output even on a terminal")
    demo.set_defaults(func=_cmd_demo)

    run = sub.add_parser("run", parents=[common], help="one run against a real provider",
                         description="Run the agent once on PROMPT and print the run as it streams.")
    run.add_argument("prompt", metavar="PROMPT")
    _run_options(run, model_required=True, json_flag=True)
    run.add_argument("--record", metavar="FILE", help="record the run's transcript to FILE")
    run.set_defaults(func=_cmd_run)

    chat = sub.add_parser("chat", parents=[common], help="an interactive session",
                          description="Chat with the agent. Lines typed while it works are queued as "
                                      "steering messages; Ctrl-C aborts the run; Ctrl-C twice or Ctrl-D "
                                      "exits.")
    _run_options(chat, model_required=True, json_flag=False)
    chat.add_argument("--record", metavar="FILE",
                      help="record each run: the first to FILE, the next ones to FILE's stem.2.jsonl, ...")
    chat.set_defaults(func=_cmd_chat)

    tr = sub.add_parser("transcript", parents=[common], help="inspect, replay, fork and resume transcripts",
                        description="Work with recorded transcripts (JSONL).")
    tsub = tr.add_subparsers(dest="action", metavar="ACTION", parser_class=_Parser)
    tsub.required = True

    show = tsub.add_parser("show", parents=[common], help="the conversation: turns, tool calls, usage",
                           description="Print the recorded conversation: turns, messages, tool calls with "
                                       "arguments and results, usage and cost per turn and in total.")
    show.add_argument("file", metavar="FILE")
    show.set_defaults(func=_cmd_show)

    rp = tsub.add_parser("replay", parents=[common], help="strict replay: exit 0 if identical, 1 if not",
                         description="Re-run the pure core over the recorded inputs and compare every "
                                     "effect with the recording.")
    rp.add_argument("file", metavar="FILE")
    _replay_flags(rp)
    rp.set_defaults(func=_cmd_replay)

    df = tsub.add_parser("diff", parents=[common], help="the first divergence between two transcripts",
                         description="Compare two transcripts step by step and show the first difference "
                                     "(exit 0 identical, 1 different).")
    df.add_argument("a", metavar="A")
    df.add_argument("b", metavar="B")
    df.add_argument("--exact", action="store_true",
                    help="compare timestamps too (by default every 'at' and 'timestamp' is ignored: two "
                         "runs never happen at the same milliseconds)")
    df.set_defaults(func=_cmd_diff)

    stt = tsub.add_parser("state", parents=[common], help="core state and LLM request at a step",
                          description="Print the core's state after step N (0: initial; negative counts "
                                      "from the end) and the exact model request in force at that point.")
    stt.add_argument("file", metavar="FILE")
    stt.add_argument("--step", "-n", type=int, required=True, metavar="N")
    stt.add_argument("--json", action="store_true", help="print everything as one JSON object")
    stt.set_defaults(func=_cmd_state)

    fk = tsub.add_parser("fork", parents=[common], help="a new transcript with the first N steps",
                         description="Write a new transcript holding the header and the first N steps; "
                                     "'transcript resume' goes on live from there.")
    fk.add_argument("file", metavar="FILE")
    fk.add_argument("--step", "-n", type=int, required=True, metavar="N")
    fk.add_argument("--output", "-o", required=True, metavar="NEW")
    fk.add_argument("--force", action="store_true", help="overwrite NEW if it exists")
    fk.set_defaults(func=_cmd_fork)

    rs = tsub.add_parser("resume", parents=[common], help="go on live from the end of a transcript",
                         description="Replay the transcript strictly, then go on live from where it "
                                     "stopped, appending to it. The model defaults to the recorded one; "
                                     "tools must be given again (the transcript holds no code).")
    rs.add_argument("file", metavar="FILE")
    _run_options(rs, model_required=False, json_flag=True)
    rs.set_defaults(func=_cmd_resume)

    ht = tsub.add_parser("html", parents=[common], help="one self-contained HTML page",
                         description="Write the conversation as one self-contained HTML file (no "
                                     "network resources): turns, collapsible tool calls and thinking, "
                                     "usage and cost, errors highlighted.")
    ht.add_argument("file", metavar="FILE")
    ht.add_argument("--output", "-o", metavar="OUT.html", help="default: FILE with .html")
    ht.set_defaults(func=_cmd_html)
    return parser


def _one_line(text: str) -> str:
    """User errors are one line: the first line of a multi-line message, marked as cut."""
    first, _, rest = text.strip().partition("\n")
    return first + (" [...]" if rest.strip() else "")


def main(argv: Sequence[str] | None = None) -> int:
    """The console script. Returns the exit code."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    debug = _debug_requested(args_list)
    try:
        args = build_parser().parse_args(args_list)
        return int(args.func(args))
    except SystemExit as exc:  # --help, or argparse itself
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    except UsageError as exc:
        if debug:
            traceback.print_exc()
        print(f"agentcore: {_one_line(str(exc))}", file=sys.stderr)
        return 2
    except (_Interrupted, KeyboardInterrupt):
        print("\nagentcore: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 1
    except Exception as exc:
        if debug:
            traceback.print_exc()
        print(f"agentcore: {type(exc).__name__}: {_one_line(str(exc))} (run with --debug for the traceback)",
              file=sys.stderr)
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
