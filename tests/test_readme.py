"""The README's examples run as written."""

from __future__ import annotations

import pathlib
import re

README = pathlib.Path(__file__).resolve().parent.parent / "README.md"


def test_readme_python_blocks_run_in_order(capsys: object, tmp_path: pathlib.Path,
                                           monkeypatch: object) -> None:
    monkeypatch.chdir(tmp_path)  # type: ignore[attr-defined]
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    assert len(blocks) >= 5
    namespace: dict[str, object] = {}
    for block in blocks:
        if "def test_" in block:
            continue  # the pytest example; the plugin has its own tests
        exec(compile(block, str(README), "exec"), namespace)
    out = capsys.readouterr().out  # type: ignore[attr-defined]
    assert out.count("2 + 3 = 5") == 3
