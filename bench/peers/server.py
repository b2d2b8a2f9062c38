"""A loopback OpenAI-compatible Chat Completions server for the HTTP scenario.

Real sockets, HTTP/1.1 keep-alive, fixed replies, no artificial delay. It is stateless: the model
name says how long the conversation is (``turns-20``) and the request body says how far it got
(how many ``"role": "tool"`` messages it holds). While fewer tool results than turns were sent, it
answers with one call of the ``noop`` tool; then with a short text. Streamed requests
(``"stream": true``) get an SSE body sent with chunked transfer encoding, one chunk per event,
the way real providers send it; non-streamed ones get one JSON completion.

Run: ``python server.py [--port 0]``; it prints ``PORT <n>`` on its first line once listening.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys

TOOL_RE = re.compile(rb'"role"\s*:\s*"tool"')
MODEL_RE = re.compile(rb'"model"\s*:\s*"turns-(\d+)"')
STREAM_RE = re.compile(rb'"stream"\s*:\s*true')


def _chunk(obj: dict) -> bytes:
    data = b"data: " + json.dumps(obj, separators=(",", ":")).encode() + b"\n\n"
    return b"%x\r\n%s\r\n" % (len(data), data)


def _base(k: int) -> dict:
    return {"id": f"chatcmpl-{k}", "object": "chat.completion.chunk", "created": 1700000000, "model": "bench"}


def sse_tool_call(k: int) -> bytes:
    """The chunked SSE body of a reply that calls noop(n=k)."""
    call_id = f"call_{k}"
    parts = [
        {**_base(k), "choices": [{"index": 0, "delta": {"role": "assistant", "content": None, "tool_calls": [
            {"index": 0, "id": call_id, "type": "function", "function": {"name": "noop", "arguments": ""}}]},
            "finish_reason": None}]},
        {**_base(k), "choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": 0, "function": {"arguments": '{"n": '}}]}, "finish_reason": None}]},
        {**_base(k), "choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": 0, "function": {"arguments": f"{k}}}"}}]}, "finish_reason": None}]},
        {**_base(k), "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
        {**_base(k), "choices": [], "usage": {"prompt_tokens": 20 + 10 * k, "completion_tokens": 8,
                                               "total_tokens": 28 + 10 * k}},
    ]
    return b"".join(_chunk(p) for p in parts) + _done()


def sse_text(k: int) -> bytes:
    """The chunked SSE body of a text reply in three deltas."""
    first = {"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}
    parts = [{**_base(k), "choices": [first]}]
    for word in ("All ", "tools ", "ran."):
        parts.append({**_base(k), "choices": [{"index": 0, "delta": {"content": word}, "finish_reason": None}]})
    parts.append({**_base(k), "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    parts.append({**_base(k), "choices": [], "usage": {"prompt_tokens": 20 + 10 * k, "completion_tokens": 3,
                                                        "total_tokens": 23 + 10 * k}})
    return b"".join(_chunk(p) for p in parts) + _done()


def _done() -> bytes:
    data = b"data: [DONE]\n\n"
    return b"%x\r\n%s\r\n0\r\n\r\n" % (len(data), data)


def json_reply(k: int, tool: bool) -> bytes:
    if tool:
        message = {"role": "assistant", "content": None, "tool_calls": [
            {"id": f"call_{k}", "type": "function", "function": {"name": "noop", "arguments": f'{{"n": {k}}}'}}]}
        finish = "tool_calls"
    else:
        message = {"role": "assistant", "content": "All tools ran."}
        finish = "stop"
    return json.dumps({"id": f"chatcmpl-{k}", "object": "chat.completion", "created": 1700000000, "model": "bench",
                       "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                       "usage": {"prompt_tokens": 20 + 10 * k, "completion_tokens": 5,
                                 "total_tokens": 25 + 10 * k}}).encode()


SSE_HEAD = (b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\n"
            b"transfer-encoding: chunked\r\nconnection: keep-alive\r\n\r\n")


async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while True:
            try:
                head = await reader.readuntil(b"\r\n\r\n")
            except (asyncio.IncompleteReadError, ConnectionError):
                return
            length = 0
            for line in head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value.strip())
            body = await reader.readexactly(length) if length else b""
            m = MODEL_RE.search(body)
            turns = int(m.group(1)) if m else 1
            k = len(TOOL_RE.findall(body))
            tool = k < turns
            if STREAM_RE.search(body):
                writer.write(SSE_HEAD + (sse_tool_call(k) if tool else sse_text(k)))
            else:
                payload = json_reply(k, tool)
                writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n"
                             b"connection: keep-alive\r\n\r\n%s" % (len(payload), payload))
            await writer.drain()
    except ConnectionError:
        pass
    finally:
        writer.close()


async def main(port: int) -> None:
    server = await asyncio.start_server(handle, "127.0.0.1", port, backlog=1024)
    print(f"PORT {server.sockets[0].getsockname()[1]}", flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    try:
        asyncio.run(main(args.port))
    except KeyboardInterrupt:
        sys.exit(0)
