"""Frozen JSON values.

JSON-like payloads that enter the core (tool arguments, tool result details, hook payloads) are
frozen once, at the boundary, so that nothing held in the state can be mutated behind the core's
back. Objects become :class:`FrozenDict` (insertion ordered, hashable, read-only), arrays become
tuples, and sets (which JSON has not) tuples in the order of their items' JSON text, so that they
encode the same in every process. :func:`thaw` gives plain ``dict``/``list`` values back for code
that wants to mutate or for validators that insist on ``dict``.

A number JSON has no text for (NaN, an infinity) is frozen as a :class:`NonFinite`, a ``float``
in every way (NaN is not equal to itself, as ever) that the codec writes as a tagged object
(``{"type": "float", "value": "NaN"}``), so that a transcript gives the number back.

>>> args = freeze({"a": [1, {"b": 2}]})
>>> args["a"][1]["b"]
2
>>> thaw(args)
{'a': [1, {'b': 2}]}
>>> freeze(args) is args
True
"""

from __future__ import annotations

from collections.abc import ItemsView, Iterator, Mapping
from typing import Any, Final, final

import msgspec

__all__ = ["FrozenDict", "JSON", "MAX_JSON_DEPTH", "NonFinite", "depth_exceeds", "freeze", "frozen_dict", "thaw"]

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

    def as_dict(self) -> dict[str, Any]:
        """The dict that holds the items (not a copy: never change it), for encoders."""
        return self._data

    def items(self) -> ItemsView[str, Any]:
        """The items, in order (the underlying dict's view: read-only, as fast as a dict's)."""
        return self._data.items()

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


def frozen_dict(items: dict[str, Any]) -> FrozenDict:
    """A :class:`FrozenDict` that holds ``items`` itself, not a copy (for code that has just
    built the dict, frozen values in it: nothing may change it afterwards)."""
    out = FrozenDict()
    out._data = items
    return out


@final
class NonFinite(float):
    """NaN, ``inf`` or ``-inf`` in a frozen value: a ``float`` in every way (NaN is not equal to
    itself), which the codec writes as ``{"type": "float", "value": "NaN"}`` (``"Infinity"``,
    ``"-Infinity"``) and reads back as this number. JSON has no text for these numbers: written
    as plain floats they would come back as ``null``. :func:`freeze` makes them; :func:`thaw`
    gives plain floats back.

    >>> x = freeze(float("nan"))
    >>> isinstance(x, float), x != x, type(thaw(x)).__name__
    (True, True, 'float')
    """

    __slots__ = ()

    @property
    def json_name(self) -> str:
        """The number's name in its JSON tag: ``NaN``, ``Infinity`` or ``-Infinity``."""
        return "NaN" if self != self else "Infinity" if self > 0 else "-Infinity"

    def __repr__(self) -> str:
        return float.__repr__(self)

    def __reduce__(self) -> tuple[Any, ...]:
        return (NonFinite, (float(self),))


NON_FINITE_NAMES: Final = {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}
"""The names of the numbers a :class:`NonFinite` holds, as its JSON tag spells them."""


def _non_finite(value: float) -> Any:
    """``value`` as a frozen value holds it (a :class:`NonFinite` when it is not finite)."""
    return value if value - value == 0.0 else NonFinite(value)


_SCALARS: Final = frozenset({str, int, float, bool, type(None)})
_FROZEN: Final = frozenset({str, int, bool, type(None), FrozenDict, NonFinite})
"""What :func:`freeze` gives back as it is (a plain ``float`` is looked at: it may not be finite)."""

MAX_JSON_DEPTH: Final = 100
"""The deepest nesting of arrays and objects accepted in tool arguments.

``[]`` and ``{"a": 1}`` are 1 level deep, ``{"a": [1]}`` is 2. Argument text nested deeper is
treated as invalid JSON (the call is answered with an error, not run), and so are arguments
given as values that are nested deeper. 100 levels is far more than any real tool needs, and
small enough that code walking such a value recursively (``json``, ``jsonschema``, ``repr``,
equality, a JSON codec: one to three frames a level) stays far below Python's default recursion
limit of 1000, even when called from a deep stack or a worker thread with a small stack.
"""

# What a container is, for the iterative walks below.
_LEAF: Final = 0
_OBJECT: Final = 1
_ARRAY: Final = 2


def _kind(value: Any) -> int:
    kind = type(value)
    if kind in _SCALARS:
        return _LEAF
    if kind is dict or kind is FrozenDict:
        return _OBJECT
    if kind is list or kind is tuple:
        return _ARRAY
    if isinstance(value, Mapping):
        return _OBJECT
    return _LEAF


def _is_frozen_leaf(value: Any) -> bool:
    kind = type(value)
    return kind in _FROZEN or (kind is float and value - value == 0.0)


def depth_exceeds(value: Any, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether ``value`` nests arrays/objects (lists, tuples, mappings) more than ``limit`` deep.

    Iterative, so any depth is fine; stops as soon as the answer is known.

    >>> depth_exceeds([[1]], 2), depth_exceeds([[1]], 1), depth_exceeds("[[[", 0)
    (False, True, False)
    """
    kind = _kind(value)
    if kind == _LEAF:
        return False
    if limit < 1:
        return True
    # One iterator per open container: the stack is as deep as the value, never deeper than limit.
    stack: list[Iterator[Any]] = [_children(value, kind)]
    while stack:
        for child in stack[-1]:
            if type(child) in _SCALARS:
                continue
            child_kind = _kind(child)
            if child_kind != _LEAF:
                if len(stack) >= limit:
                    return True
                stack.append(_children(child, child_kind))
                break
        else:
            stack.pop()
    return False


def _children(value: Any, kind: int) -> Iterator[Any]:
    if kind == _ARRAY:
        return iter(value)
    return iter(value._data.values() if type(value) is FrozenDict else value.values())


class _Frame:
    """A container being rebuilt by :func:`freeze`/:func:`thaw`: its items still to visit, what
    was built so far, and the key the child being built goes under."""

    __slots__ = ("source", "items", "out", "key", "is_object")

    def __init__(self, source: Any, is_object: bool) -> None:
        self.source = source  # kept alive (and its id reserved) while it is being copied
        self.is_object = is_object
        if type(source) is FrozenDict:
            source = source._data
        self.items: Iterator[Any] = iter(source.items() if is_object else source)
        self.out: Any = {} if is_object else []
        self.key: str = ""


def _cycle(value: Any) -> ValueError:
    return ValueError(f"cannot copy a {type(value).__name__} that contains itself")


_SHALLOW: Final = 32  # levels copied by plain recursion; deeper parts go to the explicit stack


def freeze(value: Any) -> Any:
    """Return ``value`` with every dict turned into a :class:`FrozenDict` and every list into a tuple.

    Already frozen values are returned as they are (no copy), so freezing twice is free. Works
    at any depth (values nested deeper than a few dozen levels are walked with an explicit stack,
    not by recursion); a value that contains itself raises ``ValueError``.
    """
    return _freeze(value, _SHALLOW)


def _freeze(value: Any, budget: int) -> Any:
    kind = type(value)
    if kind in _FROZEN:
        return value
    if kind is float:
        return value if value - value == 0.0 else NonFinite(value)
    if not budget:
        return _freeze_deep(value)
    budget -= 1
    if kind is dict or (kind is not tuple and kind is not list and isinstance(value, Mapping)):
        out = FrozenDict()
        out._data = {str(k): _freeze(v, budget) for k, v in value.items()}
        return out
    if kind is tuple:
        for v in value:
            t = type(v)
            if t not in _FROZEN and (t is not float or v - v != 0.0):
                return tuple([_freeze(v, budget) for v in value])
        return value
    if kind is list:
        return tuple([_freeze(v, budget) for v in value])
    if kind is set or kind is frozenset:
        return _sorted_set(value, budget)
    return value


def _sorted_set(value: Any, budget: int) -> tuple[Any, ...]:
    """A set as JSON has it: a tuple of its frozen items, in the order of their JSON text."""
    return tuple(sorted([_freeze(v, budget) for v in value], key=_set_key))


def _set_key(value: Any) -> bytes:
    return msgspec.json.encode(value, enc_hook=_plain, order="sorted")


def _plain(value: Any) -> Any:
    return value._data if type(value) is FrozenDict else repr(value)


def _freeze_deep(value: Any) -> Any:
    keep, value = _freeze_child(value)
    return value if keep else _rebuild(value, _freeze_child, _close_frozen)


def _freeze_child(value: Any) -> tuple[bool, Any]:
    """``(True, frozen)`` when ``value`` needs no rebuilding, else ``(False, value)``."""
    kind = type(value)
    if kind in _FROZEN:
        return True, value
    if kind is float:
        return True, _non_finite(value)
    if kind is tuple:
        return all(map(_is_frozen_leaf, value)), value
    return _kind(value) == _LEAF, value


def _close_frozen(frame: _Frame) -> Any:
    if frame.is_object:
        out = FrozenDict()
        out._data = frame.out
        return out
    return tuple(frame.out)


def thaw(value: Any) -> Any:
    """Return a plain, mutable copy of a frozen JSON value (``dict``, ``list``, and a plain
    ``float`` for a :class:`NonFinite`).

    Works at any depth, like :func:`freeze`; a value that contains itself raises ``ValueError``.
    """
    return _thaw(value, _SHALLOW)


def _thaw(value: Any, budget: int) -> Any:
    kind = type(value)
    if kind in _SCALARS:
        return value
    if kind is NonFinite:
        return float(value)
    if not budget:
        return value if _kind(value) == _LEAF else _rebuild(value, _thaw_child, _close_thawed)
    budget -= 1
    if kind is FrozenDict:
        return {k: _thaw(v, budget) for k, v in value._data.items()}
    if kind is tuple or kind is list:
        return [_thaw(v, budget) for v in value]
    if isinstance(value, Mapping):
        return {k: _thaw(v, budget) for k, v in value.items()}
    return value


def _thaw_child(value: Any) -> tuple[bool, Any]:
    if type(value) is NonFinite:
        return True, float(value)
    return type(value) in _SCALARS or _kind(value) == _LEAF, value


def _close_thawed(frame: _Frame) -> Any:
    return frame.out


def _rebuild(value: Any, child: Any, close: Any) -> Any:
    """Copy the container ``value`` depth first with an explicit stack. ``child(v)`` tells whether
    ``v`` is kept as it is; ``close(frame)`` makes a finished container's copy. Keys of mappings
    become ``str`` when freezing (as :class:`FrozenDict` requires) and are kept when thawing."""
    freezing = close is _close_frozen
    top = _Frame(value, _kind(value) == _OBJECT)
    stack = [top]
    active = {id(value)}
    while True:
        frame = stack[-1]
        out = frame.out
        is_object = frame.is_object
        descended = False
        for item in frame.items:
            if is_object:
                key, item = item
                if freezing:
                    key = str(key)
            keep, item = child(item)
            if keep:
                if is_object:
                    out[key] = item
                else:
                    out.append(item)
                continue
            if id(item) in active:
                raise _cycle(item)
            if is_object:
                frame.key = key
            active.add(id(item))
            stack.append(_Frame(item, _kind(item) == _OBJECT))
            descended = True
            break
        if descended:
            continue
        stack.pop()
        active.discard(id(frame.source))
        built = close(frame)
        if not stack:
            return built
        parent = stack[-1]
        if parent.is_object:
            parent.out[parent.key] = built
        else:
            parent.out.append(built)
