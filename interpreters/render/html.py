"""A recorded conversation as one self-contained HTML page (``agentcore transcript html``): no
script, no network resource, every piece of recorded text escaped."""

from __future__ import annotations

import html
import json
from collections.abc import Iterable, Mapping
from typing import Any

from agentcore import TextContent, ThinkingContent, thaw

from .common import UsageTotals, content_text, format_args, message_text, one_line
from .conversation import AssistantEntry, Conversation, UserEntry, header_facts

__all__ = [
    "conversation_html",
]


_CSS = """
:root { --fg:#1d2330; --muted:#667085; --bg:#f6f7f9; --card:#fff; --line:#e3e6ea;
        --user:#1f5fbf; --agent:#1b7f3b; --tool:#9a6700; --err:#c62828; --errbg:#fdecec; }
* { box-sizing: border-box; }
body { margin:0; background:var(--bg); color:var(--fg);
       font:15px/1.5 -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
header, main, footer { max-width: 60rem; margin: 0 auto; padding: 1rem 1.25rem; }
h1 { font-size: 1.3rem; margin: .5rem 0; }
dl.facts { display:grid; grid-template-columns: max-content 1fr; gap:.15rem 1rem; margin:0; }
dl.facts dt { color:var(--muted); } dl.facts dd { margin:0; }
pre, code { font: 13px/1.45 ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace; }
pre { white-space: pre-wrap; word-break: break-word; margin: .25rem 0; }
.turn { border-left: 3px solid var(--line); margin: 1.25rem 0; padding-left: 1rem; }
.turn > h2 { font-size: 1rem; color: var(--muted); margin: 0 0 .5rem; }
.msg { background: var(--card); border: 1px solid var(--line); border-radius: 8px;
       padding: .6rem .8rem; margin: .5rem 0; }
.role { font-weight: 600; font-size: .8rem; text-transform: uppercase; letter-spacing: .04em; }
.user .role { color: var(--user); } .assistant .role { color: var(--agent); }
.other .role { color: var(--muted); }
.text { white-space: pre-wrap; }
.meta, .usage { color: var(--muted); font-size: .85rem; }
details { border: 1px solid var(--line); border-radius: 6px; margin: .4rem 0; background: #fbfbfc; }
details > summary { cursor: pointer; padding: .3rem .6rem; list-style-position: inside; }
details > .body { padding: .2rem .8rem .5rem; border-top: 1px solid var(--line); }
details.thinking > summary { color: var(--muted); font-style: italic; }
details.tool-call > summary .name { color: var(--tool); font-weight: 600; }
details.tool-call.error { border-color: var(--err); background: var(--errbg); }
details.tool-call.error > summary { color: var(--err); }
.error-box { border: 1px solid var(--err); background: var(--errbg); color: var(--err);
             border-radius: 6px; padding: .4rem .6rem; margin: .4rem 0; font-weight: 600; }
.assistant.failed { border-color: var(--err); }
h4 { margin: .4rem 0 0; font-size: .75rem; color: var(--muted); text-transform: uppercase; }
.turn-usage { color: var(--muted); font-size: .85rem; margin-top: .25rem; }
footer { border-top: 1px solid var(--line); }
"""


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def conversation_html(conv: Conversation, header: Mapping[str, Any], *, title: str = "Agent run",
                      steps: int | None = None, notes: Iterable[str] = ()) -> str:
    """One self-contained HTML page (no script, no network resource) for a recorded run:
    a timeline of turns, thinking and tool calls in ``<details>``, usage and cost, errors
    highlighted. Every piece of recorded text is escaped."""
    parts: list[str] = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{_e(title)}</title><style>{_CSS}</style></head><body>",
        f'<header><h1>{_e(title)}</h1><dl class="facts">',
    ]
    facts = header_facts(header)
    if steps is not None:
        facts.append(("steps", f"{steps}" + ("" if conv.finished else " (the run did not finish)")))
    facts.append(("total", f"{len(conv.turns)} turns, {len(conv.tool_calls)} tool calls, {conv.usage}"))
    for k, v in facts:
        parts.append(f"<dt>{_e(k)}</dt><dd>{_e(v)}</dd>")
    system = str(header.get("system_prompt") or "")
    if system:
        parts.append(f'<dt>system prompt</dt><dd><pre class="system">{_e(system)}</pre></dd>')
    parts.append("</dl>")
    for note in notes:
        parts.append(f'<div class="error-box">{_e(note)}</div>')
    parts.append('</header><main class="timeline">')
    for turn in conv.turns:
        parts.append(f'<section class="turn" id="turn-{turn.number}"><h2>Turn {turn.number}</h2>')
        for e in turn.entries:
            if isinstance(e, UserEntry):
                role = "user (queued during the run)" if e.queued else "user"
                parts.append(f'<div class="msg user"><div class="role">{_e(role)}</div>'
                             f'<div class="text">{_e(message_text(e.message))}</div></div>')
            elif isinstance(e, AssistantEntry):
                parts.append(_assistant_html(e))
            else:
                role = getattr(e.message, "role", type(e.message).__name__)
                parts.append(f'<div class="msg other"><div class="role">{_e(role)}</div>'
                             f'<div class="text">{_e(message_text(e.message))}</div></div>')
        parts.append(f'<div class="turn-usage">turn {turn.number}: {_e(turn.usage)}</div></section>')
    state = "finished" if conv.finished else "is suspended" if conv.suspended else "did not finish"
    budget = f" {_e(conv.budget)}." if conv.budget else ""
    parts.append(f"</main><footer><p>Total: {len(conv.turns)} turns, {len(conv.tool_calls)} tool calls, "
                 f"{_e(conv.usage)}. The run {state}.{budget}</p></footer></body></html>")
    return "\n".join(parts) + "\n"


def _assistant_html(e: AssistantEntry) -> str:
    m = e.message
    cls = "msg assistant failed" if e.failed else "msg assistant"
    out = [f'<div class="{cls}"><div class="role">assistant</div>']
    for block in m.content:
        if isinstance(block, ThinkingContent):
            text = "[redacted thinking]" if block.redacted else block.thinking
            out.append('<details class="thinking"><summary>thinking</summary>'
                       f'<div class="body"><pre>{_e(text)}</pre></div></details>')
        elif isinstance(block, TextContent):
            out.append(f'<div class="text">{_e(block.text)}</div>')
    if e.failed:
        out.append(f'<div class="error-box">{_e(m.stop_reason)}: {_e(m.error_message or "")}</div>')
    for c in e.calls:
        result = c.result
        waiting = c.pending if result is None and c.decision is None else None  # not decided yet
        mark = "✗" if c.is_error else "✓" if result is not None else "⏸" if waiting is not None else "…"
        if result is not None:
            preview = one_line(content_text(result.content), 80)
        elif waiting is not None:
            preview = "waits for an approval" if waiting.waits_for == "approval" else "waits for its result"
        else:
            preview = "no result recorded"
        args = json.dumps(thaw(c.call.arguments), ensure_ascii=False, indent=2)
        cls = "tool-call error" if c.is_error else "tool-call"
        out.append(
            f'<details class="{cls}" id="call-{_e(c.call.id)}"><summary>{mark} '
            f'<span class="name">{_e(c.call.name)}</span>(<code>{_e(format_args(c.call.arguments, 80))}</code>)'
            f' → <span class="preview">{_e(preview)}</span></summary><div class="body">'
            f'<h4>arguments</h4><pre class="args">{_e(args)}</pre>'
        )
        if c.pending is not None:
            out.append(f'<h4>waited</h4><pre class="decision">{_e(c.decided)}</pre>')
        if result is not None:
            label = "error" if result.is_error else "result"
            out.append(f'<h4>{label}</h4><pre class="result">{_e(content_text(result.content))}</pre>')
            if result.details is not None:
                details = json.dumps(thaw(result.details), ensure_ascii=False, indent=2, default=str)
                out.append(f'<h4>details</h4><pre class="details">{_e(details)}</pre>')
        out.append(f'<div class="meta">call id {_e(c.call.id)}</div></div></details>')
    u = UsageTotals()
    u.add(m.usage)
    out.append(f'<div class="usage">{_e(m.model or "?")} · stop: {_e(m.stop_reason)} · {_e(u)}</div></div>')
    return "".join(out)
