"""The aggregate's standard error against its spread over repeated levels, on the simulator.

Starts a simulator with the sweep's flags for one step count (default profile, fast start), runs the
same concurrency level (default 32, 1024 -> 512 tokens, 2 warm-up requests, the module's fixed count)
``--repeats`` times, and prints each level's aggregate output tok/s with the standard error that
bench_stopping.aggregate_precision reports, then the empirical standard deviation of the figure across
the repeats against the median reported SE. An honest estimator has a ratio near 1 (with 8 repeats the
empirical SD itself is uncertain by about +-25%).

Usage (repository root, dev venv; ports 30048-30055 are the benchmarks'):
    .venv/bin/python benchmarks/aggregate_precision.py --steps 3 --repeats 8 --port 30048

2026-12-02, 8 repeats each, concurrency 32: steps 3 SD 5.6 tok/s, median SE 6.1 (1.08); steps 2 SD 2.6,
median SE 2.6 (1.02); this script, steps 2 once more: SD 3.9, median SE 2.9 (0.74). The former estimator
(time windows of one request's median e2e) reported 4.0 (0.72, its half-widths between 6 and 37) and 40.1
(15.5x) on the first two sets.
"""

import argparse
import asyncio
import json
import os
import statistics
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(ROOT, "tests"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# tests/conftest.py makes this checkout importable as ansible_collections.llmops.sglang.
import conftest  # noqa: E402,F401  pylint: disable=unused-import
import adaptive_stopping  # noqa: E402

from ansible_collections.llmops.sglang.plugins.module_utils.bench_client import (  # noqa: E402
    API_PATHS, Endpoint, LevelRun, make_parser, post_json)
from ansible_collections.llmops.sglang.plugins.module_utils.bench_stopping import aggregate_precision  # noqa: E402
from ansible_collections.llmops.sglang.plugins.module_utils.bench_workloads import body_factory  # noqa: E402
from ansible_collections.llmops.sglang.plugins.modules import sglang_bench  # noqa: E402
from sglang_sim.testing import SimProcess, write_profile  # noqa: E402


async def one_level(url, concurrency):
    endpoint = Endpoint(url, api_key=None, connect_timeout=10.0, request_timeout=600.0)
    info = await sglang_bench.fetch_server_info(endpoint)
    _server, max_running, _total = sglang_bench._server_summary(info)  # pylint: disable=protected-access
    running = max(1, min(concurrency, max_running) if max_running else concurrency)
    await post_json(endpoint, "/flush_cache", None)
    make_body = body_factory("native", "synthetic", None, 1024, 512, 0.7, 0, None)
    run = LevelRun(endpoint, API_PATHS["native"], make_parser("native"), make_body, concurrency,
                   sglang_bench.requests_for(concurrency, None, max_running), 2, None, stall_timeout=30.0)
    duration = await run.run()
    tokens = sum(rec.completion_tokens for rec in run.records if rec.ok)
    prec = aggregate_precision(run.records, run.start, run.start + duration, running=running)
    return tokens / duration, prec, len(run.records), running


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--repeats", type=int, default=8)
    ap.add_argument("--port", type=int, default=30048)
    opts = ap.parse_args()
    profile = write_profile(json.loads(json.dumps(adaptive_stopping.FAST_START)))
    sim = SimProcess(adaptive_stopping.sim_args(opts.steps), profile=profile, port=opts.port)
    figures, ses = [], []
    try:
        sim.start()
        for rep in range(opts.repeats):
            figure, prec, requests, running = asyncio.run(one_level(sim.url, opts.concurrency))
            figures.append(figure)
            ses.append(prec["se"] if prec else None)
            print("steps %d c=%d repeat %d: %d requests (%d at once) %.1f tok/s, SE %s (%s steady rounds)" % (
                opts.steps, opts.concurrency, rep, requests, running, figure,
                "%.1f" % prec["se"] if prec else "n/a", prec["samples"] if prec else 0), flush=True)
    finally:
        sim.stop()
        os.unlink(profile)
    if len(figures) > 1 and all(se is not None for se in ses):
        sd = statistics.stdev(figures)
        se = statistics.median(ses)
        print("empirical SD %.1f tok/s (%.2f%%), median reported SE %.1f: ratio %.2f" % (
            sd, 100 * sd / statistics.mean(figures), se, se / sd if sd else float("nan")))


if __name__ == "__main__":
    main()
