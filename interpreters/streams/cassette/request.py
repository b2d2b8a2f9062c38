"""The canonical form of a model request, and what a difference between two of them means.

A model request is what one ``CallLlm`` asks of the model: the model, the thinking level, the
system prompt, the messages the model sees, the tools (name, description, JSON schema) and the
sampling options (temperature, maximum tokens, thinking budgets). The library has no tool-choice
option; nothing else reaches a provider.

Its canonical form keeps only what the model is shown, so two runs that asked the same thing
compare equal:

- volatile fields are left out: timestamps, usage, response ids, provider signatures of thinking
  and text, the answering model's name on each assistant message, a tool's label and flags;
- tool-call ids become positional aliases (``call#1``, ``call#2``, ... in order of first
  appearance), in the calls and in the results that answer them, so a recording made in another
  run, with other ids, still matches;
- secrets are scrubbed as the transcript recorder scrubs them, so a request that holds the run's
  key matches the recording that holds ``[REDACTED]``.

The form is flattened into *leaves*: a path (``messages.3.content.0.text``,
``tools.add.description``, ``options.temperature``) and a JSON value (an empty list or object is
a leaf of its own). A :class:`MatchPolicy` puts every path in one of three classes: a **key**
must be equal for a recording to answer, a **checked** field may differ (the answer is labelled
``drifted`` and the difference reported), an **ignored** one is not looked at.

Canonical messages are computed once per message: :class:`Canonicalizer` extends the longest
history it has already seen (runs and recordings grow their history by appending), so the cost of
one request is the cost of its new messages.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from hashlib import blake2b
from operator import itemgetter
from typing import Any, Final, Literal, TypeAlias

import msgspec

from agentcore.codec import to_json

from ...secrets import scrub

__all__ = [
    "ABSENT",
    "Canonicalizer",
    "Difference",
    "FieldClass",
    "Leaf",
    "MatchPolicy",
    "PRESETS",
    "Request",
    "differences",
    "first_difference",
    "flatten",
    "path_text",
    "shown",
]

FieldClass: TypeAlias = Literal["key", "checked", "ignored"]
Path: TypeAlias = tuple[str, ...]
Leaf: TypeAlias = tuple[Path, Any]

_CLASSES: Final = ("key", "checked", "ignored")


class _Absent:
    """The value of a leaf one side does not have."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "(absent)"


ABSENT: Final = _Absent()


def path_text(path: Path) -> str:
    """A path as written in policies and reports: segments joined by dots."""
    return ".".join(path)


def _pattern(text: str) -> Path:
    if not isinstance(text, str) or not text or any(not part for part in text.split(".")):
        raise ValueError(f"a field pattern is a dot-separated path such as 'tools.*.description', not {text!r}")
    return tuple(text.split("."))


def _matches(pattern: Path, path: tuple[Any, ...]) -> bool:
    if not pattern:
        return not path
    head, rest = pattern[0], pattern[1:]
    if head == "**":
        return any(_matches(rest, path[i:]) for i in range(len(path) + 1))
    return bool(path) and (head == "*" or head == path[0]) and _matches(rest, path[1:])


@dataclass(frozen=True)
class MatchPolicy:
    """Which fields of a request must match (``key``), may differ and are reported (``checked``)
    or are not looked at (``ignored``).

    ``fields`` maps field patterns to a class; a pattern is a dot-separated path where ``*``
    stands for one segment and ``**`` for any number of them (``messages.*.content.*.text``,
    ``tools.*.description``, ``options.**``). The first pattern that matches a path decides;
    the ``base`` preset's own patterns come after yours, and a path no pattern matches gets the
    base's ``default``.

    >>> policy = MatchPolicy("forgiving", {"system_prompt": "key"})
    >>> policy.field_class(("system_prompt",)), policy.field_class(("tools", "add", "description"))
    ('key', 'checked')
    >>> MatchPolicy("structural").field_class(("messages", "0", "content"))
    'checked'
    """

    base: str = "forgiving"
    fields: Mapping[str, FieldClass] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.base not in _PRESET_RULES:
            raise ValueError(f"unknown match preset {self.base!r}: use one of {', '.join(map(repr, PRESETS))}")
        for pattern, cls in dict(self.fields).items():
            _pattern(pattern)
            if cls not in _CLASSES:
                raise ValueError(f"field pattern {pattern!r}: the class must be one of "
                                 f"{', '.join(map(repr, _CLASSES))}, "
                                 f"not {cls!r}")
        default, rules = _PRESET_RULES[self.base]
        object.__setattr__(self, "_rules", tuple((_pattern(p), c) for p, c in dict(self.fields).items()) + rules)
        object.__setattr__(self, "_default", default)
        object.__setattr__(self, "_memo", {})
        object.__setattr__(self, "_message_memo", {})
        object.__setattr__(self, "_indexed", any(part.isdigit() for pattern, _ in self._rules  # type: ignore[attr-defined]
                                                 for part in pattern))

    @classmethod
    def of(cls, match: str | MatchPolicy) -> MatchPolicy:
        """``match`` as a policy: a preset's name or a policy."""
        if isinstance(match, MatchPolicy):
            return match
        if isinstance(match, str):
            return cls(match)
        raise TypeError(f"match must be a preset name ({', '.join(map(repr, PRESETS))}) or a MatchPolicy, "
                        f"not {type(match).__name__}")

    def field_class(self, path: Path) -> FieldClass:
        """The class of the field at ``path``."""
        memo: dict[Path, FieldClass] = self._memo  # type: ignore[attr-defined]
        found = memo.get(path)
        if found is None:
            found = memo[path] = self._classify(path)
        return found

    def message_field_class(self, index: int, path: Path) -> FieldClass:
        """The class of the field at ``path`` of message ``index`` (``messages.<index>.<path>``)."""
        if self._indexed:  # type: ignore[attr-defined]
            return self.field_class(("messages", str(index), *path))
        memo: dict[Path, FieldClass] = self._message_memo  # type: ignore[attr-defined]
        found = memo.get(path)
        if found is None:  # no pattern names an index: every message's field is classed alike
            found = memo[path] = self._classify(("messages", _ANY_INDEX, *path))
        return found

    def _classify(self, path: tuple[Any, ...]) -> FieldClass:
        for pattern, cls in self._rules:  # type: ignore[attr-defined]
            if _matches(pattern, path):
                return cls  # type: ignore[no-any-return]
        return self._default  # type: ignore[attr-defined, no-any-return]


_ANY_INDEX: Final = -1
"""An index in a memo key (no pattern segment, a string, equals it; ``*`` and ``**`` match it)."""


_KEYS_OF_STRUCTURE: Final = tuple((_pattern(p), "key") for p in (
    "messages.*.role", "messages.*.content.*.name", "messages.*.content.*.arguments",
    "messages.*.content.*.arguments.**",
    "messages.*.content.*.id", "messages.*.tool_call_id", "messages.*.tool_name", "tools.*.name"))

_PRESET_RULES: Final[dict[str, tuple[FieldClass, tuple[tuple[Path, FieldClass], ...]]]] = {
    "strict": ("key", ()),
    "forgiving": ("key", tuple((_pattern(p), "checked") for p in (
        "system_prompt", "tools.*.description", "options", "options.**", "messages.*.details",
        "messages.*.details.**"))),
    "structural": ("checked", _KEYS_OF_STRUCTURE),
}
PRESETS: Final = tuple(_PRESET_RULES)
"""The presets: ``strict`` (every field is a key), ``forgiving`` (the default: the system
prompt's wording, tool descriptions, sampling options and result details are checked,
everything else the model's answer depends on is a key) and ``structural`` (only roles, tool
names, tool-call names and arguments, and which result answers which call are keys)."""


@dataclass(frozen=True)
class Difference:
    """One field that differs: its path, the recorded value and the value now (:data:`ABSENT`
    where one side has no such field), and its class under the policy."""

    path: str
    recorded: Any
    now: Any
    field_class: FieldClass = "checked"

    def __str__(self) -> str:
        return f"{self.path}: recorded {shown(self.recorded)}, now {shown(self.now)}"


def shown(value: Any, limit: int = 120) -> str:
    """A value as a report shows it: JSON, cut at ``limit`` characters."""
    text = repr(value) if value is ABSENT else msgspec.json.encode(value).decode()
    return text if len(text) <= limit else text[: limit - 1] + "…"


# -- the canonical form -------------------------------------------------------------------------

_VOLATILE: Final = frozenset({"timestamp", "usage", "response_id", "thinking_signature", "text_signature",
                              "thought_signature"})
_ANSWERED_BY: Final = frozenset({"api", "provider", "model"})
"""On an assistant message: which model gave it (the request's own model is a field)."""


def _message_leaves(data: Any, secrets: Sequence[str], aliases: dict[str, str], log: list[str]
                    ) -> tuple[Any, list[Leaf]]:
    """The role and the canonical leaves of one message (JSON), in one pass: its volatile fields
    left out (on the message and its content blocks; a tool's arguments and a result's details
    are data, kept whole), ``type`` called ``role``, tool-call ids aliased, strings scrubbed."""
    out: list[Leaf] = []
    if not isinstance(data, dict):
        _leaves(data, (), secrets, out)
        return None, out
    kind = data.get("type")
    for name, value in data.items():
        if name in _VOLATILE or (kind == "assistant" and name in _ANSWERED_BY):
            continue
        if name == "type":
            out.append((("role",), value))
        elif name == "tool_call_id" and isinstance(value, str):
            out.append(((name,), _alias(value, aliases, log)))
        elif name == "content" and isinstance(value, list) and value:
            for i, block in enumerate(value):
                where = ("content", str(i))
                if not isinstance(block, dict) or not block:
                    _leaves(block, where, secrets, out)
                    continue
                call = block.get("type") == "toolCall"
                for k, v in block.items():
                    if k in _VOLATILE:
                        continue
                    if call and k == "id" and isinstance(v, str):
                        out.append(((*where, k), _alias(v, aliases, log)))
                    else:
                        _leaves(v, (*where, str(k)), secrets, out)
        else:
            _leaves(value, (name,), secrets, out)
    return kind, out


def _leaves(value: Any, path: Path, secrets: Sequence[str], out: list[Leaf]) -> None:
    """:func:`flatten`, each string scrubbed of ``secrets`` and key shapes."""
    if isinstance(value, str):
        out.append((path, scrub(value, secrets)))
    elif isinstance(value, dict) and value:
        for k, v in value.items():
            _leaves(v, (*path, str(k)), secrets, out)
    elif isinstance(value, list) and value:
        for i, v in enumerate(value):
            _leaves(v, (*path, str(i)), secrets, out)
    else:
        out.append((path, value))


def flatten(value: Any, path: Path, out: list[Leaf]) -> None:
    """Append the leaves of JSON ``value`` under ``path`` to ``out`` (an empty list or object is
    a leaf of its own)."""
    _leaves(value, path, (), out)


def _alias(raw: str, aliases: dict[str, str], log: list[str]) -> str:
    found = aliases.get(raw)
    if found is None:
        log.append(raw)
        found = aliases[raw] = f"call#{len(log)}"
    return found


def _as_json(item: Any) -> Any:
    return item if isinstance(item, (dict, list, str, int, float, bool)) or item is None else to_json(item)


def _digest(previous: bytes, encoded: bytes) -> bytes:
    return blake2b(previous + encoded, digest_size=16).digest()


_Message: TypeAlias = tuple[bytes, bytes, Any]
"""One canonical message: its key leaves and its checked leaves, JSON-encoded (paths relative to
the message; bytes, so that a long recording is not thousands of objects for the garbage
collector to walk), and its role."""

_encode: Final = msgspec.json.Encoder().encode
_decode_leaves: Final = msgspec.json.Decoder(list[tuple[tuple[str, ...], Any]]).decode


@dataclass(eq=False)
class _Chain:
    """The canonical messages of a history and of the histories that extend it, shared: each
    history reads its own first ``n`` entries, and a history extended at the chain's end appends
    in place (the cost of a request is the cost of its new messages). ``alias_log`` is the raw
    tool-call ids in the order their aliases were given; ``aliases`` maps them while the chain's
    end is the history's."""

    messages: list[_Message]
    key_digests: list[bytes]
    checked_digests: list[bytes]
    alias_log: list[str]
    aliases: dict[str, str]


@dataclass(frozen=True, eq=False)
class _History:
    """One history in canonical form: its items, the secrets it was scrubbed of, and its place
    in a chain (rolling digests: index ``i`` covers messages ``0..i``)."""

    items: tuple[Any, ...]
    secrets: tuple[str, ...]
    chain: _Chain
    aliases: int
    assistants: int
    last_assistant: int | None

    @property
    def n(self) -> int:
        return len(self.items)

    def extended(self) -> _Chain:
        """The chain to append this history's extension to: its own when nothing was appended
        past this history yet, else a copy of its first ``n`` entries."""
        chain, n = self.chain, self.n
        if len(chain.messages) == n and len(chain.alias_log) == self.aliases:
            return chain
        log = chain.alias_log[: self.aliases]
        return _Chain(chain.messages[:n], chain.key_digests[:n], chain.checked_digests[:n], log,
                      {raw: f"call#{i + 1}" for i, raw in enumerate(log)})


_ROOT: Final = b"\0" * 16


@dataclass(frozen=True, eq=False)
class Request:
    """One request in canonical form, ready to compare.

    ``key`` is equal for two requests exactly when their key fields are (a digest);
    ``checked`` likewise for the checked fields. ``position`` is how many assistant messages it
    shows the model (the call's place in its run); ``thread`` the key digest of its history before
    the last of them, ``history`` the key digest of its whole history (what a later call of the
    same run shows as its ``thread``)."""

    key: bytes
    checked: bytes
    position: int
    thread: bytes | None
    history: bytes
    head: tuple[tuple[Leaf, ...], tuple[Leaf, ...]]
    chain: _Chain
    count: int
    """How many messages it holds (the first ``count`` of its chain)."""

    def role(self, i: int) -> Any:
        """The role of message ``i``."""
        return self.chain.messages[i][2]

    def leaves(self, field_class: FieldClass) -> Iterable[Leaf]:
        """Every leaf of the class, with its full path, header fields first."""
        yield from self.head[0 if field_class == "key" else 1]
        messages, which = self.chain.messages, 0 if field_class == "key" else 1
        for i in range(self.count):
            for path, value in _decode_leaves(messages[i][which]):
                yield ("messages", str(i), *path), value


class Canonicalizer:
    """Puts requests in canonical form under one policy, remembering the histories it has seen
    (the last ``remember`` of them) so that a request that extends one costs only its new
    messages. Thread-safe."""

    def __init__(self, policy: MatchPolicy, remember: int = 16) -> None:
        self.policy = policy
        self._histories: OrderedDict[tuple[int, int], _History] = OrderedDict()
        self._remember = remember
        self._heads: dict[bytes, tuple[bytes, bytes, tuple[tuple[Leaf, ...], tuple[Leaf, ...]]]] = {}
        self._lock = threading.Lock()

    def request(self, head: Mapping[str, Any], messages: Sequence[Any], secrets: Sequence[str] = ()) -> Request:
        """The canonical request of ``head`` (model, thinking level, system prompt, tools,
        options: JSON) and ``messages`` (records or their JSON)."""
        with self._lock:
            head_key, head_checked, head_leaves = self._head(head, secrets)
            history = self._history(messages if type(messages) is tuple else tuple(messages), tuple(secrets))
        n, chain, last = history.n, history.chain, history.last_assistant
        thread = None if last is None else (chain.key_digests[last - 1] if last else _ROOT)
        full_key = chain.key_digests[n - 1] if n else _ROOT
        return Request(
            key=blake2b(head_key + full_key, digest_size=16).digest(),
            checked=blake2b(head_checked + (chain.checked_digests[n - 1] if n else _ROOT), digest_size=16).digest(),
            position=history.assistants, thread=thread, history=full_key, head=head_leaves, chain=chain, count=n)

    def _head(self, head: Mapping[str, Any], secrets: Sequence[str]) -> tuple[bytes, bytes, Any]:
        raw = msgspec.json.encode([head, list(secrets)])
        found = self._heads.get(raw)
        if found is None:
            leaves: list[Leaf] = []
            _leaves(dict(head), (), secrets, leaves)
            keys, checked = self._split(leaves)
            found = (_digest(_ROOT, _encode(keys)), _digest(_ROOT, _encode(checked)), (tuple(keys), tuple(checked)))
            if len(self._heads) > 256:
                self._heads.clear()
            self._heads[raw] = found
        return found

    def _split(self, leaves: Iterable[Leaf], index: int | None = None) -> tuple[list[Leaf], list[Leaf]]:
        """The leaves by class (key, checked), each list in path order; ``index``: the leaves
        are those of message ``index`` (paths relative to it)."""
        keys: list[Leaf] = []
        checked: list[Leaf] = []
        policy = self.policy
        for path, value in sorted(leaves, key=itemgetter(0)):
            cls = policy.field_class(path) if index is None else policy.message_field_class(index, path)
            if cls == "key":
                keys.append((path, value))
            elif cls == "checked":
                checked.append((path, value))
        return keys, checked

    def _history(self, items: tuple[Any, ...], secrets: tuple[str, ...]) -> _History:
        base: _History | None = None
        for seen in reversed(self._histories.values()):
            k = seen.n
            if ((base is None or base.n < k) and k <= len(items) and items[k - 1] is seen.items[-1]
                    and seen.secrets == secrets and items[:k] == seen.items):
                base = seen
                break
        if base is not None and base.n == len(items):
            return base
        if base is None:
            chain, start, assistants, last = _Chain([], [], [], [], {}), 0, 0, None
        else:
            chain, start, assistants, last = base.extended(), base.n, base.assistants, base.last_assistant
        messages, keys, checked = chain.messages, chain.key_digests, chain.checked_digests
        for i in range(start, len(items)):
            role, leaves = _message_leaves(_as_json(items[i]), secrets, chain.aliases, chain.alias_log)
            k_leaves, c_leaves = self._split(leaves, i)
            if role == "assistant":
                assistants, last = assistants + 1, i
            k_bytes, c_bytes = _encode(k_leaves), _encode(c_leaves)
            messages.append((k_bytes, c_bytes, role))
            keys.append(_digest(keys[-1] if keys else _ROOT, k_bytes))
            checked.append(_digest(checked[-1] if checked else _ROOT, c_bytes))
        history = _History(items, secrets, chain, len(chain.alias_log), assistants, last)
        token = (len(items), id(items[-1]))
        self._histories.pop(token, None)
        self._histories[token] = history
        while len(self._histories) > self._remember:
            self._histories.popitem(last=False)
        return history


def differences(recorded: Request, now: Request, field_class: FieldClass) -> list[Difference]:
    """The fields of the class that differ between two requests, in path order (header first)."""
    before = dict(recorded.leaves(field_class))
    after = dict(now.leaves(field_class))
    out = []
    for path in sorted(before.keys() | after.keys(), key=_order):
        a, b = before.get(path, ABSENT), after.get(path, ABSENT)
        if a is ABSENT or b is ABSENT or type(a) is not type(b) or a != b:
            out.append(Difference(path_text(path), a, b, field_class))
    return out


def first_difference(recorded: Request, now: Request) -> tuple[int, Difference | None]:
    """How many key leaves agree before the first that differs, and that difference (``None``:
    the key fields are equal). The larger the count, the nearer the recording."""
    before, after = _in_order(recorded), _in_order(now)
    i = j = agree = 0
    while i < len(before) and j < len(after):
        (ka, pa, va), (kb, pb, vb) = before[i], after[j]
        if ka == kb:
            if type(va) is not type(vb) or va != vb:
                return agree, Difference(path_text(pa), va, vb, "key")
            agree, i, j = agree + 1, i + 1, j + 1
        elif ka < kb:
            return agree, _one_sided(recorded, now, (pa, va), ABSENT)
        else:
            return agree, _one_sided(recorded, now, ABSENT, (pb, vb))
    if i < len(before):
        return agree, _one_sided(recorded, now, before[i][1:], ABSENT)
    if j < len(after):
        return agree, _one_sided(recorded, now, ABSENT, after[j][1:])
    return agree, None


def _in_order(request: Request) -> list[tuple[Any, Path, Any]]:
    """The key leaves with their place in the order :meth:`Request.leaves` gives them: the
    header's fields, then each message's."""
    return [(((0, path) if path[0] != "messages" else (1, int(path[1]), path[2:])), path, value)
            for path, value in request.leaves("key")]


def _one_sided(recorded: Request, now: Request, old: Any, new: Any) -> Difference:
    """A leaf only one side has; a whole message only one side has is named by its role."""
    path, value = old if new is ABSENT else new
    side = now if new is ABSENT else recorded
    if len(path) > 2 and path[0] == "messages" and int(path[1]) >= side.count:
        path, value = (*path[:2], "role"), (recorded if new is ABSENT else now).role(int(path[1]))
    return Difference(path_text(path), value if new is ABSENT else ABSENT, ABSENT if new is ABSENT else value, "key")


def _order(path: Path) -> tuple[Any, ...]:
    """Paths in reading order: message indexes as numbers."""
    return tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in path)
