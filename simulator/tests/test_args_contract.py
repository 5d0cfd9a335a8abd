"""The simulator's flag parser against the recorded SGLang 0.5.23 contract (data/sglang-contract.json).

tools/sglang-contract writes the contract from the real parser; these tests fail when the
simulator's parser accepts, refuses or spells anything differently, so the two cannot drift.
"""

import argparse
import os
import subprocess
import sys

import pytest

from sglang_sim import args as sim_args


@pytest.fixture(scope="module")
def parser():
    return sim_args.build_parser()


def sim_flags(parser):
    return {a.dest: a for a in parser._actions if a.dest not in ("help", "sim_profile")}


def test_every_contract_flag_and_nothing_else(parser):
    contract = {f["dest"]: f for f in sim_args.CONTRACT["flags"] if f["action"] != "help"}
    ours = sim_flags(parser)
    assert sorted(ours) == sorted(contract)
    for dest, flag in contract.items():
        action = ours[dest]
        assert list(action.option_strings) == flag["option_strings"], dest
        assert (list(action.choices) if action.choices is not None else None) == flag["choices"], dest
        assert action.nargs == flag["nargs"], dest
        assert action.required == flag["required"], dest
        if flag["type"] is not None:
            assert getattr(action.type, "__name__", None) == flag["type"], dest
        if not isinstance(flag["default"], dict):
            assert action.default == flag["default"], dest


def test_sim_flags_are_hidden_from_the_usage(parser):
    assert all(a.help == argparse.SUPPRESS for a in parser._actions if a.dest.startswith("sim_"))


def test_usage_line_is_the_recorded_one():
    # argparse formats for the terminal width; the contract was recorded at 80 columns (systemd's case)
    code = "from sglang_sim.args import build_parser; print(build_parser().format_usage(), end='')"
    env = dict(os.environ, COLUMNS=str(sim_args.CONTRACT["usage_columns"]))
    out = subprocess.run([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, universal_newlines=True,
                         check=True).stdout
    assert out.rstrip("\n").split("\n") == sim_args.CONTRACT["usage_lines"]


def test_version_and_choices_come_from_the_contract():
    assert sim_args.SGLANG_VERSION == sim_args.CONTRACT["sglang_version"] == "0.5.23"
    assert sim_args.KV_CACHE_DTYPES == ("auto", "fp8_e5m2", "fp8_e4m3", "mxfp8", "bf16", "bfloat16", "nvfp4", "fp4_mx_block16")
    assert "NEXTN" in sim_args.SPECULATIVE_ALGORITHMS and "EAGLE" in sim_args.SPECULATIVE_ALGORITHMS


def test_the_kv_tables_cover_every_kv_cache_dtype_the_parser_takes():
    from sglang_sim import models
    assert set(models.KV_DTYPE_FACTOR) == set(models.TORCH_KV_DTYPE) == set(sim_args.KV_CACHE_DTYPES)


def run_parser(argv):
    env = dict(os.environ, COLUMNS="80")
    return subprocess.run([sys.executable, "-m", "sglang_sim"] + argv, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, timeout=60, check=False)


@pytest.mark.parametrize("argv, last_line", [
    (["--model-path", "m", "--cuda-graph-max-bs", "8"],
     "sglang serve: error: ambiguous option: --cuda-graph-max-bs could match --cuda-graph-max-bs-decode, "
     "--cuda-graph-max-bs-prefill"),
    (["--model-path", "m", "--kv-cache-dtype", "fp4_e2m1"],
     "sglang serve: error: argument --kv-cache-dtype: invalid choice: 'fp4_e2m1' (choose from 'auto', 'fp8_e5m2', "
     "'fp8_e4m3', 'mxfp8', 'bf16', 'bfloat16', 'nvfp4', 'fp4_mx_block16')"),
    (["--model-path", "m", "--no-such", "1"], "sglang serve: error: unrecognized arguments: --no-such 1"),
    (["--model-path", "m", "--tp-size", "four"],
     "sglang serve: error: argument --tp-size/--tensor-parallel-size: invalid int value: 'four'"),
])
def test_argparse_failures_are_0_5_23s(argv, last_line):
    """Each expected line is what the real 0.5.23 parser printed (prepare_server_args, Python 3.11)."""
    proc = run_parser(argv)
    assert proc.returncode == 2
    lines = proc.stderr.rstrip("\n").split("\n")
    assert lines[-1] == last_line
    assert lines[:-1] == sim_args.CONTRACT["usage_lines"]


def test_config_file_merges_like_0_5_23(tmp_path):
    config = tmp_path / "sglang.yaml"
    config.write_text("model-path: /models/m\ntp-size: 4\nkv-cache-dtype: fp8_e4m3\nenable-metrics: true\n"
                      "trust-remote-code: false\napi-key: secret\ncuda-graph-bs-decode: [1, 2, 4]\n")
    parser = sim_args.build_parser()
    argv = sim_args.merge_config(parser, ["--config", str(config), "--tp-size", "2"])
    args = parser.parse_args(argv)
    assert args.model_path == "/models/m" and args.api_key == "secret"
    assert args.tp_size == 2  # the command line wins over the file
    assert args.kv_cache_dtype == "fp8_e4m3" and args.enable_metrics is True and args.trust_remote_code is False
    assert args.cuda_graph_bs_decode == [1, 2, 4]


def test_config_file_errors_are_0_5_23s(tmp_path):
    parser = sim_args.build_parser()
    wrong_suffix = tmp_path / "c.json"
    wrong_suffix.write_text("{}")
    with pytest.raises(ValueError, match="Config file must be YAML format, got: .json"):
        sim_args.merge_config(parser, ["--config", str(wrong_suffix)])
    with pytest.raises(ValueError, match="Config file not found"):
        sim_args.merge_config(parser, ["--config", str(tmp_path / "missing.yaml")])
    # the file's keys become flags as written: the old flag fails as it does on the command line, and
    # so does an underscore spelling (0.5.23 passes "--kv_cache_dtype" on to argparse, which refuses it)
    for text in ("cuda-graph-max-bs: 8\n", "kv_cache_dtype: fp8_e4m3\n"):
        bad = tmp_path / "c.yaml"
        bad.write_text(text)
        with pytest.raises(SystemExit) as exc:
            parser.parse_args(sim_args.merge_config(parser, ["--config", str(bad), "--model-path", "m"]))
        assert exc.value.code == 2
