"""User mistakes: one line on stderr saying what to do, no traceback, exit code 2."""

from __future__ import annotations

from pathlib import Path

import pytest

from .cli_helpers import clean_env, run_cli


def one_line_error(proc: object, code: int = 2) -> str:
    assert proc.returncode == code, (proc.returncode, proc.stdout, proc.stderr)  # type: ignore[attr-defined]
    err: str = proc.stderr  # type: ignore[attr-defined]
    assert "Traceback" not in err
    assert err.count("\n") == 1 and err.startswith("agentcore: "), err
    return err


@pytest.fixture
def files(tmp_path: Path) -> Path:
    (tmp_path / "broken_tools.py").write_text("import no_such_dependency_xyz\n")
    (tmp_path / "ok_tools.py").write_text("from interpreters import tool\n\n@tool\ndef echo(text: str) -> str:\n"
                                          "    '''Echo.'''\n    return text\n\nNUMBER = 3\nTOOLS = [echo]\n")
    (tmp_path / "not_a_transcript.jsonl").write_text('{"hello": "world"}\n')
    (tmp_path / "some_dir").mkdir()
    return tmp_path


CASES = {
    "no api key": (["run", "hi", "--model", "openai/gpt-4o-mini"], "OPENAI_API_KEY"),
    "no api key anthropic": (["chat", "--model", "anthropic/claude-sonnet-4-5"], "ANTHROPIC_API_KEY"),
    "api key env unset": (["run", "hi", "--model", "ollama/llama3.2", "--api-key-env", "NOPE_KEY_XYZ"],
                          "NOPE_KEY_XYZ"),
    "unknown model": (["run", "hi", "--model", "openai/gpt-4o-minii"], "did you mean: gpt-4o-mini"),
    "unknown provider": (["run", "hi", "--model", "nosuch/model"], "--base-url"),
    "model without provider": (["run", "hi", "--model", "gpt-4o"], "PROVIDER/MODEL"),
    "bad base url": (["run", "hi", "--model", "x/y", "--base-url", "localhost:1234"], "http://"),
    "missing --model": (["run", "hi"], "--model"),
    "no subcommand": ([], "required"),
    "unknown subcommand": (["frobnicate"], "invalid choice"),
    "tools module missing": (["run", "hi", "--model", "demo", "--tools", "no_such_module_xyz:TOOLS"],
                             "no module named 'no_such_module_xyz'"),
    "tools file missing": (["run", "hi", "--model", "demo", "--tools", "/nonexistent/t.py:TOOLS"],
                           "no such file"),
    "tools file does not import": (["run", "hi", "--model", "demo", "--tools", "{dir}/broken_tools.py:TOOLS"],
                                   "no_such_dependency_xyz"),
    "tools attribute missing": (["run", "hi", "--model", "demo", "--tools", "{dir}/ok_tools.py:MISSING"],
                                "has no attribute 'MISSING'"),
    "tools attribute not tools": (["run", "hi", "--model", "demo", "--tools", "{dir}/ok_tools.py:NUMBER"],
                                  "expected a list of AgentTool"),
    "record into a missing directory": (["run", "hi", "--model", "demo", "--record", "/nonexistent/dir/t.jsonl"],
                                        "does not exist"),
    "missing transcript": (["transcript", "show", "/nonexistent/t.jsonl"], "no such file"),
    "transcript is a directory": (["transcript", "replay", "{dir}/some_dir"], "is a directory"),
    "not a transcript": (["transcript", "show", "{dir}/not_a_transcript.jsonl"], "not a usable transcript"),
    "step out of range": (["transcript", "state", "{demo}", "--step", "100000"], "is not in"),
    "fork over an existing file": (["transcript", "fork", "{demo}", "--step", "3", "-o", "{demo}"], "exists"),
    "resume needs tools": (["transcript", "resume", "{demo}", "--model", "ollama/llama3.2",
                            "--tools", "{dir}/ok_tools.py:TOOLS"], "--tools"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_user_mistake(case: str, files: Path, demo_transcript: Path) -> None:
    args, expected = CASES[case]
    args = [a.format(dir=files, demo=demo_transcript) for a in args]
    err = one_line_error(run_cli(*args, env=clean_env()))
    assert expected in err


def test_damaged_transcript(demo_copy: Path) -> None:
    lines = demo_copy.read_text().splitlines(keepends=True)
    lines[5] = lines[5][: len(lines[5]) // 2] + "\n"  # a damaged line in the middle
    demo_copy.write_text("".join(lines))
    for action in ("show", "replay", "html"):
        err = one_line_error(run_cli("transcript", action, str(demo_copy)))
        assert "not a usable transcript: line 6" in err


def test_a_damaged_header_exits_2_naming_line_1(demo_copy: Path) -> None:
    import json

    lines = demo_copy.read_text().splitlines(keepends=True)
    header = json.loads(lines[0])
    header["initial_state"] = {"type": "Nope"}
    demo_copy.write_text(json.dumps(header) + "\n" + "".join(lines[1:]))
    for action in (["show"], ["replay"], ["html"], ["state", "--step", "1"]):
        err = one_line_error(run_cli("transcript", action[0], str(demo_copy), *action[1:]))
        assert err == (f"agentcore: {demo_copy} is not a usable transcript: line 1: the header's initial_state does "
                       "not decode: unknown type tag 'Nope' at $ (register application types with "
                       "agentcore.codec.register)\n"), (action, err)


def test_torn_last_line_is_noted_and_the_rest_used(demo_copy: Path) -> None:
    data = demo_copy.read_bytes()
    demo_copy.write_bytes(data[:-20])  # a write cut by a crash
    proc = run_cli("transcript", "show", str(demo_copy))
    assert proc.returncode == 0
    assert "turn 1" in proc.stdout and "Traceback" not in proc.stderr
    assert proc.stderr.startswith("agentcore: note:") and proc.stderr.count("\n") == 1


def test_debug_shows_the_traceback() -> None:
    proc = run_cli("--debug", "transcript", "show", "/nonexistent/t.jsonl")
    assert proc.returncode == 2
    assert "Traceback" in proc.stderr and "no such file" in proc.stderr
    proc = run_cli("transcript", "show", "/nonexistent/t.jsonl", "--debug")
    assert proc.returncode == 2 and "Traceback" in proc.stderr


HELP = [[], ["demo"], ["run"], ["chat"], ["transcript"], ["transcript", "show"], ["transcript", "replay"],
        ["transcript", "diff"], ["transcript", "state"], ["transcript", "fork"], ["transcript", "resume"],
        ["transcript", "html"]]


def test_every_subcommand_has_help() -> None:
    for words in HELP:
        proc = run_cli(*words, "--help")
        assert proc.returncode == 0, words
        assert proc.stdout.startswith("usage: agentcore"), words
