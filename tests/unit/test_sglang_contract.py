"""The recorded SGLang contract: its three copies agree, and it says what the collection relies on.

tools/sglang-contract writes docs/sglang-contract/<version>.json from the real SGLang, plus the
simulator's packaged copy and plugins/module_utils/sglang_contract.py; CI has no SGLang, so these
tests are what keeps the copies from drifting apart.
"""

import json
import os

from ansible_collections.llmops.sglang.plugins.module_utils import sglang_contract

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
VERSION = "0.5.23"
DOC = os.path.join(ROOT, "docs", "sglang-contract", VERSION + ".json")
SIM_COPY = os.path.join(ROOT, "simulator", "src", "sglang_sim", "data", "sglang-contract.json")


def load():
    with open(DOC, encoding="utf-8") as handle:
        return json.load(handle)


def test_the_role_installs_the_recorded_version():
    with open(os.path.join(ROOT, "roles", "sglang_service", "defaults", "main.yml"), encoding="utf-8") as handle:
        assert "sglang==%s" % VERSION in handle.read()
    assert load()["sglang_version"] == VERSION


def test_simulator_ships_the_same_contract():
    with open(DOC, "rb") as doc, open(SIM_COPY, "rb") as sim:
        assert doc.read() == sim.read()


def test_module_utils_subset_matches():
    contract = load()
    assert sglang_contract.SGLANG_VERSION == contract["sglang_version"]
    assert list(sglang_contract.KV_CACHE_DTYPES) == contract["kv_cache_dtypes"]
    algorithms = contract["speculative_algorithms"]
    assert sorted(sglang_contract.SPECULATIVE_ALGORITHMS) == sorted(algorithms["builtin"] + list(algorithms["aliases"]))
    assert sglang_contract.FLAGS == {o for f in contract["flags"] for o in f["option_strings"] if o.startswith("--")}


def test_contract_holds_the_facts_the_collection_depends_on():
    contract = load()
    flags = {o: f for f in contract["flags"] for o in f["option_strings"]}
    assert "--cuda-graph-max-bs" not in flags
    assert flags["--cuda-graph-max-bs-decode"]["type"] == "int"
    assert flags["--model-path"]["required"] is True
    assert contract["speculative_algorithms"]["aliases"] == {"NEXTN": "EAGLE"}
    assert contract["kv_cache_dtypes"] == ["auto", "fp8_e5m2", "fp8_e4m3", "mxfp8", "bf16", "bfloat16", "nvfp4",
                                           "fp4_mx_block16"]
    keys = contract["response_keys"]
    assert "effective_max_running_requests_per_dp" in keys["server_info.internal_states[]"]
    assert {"spec_verify_ct", "spec_num_correct_drafts", "num_retractions"} <= set(keys["generate.meta_info"])
    for section in keys.values():
        for key, where in section.items():
            if key != "_endpoint":
                assert where.split(":")[0].endswith(".py") and where.split(":")[1].isdigit(), (key, where)


def test_contract_file_is_stable_sorted_json():
    with open(DOC, encoding="utf-8") as handle:
        text = handle.read()
    assert text == json.dumps(json.loads(text), indent=1, sort_keys=True) + "\n"
