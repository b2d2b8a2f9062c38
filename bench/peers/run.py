"""agentcore-fx against the libraries a user would pick instead: one command, one table.

    python bench/peers/run.py            # full run (about 15-20 minutes on 2 cores)
    python bench/peers/run.py --quick    # fewer repetitions, smaller concurrency (a few minutes)

Creates the benchmark venv on first use (``bench/peers/setup.sh``: ``.venv-bench`` at the repo
root, agentcore-fx editable plus the peers from ``bench/peers/requirements.txt``), starts the
loopback OpenAI-compatible server (``server.py``) in its own process, runs every case of every
library in a fresh worker process (``worker.py``: one warm-up, then N timed repetitions), and
prints one table of medians with the ratio agentcore-fx / peer (< 1 means agentcore-fx does
better, except for throughput, where > 1 does). Any python3 >= 3.11 can run this script: the
work happens in the bench venv.

Options: ``--only 1,2,5`` picks scenarios; ``--reps N`` overrides repetitions; ``--json FILE``
also writes every sample; ``--profile DIR`` additionally runs each agentcore-fx case once under
cProfile and writes ``DIR/<case>.prof`` and a text summary ``DIR/<case>.txt``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PEERS = ("pydantic-ai", "openai-agents")
AC = ("agentcore-aio", "agentcore-sync")


@dataclass
class Row:
    scenario: str
    label: str
    unit: str
    values: dict[str, float] = field(default_factory=dict)
    higher_is_better: bool = False
    note: str = ""


def venv_python(venv: str) -> str:
    py = os.path.join(venv, "bin", "python")
    if not os.path.exists(os.path.join(venv, ".bench-ready")):
        print(f"setting up the bench venv in {venv} ...", file=sys.stderr, flush=True)
        subprocess.run(["bash", os.path.join(HERE, "setup.sh"), venv], check=True)
    return py


def versions(py: str) -> dict[str, str]:
    code = ("import importlib.metadata as m, platform, json;"
            "print(json.dumps({'python': platform.python_version(), **{d: m.version(d) for d in "
            "('agentcore-fx', 'pydantic-ai-slim', 'openai-agents', 'openai', 'httpx', 'pydantic')}}))")
    return json.loads(subprocess.run([py, "-c", code], check=True, capture_output=True, text=True).stdout)


def machine() -> str:
    model = "?"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{os.cpu_count()} CPUs ({model})"


class Server:
    def __init__(self, py: str) -> None:
        self.proc = subprocess.Popen([py, os.path.join(HERE, "server.py")], stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline() if self.proc.stdout else ""
        if not line.startswith("PORT "):
            self.proc.kill()
            raise RuntimeError(f"the loopback server did not start: {line!r}")
        self.url = f"http://127.0.0.1:{int(line.split()[1])}/v1"

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def work(py: str, lib: str, case: str, args: list[int], reps: int, warmup: int, url: str | None = None,
         profile: str | None = None) -> dict:
    cmd = [py, os.path.join(HERE, "worker.py"), lib, case, *map(str, args), "--reps", str(reps),
           "--warmup", str(warmup)]
    if url:
        cmd += ["--url", url]
    if profile:
        cmd += ["--profile", profile]
    t0 = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    if out.returncode != 0:
        sys.stderr.write(out.stderr[-3000:])
        raise RuntimeError(f"worker failed: {' '.join(cmd)}")
    result = json.loads(out.stdout.strip().splitlines()[-1])
    print(f"  {lib:15} {case} {args}: {len(result['samples'])} reps in {time.perf_counter() - t0:.1f} s",
          file=sys.stderr, flush=True)
    return result


def import_ms(py: str, module: str, reps: int) -> list[float]:
    """Wall time of ``python -c 'import module'`` minus a bare interpreter, fresh processes."""
    def once(code: str) -> float:
        t0 = time.perf_counter()
        subprocess.run([py, "-c", code], check=True)
        return time.perf_counter() - t0

    once(f"import {module}")  # warm the page cache and the bytecode cache
    samples = []
    for _ in range(reps):
        bare = once("pass")
        samples.append((once(f"import {module}") - bare) * 1000)
    return samples


def summarize(profile: str, txt: str) -> None:
    import pstats

    with open(txt, "w") as f:
        stats = pstats.Stats(profile, stream=f)
        stats.sort_stats("tottime").print_stats(25)
        stats.sort_stats("cumulative").print_stats(35)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer repetitions, 50 concurrent conversations")
    parser.add_argument("--reps", type=int, help="timed repetitions per case (default 5, quick 3)")
    parser.add_argument("--only", default="1,2,3,4,5", help="scenarios to run, e.g. 1,2")
    parser.add_argument("--venv", default=os.environ.get("BENCH_VENV", os.path.join(ROOT, ".venv-bench")))
    parser.add_argument("--json", help="write all samples and metadata to this file")
    parser.add_argument("--profile", help="directory for cProfile dumps of the agentcore-fx cases")
    opts = parser.parse_args()

    py = venv_python(opts.venv)
    only = {int(s) for s in opts.only.split(",")}
    reps = opts.reps or (3 if opts.quick else 5)
    slow_reps = opts.reps or (1 if opts.quick else 3)  # the peers' 1,000-turn runs take minutes
    concurrent = 50 if opts.quick else 200
    libs = (*AC, *PEERS)
    rows: list[Row] = []
    raw: dict[str, dict] = {}
    if opts.profile:
        os.makedirs(opts.profile, exist_ok=True)

    def run_case(row: Row, case: str, args: list[int], per: float, scale: float, lib_list=libs,
                 url: str | None = None, n: int = reps, warm: int = 1, rss: Row | None = None) -> None:
        for lib in lib_list:
            peer_slow = lib in PEERS and case == "tool_loop" and args[0] >= 1000
            prof = None
            if opts.profile and lib.startswith("agentcore"):
                prof = os.path.join(opts.profile, f"{lib}-{case}-{'-'.join(map(str, args))}.prof")
            res = work(py, lib, case, args, slow_reps if peer_slow else n, 0 if peer_slow else warm, url, prof)
            if prof:
                summarize(prof, prof[:-5] + ".txt")
            raw[f"{lib} {case} {args}"] = res
            med = statistics.median(res["samples"])
            row.values[lib] = (per / med if row.higher_is_better else med / per) * scale
            if rss is not None:
                rss.values[lib] = res["rss_kb"] / 1024

    print(f"agentcore-fx peer benchmark: {machine()}; venv {opts.venv}", file=sys.stderr, flush=True)
    server = Server(py) if 4 in only else None
    try:
        if 1 in only:
            for turns in (50, 200, 1000):
                row = Row("1", f"tool loop, {turns:,} turns", "µs/turn")
                rows.append(row)
                run_case(row, "tool_loop", [turns], turns, 1e6)
        if 2 in only:
            for deltas in (1000, 10000):
                row = Row("2", f"stream, {deltas:,} deltas + listener", "µs/delta")
                rows.append(row)
                run_case(row, "stream", [deltas], deltas, 1e6)
        if 3 in only:
            row = Row("3", "8 parallel tools x 50 ms sleep", "ms wall", note="ideal 50 ms")
            rows.append(row)
            run_case(row, "parallel", [8], 1, 1e3)
        if 4 in only:
            assert server is not None
            row = Row("4", "HTTP, 20-turn tool conversation", "ms/call", note="21 model calls")
            rows.append(row)
            run_case(row, "http_conversation", [20], 21, 1e3, url=server.url)
            calls = concurrent * 21
            row = Row("4", f"HTTP, {concurrent} concurrent convs x 20 turns", "calls/s", higher_is_better=True)
            rss = Row("4", f"  peak RSS of that process", "MB")
            rows += [row, rss]
            run_case(row, "http_concurrent", [concurrent, 20], calls, 1, lib_list=("agentcore-aio", *PEERS),
                     url=server.url, n=1 if opts.quick else 3, warm=0, rss=rss)
        if 5 in only:
            n = 5 if opts.quick else 11
            ac = Row("5", "import agentcore (pure core)", "ms")
            it = Row("5", "import interpreters (loop + httpx)", "ms")
            rows += [ac, it]
            peer_ms = {lib: statistics.median(import_ms(py, mod, n))
                       for lib, mod in (("pydantic-ai", "pydantic_ai"), ("openai-agents", "agents"))}
            for row, mod in ((ac, "agentcore"), (it, "interpreters")):
                samples = import_ms(py, mod, n)
                raw[f"import {mod}"] = {"samples": samples}
                row.values["agentcore-aio"] = statistics.median(samples)
                row.values.update(peer_ms)
            print(f"  imports: {n} fresh processes each", file=sys.stderr, flush=True)
    finally:
        if server:
            server.close()

    print_table(rows)
    if opts.json:
        meta = {"date": time.strftime("%Y-%m-%d"), "machine": machine(), "versions": versions(py)}
        with open(opts.json, "w") as f:
            json.dump({"meta": meta, "rows": [r.__dict__ for r in rows], "raw": raw}, f, indent=1)
    return 0


def fmt(v: float | None) -> str:
    if v is None:
        return "-"
    if v >= 100:
        return f"{v:,.0f}"
    if v >= 10:
        return f"{v:.1f}"
    return f"{v:.2f}"


def print_table(rows: list[Row]) -> None:
    """One table: agentcore-fx asyncio (and sync where it applies) vs each peer, ratios from asyncio."""
    head = ["#", "case", "unit", "acfx aio", "acfx sync", "pydantic-ai", "openai-agents",
            "acfx/pyd-ai", "acfx/oai-agents"]
    lines = [head]
    for r in rows:
        ac = r.values.get("agentcore-aio")
        ratios = []
        for peer in PEERS:
            p = r.values.get(peer)
            ratios.append("-" if ac is None or not p else f"{ac / p:.3f}x")
        label = r.label + (f" ({r.note})" if r.note else "") + (" [higher=better]" if r.higher_is_better else "")
        lines.append([r.scenario, label, r.unit, fmt(ac), fmt(r.values.get("agentcore-sync")),
                      fmt(r.values.get("pydantic-ai")), fmt(r.values.get("openai-agents")), *ratios])
    widths = [max(len(line[i]) for line in lines) for i in range(len(head))]
    for i, line in enumerate(lines):
        print("  ".join(c.ljust(w) if j < 3 else c.rjust(w) for j, (c, w) in enumerate(zip(line, widths))))
        if i == 0:
            print("  ".join("-" * w for w in widths))
    print("\nmedians; ratio = agentcore-fx asyncio / peer (< 1: agentcore-fx better, except calls/s: > 1)")


if __name__ == "__main__":
    sys.exit(main())
