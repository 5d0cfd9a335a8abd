"""Adaptive stopping against fixed request counts: the sweep's benchmark on the simulator.

For each objective (agentic, throughput) the script walks the sweep's step counts the way
roles/sweep does (ascending, early stop, sweep_decide.plan and its bounds), starts a simulator
for each step count with the sweep's flags, drives the sweep's benchmark (sglang_bench's
run_benchmark, concurrency 1..32, 1024 -> 512 tokens, 2 warm-up requests before the first level, as
the sweep's sweep_warmup_levels: first; ``--warmup-levels all`` before every level) once with fixed
request counts (the module's default counts) and once with adaptive stopping (what the sweep
passes by default), and decides with sweep_decide.evaluate. It prints the benchmarking
seconds, the requests per level and the winners of both.

A fixed-count benchmark does not depend on the objective: it is run once per step count and
used by both objectives' sweeps (each sweep's seconds count only the step counts it measures).

Held-out profiles (``--profile heldout-*``) are variants of the default profile that the
simulator was not calibrated on (other step times, acceptance and noise). For them the script
also says which step count the simulator's own models (sglang_sim.models.predict) rank best,
and the predicted figure of each mode's winner: adaptive must be no worse than fixed.

Usage (repository root, dev venv; ports 30048-30055 are this benchmark's):
    .venv/bin/python benchmarks/adaptive_stopping.py --profile default --port 30048
    .venv/bin/python benchmarks/adaptive_stopping.py --profile heldout-fast --port 30050 --json out.json
"""

import argparse
import asyncio
import json
import os
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(ROOT, "tests"))
# tests/conftest.py makes this checkout importable as ansible_collections.llmops.sglang.
import conftest  # noqa: E402,F401  pylint: disable=unused-import

from ansible_collections.llmops.sglang.plugins.modules import sglang_bench  # noqa: E402
from ansible_collections.llmops.sglang.plugins.module_utils import sweep_decide as sd  # noqa: E402
from sglang_sim import models  # noqa: E402
from sglang_sim.profile import load_profile  # noqa: E402
from sglang_sim.testing import SimProcess, write_profile  # noqa: E402

LEVELS = [1, 2, 4, 8, 16, 32]
STEPS = [1, 2, 3, 4, 5, 10]
SWEEP = {"margin": 0.02, "early_stop": True, "early_stop_margin": 0.02, "throughput_concurrency": 32}
FAST_START = {"timing": {"load_time_s": 0.3, "warmup_s": 0.05}}

# Variants of the default profile the simulator was not calibrated on.
PROFILES = {
    "default": {},
    # A faster GPU whose draft keeps being accepted deeper: larger step counts pay more.
    "heldout-fast": {"timing": {"decode_base_ms": 9.0, "draft_step_ms": 0.45},
                     "acceptance": {"greedy": [0.995, 0.99, 0.97, 0.95, 0.90]}},
    # A noisier server with a draft that degrades early: smaller step counts win, per-request noise is large.
    "heldout-noisy": {"timing": {"jitter": 0.08},
                      "acceptance": {"greedy": [0.97, 0.90, 0.70, 0.50, 0.30]}},
}


def sim_args(steps):
    return ["--tp-size", "4", "--kv-cache-dtype", "bf16", "--speculative-algorithm", "EAGLE",
            "--speculative-num-steps", str(steps), "--speculative-eagle-topk", "1",
            "--speculative-num-draft-tokens", str(steps + 1)]


def bench_params(url, mode, objective, bounds, warmup_levels="first"):
    params = dict(url=url, api="native", api_key=None, model=None, connect_timeout=10.0, request_timeout=600.0,
                  validate_certs=True, requests_per_level=None, duration_s=None, warmup_requests=2, seed=0,
                  workload="synthetic", input_len=1024, output_len=512, temperature=0.7, flush_cache=True,
                  stall_timeout=30.0, stop=mode, warmup_levels=warmup_levels)
    if mode == "adaptive":
        # What roles/sweep passes: the ranked figure at the ranked level, to half the margin.
        params.update(stop_metric="per_request" if objective == "agentic" else "aggregate",
                      precision_levels=[1] if objective == "agentic" else [SWEEP["throughput_concurrency"]],
                      target_precision=SWEEP["margin"] / 2, stop_bounds=bounds)
    return params


def measure(profile_path, steps, port, params):
    """(config record, benchmarking seconds) of one step count."""
    sim = SimProcess(sim_args(steps), profile=profile_path, port=port)
    try:
        sim.start()
    except RuntimeError as exc:
        diagnosis = "not_enough_memory" if "Not enough memory" in str(exc) else "start_failed"
        return {"steps": steps, "status": "failed", "repeats": [], "failure": {"diagnosis": diagnosis, "kind": "start"}}, 0.0
    try:
        params = dict(params, url=sim.url)
        started = time.monotonic()
        result, problem = asyncio.run(sglang_bench.run_benchmark(params, LEVELS, None))
        seconds = time.monotonic() - started
    finally:
        sim.stop()
    if problem:
        raise RuntimeError("steps %d: %s" % (steps, problem))
    return {"steps": steps, "status": "ok", "repeats": [{"levels": result["levels"]}], "failure": None}, seconds


def sweep(profile_path, objective, mode, port, cache, warmup_levels):
    configs = dict((s, {"steps": s, "status": "missing", "repeats": []}) for s in STEPS)
    seconds = {}
    while True:
        todo = [e for e in sd.plan(list(configs.values()), objective, 1, SWEEP) if e["action"] == "measure"]
        if not todo:
            break
        steps, bounds = todo[0]["steps"], todo[0].get("bounds") or []
        key = (steps, mode, None if mode == "fixed" else (objective, tuple(bounds)))
        if key not in cache:
            cache[key] = measure(profile_path, steps, port, bench_params(None, mode, objective, bounds, warmup_levels))
        configs[steps], seconds[steps] = cache[key]
        print("  %-10s %-8s steps %2d: %5.1f s %s" % (objective, mode, steps, seconds[steps], configs[steps]["status"]), flush=True)
    evaluation = sd.evaluate(list(configs.values()), objective, 1, LEVELS, SWEEP)
    requests = {}
    for cfg in evaluation["configs"]:
        if cfg["status"] == "ok":
            requests[cfg["steps"]] = dict((lv["concurrency"], lv["requests_completed"] + lv["requests_failed"])
                                          for lv in cfg["repeats"][0]["levels"])
    return {"winner": evaluation["decision"]["winner"], "reason": evaluation["decision"]["reason"],
            "seconds": round(sum(seconds.values()), 1), "seconds_per_steps": dict((s, round(v, 1)) for s, v in seconds.items()),
            "requests": requests}


def predicted(profile_path, objective, steps):
    """The simulator's own model of the objective's figure for a step count (no noise)."""
    if steps is None:
        return None
    prof = load_profile(profile_path)
    cfg = models.SimConfig.for_steps(prof, steps)
    conc = 1 if objective == "agentic" else SWEEP["throughput_concurrency"]
    pred = models.predict(prof, cfg, conc, 1024, 512)
    return pred["per_request_tok_s"] if objective == "agentic" else pred["aggregate_output_tok_s"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--profile", choices=sorted(PROFILES), default="default")
    ap.add_argument("--port", type=int, default=30048, help="simulator port (this benchmark's: 30048-30055)")
    ap.add_argument("--objectives", default="agentic,throughput")
    ap.add_argument("--json", help="write the figures to this file")
    ap.add_argument("--warmup-levels", choices=["first", "all"], default="first",
                    help="levels that begin with the 2 warm-up requests (the sweep's default: first)")
    opts = ap.parse_args()
    overlay = json.loads(json.dumps(FAST_START))
    for key, value in PROFILES[opts.profile].items():
        overlay.setdefault(key, {}).update(value)
    profile_path = write_profile(overlay)
    cache = {}
    out = {"profile": opts.profile, "overlay": PROFILES[opts.profile], "warmup_levels": opts.warmup_levels, "objectives": {}}
    try:
        for objective in opts.objectives.split(","):
            row = {}
            for mode in ("fixed", "adaptive"):
                row[mode] = sweep(profile_path, objective, mode, opts.port, cache, opts.warmup_levels)
                row[mode]["predicted_figure"] = predicted(profile_path, objective, row[mode]["winner"])
            measured_ok = [s for s in STEPS if s in row["fixed"]["requests"] or s in row["adaptive"]["requests"]]
            model = dict((s, predicted(profile_path, objective, s)) for s in measured_ok)
            row["model_best"] = max(model, key=model.get) if model else None
            row["model_figures"] = dict((s, round(v, 1)) for s, v in model.items())
            row["time_saved"] = round(1 - row["adaptive"]["seconds"] / row["fixed"]["seconds"], 3) if row["fixed"]["seconds"] else None
            out["objectives"][objective] = row
    finally:
        os.unlink(profile_path)
    for objective, row in out["objectives"].items():
        print("\n%s, profile %s, warm-up before %s level%s" % (objective, opts.profile, opts.warmup_levels,
                                                               "s" if opts.warmup_levels == "all" else ""))
        for mode in ("fixed", "adaptive"):
            r = row[mode]
            print("  %-8s winner steps %s (model: %s tok/s), benchmarking %.1f s" % (
                mode, r["winner"], "n/a" if r["predicted_figure"] is None else "%.1f" % r["predicted_figure"], r["seconds"]))
            for steps, per_level in sorted(r["requests"].items()):
                print("           steps %2d requests per level %s" % (steps, " ".join("c%d:%d" % kv for kv in sorted(per_level.items()))))
        print("  adaptive saves %.0f%% of the benchmarking time; the models rank steps %s best (%s)" % (
            100 * (row["time_saved"] or 0), row["model_best"], row["model_figures"]))
    if opts.json:
        with open(opts.json, "w", encoding="utf-8") as handle:
            json.dump(out, handle, indent=2, sort_keys=True)


if __name__ == "__main__":
    main()
