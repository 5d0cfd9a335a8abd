"""Measure sglang-sim's own fidelity: what it delivers against what its models predict.

Part 1 (fidelity): a simulator with the deterministic variant of the chosen profile and
``--speculative-num-steps N`` is driven closed-loop at each concurrency level (default 1, 8,
32, 64); per-request tok/s (1 / TPOT) and aggregate tok/s are compared with
``sglang_sim.models.predict`` for the same launch line.

Part 2 (capacity): the highest aggregate rate the simulator keeps on schedule (measured
aggregate within 2% of predicted) over 64 streams with the simulator pinned to one CPU core
and this client pinned to another. The step time of a pure-attention variant of the profile
is scaled so that the models predict each target rate; targets rise until the simulator
falls behind.

Usage (from the repository root, with the dev venv):
    .venv/bin/python benchmarks/sim_fidelity.py                 # both parts, default profile
    .venv/bin/python benchmarks/sim_fidelity.py --skip-capacity --steps 4
    .venv/bin/python benchmarks/sim_fidelity.py --json results/sim_fidelity.json
"""

import argparse
import json
import os
import sys

import yaml

from sglang_sim import loadgen, models
from sglang_sim.profile import load_profile
from sglang_sim.testing import SimProcess, write_profile

DETERMINISTIC = {"seed": 0, "model": {"natural_output_sigma": 0.0},
                 "timing": {"load_time_s": 0.3, "warmup_s": 0.05, "jitter": 0.0},
                 "acceptance": {"deterministic": True}}


def spec_args(prof, steps, extra=()):
    return ["--tp-size", str(prof["hardware"]["gpu_count"]), "--speculative-algorithm", "EAGLE",
            "--speculative-num-steps", str(steps), "--speculative-eagle-topk", "1",
            "--speculative-num-draft-tokens", str(steps + 1)] + list(extra)


def overlay(base_path, extra):
    """A profile file: the chosen profile's non-default fields plus ``extra``."""
    data = {}
    if base_path not in (None, "default"):
        path = base_path if os.path.exists(base_path) else os.path.join(os.path.dirname(models.__file__), "profiles", base_path + ".yaml")
        with open(path, encoding="utf-8") as handle:
            data = yaml.safe_load(handle) or {}
    for key, value in extra.items():
        if isinstance(value, dict):
            data.setdefault(key, {}).update(value)
        else:
            data[key] = value
    return write_profile(data)


def fidelity(opts):
    extra = DETERMINISTIC if not opts.random else {"timing": {"load_time_s": 0.3, "warmup_s": 0.05}}
    path = overlay(opts.profile, extra)
    prof = load_profile(path)
    cfg = models.SimConfig.for_steps(prof, opts.steps)
    rows = []
    with SimProcess(spec_args(prof, opts.steps), profile=path, cpu=0 if opts.pin else None) as sim:
        for conc in opts.levels:
            pred = models.predict(prof, cfg, conc, opts.input_len, opts.output_len)
            got = loadgen.measure(sim.url, conc, max(3 * conc, opts.min_requests), input_len=opts.input_len,
                                  output_len=opts.output_len, warmup=0)
            rows.append({
                "concurrency": conc, "running": pred["running"],
                "per_request_measured": got["per_request_tok_s"], "per_request_predicted": pred["per_request_tok_s"],
                "aggregate_measured": got["aggregate_output_tok_s"], "aggregate_predicted": pred["aggregate_output_tok_s"],
                "accept_measured": got["accept_length"], "accept_predicted": pred["accept_length"],
                "per_request_staggered": pred["per_request_tok_s_staggered"],
                "aggregate_staggered": pred["aggregate_output_tok_s_staggered"],
                "errors": len(got["errors"]),
            })
    os.unlink(path)
    return rows


def capacity_run(opts, target):
    base = load_profile(opts.profile)
    accept = models.expected_accept_length(base, models.SimConfig.for_steps(base, 3))
    step_ms = 64 * accept / target * 1000.0
    extra = dict(DETERMINISTIC)
    extra["model"] = {"natural_output_sigma": 0.0, "state_mib_per_request": 0.0, "state_mib_per_draft_token": 0.0}
    extra["timing"] = dict(DETERMINISTIC["timing"], decode_base_ms=step_ms, draft_step_ms=0.0, verify_token_ms=0.0,
                           request_ms=0.0, prefill_base_ms=1.0, prefill_token_ms=0.0)
    path = overlay(opts.profile, extra)
    prof = load_profile(path)
    cfg = models.SimConfig.for_steps(prof, 3, max_running_requests=64)
    pred = models.predict(prof, cfg, 64, 32, opts.capacity_output_len)
    with SimProcess(spec_args(prof, 3, ["--max-running-requests", "64"]), profile=path, cpu=0) as sim:
        got = loadgen.measure(sim.url, 64, 64 * 4, input_len=32, output_len=opts.capacity_output_len)
    os.unlink(path)
    return {"target": target, "step_ms": step_ms, "predicted": pred["aggregate_output_tok_s"],
            "measured": got["aggregate_output_tok_s"], "ratio": got["aggregate_output_tok_s"] / pred["aggregate_output_tok_s"],
            "errors": len(got["errors"])}


def capacity(opts):
    runs = []
    best = None
    for target in opts.targets:
        run = capacity_run(opts, target)
        runs.append(run)
        print("  target %7.0f tok/s  step %6.2f ms  predicted %8.0f  measured %8.0f  ratio %.3f" % (
            run["target"], run["step_ms"], run["predicted"], run["measured"], run["ratio"]), flush=True)
        if run["ratio"] >= 0.98 and not run["errors"]:
            best = run
        else:
            break
    return runs, best


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--profile", default="default", help="profile file or bundled name")
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--levels", type=lambda s: [int(x) for x in s.split(",")], default=[1, 8, 32, 64])
    parser.add_argument("--input-len", type=int, default=128)
    parser.add_argument("--output-len", type=int, default=256)
    parser.add_argument("--min-requests", type=int, default=4)
    parser.add_argument("--capacity-output-len", type=int, default=512)
    parser.add_argument("--targets", type=lambda s: [float(x) for x in s.split(",")],
                        default=[10000, 20000, 30000, 40000, 50000, 60000, 80000])
    parser.add_argument("--random", action="store_true",
                        help="part 1 with the profile's randomness (measurements fall between the lock-step and staggered predictions)")
    parser.add_argument("--skip-fidelity", action="store_true")
    parser.add_argument("--skip-capacity", action="store_true")
    parser.add_argument("--no-pin", dest="pin", action="store_false", help="do not pin the simulator to CPU 0 in part 1")
    parser.add_argument("--json", help="write the results to this file")
    opts = parser.parse_args()
    prof = load_profile(opts.profile)
    if hasattr(os, "sched_setaffinity") and os.cpu_count() and os.cpu_count() > 1:
        os.sched_setaffinity(0, {1})  # the client on core 1, the simulator on core 0
    out = {"profile": prof["name"], "steps": opts.steps, "cpus": os.cpu_count()}
    if not opts.skip_fidelity:
        print("Fidelity: profile %s (%s), steps %d, input %d, output %d tokens" % (
            prof["name"], "random" if opts.random else "deterministic", opts.steps, opts.input_len, opts.output_len))
        header = ("conc", "running", "per-req meas", "per-req pred", "err%", "aggr meas", "aggr pred", "err%", "accept")
        print("%5s %7s %14s %14s %7s %14s %14s %7s %7s" % header)
        rows = fidelity(opts)
        for r in rows:
            print("%5d %7d %14.1f %14.1f %+6.1f%% %14.1f %14.1f %+6.1f%% %7.2f" % (
                r["concurrency"], r["running"], r["per_request_measured"], r["per_request_predicted"],
                100 * (r["per_request_measured"] / r["per_request_predicted"] - 1), r["aggregate_measured"],
                r["aggregate_predicted"], 100 * (r["aggregate_measured"] / r["aggregate_predicted"] - 1),
                r["accept_measured"] or 0))
            if opts.random:
                print("%5s %7s %14s %14.1f %7s %14s %14.1f   (staggered bound)" % (
                    "", "", "", r["per_request_staggered"], "", "", r["aggregate_staggered"]))
        out["fidelity"] = rows
    if not opts.skip_capacity:
        print("Capacity: 64 streams, simulator pinned to one core, on schedule = measured >= 98% of predicted")
        runs, best = capacity(opts)
        out["capacity"] = {"runs": runs, "highest_on_schedule_tok_s": best["measured"] if best else None}
        if best:
            print("Highest aggregate rate on schedule: %.0f tok/s (target %.0f)" % (best["measured"], best["target"]))
        else:
            print("Not on schedule even at the lowest target")
    if opts.json:
        with open(opts.json, "w", encoding="utf-8") as handle:
            json.dump(out, handle, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
