"""Where two JSON values differ: the one comparison behind a replay's divergence report and a
suspension's match with its recorded run (and its check of what it shows against what would run).

:func:`differences` walks two JSON values together (what :func:`agentcore.codec.to_json` gives:
dicts, lists, strings, numbers, booleans, ``None``) and gives each place where they differ, in
order: objects key by key in the first one's order, then the keys only the second one has; lists
item by item, then their lengths when those differ. A value is equal to another of the same type
and value (``1`` is not ``1.0`` nor ``True``), and NaN is equal to NaN (JSON data holds NaN as
its tag, but a value read otherwise may hold the number itself).

>>> differences({"a": [1, {"b": "x"}], "n": float("nan")}, {"a": [1, {"b": None}, 3], "n": float("nan")}, "$")
[Difference(path='$.a[1].b', left='x', right=None, length=False), Difference(path='$.a', left=2, right=3, length=True)]
>>> first_difference({"a b": 1}, {}, "e")
Difference(path="e['a b']", left=1, right=MISSING, length=False)
"""

from __future__ import annotations

from typing import Any, Final, NamedTuple, final

from .records import path_key

__all__ = ["MISSING", "Difference", "differences", "first_difference"]


@final
class _Missing:
    """What a :class:`Difference` holds for the side where an object has no such key."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Final = _Missing()


class Difference(NamedTuple):
    """One place where two JSON values differ: its ``path`` (from the path the walk was given:
    ``.key`` for a name, ``['a key']`` otherwise, ``[i]`` for an item), what the first value
    (``left``) and the second (``right``) hold there (:data:`MISSING` where one has no such key),
    and whether it is the ``length`` of a list (``left`` and ``right`` are then the lengths)."""

    path: str
    left: Any
    right: Any
    length: bool = False


def differences(left: Any, right: Any, path: str = "", limit: int | None = None) -> list[Difference]:
    """Each place where ``left`` and ``right`` differ, in order, at most ``limit`` of them."""
    out: list[Difference] = []
    _walk(left, right, path, out, limit)
    return out


def first_difference(left: Any, right: Any, path: str = "") -> Difference | None:
    """The first place where ``left`` and ``right`` differ (``None``: they are equal)."""
    found = differences(left, right, path, 1)
    return found[0] if found else None


def _walk(x: Any, y: Any, path: str, out: list[Difference], limit: int | None) -> None:
    if type(x) is type(y) and (x is y or x == y):
        return
    if isinstance(x, dict) and isinstance(y, dict):
        for key in list(x) + [k for k in y if k not in x]:
            if limit is not None and len(out) >= limit:
                return
            _walk(x.get(key, MISSING), y.get(key, MISSING), path_key(path, key), out, limit)
    elif isinstance(x, list) and isinstance(y, list):
        for i, (u, v) in enumerate(zip(x, y)):
            if limit is not None and len(out) >= limit:
                return
            _walk(u, v, f"{path}[{i}]", out, limit)
        if len(x) != len(y) and (limit is None or len(out) < limit):
            out.append(Difference(path, len(x), len(y), True))
    elif not (isinstance(x, float) and isinstance(y, float) and x != x and y != y):  # NaN is NaN
        out.append(Difference(path, x, y))
