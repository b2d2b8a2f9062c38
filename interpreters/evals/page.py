"""An eval report as one self-contained HTML page (no network resources): the pass rates, then per
case and repeat the scores (each with its reason), the facts of the run and a link to the run's
transcript rendered as HTML beside it (``<repeat>.html``, written with the page)."""

from __future__ import annotations

import html
import os
from pathlib import Path
from typing import Any

__all__ = ["write_page"]

_STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:72em;color:#222}
table{border-collapse:collapse;width:100%;margin:1em 0}th,td{border:1px solid #ddd;padding:.3em .5em;
text-align:left;vertical-align:top}th{background:#f4f4f4}.pass{color:#176b25}.fail{color:#b3261e;font-weight:600}
.reason{color:#555;font-size:12px}code{font-size:12px}
"""


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _transcript_page(transcript: Path) -> Path | None:
    """The run's transcript as an HTML page beside it (``None`` when there is no transcript)."""
    from ..cli.transcript import recorded_decisions, recorded_events
    from ..render import build_conversation, conversation_html
    from ..transcript import read_transcript

    if not transcript.exists():
        return None
    t = read_transcript(transcript)
    out = transcript.with_suffix(".html")
    conv = build_conversation(recorded_events(t), recorded_decisions(t))
    out.write_text(conversation_html(conv, t.header, title=f"Transcript {transcript.name}", steps=t.steps),
                   encoding="utf-8")
    return out


def write_page(report: Any, path: Path) -> None:
    """Write ``report`` to ``path`` as HTML, and each run's transcript page beside its transcript."""
    rates = report.pass_rates()
    rows = []
    for run in report.runs:
        view = _transcript_page(Path(run.transcript))
        link = (f'<a href="{_e(Path(os.path.relpath(view, path.parent)).as_posix())}">transcript</a>'
                if view is not None else "")
        scores = "".join(
            f'<div class="{"pass" if s.passed else "fail"}">{_e(key)}: {s.value:g}'
            f'<div class="reason">{_e(s.reason)}</div></div>' for key, s in run.scores.items())
        tools = ", ".join(c["name"] for c in run.facts["tool_calls"])
        status = '<span class="pass">pass</span>' if run.passed else '<span class="fail">fail</span>'
        error = f'<div class="reason">{_e(run.error)}</div>' if run.error else ""
        rows.append(f"<tr><td>{_e(run.case)}</td><td>{run.repeat}</td><td>{status}{error}</td><td>{scores}</td>"
                    f"<td>{run.facts['turns']}</td><td>{_e(tools)}</td><td>{run.facts['cost']:.4f}</td>"
                    f"<td>{run.duration_ms:.0f} ms</td><td>{link}</td></tr>")
    summary = "".join(f"<li>{rate:.0%} <code>{_e(key)}</code></li>" for key, rate in rates.items())
    passed = sum(r.passed for r in report.runs)
    document = (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>Eval report</title>"
            f"<style>{_STYLE}</style></head><body><h1>Eval report</h1>"
            f"<p>{passed} of {len(report.runs)} runs passed ({_e(report.mode or 'eval')}).</p><ul>{summary}</ul>"
            "<table><tr><th>case</th><th>repeat</th><th>result</th><th>scores</th><th>turns</th><th>tools</th>"
            f"<th>cost $</th><th>duration</th><th></th></tr>{''.join(rows)}</table></body></html>\n")
    path.write_text(document, encoding="utf-8")
