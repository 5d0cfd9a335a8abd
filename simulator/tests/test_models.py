"""The memory, step-time and acceptance models behave the way SGLang's knobs do."""

import random

import pytest

from sglang_sim import models
from sglang_sim.profile import load_profile


@pytest.fixture(scope="module")
def prof():
    return load_profile()


def plan(prof, steps=3, **kw):
    return models.memory_plan(prof, models.SimConfig.for_steps(prof, steps, **kw))


def test_more_steps_fewer_running_requests_and_tokens(prof):
    plans = [plan(prof, s) for s in range(1, 6)]
    mrr = [p["max_running_requests"] for p in plans]
    kv = [p["max_total_num_tokens"] for p in plans]
    assert mrr == sorted(mrr, reverse=True) and mrr[0] > mrr[-1]
    assert kv == sorted(kv, reverse=True)


def test_deep_drafts_run_out_of_kv_room(prof):
    fails = [s for s in range(1, 16) if plan(prof, s)["error"] == "not_enough_memory"]
    assert fails and fails == list(range(fails[0], 16))  # once it fails, deeper fails too


def test_mem_fraction_static_moves_kv_pool(prof):
    low, high = plan(prof, 3, mem_fraction_static=0.80), plan(prof, 3, mem_fraction_static=0.90)
    assert high["max_total_num_tokens"] > low["max_total_num_tokens"]
    assert plan(prof, 3, mem_fraction_static=0.3)["error"] == "not_enough_memory"


def test_lower_cuda_graph_max_bs_frees_memory_for_deep_drafts(prof):
    failing = next(s for s in range(1, 16) if plan(prof, s)["error"] == "not_enough_memory")
    assert plan(prof, failing, cuda_graph_max_bs=64)["error"] is None


def test_cuda_graph_capture_fails_when_fraction_too_high(prof):
    bad = plan(prof, 3, mem_fraction_static=0.98)
    assert bad["error"] == "cuda_graph_capture_failed"
    # lowering --cuda-graph-max-bs alone can fix capture (smaller graphs)
    assert plan(prof, 3, mem_fraction_static=0.94, cuda_graph_max_bs=8)["cuda_graph_gib"] < plan(prof, 3, mem_fraction_static=0.94)["cuda_graph_gib"]


def test_max_running_requests_flag_caps(prof):
    assert plan(prof, 1, max_running_requests=5)["max_running_requests"] == 5


def test_tp_size_changes_weights_per_gpu(prof):
    cfg = models.SimConfig.for_steps(prof, 3)
    cfg.tp_size = 1
    assert models.memory_plan(prof, cfg)["error"] == "cuda_out_of_memory"
    cfg.tp_size = 8
    big = models.memory_plan(prof, cfg)
    assert big["weights_gib"] < plan(prof, 3)["weights_gib"]


def test_fp8_kv_doubles_tokens(prof):
    base = plan(prof, 3)
    cfg = models.SimConfig.for_steps(prof, 3, kv_cache_dtype="fp8_e4m3")
    fp8 = models.memory_plan(prof, cfg)
    assert abs(fp8["max_total_num_tokens"] / float(base["max_total_num_tokens"]) - 2.0) < 0.01


def test_acceptance_distribution(prof):
    for steps in range(1, 8):
        cfg = models.SimConfig.for_steps(prof, steps)
        for greedy in (True, False):
            dist = models.accept_distribution(prof, cfg, greedy)
            assert len(dist) == steps + 1
            assert abs(sum(dist) - 1.0) < 1e-9
    cfg = models.SimConfig.for_steps(prof, 4)
    assert models.expected_accept_length(prof, cfg, True) > models.expected_accept_length(prof, cfg, False) + 1.0


def test_sampler_matches_expected_mean(prof):
    cfg = models.SimConfig.for_steps(prof, 4)
    sampler = models.AcceptSampler(prof, cfg, True, random.Random(1))
    draws = [sampler.draw(0.0)[0] for _draw in range(20000)]
    assert set(draws) <= set(range(1, 6))
    assert abs(sum(draws) / 20000.0 - sampler.mean) < 0.03


def test_deterministic_sampler_is_exact(prof):
    det = load_profile("deterministic")
    cfg = models.SimConfig.for_steps(det, 3)
    sampler = models.AcceptSampler(det, cfg, True, random.Random(1))
    state, total = 0.0, 0
    for _step in range(1000):
        n, state = sampler.draw(state)
        total += n
    assert abs(total - 1000 * sampler.mean) <= 1


def test_step_time_grows_with_batch_and_draft_tokens(prof):
    cfg3 = models.SimConfig.for_steps(prof, 3)
    cfg5 = models.SimConfig.for_steps(prof, 5)
    assert models.step_time_s(prof, cfg3, 8) > models.step_time_s(prof, cfg3, 1)
    assert models.step_time_s(prof, cfg5, 8) > models.step_time_s(prof, cfg3, 8)


def test_predict_is_accept_over_step_at_concurrency_1(prof):
    cfg = models.SimConfig.for_steps(prof, 2)
    pred = models.predict(prof, cfg, 1, output_len=100000)
    assert abs(pred["per_request_tok_s"] - pred["accept_length"] / pred["step_time_s"]) / pred["per_request_tok_s"] < 0.001
    queued = models.predict(prof, cfg, 200)
    assert queued["running"] == queued["max_running_requests"]


def test_other_profile_other_machine(tmp_path):
    path = tmp_path / "dense.yaml"
    path.write_text("model:\n  weights_gib: 16\n  state_mib_per_request: 0\n  state_mib_per_draft_token: 0\n"
                    "hardware:\n  gpu_count: 1\n  gpu_memory_gib: 79.1\n")
    prof = load_profile(str(path))
    cfg = models.SimConfig.for_steps(prof, 3)
    p = models.memory_plan(prof, cfg)
    assert p["error"] is None and p["mamba_slots"] is None
    assert p["max_running_requests"] == 48  # the speculative reset, nothing smaller binds


def test_predict_names_its_concurrency_when_the_configuration_cannot_start():
    # A prediction has the same keys to look up whether or not the configuration starts (predict's
    # table prints one row per concurrency either way).
    prof = load_profile("default")
    pred = models.predict(prof, models.SimConfig.for_steps(prof, 10), 16)
    assert pred["error"] == "not_enough_memory" and pred["concurrency"] == 16
