"""Provider decoding benchmarks: codec throughput on the recorded corpus, and HTTP overhead.

Run: ``python bench/bench_decode.py`` (add ``--quick`` for fewer repetitions). Prints two tables.

1. **Decode** - every recorded 2xx streaming body of the provider corpus, per API, fed
   to the codec's decoder in 512-byte pieces (about what a socket read gives), as MB/s of body and
   stream events per second. When the ``openai`` package is importable, a column gives the
   throughput of the official SDK's SSE parsing of the same bytes (its ``SSEDecoder`` plus one
   ``json.loads`` per event, which is what ``openai.Stream`` does before building its pydantic
   models); it is skipped otherwise (``openai`` is not a dependency).
2. **Loopback** - one streamed reply served by a local HTTP server: reading the body with plain
   ``httpx`` (``client.stream`` + ``iter_bytes``) versus :class:`interpreters.streams.http.HttpStreamer`
   (the same bytes, decoded to events, through the pump thread), and the async twins. The
   difference is the cost of the interpreter and the decoding per reply.

Each figure is the median of several repetitions.
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import statistics
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
for p in (str(ROOT), str(ROOT / "tests")):
    if p not in sys.path:
        sys.path.insert(0, p)

import httpx  # noqa: E402

from agentcore.llm import LlmContext, StreamOptions  # noqa: E402
from agentcore.messages import Model, UserMessage  # noqa: E402
from agentcore.providers import codec_for, get_model  # noqa: E402
from interpreters.streams.http import AsyncHttpStreamer, HttpStreamer  # noqa: E402

FOLDERS = {
    "openai-completions": ("openai_chat", "openai_compatible"),
    "openai-responses": ("openai_responses",),
    "anthropic-messages": ("anthropic",),
    "google-generative-ai": ("gemini",),
}
PIECE = 512


def median_time(fn: Callable[[], Any], repeat: int, min_time: float = 0.05) -> float:
    """Median seconds per call of ``fn`` (each sample loops until ``min_time``)."""
    samples = []
    for _ in range(repeat):
        n = 0
        start = time.perf_counter()
        while True:
            fn()
            n += 1
            elapsed = time.perf_counter() - start
            if elapsed >= min_time:
                break
        samples.append(elapsed / n)
    return statistics.median(samples)


def corpus_bodies() -> dict[str, list[bytes]]:
    from providers.corpus import all_files, load

    out: dict[str, list[bytes]] = {api: [] for api in FOLDERS}
    for rel in all_files():
        folder = rel.split("/")[0]
        api = next((a for a, fs in FOLDERS.items() if folder in fs), None)
        if api is None:
            continue
        for it in load(rel):
            if it.status == 200 and it.body:
                out[api].append(it.body)
    return out


def decode_all(api: str, bodies: list[bytes]) -> int:
    codec = codec_for(api)
    model = Model(id="bench", api=api, provider="bench")
    events = 0
    for body in bodies:
        d = codec.new_decoder(model)
        for i in range(0, len(body), PIECE):
            events += len(d.feed(body[i:i + PIECE]))
        events += len(d.finish())
    return events


def openai_sdk_parser() -> Callable[[list[bytes]], int] | None:
    try:
        from openai._streaming import SSEDecoder  # type: ignore[import-not-found]
    except ImportError:
        return None
    import json

    def parse(bodies: list[bytes]) -> int:
        n = 0
        for body in bodies:
            pieces = (body[i:i + PIECE] for i in range(0, len(body), PIECE))
            for sse in SSEDecoder().iter_bytes(pieces):
                data = sse.data
                if data.startswith("[DONE]"):
                    continue
                try:
                    json.loads(data)
                except ValueError:
                    pass
                n += 1
        return n

    return parse


def bench_decode(repeat: int) -> None:
    bodies = corpus_bodies()
    sdk = openai_sdk_parser()
    print("Decoding the recorded corpus (2xx streaming bodies, fed in 512-byte pieces)")
    header = f"{'api':<22}{'bodies':>7}{'KiB':>8}{'events':>8}{'MB/s':>9}{'events/s':>12}{'µs/event':>10}"
    if sdk is not None:
        header += f"{'openai SDK SSE+json MB/s':>26}"
    print(header)
    for api, items in bodies.items():
        if not items:
            continue
        size = sum(len(b) for b in items)
        events = decode_all(api, items)
        t = median_time(lambda: decode_all(api, items), repeat)
        row = (f"{api:<22}{len(items):>7}{size / 1024:>8.1f}{events:>8}{size / t / 1e6:>9.1f}"
               f"{events / t:>12,.0f}{t / events * 1e6:>10.2f}")
        if sdk is not None:
            if api == "google-generative-ai":
                row += f"{'n/a (not all SSE)':>26}"
            else:
                ts = median_time(lambda: sdk(items), repeat)
                row += f"{size / ts / 1e6:>26.1f}"
        print(row)
    if sdk is None:
        print("(openai package not importable: SDK column skipped)")
    print()


# --------------------------------------------------------------------------- loopback


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    body = b""

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def setup(self) -> None:
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        self.rfile.read(length)
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        body = type(self).body
        out = bytearray()
        for i in range(0, len(body), 1024):
            piece = body[i:i + 1024]
            out += b"%x\r\n%s\r\n" % (len(piece), piece)
        out += b"0\r\n\r\n"
        self.wfile.write(bytes(out))
        self.wfile.flush()


def synthetic_chat_stream(deltas: int) -> bytes:
    import json

    lines = []
    head = {"id": "chatcmpl-bench", "object": "chat.completion.chunk", "model": "bench"}
    lines.append({**head, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]})
    for i in range(deltas):
        lines.append({**head, "choices": [{"index": 0, "delta": {"content": f" word{i}"}}]})
    lines.append({**head, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    out = "".join(f"data: {json.dumps(x, separators=(',', ':'))}\n\n" for x in lines)
    return (out + "data: [DONE]\n\n").encode()


def bench_loopback(repeat: int) -> None:
    from providers.corpus import load

    cases = {
        "corpus reply (8 KiB, 60 deltas)": load("openai_chat/llm__test_tool_use_basic.yaml")[1].body,
        "synthetic (2,000 deltas)": synthetic_chat_stream(2000),
    }
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    model = replace(get_model("openai", "gpt-4o-mini"), api="openai-completions", base_url=url + "/v1")
    context = LlmContext("", (UserMessage("hi", timestamp=0),))
    options = StreamOptions(api_key="bench")
    request = codec_for(model.api).build_request(model, context, options)
    payload = request.body_bytes()

    print("One streamed reply over loopback (median per reply)")
    print(f"{'reply':<34}{'plain httpx':>12}{'HttpStreamer':>14}{'overhead':>10}"
          f"{'async httpx':>13}{'AsyncHttpStreamer':>19}{'overhead':>10}")
    client = httpx.Client()
    streamer = HttpStreamer()
    try:
        for name, body in cases.items():
            _Handler.body = body

            def plain() -> None:
                with client.stream("POST", request.url, headers=request.headers, content=payload) as r:
                    for _ in r.iter_bytes():
                        pass

            def ours() -> None:
                last = None
                for last in streamer.stream(model, context, options):
                    pass
                assert last is not None and last.type == "done", last

            t_plain = median_time(plain, repeat, 0.2)
            t_ours = median_time(ours, repeat, 0.2)

            async def async_times() -> tuple[float, float]:
                aclient = httpx.AsyncClient()
                astreamer = AsyncHttpStreamer()

                async def aplain() -> None:
                    async with aclient.stream("POST", request.url, headers=request.headers,
                                              content=payload) as r:
                        async for _ in r.aiter_bytes():
                            pass

                async def aours() -> None:
                    last = None
                    async for last in astreamer.stream(model, context, options):
                        pass
                    assert last is not None and last.type == "done", last

                async def measure(fn: Callable[[], Any]) -> float:
                    samples = []
                    for _ in range(repeat):
                        n, start = 0, time.perf_counter()
                        while time.perf_counter() - start < 0.2:
                            await fn()
                            n += 1
                        samples.append((time.perf_counter() - start) / n)
                    return statistics.median(samples)

                try:
                    return await measure(aplain), await measure(aours)
                finally:
                    await aclient.aclose()
                    await astreamer.aclose()

            ta_plain, ta_ours = asyncio.run(async_times())
            print(f"{name:<34}{t_plain * 1e3:>10.2f}ms{t_ours * 1e3:>12.2f}ms"
                  f"{(t_ours - t_plain) * 1e3:>8.2f}ms{ta_plain * 1e3:>11.2f}ms"
                  f"{ta_ours * 1e3:>17.2f}ms{(ta_ours - ta_plain) * 1e3:>8.2f}ms")
    finally:
        client.close()
        streamer.close()
        server.shutdown()
        server.server_close()
    print()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    args = parser.parse_args(argv)
    repeat = 3 if args.quick else 7
    bench_decode(repeat)
    bench_loopback(repeat)


if __name__ == "__main__":
    main()
