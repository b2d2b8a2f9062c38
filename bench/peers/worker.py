"""Runs one scenario case of one library in this (fresh) process and prints one JSON line.

``python worker.py LIB CASE ARG... --reps N [--warmup W] [--url URL] [--profile FILE]``

LIB is a key of a ``VARIANTS`` table (``agentcore-sync``, ``agentcore-aio``, ``pydantic-ai``,
``openai-agents``); CASE a method of its class (``tool_loop 50``, ``stream 1000``,
``parallel 8``, ``http_conversation 20``, ``http_concurrent 200 20``). Output:
``{"samples": [seconds...], "rss_kb": peak RSS, "base_rss_kb": RSS after imports and warm-up}``.
With ``--profile``, one extra run is made under cProfile and its stats are dumped to FILE.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

MODULES = {
    "agentcore-sync": "lib_agentcore",
    "agentcore-aio": "lib_agentcore",
    "pydantic-ai": "lib_pydantic_ai",
    "openai-agents": "lib_openai_agents",
}


def _rss_kb() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("lib", choices=sorted(MODULES))
    parser.add_argument("case")
    parser.add_argument("args", nargs="*", type=int)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--url")
    parser.add_argument("--profile")
    opts = parser.parse_args()

    module = __import__(MODULES[opts.lib])
    runner = module.VARIANTS[opts.lib]()
    fn = getattr(runner, opts.case)
    call_args = ([opts.url] if opts.case.startswith("http") else []) + opts.args
    for _ in range(opts.warmup):
        fn(*call_args)
    gc.collect()
    base = _rss_kb()
    samples = []
    for _ in range(opts.reps):
        gc.collect()
        samples.append(fn(*call_args))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    if opts.profile:
        import cProfile

        prof = cProfile.Profile()
        prof.enable()
        fn(*call_args)
        prof.disable()
        prof.dump_stats(opts.profile)
    print(json.dumps({"samples": samples, "rss_kb": peak, "base_rss_kb": base}))


if __name__ == "__main__":
    main()
