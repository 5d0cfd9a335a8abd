"""Command line: ``sglang-sim [SGLang launch flags] [--sim-profile FILE]`` and ``sglang-sim predict``."""

import argparse
import json
import sys

from sglang_sim import args as sim_args
from sglang_sim import models
from sglang_sim.profile import ProfileError, load_profile


def predict_main(argv):
    parser = argparse.ArgumentParser(prog="python -m sglang_sim predict",
                                     description="Print what the profile's models predict for a closed-loop benchmark.")
    parser.add_argument("--profile", default=None, help="profile file or bundled name (default: default)")
    parser.add_argument("--steps", type=int, action="append", help="speculative steps (repeatable; 0 = off)")
    parser.add_argument("--concurrency", type=int, action="append", help="concurrency level (repeatable)")
    parser.add_argument("--input-len", type=int, default=128)
    parser.add_argument("--output-len", type=int, default=512)
    parser.add_argument("--sampled", action="store_true", help="temperature > 0 (sampled acceptance)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    opts = parser.parse_args(argv)
    try:
        profile = load_profile(opts.profile)
    except ProfileError as exc:
        sys.stderr.write("error: %s\n" % exc)
        return 2
    rows = []
    for steps in opts.steps or [1, 2, 3, 4, 5]:
        cfg = models.SimConfig.for_steps(profile, steps)
        for conc in opts.concurrency or [1, 16, 32]:
            pred = models.predict(profile, cfg, conc, opts.input_len, opts.output_len, greedy=not opts.sampled)
            pred.pop("memory", None)
            pred["steps"] = steps
            rows.append(pred)
    if opts.json:
        print(json.dumps(rows, indent=2))
        return 0
    print("%5s %5s %8s %6s %9s %12s %12s %s" % ("steps", "conc", "running", "accept", "step_ms", "per_req_tok/s", "aggr_tok/s", "error"))
    for r in rows:
        if r.get("error"):
            print("%5d %5d %8s %6s %9s %12s %12s %s" % (r["steps"], r["concurrency"], "-", "-", "-", "-", "-", r["error"]))
        else:
            values = (r["steps"], r["concurrency"], r["running"], r["accept_length"], r["step_time_s"] * 1000,
                      r["per_request_tok_s"], r["aggregate_output_tok_s"])
            print("%5d %5d %8d %6.2f %9.2f %12.1f %12.1f" % values)
    return 0


def main(argv=None):
    if argv is None:
        argv = sys.argv[1:]
    if argv and argv[0] == "predict":
        return predict_main(argv[1:])
    parser = sim_args.build_parser()
    try:
        # prepare_server_args (0.5.23): --config FILE.yaml is merged before argparse sees the flags
        argv = sim_args.merge_config(parser, argv)
    except ValueError as exc:
        sys.stderr.write("ValueError: %s\n" % exc)
        return 1
    args = parser.parse_args(argv)
    try:
        profile = load_profile(args.sim_profile)
    except ProfileError as exc:
        parser.error("--sim-profile: %s" % exc)
    try:
        warnings = sim_args.resolve(args)
    except ValueError as exc:
        sys.stderr.write("ValueError: %s\n" % exc)
        return 1
    from sglang_sim.server import serve  # aiohttp is only needed to serve
    return serve(args, profile, warnings)


if __name__ == "__main__":
    sys.exit(main())
