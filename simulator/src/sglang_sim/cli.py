"""Command line: ``sglang-sim [SGLang launch flags] [--sim-profile FILE]`` and ``sglang-sim predict``."""

import argparse
import json
import os
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
    parser.add_argument("--adaptive", action="append", metavar="SCHEDULE",
                        help="an adaptive schedule (--speculative-adaptive): a JSON file as SGLang 0.5.23 reads it, "
                             "inline JSON such as '{\"1\": [4], \"16\": [3]}' (a list is candidate_steps), or "
                             "'default' (SGLang's built-in); repeatable, predicted after the --steps rows")
    parser.add_argument("--adaptive-steps", type=int, default=None,
                        help="--speculative-num-steps of the adaptive rows (default: the middle candidate)")
    opts = parser.parse_args(argv)
    try:
        profile = load_profile(opts.profile)
    except ProfileError as exc:
        sys.stderr.write("error: %s\n" % exc)
        return 2
    configs = []
    for steps in opts.steps or ([] if opts.adaptive else [1, 2, 3, 4, 5]):
        configs.append((str(steps), models.SimConfig.for_steps(profile, steps)))
    for text in opts.adaptive or []:
        try:
            schedule = _schedule(text, opts.adaptive_steps)
        except (ValueError, OSError, AttributeError) as exc:
            sys.stderr.write("error: --adaptive %s: %s: %s\n" % (text, _exception_name(exc), exc))
            return 2
        configs.append(("adaptive %s" % text, models.SimConfig.for_schedule(profile, schedule)))
    rows = []
    for label, cfg in configs:
        for conc in opts.concurrency or [1, 16, 32]:
            pred = models.predict(profile, cfg, conc, opts.input_len, opts.output_len, greedy=not opts.sampled)
            pred.pop("memory", None)
            pred["steps"] = cfg.steps if cfg.adaptive is None else (pred.get("adaptive") or {}).get("steps")
            pred["config"] = label
            rows.append(pred)
    if opts.json:
        print(json.dumps(rows, indent=2))
        return 0
    print("%5s %5s %8s %6s %9s %12s %12s %s" % ("steps", "conc", "running", "accept", "step_ms", "per_req_tok/s", "aggr_tok/s", "error"))
    for r in rows:
        steps = r["steps"] if isinstance(r["steps"], int) else "/".join(str(s) for s in r["steps"] or ["-"])
        note = "  (%s)" % r["config"] if r["config"].startswith("adaptive") else ""
        if r.get("error"):
            print("%5s %5d %8s %6s %9s %12s %12s %s%s" % (steps, r["concurrency"], "-", "-", "-", "-", "-", r["error"], note))
        else:
            values = (steps, r["concurrency"], r["running"], r["accept_length"], r["step_time_s"] * 1000,
                      r["per_request_tok_s"], r["aggregate_output_tok_s"], note)
            print("%5s %5d %8d %6.2f %9.2f %12.1f %12.1f%s" % values)
    return 0


def _schedule(text, initial_steps):
    """An adaptive.Schedule from a file, inline JSON or 'default', checked as SGLang 0.5.23 checks it
    (_load_adaptive_config; the initial step count must be a candidate)."""
    from sglang_sim import adaptive

    if text == "default":
        path, cfg = None, adaptive.DEFAULT_ADAPTIVE_CONFIG
    elif text.lstrip().startswith("{"):
        path, cfg = None, json.loads(text)
        cfg = dict((k, {"candidate_steps": v} if isinstance(v, list) else v) for k, v in cfg.items())
    else:
        path, cfg = text, None
    if cfg is not None:
        import tempfile

        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
            json.dump(cfg, handle)
            path = handle.name
    try:
        candidates = adaptive.candidate_steps(path)
        steps = initial_steps if initial_steps is not None else candidates[len(candidates) // 2]
        if steps not in candidates:
            raise ValueError("--speculative-num-steps=%s is not in the adaptive config candidate_steps %s. "
                             "Pass one of those values." % (steps, candidates))
        return adaptive.Schedule.from_path(path, steps)
    finally:
        if cfg is not None:
            os.unlink(path)


def _exception_name(exc):
    """The exception's name as a Python traceback's last line prints it."""
    kind = type(exc)
    if kind.__module__ in ("builtins", "exceptions"):
        return kind.__name__
    return "%s.%s" % (kind.__module__, kind.__name__)


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
        # argparse's own wording for a flag whose value it refuses, as SGLang's flags fail: the
        # collection's diagnosis then reads it as bad_argument, as it would a real flag's.
        parser.error("argument --sim-profile: %s" % exc)
    try:
        warnings = sim_args.resolve(args)
    except (ValueError, OSError, AttributeError) as exc:
        # The last line of SGLang's traceback: ServerArgs resolution raises these at start (0.5.23:
        # ValueError and AssertionError of the argument checks; reading --speculative-adaptive-config
        # raises FileNotFoundError, json.decoder.JSONDecodeError or AttributeError as they come).
        sys.stderr.write("%s: %s\n" % (_exception_name(exc), exc))
        return 1
    from sglang_sim.startup import serve  # aiohttp is only needed to serve
    return serve(args, profile, warnings)


if __name__ == "__main__":
    sys.exit(main())
