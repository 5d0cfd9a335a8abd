"""sglang_service with adaptive speculative decoding (SGLang 0.5.23 --speculative-adaptive): the
options, the rendered JSON file, the files of a configuration, what is verified, and the rules of
tasks/validate.yml that refuse what SGLang would refuse or silently turn static."""
import json
import os

import pytest
import yaml

from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template

from rendering import ROLE, SEED, _load, _trust, config_options, role_var, server_argv, flags

from ansible_collections.llmops.sglang.plugins.filter.speculative import (
    spec_adaptive_candidates, spec_adaptive_json, spec_adaptive_problems)

SCHEDULE = {1: {"candidate_steps": [4]}, "16": {"candidate_steps": [3]}}
ADAPTIVE = dict(SEED, sglang_service_speculative_adaptive=True, sglang_service_speculative_adaptive_config=SCHEDULE)
PATH = "/etc/sglang/sglang.adaptive.json"


def test_options_and_the_rendered_file():
    options = config_options(ADAPTIVE)
    assert options["speculative-adaptive"] is True
    assert options["speculative-adaptive-config"] == PATH
    f = flags(server_argv(ADAPTIVE))
    assert f["--speculative-adaptive"] is True and f["--speculative-adaptive-config"] == PATH
    assert f["--speculative-num-steps"] == "4" and f["--speculative-num-draft-tokens"] == "5"
    assert role_var("_sglang_service_adaptive_file", ADAPTIVE) == PATH
    # the file SGLang reads: JSON with string keys, which the simulator's copy of 0.5.23's loader takes
    text = spec_adaptive_json(SCHEDULE)
    assert json.loads(text) == {"1": {"candidate_steps": [4]}, "16": {"candidate_steps": [3]}}
    from sglang_sim import adaptive
    cfg, entries = adaptive.load_config(_write(text))
    assert sorted(entries) == [1, 16]


def _write(text):
    import tempfile
    handle = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
    with handle:
        handle.write(text)
    return handle.name


def test_the_file_is_part_of_the_configuration_and_verified():
    files = role_var("_sglang_service_saved_files", ADAPTIVE)
    entry = [f for f in files if f["name"] == "adaptive-config"]
    assert entry == [{"name": "adaptive-config", "src": PATH, "dest": PATH, "mode": "0644", "group": "root"}]
    expect = role_var("_sglang_service_expect", ADAPTIVE)
    assert expect["speculative_adaptive"] is True
    settings = role_var("_sglang_service_settings", ADAPTIVE)
    assert settings["sglang_service_speculative_adaptive"] is True
    assert settings["sglang_service_speculative_adaptive_config"] == SCHEDULE  # as set: a change shows in a failure


def test_builtin_config_passes_the_switch_only():
    overrides = dict(SEED, sglang_service_speculative_adaptive=True, sglang_service_speculative_num_steps=3)
    options = config_options(overrides)
    assert options["speculative-adaptive"] is True and "speculative-adaptive-config" not in options
    assert role_var("_sglang_service_adaptive_file", overrides) is None
    assert not [f for f in role_var("_sglang_service_saved_files", overrides) if f["name"] == "adaptive-config"]


def test_off_by_default_and_a_config_alone_does_nothing():
    for overrides in (SEED, dict(SEED, sglang_service_speculative_adaptive_config=SCHEDULE)):
        options = config_options(overrides)
        assert not [k for k in options if k.startswith("speculative-adaptive")]
        assert "speculative_adaptive" not in role_var("_sglang_service_expect", overrides)
        assert not [f for f in role_var("_sglang_service_saved_files", overrides) if f["name"] == "adaptive-config"]


def test_a_change_of_the_file_restarts_the_server():
    with open(os.path.join(ROLE, "tasks", "render.yml"), encoding="utf-8") as fh:
        tasks = yaml.safe_load(fh)
    # every file is one entry of the one sglang_service_files task; the restart follows any of them
    render = [t for t in tasks if "llmops.sglang.sglang_service_files" in t][0]
    assert render["register"] == "_sglang_service_files"
    entries = render["llmops.sglang.sglang_service_files"]["files"]
    assert "'name': 'adaptive-config'" in entries and "'mode': '0644'" in entries and "'state': 'absent'" in entries
    decide = [t for t in tasks if t["name"] == "Decide whether the server must be restarted"][0]
    assert "_sglang_service_files.changed_names" in decide["ansible.builtin.set_fact"]["_sglang_service_restart_needed"]


# -- validation (tasks/validate.yml, the first task) ---------------------------------------------

def broken(overrides):
    """The messages of the rules of validate.yml's first task that fail for ``overrides``."""
    with open(os.path.join(ROLE, "tasks", "validate.yml"), encoding="utf-8") as fh:
        task = yaml.safe_load(fh)[0]
    variables = dict(_load("defaults/main.yml"))
    variables.update(overrides)
    variables.update(_load("vars/main.yml"))
    variables.update({k: v for k, v in task["vars"].items() if k != "_rules"})
    templar = Templar(loader=DataLoader(), variables=_trust(variables))
    out = []
    for rule in task["vars"]["_rules"]:
        ok = templar.template(trust_as_template(rule["ok"]))
        if not (ok is True or str(ok).strip() == "True"):
            out.append(" ".join(str(templar.template(trust_as_template(rule["msg"]))).split()))
    return out


def test_a_good_adaptive_configuration_passes():
    assert broken(ADAPTIVE) == []
    assert broken(dict(SEED, sglang_service_speculative_adaptive=True, sglang_service_speculative_num_steps=5)) == []
    # 0 (no drafting) may be the start when it is a candidate
    assert broken(dict(ADAPTIVE, sglang_service_speculative_num_steps=0,
                       sglang_service_speculative_adaptive_config={"1": {"candidate_steps": [0, 2]}})) == []
    # without adaptive, steps 0 stays refused
    assert broken(dict(SEED, sglang_service_speculative_num_steps=0))


def test_num_steps_must_be_a_candidate():
    msgs = broken(dict(ADAPTIVE, sglang_service_speculative_num_steps=2))
    assert msgs == ["sglang_service_speculative_num_steps must be one of the adaptive candidate steps [3, 4] (the union of "
                    "sglang_service_speculative_adaptive_config; SGLang refuses to start otherwise); got 2."]
    # one candidate of any entry is enough, as on SGLang 0.5.23 (the union is checked)
    assert broken(dict(ADAPTIVE, sglang_service_speculative_num_steps=3)) == []
    builtin = broken(dict(SEED, sglang_service_speculative_adaptive=True, sglang_service_speculative_num_steps=4))
    assert builtin and "[0, 1, 3, 5, 7]" in builtin[0] and "built-in config" in builtin[0]


@pytest.mark.parametrize("overrides, words", [
    (dict(sglang_service_speculative_eagle_topk=2, sglang_service_speculative_num_draft_tokens=8),
     "sglang_service_speculative_eagle_topk must be 1 with sglang_service_speculative_adaptive"),
    (dict(sglang_service_speculative_algorithm="STANDALONE"),
     "sglang_service_speculative_adaptive needs sglang_service_speculative_algorithm EAGLE, EAGLE3, NEXTN"),
    (dict(sglang_service_speculative_algorithm=None), "sglang_service_speculative_adaptive needs"),
    (dict(sglang_service_extra_args=["--attn-dp-size", "2"]), "sglang_service_extra_args hold --attn-dp-size 2"),
    (dict(sglang_service_extra_args=["--enable-dp-attention"], sglang_service_dp_size=2),
     "--enable-dp-attention (with sglang_service_dp_size 2)"),
    (dict(sglang_service_extra_args=["--enable-two-batch-overlap"]), "--enable-two-batch-overlap"),
])
def test_what_sglang_would_run_static_fails_validation(overrides, words):
    msgs = broken(dict(ADAPTIVE, **overrides))
    assert [m for m in msgs if words in m], msgs


def test_dp_size_alone_is_fine():
    assert broken(dict(ADAPTIVE, sglang_service_dp_size=2, sglang_service_extra_args=["--enable-dp-attention"])) != []
    assert broken(dict(ADAPTIVE, sglang_service_dp_size=2)) == []


@pytest.mark.parametrize("config, words", [
    ({"small": {"candidate_steps": [1]}}, "'small' is neither a batch size (an integer >= 1) nor a knob"),
    ({"0": {"candidate_steps": [1]}}, "'0' is neither a batch size"),
    ({"1": {"candidate_steps": []}}, "[1].candidate_steps must be a non-empty list of integers >= 0"),
    ({"1": {"candidate_steps": [4, -1]}}, "[1].candidate_steps must be a non-empty list"),
    ({"1": {"candidate_steps": [True, 4]}}, "[1].candidate_steps must be a non-empty list"),
    ({"1": {"candidate_steps": ["4"]}}, "[1].candidate_steps must be a non-empty list"),
    ({"1": [4]}, "[1] must be a mapping with candidate_steps"),
    ({"1": {"candidate_steps": [4], "alpha": 0.2}}, "[1].alpha is not a knob of SGLang 0.5.23's adaptive config"),
    ({"1": {"candidate_steps": [4], "update_interval": 0}}, "[1].update_interval must be an integer >= 1"),
    ({"1": {"candidate_steps": [4]}, "ema_alpha": 1.5}, "sglang_service_speculative_adaptive_config.ema_alpha must be"),
    ({"ema_alpha": 0.3}, "needs at least one batch-size entry"),
    ([4], "must be a mapping of batch sizes"),
])
def test_bad_configs_name_the_variable(config, words):
    problems = spec_adaptive_problems(config)
    assert [p for p in problems if words in p and "sglang_service_speculative_adaptive_config" in p], problems
    msgs = broken(dict(ADAPTIVE, sglang_service_speculative_adaptive_config=config))
    assert [m for m in msgs if words in m], msgs


def test_candidates_and_knobs():
    assert spec_adaptive_candidates(None) == [0, 1, 3, 5, 7]  # SGLang 0.5.23 DEFAULT_ADAPTIVE_CONFIG
    assert spec_adaptive_candidates(SCHEDULE) == [3, 4]
    good = {"ema_alpha": 0.5, 4: {"candidate_steps": [0, 2], "update_interval": 3, "warmup_batches": 0,
                                  "up_hysteresis": 0.1, "down_hysteresis": -0.5, "ceiling_coeff": 1.5}}
    assert spec_adaptive_problems(good) == []
    assert spec_adaptive_problems(None) == []


def test_builtin_candidates_are_the_simulators_copy_of_sglang():
    from sglang_sim import adaptive
    from ansible_collections.llmops.sglang.plugins.module_utils import speculative
    assert speculative.ADAPTIVE_DEFAULT_CANDIDATES == dict(
        (k, v["candidate_steps"]) for k, v in adaptive.DEFAULT_ADAPTIVE_CONFIG.items())
    assert dict((k, v[0]) for k, v in speculative.ADAPTIVE_KNOBS.items()) == adaptive.KNOB_DEFAULTS


def test_extra_args_that_set_the_roles_own_arguments_fail_validation_naming_the_variable():
    msgs = broken(dict(SEED, sglang_service_extra_args=["--disable-radix-cache", "--speculative-num-steps=2", "--tp", "2"]))
    assert msgs == [
        "sglang_service_extra_args may not set what the role sets (SGLang takes the command line over the --config file, "
        "so the server would run another configuration than the one the role checks and reports): "
        "--speculative-num-steps=2 (set sglang_service_speculative_num_steps instead); --tp (set sglang_service_tp_size instead)."]
    assert broken(dict(SEED, sglang_service_extra_args=["--disable-radix-cache", "--watchdog-timeout", "600"])) == []


def test_the_removed_cuda_graph_max_bs_is_one_of_the_rules():
    """Refused with the other rules, in the same task (one task fewer per deployment than its own assert)."""
    msgs = broken(dict(SEED, sglang_service_cuda_graph_max_bs=16))
    assert len(msgs) == 1
    assert msgs[0].startswith("sglang_service_cuda_graph_max_bs is no longer used")
    assert "sglang_service_cuda_graph_max_bs_decode" in msgs[0]
    assert broken(SEED) == []
