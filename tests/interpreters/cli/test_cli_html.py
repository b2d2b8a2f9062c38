"""``agentcore transcript html``: escaping, errors highlighted, and a real headless Chromium
rendering the page (turns shown, a tool call expands on click)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from agentcore import AgentContext, AgentLoopConfig, Model
from interpreters import ScriptedModel, run_agent_loop, tool
from interpreters.streams.scripted import Reply
from interpreters.transcript import TranscriptRecorder

from .cli_helpers import run_cli

EVIL = "<script>alert('x')</script> & \"quotes\""


@tool
def shout(text: str) -> str:
    """Return the text in capitals."""
    return text.upper() + " <b>bold?</b>"


@tool
def explode(reason: str) -> str:
    """Always fails."""
    raise RuntimeError(f"boom: {reason}")


def _record_tricky_run(path: Path) -> None:
    context = AgentContext(f"system {EVIL}", [], [shout, explode])
    config = AgentLoopConfig(model=Model(id="m"))
    model = ScriptedModel([
        Reply(thinking=f"thinking {EVIL}", text=f"calling {EVIL}",
              tool_calls=(("shout", {"text": EVIL}), ("explode", {"reason": "</details><h1>x"}))),
        Reply(text="done"),
    ])
    with TranscriptRecorder(path, context, config) as recorder:
        run_agent_loop(f"prompt {EVIL}", context, config, emit=lambda e: None, stream_fn=model, journal=recorder)


def test_everything_is_escaped_and_errors_stand_out(tmp_path: Path) -> None:
    transcript = tmp_path / "tricky.jsonl"
    _record_tricky_run(transcript)
    out = tmp_path / "tricky.html"
    proc = run_cli("transcript", "html", str(transcript), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    page = out.read_text()
    assert "<script" not in page and "<b>bold" not in page and "</details><h1>" not in page
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt; &amp; &quot;quotes&quot;" in page
    assert '<details class="tool-call error"' in page and "boom: &lt;/details&gt;&lt;h1&gt;x" in page
    assert page.count("<details") == page.count("</details>") == 3  # thinking + two calls


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        found = shutil.which(name)
        if found:
            return found
    return "/usr/bin/chromium" if os.path.exists("/usr/bin/chromium") else None


# Test-only: measure a tool call's result before and after a click on its summary, count the
# turns, and write the findings into the DOM for --dump-dom.
PROBE = """<script>
(function () {
  var d = document.querySelector("details.tool-call");
  var pre = d.querySelector("pre.result");
  function shown(el) { return el.checkVisibility ? el.checkVisibility() : el.getClientRects().length > 0; }
  var before = shown(pre) + "/" + d.open;
  d.querySelector("summary").click();
  var after = shown(pre) + "/" + d.open + "/" + Math.round(pre.getBoundingClientRect().height);
  var m = document.createElement("div");
  m.id = "probe";
  m.textContent = "turns=" + document.querySelectorAll("section.turn").length +
    " visible_turns=" + Array.prototype.filter.call(document.querySelectorAll("section.turn"), shown).length +
    " before=" + before + " after=" + after + " result=" + pre.textContent;
  document.body.appendChild(m);
})();
</script>"""


def _run_chromium(binary: str, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    profile = tmp_path / "chromium-profile"
    profile.mkdir(exist_ok=True)
    cmd = [binary, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
           "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-dev-shm-usage",
           f"--user-data-dir={profile}", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60)


def test_html_in_headless_chromium(demo_transcript: Path, tmp_path: Path) -> None:
    binary = _chromium()
    if binary is None:
        pytest.skip("chromium is not installed (.ci/run installs Debian's chromium package)")
    page = tmp_path / "demo.html"
    assert run_cli("transcript", "html", str(demo_transcript), "-o", str(page)).returncode == 0
    probe = tmp_path / "probe.html"
    probe.write_text(page.read_text().replace("</body>", PROBE + "</body>"))
    try:
        proc = _run_chromium(binary, tmp_path, "--dump-dom", probe.as_uri())
    except (OSError, subprocess.TimeoutExpired) as exc:
        pytest.skip(f"chromium could not be started: {exc}")
    if proc.returncode != 0 or "<html" not in proc.stdout:
        pytest.skip(f"chromium could not be started: exit {proc.returncode}: {proc.stderr.strip()[-300:]}")
    match = re.search(r'<div id="probe">([^<]*)</div>', proc.stdout)
    assert match, proc.stdout[-2000:]
    found = dict(part.split("=", 1) for part in match.group(1).split(" ", 4))
    assert found["turns"] == "3" and found["visible_turns"] == "3"
    assert found["before"] == "false/false"  # collapsed
    shown, is_open, height = found["after"].split("/")
    assert shown == "true" and is_open == "true" and int(height) > 0  # expanded by the click
    assert found["result"] == "120 / 80 = 1.5"
    # And the page as it is (no probe) renders to a screenshot.
    shot = tmp_path / "demo.png"
    proc = _run_chromium(binary, tmp_path, "--window-size=1000,1400", f"--screenshot={shot}", page.as_uri())
    assert proc.returncode == 0 and shot.stat().st_size > 10_000
