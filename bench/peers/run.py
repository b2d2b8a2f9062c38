"""agentcore-fx against the libraries a user would pick instead: one command, one table.

    python bench/peers/run.py            # full run (15-20 minutes on 2 quiet cores, 35-40 on busy ones)
    python bench/peers/run.py --quick    # fewer repetitions, smaller concurrency (a few minutes)

Creates the benchmark venv on first use (``bench/peers/setup.sh``: ``.venv-bench`` at the repo
root, agentcore-fx editable plus the peers from ``bench/peers/requirements.txt``), starts the
loopback OpenAI-compatible server (``server.py``) in its own process, runs every case of every
library in a fresh worker process (``worker.py``: one warm-up, then N timed repetitions), and
prints one table of medians with the ratio agentcore-fx / peer (< 1 means agentcore-fx does
better, except for throughput, where > 1 does). Any python3 >= 3.11 can run this script: the
work happens in the bench venv.

pi-agent-core (node) runs the in-process cases (tool loop, streaming, import) in
``node/worker.mjs``; ``setup.sh`` installs it with npm into ``node/node_modules``. Without
``node`` or ``npm`` (or when the install fails) its column is skipped, with one line saying why.
The in-process cases (scenarios 1 and 2) run in rounds: every library's worker once per round,
the libraries interleaved, the median taken over all the rounds' samples; agentcore-fx and
pi-agent-core, whose runs take milliseconds, make three times the repetitions per round.

Options: ``--only 1,2,5`` picks scenarios; ``--libs a,b`` picks libraries; ``--reps N`` overrides
repetitions; ``--rounds R``
overrides the rounds of scenarios 1 and 2 (default 3, quick 2); ``--json FILE``
also writes every sample; ``--profile DIR`` additionally runs each agentcore-fx case once under
cProfile and writes ``DIR/<case>.prof`` and a text summary ``DIR/<case>.txt``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PEERS = ("pydantic-ai", "openai-agents")
AC = ("agentcore-aio", "agentcore-sync")
PI = "pi-agent-core"
NODE_DIR = os.path.join(HERE, "node")
PI_PACKAGE = os.path.join(NODE_DIR, "node_modules", "@mariozechner", "pi-agent-core", "package.json")
PI_IMPORT = "import '@mariozechner/pi-agent-core'"


@dataclass
class Row:
    scenario: str
    label: str
    unit: str
    values: dict[str, float] = field(default_factory=dict)
    higher_is_better: bool = False
    note: str = ""


def venv_python(venv: str) -> tuple[str, bool]:
    """The bench venv's python (made by ``setup.sh`` on first use), and whether it was just made."""
    py = os.path.join(venv, "bin", "python")
    if not os.path.exists(os.path.join(venv, ".bench-ready")):
        print(f"setting up the bench venv in {venv} ...", file=sys.stderr, flush=True)
        subprocess.run(["bash", os.path.join(HERE, "setup.sh"), venv], check=True)
        return py, True
    return py, False


def versions(py: str) -> dict[str, str]:
    code = ("import importlib.metadata as m, platform, json;"
            "print(json.dumps({'python': platform.python_version(), **{d: m.version(d) for d in "
            "('agentcore-fx', 'pydantic-ai-slim', 'openai-agents', 'openai', 'httpx', 'pydantic')}}))")
    return json.loads(subprocess.run([py, "-c", code], check=True, capture_output=True, text=True).stdout)


def node_setup(setup_ran: bool) -> str | None:
    """The ``node`` executable when pi-agent-core can run (installing it on first use unless
    ``setup.sh`` just tried), else None."""
    node = shutil.which("node")
    if node is None:
        print("pi-agent-core: skipped (no `node` on PATH)", file=sys.stderr, flush=True)
        return None
    if not os.path.exists(PI_PACKAGE):
        if setup_ran:
            print("pi-agent-core: skipped (setup.sh did not install it)", file=sys.stderr, flush=True)
            return None
        if shutil.which("npm") is None:
            print("pi-agent-core: skipped (not installed and no `npm` on PATH)", file=sys.stderr, flush=True)
            return None
        print(f"installing pi-agent-core into {NODE_DIR}/node_modules ...", file=sys.stderr, flush=True)
        subprocess.run(["bash", os.path.join(HERE, "setup.sh"), "--node"])
        if not os.path.exists(PI_PACKAGE):
            print("pi-agent-core: skipped (npm install failed)", file=sys.stderr, flush=True)
            return None
    return node


def node_versions(node: str) -> dict[str, str]:
    out = {"node": subprocess.run([node, "--version"], capture_output=True, text=True).stdout.strip()}
    for name in ("pi-agent-core", "pi-ai"):
        path = os.path.join(NODE_DIR, "node_modules", "@mariozechner", name, "package.json")
        with open(path) as f:
            out[f"@mariozechner/{name}"] = json.load(f)["version"]
    return out


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
         profile: str | None = None, node: str | None = None) -> dict:
    if lib == PI:
        assert node is not None
        cmd = [node, "--expose-gc", os.path.join(NODE_DIR, "worker.mjs"), case, *map(str, args), "--reps",
               str(reps), "--warmup", str(warmup)]
    else:
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


IMPORTS = {"agentcore": "agentcore", "interpreters": "interpreters", "pydantic-ai": "pydantic_ai",
           "openai-agents": "agents"}


def import_times(py: str, node: str | None, reps: int, peers: list[str]
                 ) -> dict[str, tuple[list[float], list[float]]]:
    """Fresh processes, interleaved: per round one bare ``python -c 'pass'``, then
    ``python -c 'import X'`` for each of ``IMPORTS``; with node, one bare
    ``node --input-type=module -e ''`` then the same with ``import '@mariozechner/pi-agent-core'``
    (run in ``node/``, where it resolves). Returns name -> (wall ms, wall minus that round's bare
    start). One unmeasured round first warms the page cache and the bytecode caches."""
    def once(cmd: list[str], cwd: str | None = None) -> float:
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, cwd=cwd)
        return (time.perf_counter() - t0) * 1000

    node_cmd = [node, "--input-type=module", "-e"] if node else []
    out: dict[str, tuple[list[float], list[float]]] = {}
    for r in range(reps + 1):
        bare = once([py, "-c", "pass"])
        for name, mod in IMPORTS.items():
            if name in PEERS and name not in peers:
                continue
            wall = once([py, "-c", f"import {mod}"])
            if r:
                out.setdefault(name, ([], []))[0].append(wall)
                out[name][1].append(wall - bare)
        if node:
            bare = once([*node_cmd, ""], NODE_DIR)
            wall = once([*node_cmd, PI_IMPORT], NODE_DIR)
            if r:
                out.setdefault(PI, ([], []))[0].append(wall)
                out[PI][1].append(wall - bare)
    return out


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
    parser.add_argument("--rounds", type=int, help="rounds of scenarios 1 and 2 (default 3, quick 2)")
    parser.add_argument("--only", default="1,2,3,4,5", help="scenarios to run, e.g. 1,2")
    parser.add_argument("--libs", help="libraries to run, e.g. agentcore-aio,agentcore-sync,pi-agent-core "
                                       "(default: all)")
    parser.add_argument("--venv", default=os.environ.get("BENCH_VENV", os.path.join(ROOT, ".venv-bench")))
    parser.add_argument("--json", help="write all samples and metadata to this file")
    parser.add_argument("--profile", help="directory for cProfile dumps of the agentcore-fx cases")
    opts = parser.parse_args()

    py, setup_ran = venv_python(opts.venv)
    node = node_setup(setup_ran)
    only = {int(s) for s in opts.only.split(",")}
    reps = opts.reps or (3 if opts.quick else 5)
    slow_reps = opts.reps or (1 if opts.quick else 3)  # the peers' 1,000-turn runs take minutes
    rounds = opts.rounds or (2 if opts.quick else 3)
    concurrent = 50 if opts.quick else 200
    libs = (*AC, *PEERS)
    selected = set(opts.libs.split(",")) if opts.libs else {*AC, PI, *PEERS}
    unknown = selected - {*AC, PI, *PEERS}
    if unknown:
        parser.error(f"unknown libraries: {', '.join(sorted(unknown))}")
    fast = (*AC, PI) if node else AC  # their in-process runs take milliseconds: more repetitions
    fast_factor = 3
    rows: list[Row] = []
    raw: dict[str, dict] = {}
    if opts.profile:
        os.makedirs(opts.profile, exist_ok=True)

    def run_case(row: Row, case: str, args: list[int], per: float, scale: float, lib_list=libs,
                 url: str | None = None, n: int = reps, warm: int = 1, rss: Row | None = None,
                 n_rounds: int = 1) -> None:
        """Each library of ``lib_list`` in ``n_rounds`` rounds, interleaved; the peers' slow
        1,000-turn runs once. The median is over every round's samples."""
        lib_list = [lib for lib in lib_list if lib in selected]
        samples: dict[str, list[float]] = {lib: [] for lib in lib_list}
        for r in range(n_rounds):
            for lib in lib_list:
                peer_slow = lib in PEERS and case == "tool_loop" and args[0] >= 1000
                if peer_slow and r > 0:
                    continue
                prof = None
                if opts.profile and lib.startswith("agentcore") and r == 0:
                    prof = os.path.join(opts.profile, f"{lib}-{case}-{'-'.join(map(str, args))}.prof")
                lib_reps = slow_reps if peer_slow else n * fast_factor if lib in fast and n_rounds > 1 else n
                res = work(py, lib, case, args, lib_reps, 0 if peer_slow else warm, url, prof, node)
                if prof:
                    summarize(prof, prof[:-5] + ".txt")
                raw[f"{lib} {case} {args} round {r + 1}"] = res
                samples[lib] += res["samples"]
                if rss is not None:
                    rss.values[lib] = res["rss_kb"] / 1024
        for lib, got in samples.items():
            med = statistics.median(got)
            row.values[lib] = (per / med if row.higher_is_better else med / per) * scale

    print(f"agentcore-fx peer benchmark: {machine()}; venv {opts.venv}", file=sys.stderr, flush=True)
    inproc = (*fast, *PEERS)
    server = Server(py) if 4 in only else None
    try:
        if 1 in only:
            for turns in (50, 200, 1000):
                row = Row("1", f"tool loop, {turns:,} turns", "µs/turn")
                rows.append(row)
                run_case(row, "tool_loop", [turns], turns, 1e6, lib_list=inproc, n_rounds=rounds)
            row = Row("1", "tool loop, 200 turns after 1,000 messages", "µs/turn", note="flatness")
            rows.append(row)
            run_case(row, "tool_loop_history", [200, 1000], 200, 1e6, lib_list=fast, n_rounds=rounds)
        if 2 in only:
            for deltas in (1000, 10000):
                row = Row("2", f"stream, {deltas:,} deltas + listener", "µs/delta")
                rows.append(row)
                run_case(row, "stream", [deltas], deltas, 1e6, lib_list=inproc, n_rounds=rounds)
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
            rss = Row("4", "  peak RSS of that process", "MB")
            rows += [row, rss]
            run_case(row, "http_concurrent", [concurrent, 20], calls, 1, lib_list=("agentcore-aio", *PEERS),
                     url=server.url, n=1 if opts.quick else 3, warm=0, rss=rss)
        if 5 in only:
            n = 5 if opts.quick else 11
            times = import_times(py, node if PI in selected else None, n,
                                 [lib for lib in PEERS if lib in selected])
            raw["imports"] = {k: {"wall_ms": w, "minus_bare_ms": m} for k, (w, m) in times.items()}
            peers = [p for p in (PI, *PEERS) if p in times]
            for mod, what in (("agentcore", "pure core"), ("interpreters", "loop + httpx")):
                for i, kind in ((1, "minus bare start"), (0, "wall, process start included")):
                    row = Row("5", f"import {mod} ({what}), {kind}", "ms")
                    rows.append(row)
                    row.values["agentcore-aio"] = statistics.median(times[mod][i])
                    row.values.update({p: statistics.median(times[p][i]) for p in peers})
            print(f"  imports: {n} fresh processes each", file=sys.stderr, flush=True)
    finally:
        if server:
            server.close()

    vers = {**versions(py), **(node_versions(node) if node else {})}
    print(f"{time.strftime('%Y-%m-%d')}, {machine()}; " + ", ".join(f"{k} {v}" for k, v in vers.items()))
    print_table(rows)
    if opts.json:
        meta = {"date": time.strftime("%Y-%m-%d"), "machine": machine(), "versions": vers,
                "reps": reps, "rounds": rounds}
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


def ratio(a: float | None, b: float | None) -> str:
    return "-" if a is None or not b else f"{a / b:.3f}x"


def print_table(rows: list[Row]) -> None:
    """One table: agentcore-fx asyncio (and sync where it applies) vs each peer, ratios from asyncio
    (and from sync too against pi-agent-core)."""
    head = ["#", "case", "unit", "acfx aio", "acfx sync", "pi-agent-core", "pydantic-ai", "openai-agents",
            "aio/pi", "sync/pi", "acfx/pyd-ai", "acfx/oai-agents"]
    lines = [head]
    for r in rows:
        v = r.values.get
        ac = v("agentcore-aio")
        label = r.label + (f" ({r.note})" if r.note else "") + (" [higher=better]" if r.higher_is_better else "")
        lines.append([r.scenario, label, r.unit, fmt(ac), fmt(v("agentcore-sync")), fmt(v(PI)),
                      fmt(v("pydantic-ai")), fmt(v("openai-agents")), ratio(ac, v(PI)),
                      ratio(v("agentcore-sync"), v(PI)), *(ratio(ac, v(peer)) for peer in PEERS)])
    widths = [max(len(line[i]) for line in lines) for i in range(len(head))]
    for i, line in enumerate(lines):
        print("  ".join(c.ljust(w) if j < 3 else c.rjust(w) for j, (c, w) in enumerate(zip(line, widths))))
        if i == 0:
            print("  ".join("-" * w for w in widths))
    print("\nmedians; ratio = agentcore-fx asyncio (sync/pi: sync) / peer (< 1: agentcore-fx better, "
          "except calls/s: > 1)")


if __name__ == "__main__":
    sys.exit(main())
