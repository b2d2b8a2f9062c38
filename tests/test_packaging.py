"""Every package of the library is in the distribution (``[tool.setuptools] packages``): a
package left out imports from a checkout and is missing from an installed wheel."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_every_package_is_listed_for_setuptools() -> None:
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {".".join(init.parent.relative_to(ROOT).parts)
             for top in ("agentcore", "interpreters") for init in (ROOT / top).rglob("__init__.py")}
    assert sorted(found - listed) == [] and sorted(listed - found) == []
