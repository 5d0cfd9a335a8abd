"""Every option the role renders, for a matrix that sets every option of meta/argument_specs.yml,
is one SGLang 0.5.23's recorded parser accepts: an exact long spelling, a value of its type and
among its choices. tools/check-role-flags runs the same matrix through the real parser."""
import os
import re

import pytest
import yaml

from rendering import ROLE, exec_argv, load_contract, render, server_argv
from role_matrix import SIMULATOR_ONLY, cases

CONTRACT = load_contract()
BY_OPTION = {o: f for f in CONTRACT["flags"] for o in f["option_strings"]}
CASES = cases()


def _valid(flag, value):
    kind = flag["type"]
    try:
        if kind == "int":
            int(value)
        elif kind == "float":
            float(value)
        elif kind == "human_readable_int":
            assert re.fullmatch(r"-?\d+|\d+(\.\d+)?(k|M|G|T)|\d+(Ki|Mi|Gi|Ti)", value)
    except (ValueError, AssertionError):
        return False
    return flag["choices"] is None or value in flag["choices"]


def check_against_contract(argv, simulator=False):
    """The problems of ``argv`` under the recorded contract ([] when it would be accepted)."""
    problems, i = [], 0
    while i < len(argv):
        option = argv[i]
        if simulator and option in SIMULATOR_ONLY:
            i += 2
            continue
        flag = BY_OPTION.get(option)
        if flag is None:
            problems.append("%s is not a 0.5.23 option" % option)
            i += 1
            while i < len(argv) and not argv[i].startswith("--"):
                i += 1  # its values
            continue
        i += 1
        if flag["nargs"] == 0:
            continue
        values = []
        while i < len(argv) and not argv[i].startswith("--") and (flag["nargs"] in ("+", "*") or not values):
            values.append(argv[i])
            i += 1
        if flag["nargs"] is None and len(values) != 1:
            problems.append("%s takes one value, got %r" % (option, values))
        problems += ["%s %r: not a valid %s%s" % (option, v, flag["type"], " in %s" % flag["choices"] if flag["choices"] else "")
                     for v in values if not _valid(flag, v)]
    return problems


def test_matrix_sets_every_option_of_the_argument_specs():
    with open(os.path.join(ROLE, "meta", "argument_specs.yml"), encoding="utf-8") as fh:
        options = set(yaml.safe_load(fh)["argument_specs"]["main"]["options"])
    with open(os.path.join(ROLE, "defaults", "main.yml"), encoding="utf-8") as fh:
        assert set(yaml.safe_load(fh)) == options  # defaults and argument specs have the same keys
    exercised = {key for dummy, overrides in CASES for key in overrides}
    assert options - exercised == set()


@pytest.mark.parametrize("name, overrides", CASES, ids=[name for name, dummy in CASES])
def test_every_rendered_option_is_accepted_by_the_0_5_23_contract(name, overrides):
    simulator = overrides.get("sglang_service_launch_module") == "sglang_sim"
    argv = server_argv(overrides)
    assert check_against_contract(argv, simulator) == []
    # and the simulator's parser, built from the same contract, parses it (argparse exits 2 otherwise)
    from sglang_sim import args as sim_args

    parsed = sim_args.build_parser().parse_args(argv)
    assert parsed.model_path == overrides["sglang_service_model_path"]


def test_checker_refuses_what_0_5_23_refuses():
    assert check_against_contract(["--cuda-graph-max-bs", "8"]) == ["--cuda-graph-max-bs is not a 0.5.23 option"]
    assert check_against_contract(["--kv-cache-dtype", "fp4_e2m1"])
    assert check_against_contract(["--tp", "4"])  # a prefix works through argparse only: the role never relies on it
    assert check_against_contract(["--tp-size", "four"])


@pytest.mark.parametrize("steps", [1, 2, 3, 4, 5, 10])
def test_reference_inventory_steps(steps):
    name, overrides = [c for c in CASES if c[0] == "rtx6000bw steps %d" % steps][0]
    from rendering import flags

    f = flags(server_argv(overrides))
    assert f["--speculative-num-steps"] == str(steps) and f["--speculative-num-draft-tokens"] == str(steps + 1)
    assert f["--speculative-algorithm"] == "NEXTN" and f["--tp-size"] == "4" and f["--kv-cache-dtype"] == "bf16"


def test_api_key_is_in_the_config_file_only():
    name, overrides = [c for c in CASES if c[0] == "every server knob"][0]
    key = overrides["sglang_service_api_key"]
    unit = render("sglang.service.j2", overrides)
    assert key not in unit and "--api-key" not in exec_argv(unit)
    assert key not in render("sglang.env.j2", overrides)
    assert yaml.safe_load(render("sglang.yaml.j2", overrides))["api-key"] == key
