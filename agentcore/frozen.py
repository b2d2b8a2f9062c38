"""Frozen JSON values.

JSON-like payloads that enter the core (tool arguments, tool result details, hook payloads) are
frozen once, at the boundary, so that nothing held in the state can be mutated behind the core's
back. Objects become :class:`FrozenDict` (insertion ordered, hashable, read-only), arrays become
tuples. :func:`thaw` gives plain ``dict``/``list`` values back for code that wants to mutate or
for validators that insist on ``dict``.

>>> args = freeze({"a": [1, {"b": 2}]})
>>> args["a"][1]["b"]
2
>>> thaw(args)
{'a': [1, {'b': 2}]}
>>> freeze(args) is args
True
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Final, final

__all__ = ["FrozenDict", "JSON", "freeze", "thaw"]

JSON = Any
"""A JSON-like value: ``None``, ``bool``, ``int``, ``float``, ``str``, tuples/lists and mappings."""


@final
class FrozenDict(Mapping[str, Any]):
    """An immutable, insertion-ordered, hashable mapping.

    Iteration order is the order the keys were given in (unlike a ``PMap``), so encoding a
    ``FrozenDict`` gives the same JSON in every process.
    """

    __slots__ = ("_data", "_hash")

    def __init__(self, data: Mapping[str, Any] | None = None) -> None:
        self._data: dict[str, Any] = dict(data) if data else {}
        self._hash: int | None = None

    def __getitem__(self, key: str) -> Any:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __contains__(self, key: object) -> bool:
        return key in self._data

    def get(self, key: str, default: Any = None) -> Any:
        return self._data.get(key, default)

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(tuple(self._data.items()))
        return self._hash

    def __eq__(self, other: object) -> bool:
        if isinstance(other, FrozenDict):
            return self._data == other._data
        if isinstance(other, Mapping):
            return self._data == dict(other)
        return NotImplemented

    def __repr__(self) -> str:
        return f"FrozenDict({self._data!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (FrozenDict, (self._data,))


EMPTY: Final = FrozenDict()


_SCALARS: Final = frozenset({str, int, float, bool, type(None)})


def freeze(value: Any) -> Any:
    """Return ``value`` with every dict turned into a :class:`FrozenDict` and every list into a tuple.

    Already frozen values are returned as they are (no copy), so freezing twice is free.
    """
    kind = type(value)
    if kind in _SCALARS or kind is FrozenDict:
        return value
    if kind is dict or (kind is not tuple and kind is not list and isinstance(value, Mapping)):
        out = FrozenDict()
        out._data = {str(k): freeze(v) for k, v in value.items()}
        return out
    if kind is tuple:
        for v in value:
            if type(v) not in _SCALARS and type(v) is not FrozenDict:
                return tuple(freeze(v) for v in value)
        return value
    if kind is list:
        return tuple(freeze(v) for v in value)
    return value


def thaw(value: Any) -> Any:
    """Return a plain, mutable copy of a frozen JSON value (``dict`` and ``list``)."""
    kind = type(value)
    if kind in _SCALARS:
        return value
    if kind is FrozenDict:
        return {k: thaw(v) for k, v in value._data.items()}
    if kind is tuple or kind is list:
        return [thaw(v) for v in value]
    if isinstance(value, Mapping):
        return {k: thaw(v) for k, v in value.items()}
    return value
