"""NaN and the infinities in JSON: the tag that stands for each, and the escape that keeps an
application's own object from being read as one.

JSON has no text for NaN, ``inf`` and ``-inf``. Where a free-form value holds one (a
:class:`~agentcore.frozen.NonFinite`), the codec writes ``{"type": "float", "value": "NaN"}``
(``"Infinity"``, ``"-Infinity"``): :data:`TAGS`. An object of the application's own that the
reader would take for such a tag, or for the escape of one, is written escaped:
``{"type": "json", "value": <the object>}``, its items written as usual (:func:`needs_escape`
says which). The reader (:func:`freeze_read`, :func:`untag`) turns a tag into the number and takes an escape's
object as it is (its items read as usual); any other object, ``{"type": "json", ...}`` around
something else too, is data. So an object is escaped exactly when its JSON text would read as
something else, and text written before there were tags reads as it did, but for an object of
exactly a tag's form.

>>> untag([{"type": "float", "value": "-Infinity"}, {"type": "json", "value": {"type": "float", "value": "NaN"}}])
[-inf, {'type': 'float', 'value': 'NaN'}]
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

import msgspec

from .frozen import NON_FINITE_NAMES, NonFinite, freeze, frozen_dict

__all__ = ["TAGS", "finite_json", "freeze_read", "is_tag", "needs_escape", "parse", "plain_json", "tag_of", "untag"]

TAGS: Final = {name: {"type": "float", "value": name} for name in NON_FINITE_NAMES}
"""The tag of each number JSON has no text for, by its name (``NaN``, ``Infinity``,
``-Infinity``). Shared objects: never change them."""


def tag_of(name: str) -> dict[str, Any]:
    """The tag of the number ``name`` (``NaN``, ``Infinity``, ``-Infinity``) as JSON data, a
    new object: what a ``NaN`` in JSON text is read as (``json.loads(text, parse_constant=tag_of)``)."""
    return dict(TAGS[name])


def needs_escape(data: Mapping[str, Any]) -> bool:
    """Whether the object ``data`` (two items, one of them ``type``) would be read as a tag or an
    escape: ``{"type": "float", "value": "NaN"}`` (or ``"Infinity"``, ``"-Infinity"``), or
    ``{"type": "json", "value": X}`` where X is written as one (a ``NonFinite``, or such an object)."""
    if "value" not in data:
        return False
    kind, value = data["type"], data["value"]
    if kind == "float" and type(kind) is str:
        return type(value) is str and value in NON_FINITE_NAMES
    if kind == "json" and type(kind) is str:
        return (type(value) is NonFinite or (isinstance(value, Mapping) and len(value) == 2 and "type" in value
                                             and needs_escape(value)))
    return False


def is_tag(data: dict[str, Any]) -> bool:
    """Whether the JSON object ``data`` is a tag or an escape (what :func:`needs_escape` says of
    the object it stands for, as written)."""
    if len(data) != 2 or "value" not in data:
        return False
    kind, value = data.get("type"), data["value"]
    if kind == "float":
        return type(value) is str and value in NON_FINITE_NAMES
    return kind == "json" and type(value) is dict and is_tag(value)


def untag(data: Any) -> Any:
    """JSON data with each tag turned into its number and each escape into the object it holds."""
    kind = type(data)
    if kind is dict:
        if len(data) == 2 and "type" in data and is_tag(data):
            inner = data["value"]
            if data["type"] == "float":
                return NonFinite(NON_FINITE_NAMES[inner])
            data = inner  # an escape: its object is data, its items are read as usual
        return {k: untag(v) for k, v in data.items()}
    if kind is list:
        return [untag(v) for v in data]
    return data


def freeze_read(value: Any) -> Any:
    """A free-form JSON value read back (JSON data: dicts, lists, scalars) as a frozen value, in
    one walk: each tag becomes its number, each escape the object it holds (its items read as
    usual), every object a ``FrozenDict`` and every list a tuple. What is not JSON data (a value
    frozen already, say) is frozen as :func:`~agentcore.frozen.freeze` freezes it.

    >>> freeze_read({"x": {"type": "float", "value": "NaN"},
    ...              "y": [{"type": "json", "value": {"type": "float", "value": "NaN"}}]})
    FrozenDict({'x': nan, 'y': (FrozenDict({'type': 'float', 'value': 'NaN'}),)})
    """
    try:
        return _read(value)
    except RecursionError:  # deeper than a few hundred levels: the walk that takes any depth
        return freeze(untag(value))


def _read(value: Any) -> Any:
    kind = type(value)
    if kind is dict:
        if len(value) == 2 and "type" in value and is_tag(value):
            inner = value["value"]
            if value["type"] == "float":
                return NonFinite(NON_FINITE_NAMES[inner])
            value = inner  # an escape: its object is data, its items are read as usual
        return frozen_dict({k: _read(v) for k, v in value.items()})  # the keys of JSON data are str
    if kind is list:
        return tuple([_read(v) for v in value])
    if kind is str or kind is int or kind is bool or value is None:
        return value
    return freeze(value)


def plain_json(value: Any) -> Any:
    """``value`` (a mapping, or any JSON value) prepared as a plain JSON value that the reader
    takes for no record and no tag: ``{"type": "json", "value": value}``, frozen (escaped once
    more when that object would read as a tag's escape).

    >>> plain_json({"type": "user"})
    {'type': 'json', 'value': FrozenDict({'type': 'user'})}
    """
    wrapped = {"type": "json", "value": freeze(value)}
    return {"type": "json", "value": wrapped} if needs_escape(wrapped) else wrapped


def finite_json(value: Any) -> Any:
    """Plain JSON data with NaN and infinities as ``None``, as the encoder writes a plain float
    (a ``NonFinite`` has become its tag already)."""
    kind = type(value)
    if kind is float:
        return value if value - value == 0.0 else None
    if kind is dict:
        return {k: finite_json(v) for k, v in value.items()}
    if kind is list or kind is tuple:
        return [finite_json(v) for v in value]
    return value


_decode: Final = msgspec.json.Decoder().decode


def parse(data: bytes | str) -> Any:
    """JSON text (what :func:`encode_bytes` writes) as JSON data: parsed in C, or by the
    ``json`` module for what msgspec refuses (a lone surrogate's escape, and ``NaN``,
    ``Infinity`` and ``-Infinity``, which older transcripts hold: read as their tags)."""
    try:
        return _decode(data)
    except msgspec.DecodeError:
        return json.loads(data, parse_constant=tag_of)
