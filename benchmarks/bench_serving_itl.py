"""SGLang's own bench_serving (0.5.23) and sglang_bench measure the same ITL, TPOT and throughput.

SGLang 0.5.23's ``sglang.benchmark.serving`` (``--backend sglang-oai`` and ``sglang-oai-chat``)
counts tokens by re-tokenizing each streamed chunk's text with ``--tokenizer`` and splits a
chunk's gap per token (``calculate_metrics``: retokenized ITL, used when the server reports an
accept length). sglang_bench counts tokens from the usage the server sends on every chunk
(``continuous_usage_stats``). Both sides get the same tokenizer: bench_serving through
``--tokenizer``, the simulator through ``--tokenizer-path`` (it then generates single-token
words of that vocabulary). If the simulator's text did not tokenize to the counts it reports,
or sglang_bench split chunk gaps differently, the two ITLs would differ by the ratio.

For each API flavour and concurrency it runs bench_serving (a subprocess of the reference
venv's Python), then sglang_bench with the same load, against one simulator (deterministic
acceptance, no jitter, near-free prefill, steps 3), and prints mean and median ITL of both.

A second table holds the figures the sweep decides on, against the ones bench_serving prints:
the aggregate output throughput (sglang_bench's ``aggregate_output_tok_s`` against
bench_serving's ``output_throughput``, both output tokens over the benchmark's duration) and the
median TPOT (sglang_bench's ``tpot_s`` p50 against ``median_tpot_ms``, both
(latency - TTFT) / (tokens - 1)); the agentic objective ranks on the median per-request decode
rate, (tokens - 1) / (last token - first token), shown against 1000 / bench_serving's median TPOT.
Median TTFT is printed, not checked: near-free prefill makes it a millisecond of scheduling noise.
The two clients run one after the other, so throughput and TPOT carry the simulator's run-to-run
spread as well as any difference of definition.
Exit status 1 when a mean ITL, an output throughput or a median TPOT differs by more than
--tolerance (default 5%).

Needs a real SGLang 0.5.23 install (``../shared/tools/sglang-reference-venv.sh`` builds one; no
GPU needed to run bench_serving) and a tokenizer directory with tokenizer.json.

Usage (from the repository root, with the dev venv):
    .venv/bin/python benchmarks/bench_serving_itl.py \\
        --sglang-python /work/sglref/bin/python --tokenizer /work/shared/tools/tokenizer
"""

import argparse
import asyncio
import hashlib
import json
import os
import subprocess
import sys
import tempfile

from sglang_sim.testing import SimProcess, write_profile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
STEPS = 3
PROFILE = {"seed": 0, "model": {"natural_output_sigma": 0.0},
           "timing": {"load_time_s": 0.3, "warmup_s": 0.05, "jitter": 0.0, "prefill_base_ms": 0.5,
                      "prefill_token_ms": 0.0},
           "acceptance": {"deterministic": True}}
BACKENDS = {"completions": "sglang-oai", "chat": "sglang-oai-chat"}


def import_sglang_bench():
    """This checkout as ansible_collections.llmops.sglang (a link per checkout, so that another
    checkout's link in the same temp dir is never picked up)."""
    tag = hashlib.sha1(ROOT.encode()).hexdigest()[:10]
    base = os.path.join(tempfile.gettempdir(), "llmops-sglang-bench-%s" % tag)
    link = os.path.join(base, "ansible_collections", "llmops", "sglang")
    if os.path.realpath(link) != ROOT:
        os.makedirs(os.path.dirname(link), exist_ok=True)
        if os.path.lexists(link):
            os.unlink(link)
        os.symlink(ROOT, link)
    sys.path.insert(0, base)
    from ansible_collections.llmops.sglang.plugins.modules import sglang_bench
    return sglang_bench


def run_bench_serving(python, url, backend, tokenizer, concurrency, num_prompts, input_len, output_len, workdir):
    out = os.path.join(workdir, "%s-c%d.jsonl" % (backend, concurrency))
    cmd = [python, "-m", "sglang.bench_serving", "--backend", backend, "--base-url", url,
           "--tokenizer", tokenizer, "--dataset-name", "random-ids", "--random-input-len", str(input_len),
           "--random-output-len", str(output_len), "--random-range-ratio", "1.0", "--num-prompts", str(num_prompts),
           "--max-concurrency", str(concurrency), "--request-rate", "inf", "--output-file", out,
           "--warmup-requests", "1", "--seed", "0"]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, check=False)
    if proc.returncode != 0 or not os.path.exists(out):
        raise SystemExit("bench_serving failed (%s):\n%s" % (" ".join(cmd), proc.stdout[-3000:]))
    with open(out) as handle:
        doc = json.loads(handle.read().strip().splitlines()[-1])
    if doc.get("completed") != num_prompts:
        raise SystemExit("bench_serving completed %s of %d requests:\n%s" % (doc.get("completed"), num_prompts, proc.stdout[-3000:]))
    return doc, " ".join(cmd)


def run_sglang_bench(mod, url, api, concurrency, num_prompts, input_len, output_len):
    params = dict(url=url, api=api, api_key=None, model=None, connect_timeout=5.0, request_timeout=120.0,
                  validate_certs=True, requests_per_level=num_prompts, duration_s=None, warmup_requests=1, seed=0,
                  workload="synthetic", input_len=input_len, output_len=output_len, temperature=0.0, flush_cache=True)
    loop = asyncio.new_event_loop()
    try:
        result, problem = loop.run_until_complete(mod.run_benchmark(params, [concurrency], None))
    finally:
        loop.close()
    if problem:
        raise SystemExit("sglang_bench: %s" % problem)
    return result["levels"][0]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sglang-python", default=os.environ.get("SGLANG_REF_PYTHON", "/work/sglref/bin/python"),
                    help="Python of a venv with SGLang 0.5.23 installed (default: %(default)s)")
    ap.add_argument("--tokenizer", default=os.environ.get("SGLANG_REF_TOKENIZER", "/work/shared/tools/tokenizer"),
                    help="directory with tokenizer.json, given to both sides (default: %(default)s)")
    ap.add_argument("--concurrency", default="1,4,16", help="comma-separated (default: %(default)s)")
    ap.add_argument("--num-prompts", type=int, default=32)
    ap.add_argument("--input-len", type=int, default=64)
    ap.add_argument("--output-len", type=int, default=256)
    ap.add_argument("--tolerance", type=float, default=0.05)
    ap.add_argument("--json", help="also write the figures to this file")
    ap.add_argument("--sim-without-tokenizer", action="store_true",
                    help="counter-check: do not give the simulator the tokenizer (its words then are not single "
                         "tokens of bench_serving's tokenizer, and the ITLs should disagree)")
    opts = ap.parse_args()
    for path, what in ((opts.sglang_python, "--sglang-python"), (os.path.join(opts.tokenizer, "tokenizer.json"), "--tokenizer")):
        if not os.path.exists(path):
            raise SystemExit("%s: %s does not exist (see this script's docstring)" % (what, path))
    version = subprocess.run([opts.sglang_python, "-c", "import sglang; print(sglang.__version__)"],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, universal_newlines=True, check=False).stdout.strip()
    mod = import_sglang_bench()
    levels = [int(c) for c in opts.concurrency.split(",")]
    rows = []
    workdir = tempfile.mkdtemp(prefix="bench-serving-itl-")
    profile = write_profile(dict(PROFILE, name="bench-serving-itl"), workdir)
    args = ["--tp-size", "4", "--speculative-algorithm", "EAGLE", "--speculative-num-steps", str(STEPS),
            "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", str(STEPS + 1)]
    if not opts.sim_without_tokenizer:
        args += ["--tokenizer-path", opts.tokenizer]
    with SimProcess(args, profile=profile) as sim:
        for api, backend in sorted(BACKENDS.items()):
            for conc in levels:
                ref, cmd = run_bench_serving(opts.sglang_python, sim.url, backend, opts.tokenizer, conc, opts.num_prompts,
                                             opts.input_len, opts.output_len, workdir)
                ours = run_sglang_bench(mod, sim.url, api, conc, opts.num_prompts, opts.input_len, opts.output_len)
                ref_mean, ref_median = ref["mean_itl_ms"], ref["median_itl_ms"]
                our_mean, our_median = 1000 * ours["itl_s"]["mean"], 1000 * ours["itl_s"]["p50"]
                rows.append({"api": api, "backend": backend, "concurrency": conc,
                             "bench_serving_mean_itl_ms": ref_mean, "sglang_bench_mean_itl_ms": our_mean,
                             "bench_serving_median_itl_ms": ref_median, "sglang_bench_median_itl_ms": our_median,
                             "mean_diff": our_mean / ref_mean - 1, "median_diff": our_median / ref_median - 1,
                             "bench_serving_output_tokens": ref.get("total_output_tokens"),
                             "bench_serving_retokenized_output_tokens": ref.get("total_output_tokens_retokenized"),
                             "sglang_bench_output_tokens": ours["output_tokens"],
                             "server_accept_length": ref.get("accept_length"),
                             "sglang_bench_accept_length": ours["accept_length"],
                             "bench_serving_output_tok_s": ref["output_throughput"],
                             "sglang_bench_output_tok_s": ours["aggregate_output_tok_s"],
                             "output_tok_s_diff": ours["aggregate_output_tok_s"] / ref["output_throughput"] - 1,
                             "bench_serving_median_tpot_ms": ref["median_tpot_ms"],
                             "sglang_bench_median_tpot_ms": 1000 * ours["tpot_s"]["p50"],
                             "median_tpot_diff": 1000 * ours["tpot_s"]["p50"] / ref["median_tpot_ms"] - 1,
                             "sglang_bench_per_request_tok_s_p50": ours["per_request_tok_s"]["median"],
                             "bench_serving_median_ttft_ms": ref["median_ttft_ms"],
                             "sglang_bench_median_ttft_ms": 1000 * ours["ttft_s"]["p50"],
                             "bench_serving_command": cmd})
    print("SGLang bench_serving %s vs sglang_bench, simulator steps %d%s, %d prompts of %d in / %d out tokens"
          % (version or "?", STEPS, " WITHOUT the tokenizer" if opts.sim_without_tokenizer else "", opts.num_prompts,
             opts.input_len, opts.output_len))
    print("%-12s %4s %10s %10s %7s %10s %10s %7s %10s %10s" % (
        "api", "conc", "bs mean", "ours mean", "diff", "bs p50", "ours p50", "diff", "bs retok", "ours tok"))
    worst = 0.0
    for r in rows:
        worst = max(worst, abs(r["mean_diff"]))
        print("%-12s %4d %10.3f %10.3f %+6.2f%% %10.3f %10.3f %+6.2f%% %10s %10d" % (
            r["api"], r["concurrency"], r["bench_serving_mean_itl_ms"], r["sglang_bench_mean_itl_ms"], 100 * r["mean_diff"],
            r["bench_serving_median_itl_ms"], r["sglang_bench_median_itl_ms"], 100 * r["median_diff"],
            r["bench_serving_retokenized_output_tokens"], r["sglang_bench_output_tokens"]))
    print("ITL in ms; worst mean difference %.2f%% (tolerance %.0f%%)" % (100 * worst, 100 * opts.tolerance))
    print()
    print("%-12s %4s %10s %10s %7s %9s %9s %7s %9s %9s %8s %8s" % (
        "api", "conc", "bs tok/s", "ours tok/s", "diff", "bs tpot", "ours tpot", "diff", "1000/tpot", "ours rate",
        "bs ttft", "our ttft"))
    worst_figure = 0.0
    for r in rows:
        worst_figure = max(worst_figure, abs(r["output_tok_s_diff"]), abs(r["median_tpot_diff"]))
        print("%-12s %4d %10.1f %10.1f %+6.2f%% %9.3f %9.3f %+6.2f%% %9.1f %9.1f %8.2f %8.2f" % (
            r["api"], r["concurrency"], r["bench_serving_output_tok_s"], r["sglang_bench_output_tok_s"],
            100 * r["output_tok_s_diff"], r["bench_serving_median_tpot_ms"], r["sglang_bench_median_tpot_ms"],
            100 * r["median_tpot_diff"], 1000 / r["bench_serving_median_tpot_ms"], r["sglang_bench_per_request_tok_s_p50"],
            r["bench_serving_median_ttft_ms"], r["sglang_bench_median_ttft_ms"]))
    print("output throughput in tok/s, median TPOT and TTFT in ms, per-request rate (the agentic objective's figure) in "
          "tok/s; worst throughput or TPOT difference %.2f%% (tolerance %.0f%%)" % (100 * worst_figure, 100 * opts.tolerance))
    if opts.json:
        with open(opts.json, "w") as handle:
            json.dump({"sglang_version": version, "rows": rows}, handle, indent=2)
    return 1 if max(worst, worst_figure) > opts.tolerance else 0


if __name__ == "__main__":
    sys.exit(main())
