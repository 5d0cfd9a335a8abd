"""The running server delivers what its models predict (deterministic profile)."""

import pytest

from sglang_sim import loadgen, models
from sglang_sim.profile import load_profile
from sglang_sim.testing import SimProcess

ARGS = ["--tp-size", "4", "--speculative-algorithm", "EAGLE", "--speculative-num-steps", "3",
        "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", "4"]


@pytest.fixture(scope="module")
def sim():
    with SimProcess(ARGS, profile="deterministic") as proc:
        yield proc


@pytest.mark.parametrize("concurrency", [1, 8])
def test_measured_matches_prediction(sim, concurrency):
    prof = load_profile("deterministic")
    cfg = models.SimConfig.for_steps(prof, 3)
    pred = models.predict(prof, cfg, concurrency, input_len=64, output_len=128)
    got = loadgen.measure(sim.url, concurrency, 3 * concurrency, input_len=64, output_len=128)
    assert not got["errors"]
    assert abs(got["per_request_tok_s"] / pred["per_request_tok_s"] - 1) < 0.03, (got, pred)
    assert abs(got["aggregate_output_tok_s"] / pred["aggregate_output_tok_s"] - 1) < 0.05, (got, pred)
    assert abs(got["accept_length"] / pred["accept_length"] - 1) < 0.02


def test_continuous_batching_queues_beyond_max_running_requests():
    prof = load_profile("deterministic")
    with SimProcess(ARGS + ["--max-running-requests", "2"], profile="deterministic") as proc:
        got = loadgen.measure(proc.url, 4, 8, input_len=16, output_len=64)
    pred2 = models.predict(prof, models.SimConfig.for_steps(prof, 3, max_running_requests=2), 4, 16, 64)
    assert pred2["running"] == 2
    # four clients, two slots: aggregate is what two running requests deliver, and the
    # queued requests wait about one request's lifetime before their first token
    assert abs(got["aggregate_output_tok_s"] / pred2["aggregate_output_tok_s"] - 1) < 0.1
    assert got["ttft_s"] > 0.5 * 63 / pred2["per_request_tok_s"]


def test_sampled_accepts_fewer_drafts_than_greedy(sim):
    greedy = loadgen.measure(sim.url, 2, 4, output_len=96, temperature=0.0)
    sampled = loadgen.measure(sim.url, 2, 4, output_len=96, temperature=0.8)
    assert sampled["accept_length"] < greedy["accept_length"] - 1.0
    assert sampled["per_request_tok_s"] < greedy["per_request_tok_s"]


def test_random_profile_lands_between_lockstep_and_staggered_bounds():
    """With random acceptance requests drift apart; measurements stay within the two bounds."""
    prof = load_profile("fast")
    cfg = models.SimConfig.for_steps(prof, 3)
    with SimProcess(ARGS + ["--random-seed", "3"], profile="fast") as proc:
        got = loadgen.measure(proc.url, 8, 32, input_len=128, output_len=128)
    pred = models.predict(prof, cfg, 8, input_len=128, output_len=128)
    assert pred["aggregate_output_tok_s_staggered"] < pred["aggregate_output_tok_s"]
    assert 0.97 * pred["aggregate_output_tok_s_staggered"] <= got["aggregate_output_tok_s"] <= 1.03 * pred["aggregate_output_tok_s"]
    assert 0.97 * pred["per_request_tok_s_staggered"] <= got["per_request_tok_s"] <= 1.03 * pred["per_request_tok_s"]
