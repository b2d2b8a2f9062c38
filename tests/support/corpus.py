"""Loader for the recorded provider corpus (``tests/data/corpus``, see its ``README.md``).

Every recording format in the corpus is turned into the same shape: a list of
:class:`Interaction` (request method/url/headers/body, response status/headers/body bytes), with
gzip bodies decompressed and JSON bodies that the pydantic-ai dialect stored as ``parsed_body``
re-serialized. vercel/ai ``*.chunks.txt`` files (one SSE ``data:`` payload per line) are re-framed
as SSE text so they can be fed to the same decoders.

The corpus is in the repository (``tests/data/corpus``); ``AGENTCORE_CORPUS`` points the tests at
another copy. :func:`corpus_dir` returns ``None`` when neither is there; the
:data:`requires_corpus` marker skips tests then.
"""

from __future__ import annotations

import gzip
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

__all__ = [
    "Interaction",
    "corpus_dir",
    "edit_payloads",
    "load",
    "requires_corpus",
    "sse_from_chunks",
    "without_call_ids",
]


def corpus_dir() -> Path | None:
    env = os.environ.get("AGENTCORE_CORPUS")
    if env:
        p = Path(env)
        return p if p.is_dir() else None
    here = Path(__file__).resolve()
    bundled = here.parents[1] / "data" / "corpus"
    if bundled.is_dir():
        return bundled
    for parent in here.parents:
        candidate = parent / "shared" / "corpus"
        if candidate.is_dir():
            return candidate
        candidate = parent.parent / "shared" / "corpus"
        if candidate.is_dir():
            return candidate
    return None


requires_corpus = pytest.mark.skipif(corpus_dir() is None, reason="recorded corpus not found")


@dataclass
class Interaction:
    method: str
    url: str
    request_headers: dict[str, str]
    request_body: bytes
    status: int
    response_headers: dict[str, str]
    body: bytes
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def request_json(self) -> Any:
        return json.loads(self.request_body) if self.request_body else None

    @property
    def content_type(self) -> str:
        return self.response_headers.get("content-type", "")


def _flat_headers(h: Any) -> dict[str, str]:
    out: dict[str, str] = {}
    if not isinstance(h, dict):
        return out
    for k, v in h.items():
        if isinstance(v, list):
            v = v[0] if v else ""
        out[str(k).lower()] = str(v)
    return out


def _as_bytes(v: Any) -> bytes:
    if v is None:
        return b""
    if isinstance(v, bytes):
        return v
    if isinstance(v, str):
        return v.encode("utf-8")
    return json.dumps(v).encode("utf-8")


def _maybe_gunzip(body: bytes, headers: dict[str, str]) -> bytes:
    if body[:2] == b"\x1f\x8b" or headers.get("content-encoding", "").lower() == "gzip":
        try:
            return gzip.decompress(body)
        except OSError:
            return body
    return body


def _load_yaml(path: Path) -> list[Interaction]:
    doc = yaml.safe_load(path.read_bytes())
    result: list[Interaction] = []
    for it in doc["interactions"]:
        req, resp = it["request"], it["response"]
        req_headers = _flat_headers(req.get("headers"))
        resp_headers = _flat_headers(resp.get("headers"))
        if "parsed_body" in req:
            req_body = json.dumps(req["parsed_body"]).encode()
        else:
            req_body = _as_bytes(req.get("body"))
        body_field = resp.get("body")
        if "parsed_body" in resp:
            body = json.dumps(resp["parsed_body"]).encode()
        elif isinstance(body_field, dict):
            body = _as_bytes(body_field.get("string"))
        else:  # go-vcr: body is the text itself
            body = _as_bytes(body_field)
        body = _maybe_gunzip(body, resp_headers)
        req_body = _maybe_gunzip(req_body, req_headers)
        status_field = resp.get("status")
        if isinstance(status_field, dict):
            status = int(status_field["code"])
        elif "code" in resp:
            status = int(resp["code"])
        else:
            status = int(str(status_field).split()[0])
        result.append(Interaction(
            method=str(req.get("method", "POST")),
            url=str(req.get("uri") or req.get("url") or ""),
            request_headers=req_headers,
            request_body=req_body,
            status=status,
            response_headers=resp_headers,
            body=body,
        ))
    return result


def _parse_raw_http(raw: bytes, response: bool) -> tuple[str, dict[str, str], bytes]:
    head, _, body = raw.partition(b"\r\n\r\n")
    if not _ and b"\n\n" in raw:
        head, _, body = raw.partition(b"\n\n")
    lines = head.replace(b"\r\n", b"\n").split(b"\n")
    first = lines[0].decode("latin-1")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        k, _, v = line.decode("latin-1").partition(":")
        headers[k.strip().lower()] = v.strip()
    if response and headers.get("transfer-encoding", "").lower() == "chunked":
        out = bytearray()
        rest = body
        while rest:
            size_line, _, rest = rest.partition(b"\r\n")
            size = int(size_line.split(b";")[0], 16)
            if size == 0:
                break
            out += rest[:size]
            rest = rest[size + 2:]
        body = bytes(out)
    return first, headers, body


def _load_httprr(path: Path) -> list[Interaction]:
    data = path.read_bytes()
    header, _, rest = data.partition(b"\n")
    assert header.strip() == b"httprr trace v1", header
    result: list[Interaction] = []
    while rest:
        sizes, _, rest = rest.partition(b"\n")
        req_len, resp_len = (int(x) for x in sizes.split())
        raw_req, raw_resp = rest[:req_len], rest[req_len:req_len + resp_len]
        rest = rest[req_len + resp_len:]
        req_line, req_headers, req_body = _parse_raw_http(raw_req, False)
        status_line, resp_headers, body = _parse_raw_http(raw_resp, True)
        method, url, _proto = req_line.split(" ", 2)
        result.append(Interaction(
            method=method,
            url=url,
            request_headers=req_headers,
            request_body=req_body,
            status=int(status_line.split()[1]),
            response_headers=resp_headers,
            body=_maybe_gunzip(body, resp_headers),
        ))
    return result


def sse_from_chunks(lines: list[str], *, named: bool) -> bytes:
    """Re-frame vercel/ai payload lines as SSE (``event: <type>`` when ``named``)."""
    out: list[str] = []
    for line in lines:
        if named:
            try:
                kind = json.loads(line).get("type")
            except ValueError:
                kind = None
            if isinstance(kind, str):
                out.append(f"event: {kind}\n")
        out.append(f"data: {line}\n\n")
    return "".join(out).encode("utf-8")


def _load_chunks(path: Path) -> list[Interaction]:
    lines = [ln for ln in path.read_text("utf-8").splitlines() if ln.strip()]
    named = "gemini" not in str(path) and "google" not in path.name
    return [Interaction(
        method="POST", url="", request_headers={}, request_body=b"", status=200,
        response_headers={"content-type": "text/event-stream"},
        body=sse_from_chunks(lines, named=named),
        extra={"lines": lines},
    )]


def load(relative: str) -> list[Interaction]:
    """All interactions of one corpus file, e.g. ``load("anthropic/x.yaml")``."""
    base = corpus_dir()
    if base is None:
        pytest.skip("recorded corpus not found")
    path = base / relative
    if path.suffix == ".httprr":
        return _load_httprr(path)
    if path.name.endswith(".chunks.txt"):
        return _load_chunks(path)
    return _load_yaml(path)


def all_files() -> list[str]:
    base = corpus_dir()
    if base is None:
        return []
    return sorted(
        str(p.relative_to(base)) for p in base.rglob("*")
        if p.is_file() and p.name not in ("INDEX.md", "INDEX.json", "README.md", "sources.json")
    )


def edit_payloads(body: bytes, edit: Any) -> tuple[bytes, bool]:
    """``body`` (SSE) with ``edit(payload) -> bool`` applied to each JSON ``data:`` payload, and
    whether it changed any (the lines it changed are written again, the others kept as they are)."""
    out, changed = [], False
    for line in body.decode("utf-8").split("\n"):
        if line.startswith("data:") and line[5:].strip() not in ("", "[DONE]"):
            try:
                payload = json.loads(line[5:])
            except ValueError:
                out.append(line)
                continue
            if edit(payload):
                changed = True
                line = "data: " + json.dumps(payload, ensure_ascii=False) + ("\r" if line.endswith("\r") else "")
        out.append(line)
    return "\n".join(out).encode("utf-8"), changed


def _strip_call_ids(payload: Any) -> bool:
    found = False
    if not isinstance(payload, dict):
        return False
    for choice in payload.get("choices") or ():  # OpenAI Chat
        for tc in (choice.get("delta") or {}).get("tool_calls") or ():
            found |= tc.pop("id", None) is not None
    block = payload.get("content_block")  # Anthropic
    if isinstance(block, dict) and block.get("type") == "tool_use":
        found |= block.pop("id", None) is not None
    item = payload.get("item")  # OpenAI Responses
    if isinstance(item, dict) and item.get("type") == "function_call":
        found |= item.pop("call_id", None) is not None
        item.pop("id", None)
    return found


def without_call_ids(body: bytes) -> tuple[bytes, bool]:
    """``body`` (an SSE stream of OpenAI Chat, OpenAI Responses or Anthropic) with its tool call
    ids taken out, as a server that sends none would stream it, and whether it had any."""
    return edit_payloads(body, _strip_call_ids)
