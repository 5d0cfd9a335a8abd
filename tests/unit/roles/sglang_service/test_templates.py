"""Render the sglang_service role's real templates, as the template action does, and check
the command line and environment systemd would see, for several variable combinations."""
import pytest
import yaml

from rendering import SEED, config_options, env_file, exec_argv, flags, render, role_var, server_argv, unit_sections


def server_flags(overrides):
    """{--flag: value or True} as SGLang 0.5.23 sees them (the --config file, then the command line)."""
    return flags(server_argv(overrides))


def test_seed_configuration_flags():
    argv = exec_argv(render("sglang.service.j2", SEED))
    # the command line holds the interpreter, the module and the --config file only
    assert argv == ["/opt/sglang/venv/bin/python", "-m", "sglang.launch_server", "--config", "/etc/sglang/sglang.yaml"]
    f = server_flags(SEED)
    assert f["--model-path"] == "/models/Qwen3.5-122B-A10B-FP8"
    assert f["--served-model-name"] == "Qwen3.5-122B-A10B-FP8"
    assert f["--tp-size"] == "4"
    assert f["--kv-cache-dtype"] == "bf16"
    assert f["--speculative-algorithm"] == "NEXTN"
    assert f["--speculative-num-steps"] == "4"
    assert f["--speculative-eagle-topk"] == "1"
    # derived: steps + 1 with topk 1
    assert f["--speculative-num-draft-tokens"] == "5"
    assert f["--enable-metrics"] is True
    assert f["--host"] == "127.0.0.1" and f["--port"] == "30000"
    # unset knobs are left to SGLang
    for flag in ("--dp-size", "--mem-fraction-static", "--max-running-requests", "--cuda-graph-max-bs-decode", "--cuda-graph-max-bs-prefill",
                 "--context-length", "--chunked-prefill-size", "--attention-backend", "--api-key",
                 "--speculative-draft-model-path", "--sim-profile"):
        assert flag not in f


@pytest.mark.parametrize("steps", [1, 2, 3, 5, 10])
def test_draft_tokens_follow_steps_with_topk_1(steps):
    f = server_flags(dict(SEED, sglang_service_speculative_num_steps=steps))
    assert f["--speculative-num-steps"] == str(steps)
    assert f["--speculative-num-draft-tokens"] == str(steps + 1)


def test_explicit_tree_drafting():
    f = server_flags(dict(
        SEED, sglang_service_speculative_algorithm="EAGLE3", sglang_service_speculative_num_steps=5,
        sglang_service_speculative_eagle_topk=8, sglang_service_speculative_num_draft_tokens=32,
        sglang_service_speculative_draft_model_path="/models/eagle3 draft"))
    assert f["--speculative-algorithm"] == "EAGLE3"
    assert f["--speculative-eagle-topk"] == "8"
    assert f["--speculative-num-draft-tokens"] == "32"
    assert f["--speculative-draft-model-path"] == "/models/eagle3 draft"


def test_no_speculative_block_without_algorithm():
    f = server_flags({"sglang_service_model_path": "/m"})
    assert not [k for k in f if k.startswith("--speculative")]
    assert f["--tp-size"] == "1" and f["--kv-cache-dtype"] == "auto"


def test_tuning_knobs_and_extra_args():
    overrides = dict(
        SEED, sglang_service_dp_size=2, sglang_service_mem_fraction_static=0.88, sglang_service_max_running_requests=32,
        sglang_service_cuda_graph_max_bs_decode=64, sglang_service_cuda_graph_max_bs_prefill=8,
        sglang_service_context_length=131072, sglang_service_chunked_prefill_size=-1,
        sglang_service_attention_backend="flashinfer", sglang_service_trust_remote_code=True, sglang_service_enable_metrics=False,
        sglang_service_host="0.0.0.0", sglang_service_port=30011,
        sglang_service_extra_args=["--disable-radix-cache", "--json-model-override-args", '{"a": "b c"}', "50%$HOME"])
    argv = exec_argv(render("sglang.service.j2", overrides))
    f = server_flags(overrides)
    assert f["--dp-size"] == "2"
    assert f["--mem-fraction-static"] == "0.88"
    assert f["--max-running-requests"] == "32"
    assert f["--cuda-graph-max-bs-decode"] == "64" and f["--cuda-graph-max-bs-prefill"] == "8"
    assert f["--context-length"] == "131072"
    assert f["--chunked-prefill-size"] == "-1"
    assert f["--attention-backend"] == "flashinfer"
    assert f["--trust-remote-code"] is True
    assert "--enable-metrics" not in f
    assert f["--host"] == "0.0.0.0" and f["--port"] == "30011"
    # extra args survive as single argv words, specials escaped for systemd
    assert argv[argv.index("--json-model-override-args") + 1] == '{"a": "b c"}'
    assert "50%$HOME" in argv


def test_simulator_launch_and_profile():
    argv = exec_argv(render("sglang.service.j2", dict(
        SEED, sglang_service_launch_module="sglang_sim", sglang_service_sim_profile="/controller/profile.yaml",
        sglang_service_name="sglang-qwen")))
    assert argv[:3] == ["/opt/sglang/venv/bin/python", "-m", "sglang_sim"]
    # the host-side copy, not the controller path
    assert flags(argv, 3)["--sim-profile"] == "/etc/sglang/sglang-qwen.sim-profile.yaml"


def test_existing_interpreter():
    argv = exec_argv(render("sglang.service.j2", dict(
        SEED, sglang_service_python_source="existing", sglang_service_python="/srv/conda/envs/sglang/bin/python3")))
    assert argv[0] == "/srv/conda/envs/sglang/bin/python3"


def test_unit_settings():
    s = unit_sections(render("sglang.service.j2", dict(
        SEED, sglang_service_name="sglang-qwen", sglang_service_user="llm", sglang_service_group="gpu",
        sglang_service_memory_max="200G", sglang_service_limit_memlock="infinity", sglang_service_limit_nofile=65536)))
    svc, unit = s["Service"], s["Unit"]
    assert svc["User"] == "llm" and svc["Group"] == "gpu"
    assert svc["EnvironmentFile"] == "/etc/sglang/sglang-qwen.env"
    assert svc["WorkingDirectory"] == "/var/lib/sglang"
    assert svc["LimitNOFILE"] == "65536" and svc["LimitMEMLOCK"] == "infinity"
    assert svc["MemoryMax"] == "200G"
    assert int(svc["TimeoutStartSec"]) >= 1800
    assert svc["Restart"] == "on-failure"
    assert svc["KillMode"] == "control-group"
    # a crash loop must end in a failed unit
    assert int(unit["StartLimitBurst"]) >= 1 and int(unit["StartLimitIntervalSec"]) > int(svc["RestartSec"]) * int(unit["StartLimitBurst"])
    assert s["Install"]["WantedBy"] == "multi-user.target"
    assert "MemoryMax" not in unit_sections(render("sglang.service.j2", SEED))["Service"]


def test_rollback_guard_runs_the_restore_script_with_every_file_kind():
    overrides = dict(SEED, sglang_service_name="sglang-qwen")
    unit = unit_sections(render("sglang.service.j2", overrides))["Unit"]
    assert unit["OnFailure"] == "sglang-qwen-rollback.service"
    guard = unit_sections(render("sglang-rollback.service.j2", overrides))["Service"]
    assert guard["Type"] == "oneshot"
    argv = guard["ExecStart"].split()
    # the server's own interpreter runs the script the role installs next to the configuration
    # --health: where the deadline timer asks whether a start it finds running got ready after all;
    # --watch-lock: what sglang_service_wait holds while the role itself watches the unit
    assert argv[:8] == ["/opt/sglang/venv/bin/python", "/etc/sglang/sglang-qwen.restore-last-good.py",
                        "--health", "http://127.0.0.1:30000", "--watch-lock", "/run/sglang-qwen.watched",
                        "sglang-qwen.service", "/etc/sglang/sglang-qwen.last-good"]
    paths = dict(arg.split("=", 1) for arg in argv[8:])
    # every file a last good configuration may hold, at the place the role renders it
    assert paths == {"unit": "/etc/systemd/system/sglang-qwen.service", "env": "/etc/sglang/sglang-qwen.env",
                     "config": "/etc/sglang/sglang-qwen.yaml", "sim-profile": "/etc/sglang/sglang-qwen.sim-profile.yaml",
                     "adaptive-config": "/etc/sglang/sglang-qwen.adaptive.json"}
    names = {f["name"] for f in role_var("_sglang_service_saved_files", dict(
        overrides, sglang_service_launch_module="sglang_sim", sglang_service_sim_profile="p.yaml",
        sglang_service_speculative_adaptive=True, sglang_service_speculative_adaptive_config={"x": 1}))}
    assert names <= set(paths)


def test_no_rollback_guard_without_rollback():
    unit = unit_sections(render("sglang.service.j2", dict(SEED, sglang_service_rollback=False)))["Unit"]
    assert "OnFailure" not in unit


def test_api_key_only_in_the_config_file():
    key = "sk-very$ecret\"key: #1"
    overrides = dict(SEED, sglang_service_api_key=key)
    unit = render("sglang.service.j2", overrides)
    # nothing of the key on the command line (ps -ef), in the unit or in the environment file
    assert "ecret" not in unit and "--api-key" not in exec_argv(unit)
    assert "ecret" not in render("sglang.env.j2", overrides)
    assert config_options(overrides)["api-key"] == key
    assert server_flags(overrides)["--api-key"] == key
    assert "api-key" not in config_options(SEED)


def test_config_file_is_readable_yaml_in_flag_order():
    text = render("sglang.yaml.j2", SEED)
    keys = [line.split(":")[0] for line in text.splitlines() if line and not line.startswith("#")]
    assert keys[:4] == ["model-path", "served-model-name", "tp-size", "kv-cache-dtype"]
    assert keys[-2:] == ["host", "port"]
    assert yaml.safe_load(text)["speculative-num-draft-tokens"] == 5


def test_environment_file():
    env = env_file(render("sglang.env.j2", dict(SEED, sglang_service_environment={"HF_HOME": "/data/hf", "SGLANG_X": "a b"})))
    assert env["CUDA_HOME"] == "/usr/local/cuda-13.0"
    assert env["LD_LIBRARY_PATH"] == "/usr/local/cuda-13.0/lib64"
    assert env["CUDA_VISIBLE_DEVICES"] == "0,1,2,3"
    assert env["NCCL_IB_DISABLE"] == "1" and env["NCCL_P2P_LEVEL"] == "SYS"
    assert env["HF_HOME"] == "/data/hf" and env["SGLANG_X"] == "a b"
    path = env["PATH"].split(":")
    assert path[0] == "/opt/sglang/venv/bin" and path[1] == "/usr/local/cuda-13.0/bin" and "/usr/bin" in path


def test_environment_file_minimal_and_explicit_path():
    env = env_file(render("sglang.env.j2", {"sglang_service_model_path": "/m", "sglang_service_env_path": "/usr/bin:/bin"}))
    assert env == {"PATH": "/usr/bin:/bin"}


def directives(text):
    """[(key, value)] of the [Service] section in order, repeated keys kept (DeviceAllow=, ...)."""
    out, section = [], None
    for line in text.splitlines():
        if line.startswith("["):
            section = line.strip("[]")
        elif section == "Service" and line and not line.startswith("#") and "=" in line and not line.startswith(" "):
            key, dummy, value = line.partition("=")
            out.append((key, value))
    return out


def test_sandbox_keeps_the_gpus_and_the_working_directory():
    found = directives(render("sglang.service.j2", SEED))
    d = dict(found)
    assert d["NoNewPrivileges"] == "yes" and d["ProtectSystem"] == "strict" and d["ProtectHome"] == "yes"
    assert d["ReadWritePaths"] == "/var/lib/sglang"
    assert d["DevicePolicy"] == "closed"
    allowed = [v for k, v in found if k == "DeviceAllow"]
    assert {"char-nvidia-frontend rw", "char-nvidia-uvm rw", "char-nvidia-caps rw"} <= set(allowed)
    assert d["RestrictAddressFamilies"].split() == ["AF_UNIX", "AF_INET", "AF_INET6", "AF_NETLINK"]
    assert d["CapabilityBoundingSet"] == ""
    # what would break CUDA stays out
    for key in ("PrivateDevices", "MemoryDenyWriteExecute", "ProcSubset", "PrivateNetwork", "IPAddressDeny"):
        assert key not in d, key
    # every sandbox directive carries its reason on the line above
    lines = render("sglang.service.j2", SEED).splitlines()
    start = lines.index("NoNewPrivileges=yes")
    for i, line in enumerate(lines[start:], start):
        if line.startswith("[Install]"):
            break
        if line and not line.startswith("#") and not lines[i - 1].startswith(line.partition("=")[0] + "="):
            assert lines[i - 1].startswith("# ") and len(lines[i - 1]) > 12, line


def test_sandbox_off_and_overrides():
    off = dict(directives(render("sglang.service.j2", dict(SEED, sglang_service_hardening=False))))
    assert "NoNewPrivileges" not in off and "ProtectSystem" not in off and "DeviceAllow" not in off
    assert off["User"] == "sglang"
    found = directives(render("sglang.service.j2", dict(
        SEED, sglang_service_read_write_paths=["/data/hf", "/scratch"],
        sglang_service_hardening_overrides={"ProtectHome": "read-only", "PrivateTmp": None,
                                            "DeviceAllow": ["/dev/nvidia0 rw"], "IPAddressDeny": "any"})))
    d = dict(found)
    assert d["ReadWritePaths"] == "/var/lib/sglang /data/hf /scratch"
    assert d["ProtectHome"] == "read-only"
    assert "PrivateTmp" not in d
    assert [v for k, v in found if k == "DeviceAllow"] == ["/dev/nvidia0 rw"]
    assert d["IPAddressDeny"] == "any"


def test_model_under_home_is_bound_in_read_only():
    d = dict(directives(render("sglang.service.j2", dict(SEED, sglang_service_model_path="/home/ops/models/qwen"))))
    assert d["ProtectHome"] == "tmpfs" and d["BindReadOnlyPaths"] == "/home/ops/models/qwen"
    assert "BindReadOnlyPaths" not in dict(directives(render("sglang.service.j2", SEED)))


@pytest.mark.parametrize("version, key, filtered", [
    ("systemd 252 (252.39-1~deb12u2)\n+PAM", "sk-1", False),
    ("systemd 253 (253.5-1)\n+PAM", "sk-1", True),
    ("systemd 256 (256.7)\n+PAM", None, False),
])
def test_api_key_line_dropped_from_the_journal_where_systemd_can(version, key, filtered):
    unit = render("sglang.service.j2", dict(
        SEED, sglang_service_api_key=key, _sglang_service_systemctl_version={"stdout": version}))
    assert ("LogFilterPatterns=~api_key" in unit.splitlines()) == filtered


@pytest.mark.parametrize("overrides, gpus", [
    ({"sglang_service_cuda_visible_devices": "0,1,2,3"}, ["0", "1", "2", "3"]),
    ({"sglang_service_cuda_visible_devices": "GPU-abc, GPU-def"}, ["GPU-abc", "GPU-def"]),
    ({"sglang_service_tp_size": 2, "sglang_service_dp_size": 2}, ["0", "1", "2", "3"]),
    ({}, ["0"]),
])
def test_gpus_the_stop_waits_for(overrides, gpus):
    from rendering import _load, _trust
    from ansible.parsing.dataloader import DataLoader
    from ansible.template import Templar

    variables = dict(_load("defaults/main.yml"), sglang_service_model_path="/m", **overrides)
    variables.update(_load("vars/main.yml"))
    templar = Templar(loader=DataLoader(), variables=_trust(variables))
    assert templar.template(_trust("{{ _sglang_service_gpus }}")) == gpus


def test_verification_and_last_good_settings_come_from_the_same_values():
    """What the server must report back and what the last good configuration keeps are derived
    from the variables by the server-argument table (module_utils/server_args.py), like the
    --config file."""
    overrides = dict(SEED, sglang_service_dp_size=2, sglang_service_api_key="sk-secret",
                     sglang_service_mem_fraction_static="0.85", sglang_service_extra_args=["--disable-radix-cache"])
    assert role_var("_sglang_service_expect", overrides) == {
        "tp_size": 4, "dp_size": 2, "kv_cache_dtype": "bf16", "speculative_algorithm": "NEXTN",
        "speculative_num_steps": 4, "speculative_eagle_topk": 1, "speculative_num_draft_tokens": 5}
    settings = role_var("_sglang_service_settings", overrides)
    assert list(settings)[:3] == ["sglang_service_launch_module", "sglang_service_python", "sglang_service_model_path"]
    assert settings["sglang_service_api_key"] == "set" and "sk-secret" not in str(settings)
    assert settings["sglang_service_mem_fraction_static"] == "0.85"  # as set
    assert settings["sglang_service_speculative_num_draft_tokens"] == 5  # as deployed
    assert settings["sglang_service_extra_args"] == ["--disable-radix-cache"]
    assert settings["sglang_service_hardening"] is True
    assert config_options(overrides)["mem-fraction-static"] == 0.85
    off = role_var("_sglang_service_expect", dict(SEED, sglang_service_speculative_algorithm=None))
    assert off["speculative_algorithm"] is None and off["speculative_num_steps"] is None


def test_the_sweeps_baseline_renders_no_speculative_flag_at_all():
    """Steps 0 of a sweep (roles/sweep/tasks/measure.yml): the algorithm null, steps 0, adaptive off. SGLang
    then runs without speculative decoding: no --speculative-* option reaches it."""
    baseline = dict(SEED, sglang_service_speculative_algorithm=None, sglang_service_speculative_num_steps=0,
                    sglang_service_speculative_num_draft_tokens=None, sglang_service_speculative_adaptive=False,
                    sglang_service_speculative_adaptive_config=None)
    assert [k for k in config_options(baseline) if k.startswith("speculative")] == []
    assert not [a for a in server_argv(baseline) if a.startswith("--speculative")]


def test_the_account_the_role_makes_and_compares_is_never_root():
    # ansible.builtin.user would move root's home to the working directory and take its login shell away.
    made = role_var("_sglang_service_layout", dict(SEED))
    assert made["group"] == "sglang"
    assert made["user"] == dict(name="sglang", group="sglang", home="/var/lib/sglang", shell="/usr/sbin/nologin")
    as_root = role_var("_sglang_service_layout", dict(SEED, sglang_service_user="root", sglang_service_group="root"))
    assert as_root["user"] is None and as_root["group"] is None
    assert [d["path"] for d in as_root["directories"]] == ["/var/lib/sglang", "/etc/sglang", "/etc/sglang/sglang.last-good"]
    assert [d["owner"] for d in as_root["directories"]] == ["root", "root", "root"]
    assert not role_var("_sglang_service_manage_user", dict(SEED, sglang_service_user="root"))
    assert role_var("_sglang_service_manage_group", dict(SEED, sglang_service_user="root"))
    assert role_var("_sglang_service_layout", dict(SEED, sglang_service_create_user=False))["user"] is None


def test_the_simulator_needs_only_python3_venv_of_apt():
    assert role_var("_sglang_service_os_packages", dict(SEED)) == ["python3-venv", "python3-packaging"]
    assert role_var("_sglang_service_os_packages", dict(SEED, sglang_service_launch_module="sglang_sim")) == ["python3-venv"]
