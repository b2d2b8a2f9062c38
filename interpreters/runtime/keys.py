"""The API key of a run's model calls: ``get_api_key`` asked like a hook, and what the
journals are told of the keys (so that nothing they write holds one)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agentcore import AgentLoopConfig, CallLlm
from agentcore.hooks import GET_API_KEY

from ..secrets import environment_key
from .hooks import FATAL, HookCall, KeyLookup, Returned, no_answer, user_call
from .journal import Journal

__all__ = ["Keys"]


class Keys:
    """A run's API keys as its journals see them: the keys told (:meth:`used`), and whether
    they hold back what they write until ``get_api_key`` gives the key (:attr:`held`).

    A resumed run (decisions, or effects left outstanding by a crash) asks ``get_api_key``
    before its first step when it has journals (:attr:`first`): its first lines (a tool's
    result) come before its first model call, and must already be scrubbed of the key."""

    __slots__ = ("config", "journals", "signal", "told", "held", "first")

    def __init__(self, config: AgentLoopConfig, journals: Sequence[Journal], signal: Any, first: bool) -> None:
        self.config = config
        self.journals = journals
        self.signal = signal
        self.told: set[str] = set()
        self.held = False
        self.first = first

    def start(self, provider: str) -> KeyLookup | None:
        """At the run's start: a :class:`KeyLookup` to carry out first (a resumed run with
        journals), or ``None`` (the config's key is told; a fresh run's journals hold back
        what they write until its first model call asks ``get_api_key``: no extra call)."""
        if self.config.get_api_key is not None and self.journals:
            if self.first:
                return KeyLookup(provider)
            self.used(provider, self.config.api_key)
            self.hold(True)
        else:
            self.used(provider, self.config.api_key)
        return None

    def looked_up(self, lookup: KeyLookup, returned: Returned | None) -> BaseException | None:
        """What ``get_api_key`` gave at a resumed run's start: the journals are told the key
        (the config's ``api_key`` when it gave none). What it raised is left to the first model
        call, which asks again and reports it; a fatal exception is returned (the run stops);
        meanwhile the journals hold back what they write, which may quote the key not known yet."""
        key = self.config.api_key
        known = False
        fatal = None
        if returned is not None:
            if isinstance(returned.error, FATAL):
                fatal = returned.error
            elif returned.error is None:
                known = True
                if isinstance(returned.value, str) and returned.value:
                    key = returned.value
        self.used(lookup.provider, key)
        if not known:
            self.hold(True)
        return fatal

    def hold(self, held: bool) -> None:
        """Have the journals hold back what they write until the key is known (``True``), or
        write it (``False``)."""
        if held == self.held:
            return
        self.held = held
        for journal in self.journals:
            journal.keys_pending(held)

    def call(self, effect: CallLlm) -> HookCall | None:
        """``get_api_key`` for ``effect``, called like a hook (``None``: the config has none)."""
        get = self.config.get_api_key
        if get is None:
            return None
        return user_call(GET_API_KEY.name, get, (effect.model.provider,), no_answer, self.signal)

    def resolved(self, effect: CallLlm, returned: Returned | None) -> str | None:
        """The key of a model call: what ``get_api_key`` returned (what it raised is raised)
        wins over ``api_key``; the journals are told."""
        key = self.config.api_key
        if returned is not None:
            key = returned.get() or key
        self.used(effect.model.provider, key)
        if self.held:
            self.hold(False)
        return key

    def used(self, provider: str, key: str | None) -> None:
        """Tell the journals (a recorder, a tracer) the API keys this model call may use: the
        resolved ``key`` and the provider's environment variable, so that no line or attribute
        holds one, whatever its shape."""
        found = [k for k in (key, environment_key(provider)) if k and k not in self.told]
        if not found:
            return
        self.told.update(found)
        for journal in self.journals:
            journal.add_secrets(found)
