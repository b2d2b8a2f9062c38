"""Redaction: every secret the library keeps out of what it writes becomes ``[REDACTED]``.

Secrets never reach the core (API keys are resolved by the interpreters), but text can carry
them: a tool error quoting a key, a provider echoing the key in its error body. Three writers
scrub what they write with this module, and all write the one text :data:`REDACTED`:

- the transcript recorder, every line (:func:`scrub_json`, so that a line stays JSON);
- the OpenTelemetry observer, every attribute, status and recorded exception (:func:`scrub`);
- the HTTP streamers, the error messages of a failed call (:func:`redact_key`), whose API key
  may come back in the provider's answer.

What is a secret: the run's known secrets (:func:`known_secrets`: the config's ``api_key``, the
provider's environment variable, sensitive header values, what the caller adds), in every form
a JSON line may hold them (:func:`secret_forms`), and any string shaped like a well-known key
(``sk-…``, ``sk-ant-…``, ``AIza…``, GitHub and Slack tokens, ``Bearer`` tokens).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

from agentcore import AgentLoopConfig
from agentcore.providers.catalog import ENV_KEYS

__all__ = [
    "KEY_HINTS",
    "REDACTED",
    "environment_key",
    "header_secrets",
    "hinted",
    "known_secrets",
    "merge_secrets",
    "redact_key",
    "redact_key_bytes",
    "scrub",
    "scrub_json",
    "secret_forms",
]

REDACTED: Final = "[REDACTED]"
"""What every redacted secret is replaced by, in transcripts, spans and error messages."""

_KEY_SHAPES: Final = re.compile(
    r"sk-ant-[A-Za-z0-9_\-]{16,}"          # Anthropic
    r"|sk-(?:proj-|svcacct-)?[A-Za-z0-9_\-]{20,}"  # OpenAI and look-alikes
    r"|AIza[0-9A-Za-z_\-]{30,}"            # Google
    r"|gh[pousr]_[A-Za-z0-9]{30,}"         # GitHub tokens
    r"|xox[abprs]-[A-Za-z0-9\-]{10,}"      # Slack
    r"|(?:[Bb]earer|BEARER) +[A-Za-z0-9._~+/\-]{16,}=*"  # the cases and the space hinted() looks for
)
_SENSITIVE_HEADER: Final = re.compile(r"auth|key|token|secret|cookie|session|password", re.I)

KEY_HINTS: Final = ("sk-", "AIza", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "xox", "earer ", "EARER ")
"""Substrings every key shape starts with: text without one holds no key shape."""

_GITHUB_HINT: Final = re.compile(r"gh[pousr]_").search
_compact: Final = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), check_circular=False).encode


def environment_key(provider: str) -> str | None:
    """The API key the provider's usual environment variable holds (``None``: not set)."""
    name = ENV_KEYS.get(provider)
    return (os.environ.get(name) or None) if name else None


def known_secrets(config: AgentLoopConfig | None, extra: Sequence[str]) -> tuple[str, ...]:
    """Every form of the secrets a run's config holds (key, environment key, sensitive headers),
    plus ``extra``: what the recorder, the tracer and replay scrub."""
    found: list[str] = [s for s in extra if s]
    if config is not None:
        if config.api_key:
            found.append(config.api_key)
        env = environment_key(config.model.provider)
        if env:
            found.append(env)
        found.extend(header_secrets(config.headers, config.model.headers))
    return secret_forms(found)


def header_secrets(*headers: Mapping[str, Any] | None) -> list[str]:
    """The values of sensitive headers (names holding auth, key, token, secret, cookie, session
    or password; values of at least 8 characters), with a bearer token also without ``Bearer ``.

    >>> header_secrets({"Authorization": "Bearer abcdefgh", "Accept": "text/plain"}, None)
    ['Bearer abcdefgh', 'abcdefgh']
    """
    found: list[str] = []
    for mapping in headers:
        for name, value in (mapping or {}).items():
            if isinstance(value, str) and len(value) >= 8 and _SENSITIVE_HEADER.search(str(name)):
                found.append(value)
                if value.lower().startswith("bearer "):
                    found.append(value[7:])
    return found


def secret_forms(found: Sequence[str]) -> tuple[str, ...]:
    """Every form a secret may take in a line, longest first."""
    # Lines are JSON: a secret with a quote, a backslash, a control or a non-ASCII character is
    # written escaped, so look for its escaped forms too; twice escaped as well, for JSON held in
    # a JSON string (the streamed arguments of a tool call).
    forms = {s for s in found if s}
    for _ in range(2):
        for form in list(forms):
            forms.add(json.dumps(form, ensure_ascii=False)[1:-1])
            forms.add(json.dumps(form)[1:-1])
    # Longest first, so a secret that contains another is replaced whole.
    return tuple(sorted(forms, key=len, reverse=True))


def merge_secrets(known: Sequence[str], values: Sequence[str]) -> tuple[str, ...]:
    """``known`` (forms from :func:`known_secrets`) with every form of ``values`` added, longest
    first: what a journal's ``add_secrets`` keeps."""
    return tuple(sorted(set(known) | set(secret_forms(values)), key=len, reverse=True))


def hinted(text: str) -> bool:
    """``any(hint in text for hint in KEY_HINTS)``, faster: one regex scan for the five GitHub
    prefixes instead of five substring scans. Only text with a hint can hold a key shape
    :func:`scrub` redacts (the transcript recorder checks the parts of a line with it)."""
    return ("sk-" in text or "AIza" in text or "xox" in text or "earer " in text or "EARER " in text
            or _GITHUB_HINT(text) is not None)


def scrub(line: str, secrets: Sequence[str] = ()) -> str:
    """``line`` with the known ``secrets`` and every key-shaped string replaced by ``[REDACTED]``.

    >>> scrub("key sk-proj-" + "x" * 24 + " and hunter22", ["hunter22"])
    'key [REDACTED] and [REDACTED]'
    """
    for secret in secrets:
        if secret in line:
            line = line.replace(secret, REDACTED)
    if hinted(line) and _KEY_SHAPES.search(line) is not None:
        line = _KEY_SHAPES.sub(REDACTED, line)
    return line


def scrub_json(text: str, secrets: Sequence[str]) -> str:
    """:func:`scrub` for JSON text (a line, or one JSON string), whose result is still JSON.

    Scrubbing the text as written is what keeps a transcript consistent: every line that
    carries a string scrubs it in the same form. Only a replacement that would cut an escape
    sequence in two (a secret that starts or ends like one) makes it scrub the decoded strings
    instead."""
    clean = scrub(text, secrets)
    if clean == text:
        return text
    try:
        json.loads(clean)
        return clean
    except ValueError:
        redone = _compact(_scrub_strings(json.loads(text), secrets))
        return redone + "\n" if text.endswith("\n") else redone


def _scrub_strings(value: Any, secrets: Sequence[str]) -> Any:
    if isinstance(value, str):
        return scrub(value, secrets)
    if isinstance(value, list):
        return [_scrub_strings(v, secrets) for v in value]
    if isinstance(value, dict):
        return {k: _scrub_strings(v, secrets) for k, v in value.items()}
    return value


def redact_key(message: str, api_key: str | None) -> str:
    """``message`` without the API key: whole, in escaped forms (``repr``, JSON), and a cut-off
    start of it at the end of a truncated provider message.

    >>> redact_key("bad key sk-12345678 given", "sk-12345678")
    'bad key [REDACTED] given'
    >>> redact_key("your key: sk-12345", "sk-12345678")
    'your key: [REDACTED]'
    """
    if not api_key or len(api_key) < 4:
        return message
    for form in {api_key, api_key.strip(), repr(api_key)[1:-1], json.dumps(api_key)[1:-1]}:
        if len(form) >= 4 and form in message:
            message = message.replace(form, REDACTED)
    for n in range(min(len(api_key), len(message)), 7, -1):
        if message.endswith(api_key[:n]):
            return message[: len(message) - n] + REDACTED
    return message


def redact_key_bytes(body: bytes, api_key: str | None) -> bytes:
    """A response body without the API key (before it is decoded into an error message)."""
    if api_key and len(api_key) >= 4:
        return body.replace(api_key.encode("utf-8", "replace"), REDACTED.encode())
    return body
