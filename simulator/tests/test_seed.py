"""Acceptance test of the default profile: the issue's targets from the seed campaign.

The seed (Qwen3.5-122B-A10B-FP8, 4x RTX PRO 6000 Blackwell, tp 4, MTP topk 1, synthetic
workload: temperature 0, ignore_eos) measured per-request tok/s at concurrency 1 of
123/186/234/277/282 for steps 1..5, max_running_requests 26 and 21 for steps 1 and 2, steps 4
ahead of steps 5 at concurrency 16, steps 3 ahead at concurrency 32, and a crash at steps 10.
These numbers appear only here: the simulator derives them from the profile's models.
"""

import json
import signal
import urllib.request

import pytest

from sglang_sim import loadgen, models
from sglang_sim.profile import load_profile
from sglang_sim.testing import SimProcess

SEED_C1 = {1: 123, 2: 186, 3: 234, 4: 277, 5: 282}
SEED_MRR = {1: 26, 2: 21}


def launch(steps):
    return ["--tp-size", "4", "--kv-cache-dtype", "bf16", "--speculative-algorithm", "NEXTN", "--speculative-num-steps",
            str(steps), "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", str(steps + 1),
            "--random-seed", "7"]


def test_models_predict_the_seed():
    prof = load_profile()
    pred = {s: {c: models.predict(prof, models.SimConfig.for_steps(prof, s), c, 128, 512) for c in (1, 16, 32)}
            for s in range(1, 6)}
    for steps, target in SEED_C1.items():
        assert abs(pred[steps][1]["per_request_tok_s"] / target - 1) < 0.05
    assert 1.0 < pred[5][1]["per_request_tok_s"] / pred[4][1]["per_request_tok_s"] < 1.02
    assert pred[4][16]["aggregate_output_tok_s"] >= 1.25 * pred[5][16]["aggregate_output_tok_s"]
    assert max(range(1, 6), key=lambda s: pred[s][32]["aggregate_output_tok_s"]) == 3
    for steps, mrr in SEED_MRR.items():
        assert pred[steps][1]["max_running_requests"] == mrr
    assert models.predict(prof, models.SimConfig.for_steps(prof, 10), 1)["error"] == "not_enough_memory"


@pytest.fixture(scope="module")
def measured():
    """Run the synthetic workload against simulators for steps 1..5 (about a minute)."""
    out = {}
    for steps in range(1, 6):
        with SimProcess(launch(steps), profile="fast") as sim:
            with urllib.request.urlopen(sim.url + "/server_info") as resp:
                info = json.loads(resp.read().decode())
            # SGLang 0.5.23: the limit that applies (the seed's figure) is per DP rank in internal_states
            row = {"mrr": info["internal_states"][0]["effective_max_running_requests_per_dp"]}
            # steps 4 and 5 differ by < 2%: measure them on more tokens (the RNG is seeded)
            n, length = (5, 512) if steps >= 4 else (2, 192)
            row[1] = loadgen.measure(sim.url, 1, n, output_len=length)
            if steps >= 4:
                row[16] = loadgen.measure(sim.url, 16, 48, output_len=192)
            row[32] = loadgen.measure(sim.url, 32, 64, output_len=192)
            out[steps] = row
    return out


def print_figures(measured):
    """The measured figures README.md and simulator/README.md quote (``pytest -s`` shows them)."""
    print("\nsteps  mrr  c=1 per-request tok/s (seed)  c=16 aggregate  c=32 aggregate")
    for steps in sorted(measured):
        row = measured[steps]
        c1 = row[1]["per_request_tok_s"]
        c1_text = "%.1f (%d, %+.1f%%)" % (c1, SEED_C1[steps], 100 * (c1 / SEED_C1[steps] - 1))
        c16 = "%.0f" % row[16]["aggregate_output_tok_s"] if 16 in row else ""
        print("%5d %4d  %-29s %14s %15.0f" % (steps, row["mrr"], c1_text, c16, row[32]["aggregate_output_tok_s"]))
    print("steps 5 over steps 4 at c=1: %+.1f%%; steps 4 over steps 5 at c=16: %.2fx" % (
        100 * (measured[5][1]["per_request_tok_s"] / measured[4][1]["per_request_tok_s"] - 1),
        measured[4][16]["aggregate_output_tok_s"] / measured[5][16]["aggregate_output_tok_s"]))


@pytest.mark.slow
def test_seed_per_request_rate_at_concurrency_1(measured):
    print_figures(measured)
    for steps, target in SEED_C1.items():
        got = measured[steps][1]["per_request_tok_s"]
        assert abs(got / target - 1) < 0.05, (steps, got, target)
    # The seed: steps 5 slightly faster than steps 4 at concurrency 1 (282 against 277, +1.8%), by less
    # than 2%. The models predict +0.7%; the measurement (5 requests of 512 tokens, acceptance drawn
    # from --random-seed 7, so the same draws every run) gives about +1.6%. What load can change is
    # only when the client reads the last chunk (the simulator keeps its steps on an absolute clock):
    # a few ms of a 1.8 s request, well under the 0.7% between the lower bound and the prediction.
    ratio = measured[5][1]["per_request_tok_s"] / measured[4][1]["per_request_tok_s"]
    assert 1.0 < ratio < 1.02, ratio


@pytest.mark.slow
def test_seed_max_running_requests(measured):
    for steps, mrr in SEED_MRR.items():
        assert measured[steps]["mrr"] == mrr


@pytest.mark.slow
def test_seed_steps4_beats_steps5_at_concurrency_16(measured):
    s4, s5 = measured[4][16]["aggregate_output_tok_s"], measured[5][16]["aggregate_output_tok_s"]
    assert s4 >= 1.25 * s5, (s4, s5)


@pytest.mark.slow
def test_seed_steps3_leads_at_concurrency_32(measured):
    agg = {s: measured[s][32]["aggregate_output_tok_s"] for s in range(1, 6)}
    assert max(agg, key=agg.get) == 3, agg


def test_seed_steps10_dies_at_start():
    sim = SimProcess(launch(10), profile="fast", wait=False).start()
    try:
        # SGLang 0.5.23's launch-phase SIGQUIT handler ends the tree with a SIGKILL of the main process.
        assert sim.proc.wait(30) == -signal.SIGKILL
        assert "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static." in sim.output()
        assert "kill_process_tree called: parent_pid=%d, include_parent=True" % sim.proc.pid in sim.output()
    finally:
        sim.stop()
