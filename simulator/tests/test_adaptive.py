"""--speculative-adaptive as SGLang 0.5.23 does it (srt/speculative/adaptive_spec_params.py,
srt/arg_groups/speculative_hook.py, srt/speculative/adaptive_runtime_state.py)."""

import json
import subprocess
import sys
import urllib.request

import pytest

from sglang_sim import adaptive, loadgen, models
from sglang_sim import args as sim_args
from sglang_sim.profile import load_profile
from sglang_sim.testing import SimProcess, write_profile

BASE = ["--tp-size", "4", "--speculative-algorithm", "NEXTN", "--speculative-eagle-topk", "1"]


def write_json(tmp_path, doc, name="adaptive.json"):
    path = tmp_path / name
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    return str(path)


def parse(argv):
    args = sim_args.build_parser().parse_args(["--model-path", "m"] + argv)
    return args, sim_args.resolve(args)


def run_cli(argv):
    return subprocess.run([sys.executable, "-m", "sglang_sim", "--model-path", "m", "--sim-profile", "fast"] + argv,
                          capture_output=True, text=True, timeout=60, check=False)


# -- server arguments -------------------------------------------------------------------------

def test_draft_tokens_become_steps_plus_one_and_topk_defaults_to_1(tmp_path):
    cfg = write_json(tmp_path, {"1": {"candidate_steps": [4]}, "16": {"candidate_steps": [3]}})
    args, _w = parse(["--speculative-algorithm", "EAGLE", "--speculative-num-steps", "4",
                      "--speculative-num-draft-tokens", "9", "--speculative-adaptive", "--speculative-adaptive-config", cfg])
    assert (args.speculative_adaptive, args.speculative_eagle_topk, args.speculative_num_draft_tokens) == (True, 1, 5)


def test_num_steps_defaults_to_the_middle_of_the_candidates():
    # built-in config: the union [0, 1, 3, 5, 7], middle 3
    args, _w = parse(["--speculative-algorithm", "EAGLE", "--speculative-adaptive"])
    assert (args.speculative_num_steps, args.speculative_num_draft_tokens) == (3, 4)


def test_num_steps_must_be_a_candidate_of_some_entry(tmp_path):
    cfg = write_json(tmp_path, {"1": {"candidate_steps": [4]}, "16": {"candidate_steps": [3]}})
    # 3 is a candidate of "16" only: enough for 0.5.23 (the union is checked)
    assert parse(BASE + ["--speculative-num-steps", "3", "--speculative-adaptive", "--speculative-adaptive-config", cfg])
    with pytest.raises(ValueError) as exc:
        parse(BASE + ["--speculative-num-steps", "2", "--speculative-adaptive", "--speculative-adaptive-config", cfg])
    assert str(exc.value) == ("--speculative-num-steps=2 is not in the adaptive config candidate_steps [3, 4]. "
                              "Pass one of those values.")


def test_refusal_stops_the_server_before_loading(tmp_path):
    cfg = write_json(tmp_path, {"1": {"candidate_steps": [4]}})
    out = run_cli(BASE + ["--speculative-num-steps", "3", "--speculative-adaptive", "--speculative-adaptive-config", cfg])
    assert out.returncode == 1
    assert out.stderr.strip() == ("ValueError: --speculative-num-steps=3 is not in the adaptive config candidate_steps [4]. "
                                  "Pass one of those values.")
    assert "Load weight begin" not in out.stdout


@pytest.mark.parametrize("argv, reason", [
    (["--speculative-algorithm", "EAGLE", "--speculative-num-steps", "3", "--speculative-eagle-topk", "2",
      "--speculative-num-draft-tokens", "6"], "speculative_eagle_topk=2 (only topk=1 is supported)"),
    (["--speculative-algorithm", "STANDALONE", "--speculative-num-steps", "3", "--speculative-eagle-topk", "1"],
     "speculative_algorithm=STANDALONE (only EAGLE/EAGLE3 are supported)"),
    (["--speculative-algorithm", "NGRAM"], "speculative_algorithm=NGRAM (only EAGLE/EAGLE3 are supported)"),
    ([], "speculative_algorithm=None (only EAGLE/EAGLE3 are supported)"),
    (BASE + ["--speculative-num-steps", "3", "--attn-dp-size", "2"],
     "attention DP is not supported (adaptive tier decisions are not synchronized across DP ranks)"),
    (BASE + ["--speculative-num-steps", "3", "--dp-size", "2", "--enable-dp-attention"],
     "attention DP is not supported (adaptive tier decisions are not synchronized across DP ranks)"),
    (BASE + ["--speculative-num-steps", "3", "--enable-two-batch-overlap"],
     "enable_two_batch_overlap=True is not supported (adaptive state swap would discard the TboAttnBackend wrapper)"),
])
def test_unsupported_setups_disable_adaptive_with_sglangs_reason(argv, reason):
    args, warnings = parse(argv + ["--speculative-adaptive", "--speculative-adaptive-config", "/no/such/file.json"])
    # disabled before the config file is read: a missing file does not matter then
    assert args.speculative_adaptive is False
    assert ("speculative_adaptive disabled: %s. Falling back to static speculative params." % reason) in warnings


def test_dp_size_alone_is_not_attention_dp():
    args, warnings = parse(BASE + ["--speculative-num-steps", "3", "--dp-size", "2", "--speculative-adaptive"])
    assert args.speculative_adaptive is True and not [w for w in warnings if "speculative_adaptive disabled" in w]


@pytest.mark.parametrize("doc, error", [
    ('{"1": {"candidate_steps": [1, 3]', "json.decoder.JSONDecodeError: Expecting ',' delimiter: line 1 column 33 (char 32)"),
    ("", "json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)"),
    ({"small": {"candidate_steps": [1]}, "ema_alpha": 0.3},
     "ValueError: speculative_adaptive_config must contain at least one integer-string BS key, "
     "e.g. {\"1\": {\"candidate_steps\": [1,3,7]}}. Got keys: ['small', 'ema_alpha']"),
    ({"1": {"candidate_steps": []}}, "ValueError: BS 1: candidate_steps must be a list of non-negative ints, got []"),
    ({"1": {"candidate_steps": [3, -1]}}, "ValueError: BS 1: candidate_steps must be a list of non-negative ints, got [3, -1]"),
    ({"1": {"candidate_steps": [3, 1.5]}}, "ValueError: BS 1: candidate_steps must be a list of non-negative ints, got [3, 1.5]"),
    ({"1": {"steps": [3]}}, "ValueError: BS 1: candidate_steps must be a list of non-negative ints, got None"),
    ({"1": [3]}, "AttributeError: 'list' object has no attribute 'get'"),
    ([{"1": [3]}], "AttributeError: 'list' object has no attribute 'items'"),
])
def test_invalid_configs_fail_as_sglang_raises(tmp_path, doc, error):
    cfg = write_json(tmp_path, doc)
    out = run_cli(BASE + ["--speculative-num-steps", "3", "--speculative-adaptive", "--speculative-adaptive-config", cfg])
    assert out.returncode == 1
    assert out.stderr.strip() == error


def test_missing_config_file(tmp_path):
    missing = str(tmp_path / "missing.json")
    out = run_cli(BASE + ["--speculative-num-steps", "3", "--speculative-adaptive", "--speculative-adaptive-config", missing])
    assert out.returncode == 1
    assert out.stderr.strip() == "FileNotFoundError: [Errno 2] No such file or directory: %r" % missing


def test_non_integer_keys_are_knobs_for_every_entry(tmp_path):
    # 0.5.23 skips non-digit keys as entries and merges them into each entry ({**cfg, **entry})
    cfg = write_json(tmp_path, {"ema_alpha": 0.5, "note": "x", "1": {"candidate_steps": [1, 3]},
                                "8": {"candidate_steps": [1], "ema_alpha": 0.1}})
    schedule = adaptive.Schedule.from_path(cfg, 3)
    assert schedule.keys == [1, 8]
    assert schedule.entries[1][1]["ema_alpha"] == 0.5 and schedule.entries[8][1]["ema_alpha"] == 0.1
    assert schedule.entries[1][1]["update_interval"] == 5


# -- routing ----------------------------------------------------------------------------------

def test_routing_pads_to_the_next_graph_batch_size_then_takes_the_largest_key_not_above():
    schedule = adaptive.Schedule.from_mapping({"2": [1], "16": [3], "24": [4]}, initial_steps=3)
    policy = adaptive.Policy(schedule, models.capture_batch_sizes(64))  # 1, 2, 4, 8, 16, 24, ...
    assert policy.route(1) == 2          # below the smallest key: the smallest key
    assert policy.route(9) == 16         # 9 pads to 16
    assert policy.route(16) == 16
    assert policy.route(17) == 24        # 17 pads to 24
    assert policy.route(200) == 24       # above every graph size: the batch itself
    assert adaptive.Policy(schedule, None).route(9) == 2  # no CUDA graphs: no padding
    # every slot starts at the server's steps when it is one of its candidates, else its middle one
    assert [policy.slots[k].current_steps for k in (2, 16, 24)] == [1, 3, 4]


def test_graphs_per_candidate_only_for_the_batch_sizes_that_reach_it():
    schedule = adaptive.Schedule.from_mapping({"1": [4], "16": [3]}, initial_steps=4)
    assert schedule.graph_bs_for_step(3, [1, 2, 4, 8, 16, 24]) == [16, 24]
    assert schedule.graph_bs_for_step(4, [1, 2, 4, 8, 16, 24]) == [1, 2, 4, 8]


# -- the EMA policy ---------------------------------------------------------------------------

def slot(cands, initial, **knobs):
    lines = []
    merged = dict(adaptive.KNOB_DEFAULTS, **knobs)
    return adaptive.Slot(cands, merged, initial, log=lines.append), lines


def test_ema_switches_down_when_acceptance_drops_and_logs_it():
    s, lines = slot([1, 3, 5], 5)
    assert s.ema_accept_len == 4.0  # starts at steps - 1
    changes = [s.update([4, 4]) for _batch in range(15)]  # warm-up 10, then every 5 batches
    assert not any(changes) and s.current_steps == 5
    changes = [s.update([0, 1]) for _batch in range(15)]
    assert changes.count(True) >= 1 and s.current_steps < 5
    assert lines[0].startswith("Adaptive spec params updated: steps 5 -> ")
    assert "(ema_accept_len=" in lines[0]


def test_decisions_only_every_update_interval_after_warmup():
    s, _lines = slot([1, 3], 3, warmup_batches=2, update_interval=3, down_hysteresis=0.5)
    results = [s.update([0]) for _batch in range(5)]
    # batches 1-2 warm up, 3 and 4 are not on the interval, 5 is ((5 - 2) % 3 == 0)
    assert results == [False, False, False, False, True] and s.current_steps == 1


def test_hysteresis_is_respected():
    # down: ema <= prev - 0.5 + down_hysteresis; at steps 3 with prev 1 and the default -0.25 that is 0.25
    s, _l = slot([1, 3], 3, warmup_batches=0, update_interval=1)
    s.ema_accept_len = 0.3
    assert s.update([0.3]) is False and s.current_steps == 3
    s.ema_accept_len = 0.2
    assert s.update([0.2]) is True and s.current_steps == 1
    # up: ema > current - 0.5 + up_hysteresis
    s, _l = slot([1, 3], 1, warmup_batches=0, update_interval=1, up_hysteresis=0.4)
    s.ema_accept_len = 0.85
    assert s.update([0.85]) is False and s.current_steps == 1
    s.ema_accept_len = 0.95
    assert s.update([0.95]) is True and s.current_steps == 3


def test_step_zero_keeps_its_ema_and_probes_the_next_candidate():
    s, lines = slot([0, 1, 3], 1, warmup_batches=0, update_interval=1, down_hysteresis=0.0)
    s.ema_accept_len = 0.4
    assert s.update([0.4]) is True and s.current_steps == 0  # 0.4 <= 0.5 + 0.0
    ema = s.ema_accept_len
    assert s.update([0]) is True and s.current_steps == 1     # no EMA update at 0; probe 1
    assert s.ema_accept_len == ema
    assert lines == ["Adaptive spec params updated: steps 1 -> 0 (ema_accept_len=0.40)",
                     "Adaptive spec params updated: steps 0 -> 1 (ema_accept_len=0.40)"]


# -- memory and timing ------------------------------------------------------------------------

def test_memory_and_max_running_requests_follow_the_largest_candidate():
    prof = load_profile("default")
    static4 = models.memory_plan(prof, models.SimConfig.for_steps(prof, 4))
    static3 = models.memory_plan(prof, models.SimConfig.for_steps(prof, 3))
    mixed = models.memory_plan(prof, models.SimConfig.for_schedule(prof, {"1": [4], "16": [3]}))
    started_low = models.memory_plan(prof, models.SimConfig.for_schedule(
        prof, adaptive.Schedule.from_mapping({"1": [4], "16": [3]}, initial_steps=3)))
    assert static4["max_running_requests"] < static3["max_running_requests"]
    for plan in (mixed, started_low):
        assert plan["max_running_requests"] == static4["max_running_requests"]
        assert plan["max_total_num_tokens"] == static4["max_total_num_tokens"]
        assert plan["spec_buffers_gib"] == static4["spec_buffers_gib"]
        # one more runtime state with its own graphs
        assert plan["cuda_graph_gib"] > static4["cuda_graph_gib"] and len(plan["adaptive_states"]) == 1


def test_step_zero_has_no_draft_cost():
    prof = load_profile("default")
    cfg = models.SimConfig.for_schedule(prof, {"1": [0, 3]})
    zero = cfg.with_steps(0)
    assert models.step_time_s(prof, zero, 8) == models.step_time_s(prof, models.SimConfig.for_steps(prof, 0), 8)
    assert models.accept_distribution(prof, zero, True) == [1.0]


def test_default_profile_shows_the_per_level_trade():
    prof = load_profile("default")
    sched = models.SimConfig.for_schedule(prof, adaptive.Schedule.from_mapping({"1": [4], "16": [3]}, initial_steps=4))
    s3, s4 = models.SimConfig.for_steps(prof, 3), models.SimConfig.for_steps(prof, 4)
    c1 = models.predict(prof, sched, 1)
    assert abs(c1["per_request_tok_s"] / models.predict(prof, s4, 1)["per_request_tok_s"] - 1) < 0.01
    c32 = models.predict(prof, sched, 32)
    assert c32["adaptive"]["steps"] == [3] and c32["running"] == 13
    # steps 3 at the batch room of steps 4: static steps 3 minus the memory cost
    s3_at_13 = models.predict(prof, models.SimConfig.for_steps(prof, 3, max_running_requests=13), 32)
    assert abs(c32["aggregate_output_tok_s"] / s3_at_13["aggregate_output_tok_s"] - 1) < 0.01
    assert c32["aggregate_output_tok_s"] < models.predict(prof, s3, 32)["aggregate_output_tok_s"]


# -- a running server -------------------------------------------------------------------------

def server_info(sim):
    with urllib.request.urlopen(sim.url + "/server_info") as resp:
        return json.load(resp)


def test_server_info_and_the_entries_step_counts(tmp_path):
    cfg = write_json(tmp_path, {"1": {"candidate_steps": [4]}, "16": {"candidate_steps": [3]}})
    argv = BASE + ["--speculative-num-steps", "4", "--speculative-adaptive", "--speculative-adaptive-config", cfg]
    with SimProcess(argv, profile="deterministic") as sim:
        info = server_info(sim)
        assert (info["speculative_adaptive"], info["speculative_adaptive_config"]) == (True, cfg)
        assert (info["speculative_num_steps"], info["speculative_num_draft_tokens"]) == (4, 5)
        state = info["internal_states"][0]
        sim_state = state["sim_speculative_adaptive"]
        assert sim_state["entries"]["1"]["current_steps"] == 4 and sim_state["entries"]["16"]["current_steps"] == 3
        assert state["memory_usage"]["graph"]["target_verify"] > 0
        got = loadgen.measure(sim.url, 16, 16, input_len=32, output_len=64)
        assert not got["errors"]
        info = server_info(sim)
        out = sim.output()
    # the top level keeps the startup value; internal_states follow the runtime state (0.5.23 overrides)
    assert info["speculative_num_steps"] == 4
    state = info["internal_states"][0]
    assert state["sim_speculative_adaptive"]["entries"]["16"]["batches"] > 0
    assert state["sim_speculative_adaptive"]["switches"] >= 1
    assert state["speculative_num_steps"] == state["sim_speculative_adaptive"]["active_steps"]
    assert "AdaptiveSpeculativeParams initialized: steps=4, candidate_steps=[4]" in out
    assert "Built adaptive runtime state steps=3: elapsed=" in out
    assert "Switch adaptive runtime state: steps 4 -> 3, draft_tokens 5 -> 4" in out


def test_running_server_switches_when_acceptance_is_low(tmp_path):
    profile = write_profile({"acceptance": {"greedy": [0.1], "sampled": [0.1]}, "timing": {"load_time_s": 0.3}},
                            directory=str(tmp_path))
    cfg = write_json(tmp_path, {"1": {"candidate_steps": [1, 3]}})
    argv = BASE + ["--speculative-num-steps", "3", "--speculative-adaptive", "--speculative-adaptive-config", cfg,
                   "--random-seed", "1"]
    with SimProcess(argv, profile=profile) as sim:
        loadgen.measure(sim.url, 1, 2, input_len=16, output_len=64)
        info = server_info(sim)
        out = sim.output()
    assert "Adaptive spec params updated: steps 3 -> 1 (ema_accept_len=" in out
    assert info["internal_states"][0]["sim_speculative_adaptive"]["entries"]["1"]["current_steps"] == 1
    assert info["internal_states"][0]["speculative_num_steps"] == 1


def test_disabled_adaptive_runs_static_and_says_why():
    argv = ["--tp-size", "4", "--speculative-algorithm", "EAGLE", "--speculative-num-steps", "3",
            "--speculative-eagle-topk", "2", "--speculative-num-draft-tokens", "6", "--speculative-adaptive"]
    with SimProcess(argv, profile="fast") as sim:
        info = server_info(sim)
        out = sim.output()
    assert info["speculative_adaptive"] is False
    assert "sim_speculative_adaptive" not in info["internal_states"][0]
    assert ("speculative_adaptive disabled: speculative_eagle_topk=2 (only topk=1 is supported). "
            "Falling back to static speculative params.") in out
