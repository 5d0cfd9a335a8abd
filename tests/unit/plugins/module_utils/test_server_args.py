"""The server-argument table (module_utils/server_args.py) against the recorded SGLang 0.5.23
contract, the role's public interface, and what the role, the wait and bench modules and the
sweep derive from it."""
import json
import os

import pytest
import yaml

from ansible.errors import AnsibleFilterError

from ansible_collections.llmops.sglang.plugins.filter.server_args import (
    FilterModule, sglang_server_arg_vars, sglang_server_args)
from ansible_collections.llmops.sglang.plugins.module_utils import server_args, sglang_contract
from ansible_collections.llmops.sglang.plugins.modules import sglang_bench

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
ROLE = os.path.join(ROOT, "roles", "sglang_service")
ARGS = server_args.SERVER_ARGS


def _yaml(*parts):
    with open(os.path.join(ROOT, *parts), encoding="utf-8") as fh:
        return yaml.safe_load(fh)


def _contract():
    with open(os.path.join(ROOT, "docs", "sglang-contract", sglang_contract.SGLANG_VERSION + ".json"), encoding="utf-8") as fh:
        return json.load(fh)


def _flags():
    return {o: f for f in _contract()["flags"] for o in f["option_strings"]}


# Argument types of the 0.5.23 parser each kind may write.
PARSER_TYPES = {"str": {"str"}, "opt_str": {"str"}, "secret": {"str"}, "int": {"int"}, "count": {"int"},
                "opt_int": {"int", "human_readable_int"}, "opt_float": {"float"}, "json_file": {"str"}}


@pytest.mark.parametrize("arg", ARGS, ids=[a.flag for a in ARGS])
def test_every_flag_is_in_0_5_23s_parser_with_a_matching_type(arg):
    assert "--" + arg.flag in sglang_contract.FLAGS
    spec = _flags()["--" + arg.flag]
    assert arg.kind in server_args.KINDS
    if arg.kind == "switch":
        assert spec["action"] == "store_true"
    elif arg.kind == "count":
        assert spec["type"] == "int" and spec["default"] == 1  # left out at 1: SGLang's own default
    elif arg.kind != "speculative":
        assert spec["type"] in PARSER_TYPES[arg.kind], spec


@pytest.mark.parametrize("arg", [a for a in ARGS if a.info], ids=[a.info for a in ARGS if a.info])
def test_every_server_info_key_is_0_5_23s(arg):
    # 0.5.23's /server_info is ServerArgs.resolved_dict() (utils/common.py:build_server_info): every
    # field under its name, which is the flag's dest.
    assert _flags()["--" + arg.flag]["dest"] == arg.info
    if arg.verify == "match":
        # What the role compares was also read from the real server when the contract was recorded.
        assert arg.info in _contract()["response_keys"]["server_info"]


def test_the_key_is_never_read_back_or_kept():
    secret = [a for a in ARGS if a.kind == "secret"]
    assert [a.flag for a in secret] == ["api-key"]
    assert all(a.info is None and not a.summary and not a.verify for a in secret)
    assert "api_key" not in server_args.REPORTED_INFO_KEYS + server_args.SUMMARY_INFO_KEYS


def test_every_role_variable_of_the_table_is_a_public_input():
    defaults = _yaml("roles", "sglang_service", "defaults", "main.yml")
    specs = _yaml("roles", "sglang_service", "meta", "argument_specs.yml")["argument_specs"]["main"]["options"]
    for name in server_args.role_vars():
        assert name in defaults and name in specs, name
    assert len(set(server_args.role_vars())) == len(server_args.role_vars())
    assert len({a.flag for a in ARGS}) == len(ARGS)


def test_what_the_others_derive():
    assert server_args.REPORTED_INFO_KEYS == (
        "model_path", "served_model_name", "tp_size", "dp_size", "kv_cache_dtype", "speculative_algorithm",
        "speculative_num_steps", "speculative_eagle_topk", "speculative_num_draft_tokens", "speculative_adaptive",
        "speculative_adaptive_config")
    # sglang_bench keeps the arguments a tuning decision depends on; 0.5.23 reports the CUDA-graph
    # limits as cuda_graph_max_bs_decode/_prefill (there is no cuda_graph_max_bs any more).
    assert sglang_bench.server_args.SUMMARY_INFO_KEYS == server_args.SUMMARY_INFO_KEYS
    assert {"cuda_graph_max_bs_decode", "cuda_graph_max_bs_prefill", "disable_radix_cache"} <= set(server_args.SUMMARY_INFO_KEYS)
    assert "cuda_graph_max_bs" not in server_args.SUMMARY_INFO_KEYS
    assert not {"host", "port", "trust_remote_code", "enable_metrics"} & set(server_args.SUMMARY_INFO_KEYS)
    assert sglang_server_arg_vars("not_fingerprint") == [
        "sglang_service_speculative_algorithm", "sglang_service_speculative_num_steps",
        "sglang_service_speculative_eagle_topk", "sglang_service_speculative_num_draft_tokens",
        "sglang_service_speculative_adaptive", "sglang_service_speculative_adaptive_config",
        "sglang_service_api_key", "sglang_service_host", "sglang_service_port"]
    assert set(sglang_server_arg_vars("fingerprint")) | set(sglang_server_arg_vars("not_fingerprint")) == set(sglang_server_arg_vars())
    with pytest.raises(AnsibleFilterError, match="unknown selection 'measured'"):
        sglang_server_arg_vars("measured")
    assert set(FilterModule().filters()) == {"sglang_server_arg_vars", "sglang_server_args", "sglang_extra_args_conflicts"}


def test_the_sweep_keeps_no_second_list_of_server_arguments():
    tasks = _yaml("roles", "sweep", "tasks", "preflight.yml")
    fingerprint = [t for t in tasks if "_sweep_fingerprint" in t.get("ansible.builtin.set_fact", {})][0]
    assert not set(fingerprint["vars"]["_sweep_not_measured"]) & set(server_args.role_vars())


def _values(**overrides):
    """The role defaults' values of the table's variables, with overrides."""
    defaults = _yaml("roles", "sglang_service", "defaults", "main.yml")
    values = dict((name, defaults[name]) for name in server_args.role_vars())
    values.update(sglang_service_model_path="/m", **overrides)
    return values


SPEC_ON = {"algorithm": "NEXTN", "num_steps": 4, "eagle_topk": 1, "num_draft_tokens": 5, "draft_model_path": None}


def test_options_in_table_order_unset_left_out():
    out = sglang_server_args(_values(sglang_service_dp_size=1, sglang_service_trust_remote_code=False,
                                     sglang_service_served_model_name="", sglang_service_api_key=None), SPEC_ON)
    assert list(out["options"]) == ["model-path", "tp-size", "kv-cache-dtype", "enable-metrics", "speculative-algorithm",
                                    "speculative-num-steps", "speculative-eagle-topk", "speculative-num-draft-tokens",
                                    "host", "port"]
    assert out["expect"] == {"tp_size": 1, "dp_size": 1, "kv_cache_dtype": "auto", "speculative_algorithm": "NEXTN",
                             "speculative_num_steps": 4, "speculative_eagle_topk": 1, "speculative_num_draft_tokens": 5}


def test_conversions_and_settings():
    out = sglang_server_args(_values(
        sglang_service_dp_size="2", sglang_service_tp_size=2.0, sglang_service_port="30011",
        sglang_service_mem_fraction_static="0.85", sglang_service_max_running_requests="16",
        sglang_service_context_length="", sglang_service_trust_remote_code="yes", sglang_service_api_key="sk-1"),
        {"algorithm": None})
    options, settings = out["options"], out["settings"]
    assert options["dp-size"] == 2 and options["tp-size"] == 2 and options["port"] == 30011
    assert options["mem-fraction-static"] == 0.85 and options["max-running-requests"] == 16
    assert options["trust-remote-code"] is True and options["api-key"] == "sk-1"
    assert "context-length" not in options
    assert not [k for k in options if k.startswith("speculative-")]
    assert out["expect"]["speculative_algorithm"] is None and out["expect"]["speculative_num_steps"] is None
    # Optional knobs are kept as they were set, the key only as set, the rest as deployed.
    assert settings["sglang_service_mem_fraction_static"] == "0.85"
    assert settings["sglang_service_context_length"] == ""
    assert settings["sglang_service_dp_size"] == 2 and settings["sglang_service_trust_remote_code"] is True
    assert settings["sglang_service_api_key"] == "set"
    assert list(settings) == server_args.role_vars()


def test_bad_values_name_the_variable():
    with pytest.raises(AnsibleFilterError, match="sglang_service_tp_size must be an integer; got 'four'"):
        sglang_server_args(_values(sglang_service_tp_size="four"), SPEC_ON)
    with pytest.raises(AnsibleFilterError, match="sglang_service_enable_metrics must be a boolean"):
        sglang_server_args(_values(sglang_service_enable_metrics="maybe"), SPEC_ON)
    values = _values()
    del values["sglang_service_port"]
    with pytest.raises(AnsibleFilterError, match="no value for sglang_service_port"):
        sglang_server_args(values, SPEC_ON)


def _contract_parser():
    """An argparse parser with the recorded 0.5.23 option strings (allow_abbrev as recorded): the
    oracle for how SGLang's parser reads an argv word."""
    import argparse
    with open(os.path.join(ROOT, "simulator", "src", "sglang_sim", "data", "sglang-contract.json"), encoding="utf-8") as fh:
        contract = json.load(fh)
    parser = argparse.ArgumentParser(allow_abbrev=contract["allow_abbrev"], add_help=False)
    for flag in contract["flags"]:
        longs = [o for o in flag["option_strings"] if o.startswith("--")]
        if longs:
            parser.add_argument(*longs, dest=flag["dest"])
    return parser


def _argparse_dest(parser, token):
    try:
        found = parser._parse_optional(token)
    except SystemExit:   # ambiguous: argparse refuses it
        return None
    if isinstance(found, list):   # Python >= 3.12.3 returns every candidate
        found = found[0] if len(found) == 1 else None
    return found[0].dest if found and found[0] is not None else None


def test_flag_dest_reads_a_word_as_sglangs_parser_does(monkeypatch):
    parser = _contract_parser()

    def refuse(message):
        raise SystemExit(2)

    monkeypatch.setattr(parser, "error", refuse)
    words = set()
    for flag in sglang_contract.FLAG_DESTS:
        words.update([flag, flag + "=1"] + [flag[:n] for n in range(3, len(flag))])
    words.update(["--", "-x", "2", "--no-such-flag", "--cuda-graph-max-bs"])
    differ = [(w, server_args.flag_dest(w), _argparse_dest(parser, w)) for w in sorted(words)
              if server_args.flag_dest(w) != _argparse_dest(parser, w)]
    assert differ == []


def test_extra_args_that_set_what_the_role_sets_are_named_with_the_variable():
    problems = server_args.extra_args_conflicts([
        "--disable-radix-cache", "--watchdog-timeout", "600",
        "--speculative-num-st", "2", "--host=0.0.0.0", "--tensor-parallel-size", "4",
        "--config", "/tmp/other.yaml", "--ssl-certfile", "/etc/tls/cert.pem", "--api-key=abc"])
    assert problems == [
        "--speculative-num-st (set sglang_service_speculative_num_steps instead)",
        "--host=0.0.0.0 (set sglang_service_host instead)",
        "--tensor-parallel-size (set sglang_service_tp_size instead)",
        "--config (the role writes the --config file itself)",
        "--ssl-certfile (the role reaches the server over plain HTTP (terminate TLS in front of it))",
        "--api-key=abc (set sglang_service_api_key instead)",
    ]


def test_extra_args_the_role_leaves_to_sglang_pass():
    # Flags the role has no variable for, values, and an ambiguous abbreviation (SGLang refuses that
    # itself, and the role diagnoses the refusal as bad_argument).
    assert server_args.extra_args_conflicts(
        ["--disable-radix-cache", "--json-model-override-args", '{"a": "b c"}', "--cuda-graph-max-bs", "16", "50%$HOME"]) == []
    assert server_args.extra_args_conflicts([]) == [] and server_args.extra_args_conflicts(None) == []


def test_the_filter_refuses_what_is_not_a_list():
    from ansible_collections.llmops.sglang.plugins.filter.server_args import sglang_extra_args_conflicts
    assert sglang_extra_args_conflicts(["--port", "1"]) == ["--port (set sglang_service_port instead)"]
    with pytest.raises(AnsibleFilterError, match="list of argv words"):
        sglang_extra_args_conflicts("--port 1")
