"""MCP benchmark: the cost of one MCP tool call, over stdio and in process, against calling the
same function directly.

Run: ``python bench/bench_mcp.py`` (``--quick`` for fewer calls). Prints one table of medians.
The server is the probe server of the tests (``tests/support/mcp_probe.py``, written with the
``mcp`` SDK); the tool adds two integers.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from interpreters.mcp import MCPServer  # noqa: E402
from tests.support.mcp_probe import PROBE, add  # noqa: E402
from tests.support.mcp_servers import probe_command  # noqa: E402


def per_call_us(call: Any, n: int, reps: int) -> float:
    samples = []
    for _ in range(reps):
        t0 = time.perf_counter()
        for i in range(n):
            call(i)
        samples.append((time.perf_counter() - t0) / n * 1e6)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    n, reps = (100, 3) if args.quick else (500, 7)
    rows: list[tuple[str, float]] = [("direct Python call of the function", per_call_us(lambda i: add(i, 1), n, reps))]
    with MCPServer.in_process(PROBE) as server:
        tool = {t.name: t for t in server.tools()}["add"]
        rows.append(("MCP tool call, in process (the SDK's memory transport)",
                     per_call_us(lambda i: tool.execute("c", {"a": i, "b": 1}), n, reps)))
    command, *rest = probe_command()
    t0 = time.perf_counter()
    with MCPServer.stdio(command, rest) as server:
        started = (time.perf_counter() - t0) * 1e6
        tool = {t.name: t for t in server.tools()}["add"]
        rows.append(("MCP tool call over stdio (a subprocess)",
                     per_call_us(lambda i: tool.execute("c", {"a": i, "b": 1}), n, reps)))
    rows.append(("start a stdio server, handshake, list tools (once)", started))
    width = max(len(name) for name, _ in rows)
    direct = rows[0][1]
    print(f"{'benchmark':<{width}}  {'median':>12}  {'x direct':>9}")
    for name, us in rows:
        print(f"{name:<{width}}  {us:9.1f} us  {us / direct:9.0f}")


if __name__ == "__main__":
    main()
