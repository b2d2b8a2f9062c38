"""Module paths that moved in 0.6.0, kept working for one release.

``import interpreters.scripted`` (and every other path in :data:`MOVED`, with its submodules)
gives the module at its new path, the same module object (so classes, ``isinstance`` and
monkeypatching are shared), and a ``DeprecationWarning`` naming the new path, given once, at the
line that used the old path. One finder on ``sys.meta_path`` does it, installed when
:mod:`interpreters` is imported; there are no files at the old paths. An old path is also an
attribute of the package (``interpreters.scripted.Reply`` after ``import interpreters``, as 0.5's
package had the modules it imported).

>>> import warnings
>>> with warnings.catch_warnings(record=True) as caught:
...     warnings.simplefilter("always")
...     import interpreters.clock
>>> import interpreters.runtime.clock
>>> interpreters.clock is interpreters.runtime.clock
True
>>> str(caught[0].message)
'interpreters.clock moved to interpreters.runtime.clock in agentcore-fx 0.6.0: import it from there'
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import os
import sys
import warnings
from collections.abc import Sequence
from types import ModuleType
from typing import Final

__all__ = ["MOVED", "install", "new_name"]

MOVED: Final = {
    "interpreters.clock": "interpreters.runtime.clock",
    "interpreters.demo": "interpreters.cli.demo",
    "interpreters.driver": "interpreters.runtime.driver",
    "interpreters.gc_pause": "interpreters.runtime.gc_pause",
    "interpreters.http": "interpreters.streams.http",
    "interpreters.resuming": "interpreters.replay.recovery",
    "interpreters.scripted": "interpreters.streams.scripted",
}
"""Old module path → new one (a package's submodules move with it)."""


def new_name(name: str) -> str | None:
    """Where the module ``name`` lives now, if it moved (``None``: it did not).

    >>> new_name("interpreters.http.sync"), new_name("interpreters.sync")
    ('interpreters.streams.http.sync', None)
    """
    for old, new in MOVED.items():
        if name == old or name.startswith(old + "."):
            return new + name[len(old):]
    return None


_MACHINERY: Final = frozenset({__file__, os.path.join(os.path.dirname(__file__), "__init__.py"), importlib.__file__})
"""The files an old path goes through on its way here, besides ``importlib._bootstrap``: this
module, the package's ``__getattr__`` (``interpreters.scripted`` as an attribute) and
``importlib.import_module``."""


def _importer() -> int:
    """The ``stacklevel`` of the line that used an old path, for a warning given by the caller
    of this function: the first frame outside the import machinery, counted as ``warnings.warn``
    counts (it skips the frames of ``importlib._bootstrap``)."""
    level, frame = 2, sys._getframe(2)  # the caller's caller, level 2 if it is not skipped
    while frame.f_back is not None:
        filename = frame.f_code.co_filename
        if filename in _MACHINERY:
            level += 1
        elif not ("importlib" in filename and "_bootstrap" in filename):  # those warnings.warn skips
            break
        frame = frame.f_back
    return level


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        new = new_name(fullname)
        if new is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, _Loader(new))


class _Loader(importlib.abc.Loader):
    """Gives the module at its new path; the import system files it under the old one too."""

    def __init__(self, new: str) -> None:
        self.new = new

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        warnings.warn(f"{spec.name} moved to {self.new} in agentcore-fx 0.6.0: import it from there",
                      DeprecationWarning, stacklevel=_importer())
        module = importlib.import_module(self.new)
        self.spec = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        module.__spec__ = self.spec  # the import system gave it the old path's: it keeps its own


def install() -> None:
    """Put the finder first on ``sys.meta_path`` (once): before the path finder, which would
    load a moved package's submodules a second time under the old name."""
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder())
