"""inventories/rtx6000bw states the seed's configuration: `deploy.yml` without -e deploys it."""
import json
import os
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "unit", "roles", "sglang_service"))
from rendering import flags, server_argv  # noqa: E402  (the role's real templates)


def host_vars():
    proc = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-inventory"),
                           "-i", os.path.join(ROOT, "inventories", "rtx6000bw"), "--host", "rtx6000bw"],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, check=True, cwd=ROOT)
    return json.loads(proc.stdout)


def test_seed_configuration_without_extra_vars():
    hv = host_vars()
    assert hv["sglang_service_speculative_algorithm"] == "NEXTN"
    assert hv["sglang_service_speculative_num_steps"] == 4
    assert hv["sglang_service_speculative_eagle_topk"] == 1
    assert hv["sglang_service_tp_size"] == 4
    # what deploy.yml renders from these variables when no spec_steps is given
    argv = flags(server_argv({k: v for k, v in hv.items() if k.startswith("sglang_service_")}))
    assert argv["--speculative-num-steps"] == "4"
    assert argv["--speculative-num-draft-tokens"] == "5"
    assert argv["--tp-size"] == "4" and argv["--kv-cache-dtype"] == "bf16"
