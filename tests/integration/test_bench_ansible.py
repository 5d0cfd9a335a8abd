# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.sglang contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The real sglang_bench module and spec_bench role, run by ansible / ansible-playbook.

The server is the scripted SGLang-shaped server of benchmarks/bench_client_overhead.py (exact
token schedule, fault knobs), started on a free port (fixtures in conftest.py). The progress
lines and file of a running benchmark: test_bench_ansible_progress.py.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os

import pytest

from bench_runs import STEADY_LEN, STEADY_STEPS, STEP_S, adhoc, playbook, run_role
from harness import ROOT, free_port


def test_module_measures_and_sets_facts(env, tmp_path, server):
    # 300 decode tokens in 100 steps: 0.4 s of decoding, so that a busy machine's scheduling delay stays
    # well inside the tolerance (10 steps, 40 ms, were 8% off at load 2.8; see bench_runs.STEADY_LEN).
    rc, res = adhoc(env, tmp_path, {"url": server, "concurrency_levels": [1, 3], "requests_per_level": 6,
                                    "output_len": STEADY_LEN, "input_len": 8})
    assert rc == 0, res
    assert res["changed"] is False
    assert [lvl["concurrency"] for lvl in res["levels"]] == [1, 3]
    assert res["ansible_facts"]["sglang_bench"]["levels"] == res["levels"]
    for lvl in res["levels"]:
        assert lvl["requests_completed"] == 6 and lvl["requests_failed"] == 0
        assert lvl["output_tokens"] == 6 * STEADY_LEN
        # the schedule's decode rate: ACCEPT tokens per step of STEP_S
        assert lvl["per_request_tok_s"]["median"] == pytest.approx((STEADY_LEN - 1) / (STEADY_STEPS * STEP_S), rel=0.05)
        assert lvl["accept_length"] == pytest.approx(STEADY_LEN / float(STEADY_STEPS))
        assert lvl["max_running_requests"] == 48
        for key in ("ttft_s", "itl_s", "tpot_s", "e2e_latency_s"):
            assert set(lvl[key]) == {"mean", "p50", "p90", "p99"}
    # the scripted server is an older SGLang: /server_info answers 404, the reader falls back
    assert res["server"]["version"] == "0.5.4-scripted"
    assert res["server"]["server_args"]["speculative_num_steps"] == 3
    assert res["workload"]["workload"] == "synthetic" and res["workload"]["ignore_eos"] is True


def test_check_mode_sends_no_load(env, tmp_path):
    rc, res = adhoc(env, tmp_path, {"url": "http://127.0.0.1:%d" % free_port(), "concurrency_levels": [4]}, check=True)
    assert rc == 0, res
    assert res["changed"] is False
    assert "check mode: no load sent" in res["msg"]
    assert res["levels"] == []


BAD_VALUES = [
    ({"concurrency_levels": [0]}, "concurrency_levels"),
    ({"concurrency_levels": [4, -2]}, "concurrency_levels"),
    ({"concurrency_levels": ["abc"]}, "concurrency_levels"),
    ({"concurrency_levels": [1.5]}, "concurrency_levels"),
    ({"concurrency_levels": []}, "concurrency_levels"),
    ({"output_len": 0}, "output_len"),
    ({"url": "ftp://example.org"}, "url"),
    ({"url": "http://"}, "url"),
    ({"url": "http://127.0.0.1:99999"}, "url"),
    ({"api": "grpc"}, "api"),
    ({"workload": "file"}, "prompts"),
    ({"client_lag_limit": 0}, "client_lag_limit"),
    ({"client_lag_limit": 1.5}, "client_lag_limit"),
    ({"client_lag_retries": -1}, "client_lag_retries"),
]


@pytest.mark.parametrize("args,option", BAD_VALUES, ids=[json.dumps(a) for a, _o in BAD_VALUES])
def test_bad_values_fail_naming_the_option(env, tmp_path, args, option):
    # The URL points at nothing: a validation failure must come before any connection attempt.
    full = {"url": "http://127.0.0.1:%d" % free_port(), "connect_timeout": 1}
    full.update(args)
    rc, res = adhoc(env, tmp_path, full)
    assert rc != 0
    assert option in res["msg"], res["msg"]
    assert "not reachable" not in res["msg"]


def test_unreachable_server_fails_clearly(env, tmp_path):
    port = free_port()
    rc, res = adhoc(env, tmp_path, {"url": "http://127.0.0.1:%d" % port, "connect_timeout": 1})
    assert rc != 0
    assert "server not reachable" in res["msg"] and str(port) in res["msg"]


def test_failures_fail_the_task_unless_told_not_to(env, tmp_path, stalled_server):
    args = {"url": stalled_server, "concurrency_levels": [2], "requests_per_level": 2, "output_len": 40,
            "request_timeout": 1, "warmup_requests": 0}
    rc, res = adhoc(env, tmp_path, args)
    assert rc != 0
    assert "2 of 2 requests failed" in res["msg"]
    assert res["levels"][0]["requests_failed"] == 2  # partial figures come back with the failure
    args["fail_on_error"] = False
    rc, res = adhoc(env, tmp_path, args)
    assert rc == 0 and not res.get("failed")
    assert res["levels"][0]["requests_failed"] == 2
    assert "2 of 2 requests failed" in res["msg"]


def test_role_writes_result_and_prints_table(env, tmp_path, server):
    results = tmp_path / "results"
    proc = run_role(env, tmp_path, {
        "spec_bench_url": server, "spec_bench_concurrency_levels": [1, 2], "spec_bench_requests_per_level": 4,
        "spec_bench_output_len": STEADY_LEN, "spec_bench_input_len": 8, "spec_bench_results_dir": str(results),
    }, post_tasks=[{"name": "Keep the fact for the test", "ansible.builtin.copy": {
        "content": "{{ spec_bench_result | to_json }}", "dest": str(tmp_path / "fact.json"), "mode": "0644"}}])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    fact = json.loads((tmp_path / "fact.json").read_text())
    files = list(results.iterdir())
    assert len(files) == 1 and str(files[0]) == fact["result_file"]
    written = json.loads(files[0].read_text())
    assert written == fact
    assert written["host"] == "localhost"
    assert written["sglang_version"] == "0.5.4-scripted"
    assert written["server_args"]["speculative_num_steps"] == 3
    assert written["workload"]["workload"] == "synthetic"
    assert [lvl["concurrency"] for lvl in written["levels"]] == [1, 2]
    assert written["timestamp"].endswith("Z")
    # The table: header and one row per level with per-request tok/s, aggregate, TTFT p50, accept length.
    assert "req tok/s p50" in proc.stdout and "accept" in proc.stdout
    for lvl in written["levels"]:
        row = "%6d %13.1f" % (lvl["concurrency"], lvl["per_request_tok_s"]["median"])
        assert row in proc.stdout
        assert "%.2f" % lvl["accept_length"] in proc.stdout


ROLE_BAD_VALUES = [
    ({"spec_bench_concurrency_levels": [1, 0]}, "spec_bench_concurrency_levels must be a non-empty list of integers >= 1 (got [1, 0])"),
    ({"spec_bench_client_lag_limit": 0}, "spec_bench_client_lag_limit must be a fraction in (0, 1], 1 turns the check off (got 0)"),
    ({"spec_bench_client_lag_retries": -1, "spec_bench_target_precision": 2},
     "spec_bench_target_precision must be in (0, 1) (got 2). spec_bench_client_lag_retries must be an integer >= 0 (got -1)."),
]


@pytest.mark.parametrize("bad,message", ROLE_BAD_VALUES, ids=[json.dumps(b) for b, _m in ROLE_BAD_VALUES])
def test_role_rejects_bad_values_before_any_load(env, tmp_path, bad, message):
    proc = run_role(env, tmp_path, dict({"spec_bench_url": "http://127.0.0.1:%d" % free_port(),
                                         "spec_bench_results_dir": str(tmp_path / "results")}, **bad))
    assert proc.returncode != 0
    out = " ".join((proc.stdout + proc.stderr).split())  # the error box wraps long lines
    assert "Invalid spec_bench settings: " + message in out, out
    assert "Drive the load" not in proc.stdout
    assert not (tmp_path / "results").exists()


@pytest.mark.parametrize("content,expected", [
    ('{"prompt": "a"}\n{prompt: "b"}\n', "line 2 is not JSON: Expecting property name enclosed in double quotes"),
    ('{"prompt": "a"}\n\n["b"]\n', "line 3 must be a string or an object with 'prompt' (string) or 'messages' (list)"),
    ("\n\n", "holds no prompts"),
])
def test_role_names_the_prompt_file_line_and_fault(env, tmp_path, content, expected):
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text(content)
    proc = run_role(env, tmp_path, {"spec_bench_url": "http://127.0.0.1:%d" % free_port(), "spec_bench_workload": "file",
                                    "spec_bench_prompt_file": str(prompts), "spec_bench_results_dir": str(tmp_path / "results")})
    assert proc.returncode != 0
    out = " ".join((proc.stdout + proc.stderr).split())  # the error box wraps long lines
    assert "spec_bench_prompt_file %s %s" % (prompts, expected) in out, out
    assert "Drive the load" not in proc.stdout
    assert not (tmp_path / "results").exists()


def test_role_in_check_mode_sends_no_load_and_writes_nothing(env, tmp_path):
    proc = run_role(env, tmp_path, {"spec_bench_url": "http://127.0.0.1:%d" % free_port(),
                                    "spec_bench_results_dir": str(tmp_path / "results")}, "--check")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "check mode: no load sent" in proc.stdout
    assert not (tmp_path / "results").exists()


@pytest.mark.parametrize("hostvars,expected", [
    ({"sglang_service_host": "0.0.0.0", "sglang_service_port": 30021}, "http://127.0.0.1:30021"),
    ({"sglang_service_host": "10.1.2.3"}, "http://10.1.2.3:30000"),
    ({"sglang_service_deployment": {"url": "http://127.0.0.1:30022"}, "sglang_service_port": 1}, "http://127.0.0.1:30022"),
    ({}, "http://127.0.0.1:30000"),
])
def test_role_default_url(env, tmp_path, hostvars, expected):
    """The role benchmarks the host's current deployment unless told otherwise."""
    out = tmp_path / "url.txt"
    proc = playbook(env, tmp_path, """
- name: Default URL
  hosts: all
  gather_facts: false
  vars_files:
    - %s
  vars: %s
  tasks:
    - name: Write the templated default
      ansible.builtin.copy:
        content: "{{ spec_bench_url }}"
        dest: %s
        mode: "0644"
""" % (os.path.join(ROOT, "roles", "spec_bench", "defaults", "main.yml"), json.dumps(hostvars), out))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert out.read_text().strip() == expected
