"""A matrix of sglang_service settings that together set every option of the role's
meta/argument_specs.yml at least once, including the reference inventory (inventories/rtx6000bw)
at steps 1..5 and 10. tests/unit/roles/sglang_service/test_role_matrix.py checks every rendered
option against the recorded contract; tools/check-role-flags feeds the same argv to the real
SGLang parser.
"""
import os

import yaml

from rendering import ROOT, load_contract

INVENTORY = os.path.join(ROOT, "inventories", "rtx6000bw", "group_vars", "sglang_servers.yml")
# Options that are the simulator's, not SGLang's (the simulator hides them from its usage line).
SIMULATOR_ONLY = ("--sim-profile",)


def reference_inventory():
    with open(INVENTORY, encoding="utf-8") as fh:
        return yaml.safe_load(fh)


def cases():
    """[(name, overrides)]."""
    seed = reference_inventory()
    out = [("rtx6000bw steps %d" % steps, dict(seed, sglang_service_speculative_num_steps=steps))
           for steps in (1, 2, 3, 4, 5, 10)]
    out.append(("every server knob", dict(
        seed, sglang_service_dp_size=2, sglang_service_mem_fraction_static=0.88, sglang_service_max_running_requests=32,
        sglang_service_cuda_graph_max_bs_decode=64, sglang_service_cuda_graph_max_bs_prefill=16,
        sglang_service_context_length=131072, sglang_service_chunked_prefill_size=-1,
        sglang_service_attention_backend="flashinfer", sglang_service_trust_remote_code=True,
        sglang_service_enable_metrics=False, sglang_service_host="0.0.0.0", sglang_service_port=30011,
        sglang_service_api_key="sk-matrix$key", sglang_service_served_model_name="qwen matrix",
        sglang_service_extra_args=["--disable-radix-cache", "--watchdog-timeout", "600"])))
    contract = load_contract()
    for dtype in contract["kv_cache_dtypes"]:
        out.append(("kv %s" % dtype, dict(seed, sglang_service_kv_cache_dtype=dtype)))
    for algorithm in sorted(contract["speculative_algorithms"]["builtin"] + list(contract["speculative_algorithms"]["aliases"])):
        out.append(("speculative %s" % algorithm, dict(seed, sglang_service_speculative_algorithm=algorithm)))
    out.append(("EAGLE3 tree drafting", dict(
        seed, sglang_service_speculative_algorithm="EAGLE3", sglang_service_speculative_num_steps=5,
        sglang_service_speculative_eagle_topk=8, sglang_service_speculative_num_draft_tokens=32,
        sglang_service_speculative_draft_model_path="/models/eagle3 draft")))
    out.append(("adaptive speculative decoding", dict(
        seed, sglang_service_speculative_adaptive=True,
        sglang_service_speculative_adaptive_config={1: {"candidate_steps": [4]}, "16": {"candidate_steps": [3], "ema_alpha": 0.3}})))
    out.append(("adaptive, SGLang's built-in config", dict(
        seed, sglang_service_speculative_adaptive=True, sglang_service_speculative_num_steps=3)))
    out.append(("no speculative decoding", {"sglang_service_model_path": "/m", "sglang_service_speculative_algorithm": None}))
    out.append(("simulator", dict(
        seed, sglang_service_launch_module="sglang_sim", sglang_service_sim_profile="/controller/profile.yaml",
        sglang_service_simulator_src="/controller/simulator", sglang_service_venv_python="python3.11")))
    out.append(("existing interpreter", dict(
        seed, sglang_service_python_source="existing", sglang_service_python="/srv/conda/envs/sglang/bin/python3")))
    out.append(("unit and host settings", dict(
        seed, sglang_service_name="sglang-matrix", sglang_service_description="Matrix", sglang_service_enabled=False,
        sglang_service_user="llm", sglang_service_group="gpu", sglang_service_create_user=False, sglang_service_install=False,
        sglang_service_working_directory="/srv/llm", sglang_service_config_dir="/etc/llm",
        sglang_service_limit_nofile=65536, sglang_service_limit_memlock="infinity", sglang_service_memory_max="200G",
        sglang_service_timeout_start_sec=7200, sglang_service_timeout_stop_sec=60, sglang_service_restart="always",
        sglang_service_restart_sec=5, sglang_service_start_limit_burst=2, sglang_service_start_limit_interval_sec=900,
        sglang_service_venv_path="/opt/llm/venv", sglang_service_pip_packages=["sglang==0.5.23"],
        sglang_service_pip_extra_args="--index-url https://example.invalid/simple",
        sglang_service_env_path="/usr/bin:/bin", sglang_service_environment={"HF_HOME": "/data/hf"},
        sglang_service_ready_timeout=600, sglang_service_ready_poll_interval=0.5, sglang_service_stop_timeout=120,
        sglang_service_verify=False, sglang_service_rollback=False, sglang_service_rollback_grace=60,
        sglang_service_rollback_wait=False)))
    out.append(("sandbox relaxed", dict(
        seed, sglang_service_read_write_paths=["/data/hf"],
        sglang_service_hardening_overrides={"ProtectHome": "read-only", "PrivateTmp": None})))
    out.append(("sandbox off", dict(seed, sglang_service_hardening=False)))
    # An IPv6 bind: the role reaches it on [::1] (the sglang_url filter, as ServerArgs.url() does).
    out.append(("IPv6 wildcard bind", dict(seed, sglang_service_host="::", sglang_service_port=30012)))
    return out
