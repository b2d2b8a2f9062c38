"""What the commands of ``agentcore`` share: usage errors, resolving the model, the API key
and the tools from the command line (:func:`setup_from_args`), the options of a run, and
driving a run in a worker thread so that Ctrl-C aborts it (:func:`drive`)."""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import os
import shlex
import sys
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

from agentcore import (
    AgentContext,
    AgentEvent,
    AgentLoopConfig,
    AgentMessage,
    AgentTool,
    Approve,
    AssistantMessage,
    Decision,
    Deny,
    MessageUpdateEvent,
    Model,
    PendingCall,
    ToolOutput,
)
from agentcore.codec import to_json
from agentcore.records import replace

from ..signal import AbortSignal

__all__ = [
    "DECISION_HELP",
    "DEMO_DELAY_ENV",
    "EXIT_SUSPENDED",
    "Interrupted",
    "JsonLines",
    "Parser",
    "Setup",
    "THINKING_LEVELS",
    "UsageError",
    "ask_decision",
    "drive",
    "event_json",
    "import_target",
    "load_tools",
    "open_recorder",
    "positive",
    "resolve_api_key",
    "resolve_model",
    "resume_options",
    "run_options",
    "run_outcome",
    "setup_from_args",
    "suspension_report",
    "writable",
]


THINKING_LEVELS = ("off", "minimal", "low", "medium", "high", "xhigh")
DEMO_DELAY_ENV = "AGENTCORE_DEMO_DELAY"
EXIT_SUSPENDED = 3
"""The exit code of a command whose run ends suspended: tool calls wait for a decision (neither
a success, 0, nor a failure, 1)."""


class UsageError(Exception):
    """A user mistake: printed as one line, exit code 2."""


class Interrupted(Exception):
    """A second Ctrl-C: stop now (exit code 130)."""


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see '{self.prog} --help')")


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
            return replace(catalog, base_url=base_url)
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


def import_target(target: str, spec: str, option: str = "--tools") -> Any:
    """The module ``target`` names (an importable name, or a path to a ``.py`` file); problems are
    usage errors naming ``option`` and ``spec``."""
    looks_like_file = target.endswith(".py") or "/" in target or os.sep in target
    if looks_like_file:
        path = Path(target).expanduser()
        if not path.is_file():
            raise UsageError(f"{option} {spec}: no such file {target}")
        name = "agentcore_tools_" + "".join(c if c.isalnum() else "_" for c in path.stem)
        module_spec = importlib.util.spec_from_file_location(name, path)
        if module_spec is None or module_spec.loader is None:
            raise UsageError(f"{option} {spec}: cannot load {target} as a Python module")
        module = importlib.util.module_from_spec(module_spec)
        sys.modules[name] = module
        folder = str(path.resolve().parent)
        if folder not in sys.path:
            sys.path.insert(0, folder)
        try:
            module_spec.loader.exec_module(module)
        except Exception as exc:
            del sys.modules[name]
            raise UsageError(f"{option} {spec}: importing {target} failed: {type(exc).__name__}: {exc}") from exc
        return module
    if "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        return importlib.import_module(target)
    except ModuleNotFoundError as exc:
        if exc.name and target.startswith(exc.name):
            raise UsageError(f"{option} {spec}: no module named {exc.name!r} (give an importable module "
                             f"or a path to a .py file)") from exc
        raise UsageError(f"{option} {spec}: importing {target} failed: {exc}") from exc
    except Exception as exc:
        raise UsageError(f"{option} {spec}: importing {target} failed: {type(exc).__name__}: {exc}") from exc


def load_tools(spec: str) -> list[AgentTool]:
    """Tools from ``module:attr`` or ``path/to/file.py:attr``; without ``:attr``, every
    ``AgentTool`` defined at the module's top level. ``attr`` may be a list of tools, one tool,
    or plain functions (made tools with ``@tool``)."""
    from ..tool import tool as make_tool

    target, sep, attr = spec.rpartition(":") if ":" in spec else (spec, "", "")
    if not target:
        raise UsageError(f"--tools expects MODULE[:ATTR] or FILE.py[:ATTR], not {spec!r}")
    module = import_target(target, spec)
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


def _with_mcp_tools(tools: list[AgentTool], commands: Sequence[str] | None, urls: Sequence[str] | None
                    ) -> list[AgentTool]:
    """``tools`` and the tools of the MCP servers of ``--mcp`` and ``--mcp-url``, each server
    started (or reached) now and closed when the command exits."""
    if not commands and not urls:
        return tools
    import atexit
    import shlex

    from ..mcp import MCPServer, MCPServerError, tools_of

    servers = []
    for spec in commands or ():
        words = shlex.split(spec)
        if not words:
            raise UsageError("--mcp needs a command, as one argument: --mcp \"COMMAND ARGS\"")
        servers.append(MCPServer.stdio(words[0], words[1:], name=spec))
    servers.extend(MCPServer.http(url) for url in urls or ())
    for server in servers:
        try:
            server.open()
        except MCPServerError as exc:
            raise UsageError(str(exc)) from None
        atexit.register(server.close)
    try:
        mcp_tools = tools_of(*servers)
    except ValueError as exc:
        raise UsageError(str(exc).split(": give one of them")[0] + ": tool names must be unique") from None
    taken = {t.name for t in tools}
    clash = [t.name for t in mcp_tools if t.name in taken]
    if clash:
        raise UsageError(f"an MCP server has a tool named {clash[0]!r}, as --tools does; tool names must be unique")
    return [*tools, *mcp_tools]


def setup_from_args(args: argparse.Namespace, *, model: Model | None = None) -> Setup:
    """Model, stream function, tools and config from the run options."""
    from .demo import DEMO_SYSTEM_PROMPT, demo_model, demo_tools, is_demo_model

    if model is None:
        model = resolve_model(args.model, args.base_url)
    elif args.base_url:
        model = replace(model, base_url=args.base_url)
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
    tools = _with_mcp_tools(tools, getattr(args, "mcp", None), getattr(args, "mcp_url", None))
    approve_all = getattr(args, "approve_all", False)
    config = AgentLoopConfig(model=model, thinking_level=args.thinking, api_key=api_key,
                             max_tokens=getattr(args, "max_tokens", None),
                             max_turns=getattr(args, "max_turns", None),
                             max_cost_usd=getattr(args, "max_cost", None),
                             decide_tool_call=_approve_all if approve_all else None)
    return Setup(model, stream_fn, tools, config, system, demo)


def positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of 1 or more, got {text!r}")
    return value


def positive_cost(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected an amount in US dollars above 0, got {text!r}")
    return value


def _approve_all(pending: Any) -> Any:
    """``decide_tool_call`` of ``--approve-all``: every call that waits for an approval is
    approved; a deferred call still waits for its result."""
    return Approve() if pending.waits_for == "approval" else None


def run_options(p: argparse.ArgumentParser, *, model_required: bool, json_flag: bool,
                approve_all_help: str = "run the tool calls that require approval without asking") -> None:
    p.add_argument("--model", "-m", required=model_required, metavar="PROVIDER/MODEL",
                   help="catalog model (e.g. anthropic/claude-sonnet-4-5, openai/gpt-4o-mini), "
                        "an OpenAI-compatible one (ollama/llama3.2, or any name with --base-url), "
                        "or 'demo' for the offline scripted model")
    p.add_argument("--system", "-s", metavar="TEXT", help="system prompt")
    p.add_argument("--tools", "-t", action="append", metavar="MODULE[:ATTR]",
                   help="tools from an importable module or a .py file: ATTR is a list of AgentTool "
                        "or @tool functions; without :ATTR every AgentTool in the module (repeatable)")
    p.add_argument("--mcp", action="append", metavar='"COMMAND ARGS"',
                   help="the tools of an MCP server started with this command, speaking MCP on stdio "
                        "(one argument, quoted; repeatable)")
    p.add_argument("--mcp-url", action="append", metavar="URL",
                   help="the tools of an MCP server reached over Streamable HTTP at URL (repeatable)")
    p.add_argument("--thinking", choices=THINKING_LEVELS, default="off", help="thinking level (default off)")
    p.add_argument("--base-url", metavar="URL",
                   help="send the requests to this OpenAI-compatible server (…/v1)")
    p.add_argument("--api-key-env", metavar="NAME",
                   help="environment variable holding the API key (default: the provider's usual one)")
    p.add_argument("--max-tokens", type=positive, metavar="N",
                   help="at most N output tokens per model reply")
    p.add_argument("--max-turns", type=positive, metavar="N", default=None,
                   help="stop a run after N turns (model replies); default: no limit")
    p.add_argument("--max-cost", type=positive_cost, metavar="USD", default=None,
                   help="stop a run after the turn that brings its cost to USD dollars or more "
                        "(from the usage the model reports); default: no limit")
    p.add_argument("--approve-all", action="store_true", help=approve_all_help)
    if json_flag:
        p.add_argument("--json", action="store_true",
                       help="print one JSON event per line on stdout instead of rendering")


# --------------------------------------------------------------------------- running


def writable(path: Path, what: str = "the transcript") -> Path:
    parent = path.expanduser().resolve().parent
    if not parent.is_dir():
        raise UsageError(f"cannot write {what} to {path}: the directory {parent} does not exist")
    if path.is_dir():
        raise UsageError(f"cannot write {what} to {path}: it is a directory")
    if not os.access(parent, os.W_OK):
        raise UsageError(f"cannot write {what} to {path}: {parent} is not writable")
    return path


def open_recorder(path: Path, context: AgentContext, config: AgentLoopConfig) -> Any:
    from ..transcript import TranscriptRecorder

    return TranscriptRecorder(writable(path), context, config, overwrite=True)  # --record names the file to write


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
    main thread waits and turns the first Ctrl-C into an abort, a second into ``Interrupted``."""
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
                raise Interrupted() from None
            interrupted = True
            signal.abort()
            if on_abort is not None:
                on_abort()
    if "error" in outcome:
        raise outcome["error"]
    messages: list[AgentMessage] = outcome.get("messages", [])
    return messages


def run_outcome(messages: Sequence[AgentMessage]) -> tuple[int, str]:
    last = next((m for m in reversed(messages) if isinstance(m, AssistantMessage)), None)
    if last is None:
        return 1, "the run produced no reply"
    if last.stop_reason == "aborted":
        return 1, "the run was aborted"
    if last.stop_reason == "error":
        return 1, f"the run failed: {last.error_message}"
    return 0, ""


DECISION_HELP = ("(per call: --approve ID, or --approve 'ID={...}' to run it with other arguments (JSON); "
                 "--deny ID[:REASON]; --output ID=TEXT, the result of a call that waits for one; or --approve-all, "
                 "--deny-all[=REASON] for every call; without any of these, on a terminal, it asks about each call)")
"""How ``agentcore transcript resume`` takes decisions, as the report of a suspended run says it."""


def resume_options(args: argparse.Namespace, *, model: bool = False) -> list[str]:
    """The options of the command line ``args`` that ``agentcore transcript resume`` needs again
    to go on with the run: ``--tools`` (a transcript holds no code), ``--api-key-env``, and with
    ``model`` (a command that overrode the recorded model) ``--model`` and ``--base-url``."""
    out: list[str] = []
    if model and getattr(args, "model", None):
        out += ["--model", args.model]
        if getattr(args, "base_url", None):
            out += ["--base-url", args.base_url]
    for spec in getattr(args, "tools", None) or ():
        out += ["--tools", spec]
    if getattr(args, "api_key_env", None):
        out += ["--api-key-env", args.api_key_env]
    return out


def suspension_report(pending: Sequence[PendingCall], transcript: str | None, *, unrecorded: str = "",
                      answered: Mapping[str, Decision] | None = None, options: Sequence[str] = ()) -> str:
    """What a command prints (on stderr) when its run ends suspended: each waiting call (id,
    tool, arguments, what it waits for and why), then what can decide the calls: with the
    ``transcript`` that ends at the suspension, the ``agentcore transcript resume`` command that
    decides them there (``options``: what it needs again, see :func:`resume_options`), and the
    Python call that does the same; without one, ``unrecorded``. ``answered``: decisions typed
    for some calls but not applied (a run goes on only with a decision for every call)."""
    from agentcore.frozen import thaw

    from ..render.conversation import decision_text

    n = len(pending)
    lines = [f"agentcore: the run is suspended: {n} tool call{'s wait' if n != 1 else ' waits'} for a decision; "
             f"none was approved or denied:"]
    for p in pending:
        arguments = json.dumps(thaw(p.arguments), ensure_ascii=False, default=str)
        waits = "an approval" if p.waits_for == "approval" else "its result"
        line = f"  {p.tool_call_id} {p.tool_name} {arguments} waits for {waits} ({p.reason})"
        decision = (answered or {}).get(p.tool_call_id)
        if decision is not None:
            line += (f"; answered: {decision_text(p, decision)}, not applied (a run goes on only with a decision "
                     f"for every call)")
        lines.append(line)
    if transcript is None:
        lines.append(f"agentcore: {unrecorded}")
        return "\n".join(lines) + "\n"
    decide: list[str] = []
    for p in pending:
        decide += ["--approve", p.tool_call_id] if p.waits_for == "approval" else ["--output", f"{p.tool_call_id}=TEXT"]
    command = " ".join(map(shlex.quote, ["agentcore", "transcript", "resume", transcript, *options, *decide]))
    name = json.dumps(transcript, ensure_ascii=False)
    example = ", ".join(f"{json.dumps(p.tool_call_id, ensure_ascii=False)}: "
                        f"{'Approve()' if p.waits_for == 'approval' else 'ToolOutput(result)'}" for p in pending)
    lines += [
        f"agentcore: {transcript} ends at this suspension; decide its calls with:",
        f"  {command}",
        f"  {DECISION_HELP}",
        "agentcore: or from Python (docs/approvals.md), with the run's config and tools:",
        f"  resume_suspended(resume({name}, config, tools).suspension, {{{example}}}, "
        f"context=AgentContext(tools=tools), config=config, transcript={name})",
        "  (from interpreters; per call Approve(), Approve(arguments={...}) or Deny(reason) for an approval, "
        "ToolOutput(result) or Deny(reason) for a result)",
    ]
    return "\n".join(lines) + "\n"


def ask_decision(pending: PendingCall, ask: Callable[[str], str | None],
                 say: Callable[[str, str], Any]) -> Decision | None:
    """The decision typed for one waiting call, as ``chat`` and ``transcript resume`` ask for it:
    ``run <tool>(<args>)? [y/N/e]`` (``e``: the arguments to run it with, as JSON) for an
    approval, ``result of <tool>(<args>)? (empty: deny)`` for a deferred call. ``ask(question)``
    gives the line typed (``None``: no answer will come: the input ended, or the run was
    aborted), ``say(text, style)`` shows a line. ``None``: no answer."""
    from agentcore.frozen import thaw

    call = f"{pending.tool_name}({json.dumps(thaw(pending.arguments), ensure_ascii=False)})"
    if pending.waits_for == "result":
        answer = ask(f"result of {call}? (empty: deny) ")
        if answer is None:
            return None
        return ToolOutput(answer) if answer else Deny()
    while True:
        answer = ask(f"run {call}? [y/N/e] ")
        if answer is None:
            return None
        choice = answer.strip().lower()
        if choice in ("y", "yes"):
            return Approve()
        if choice in ("", "n", "no"):
            return Deny("the user did not approve the call")
        if choice in ("e", "edit"):
            edited = ask("arguments (JSON): ")
            if edited is None:
                return None
            try:
                arguments = json.loads(edited)
            except ValueError as exc:
                say(f"not JSON: {exc}", "err")
                continue
            return Approve(arguments=arguments)
        say("answer y, n or e", "dim")
