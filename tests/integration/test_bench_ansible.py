# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.sglang contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The real sglang_bench module and spec_bench role, run by ansible / ansible-playbook.

The server is the scripted SGLang-shaped server of benchmarks/bench_client_overhead.py (exact
token schedule, fault knobs), started on a free port.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import asyncio
import json
import os
import re
import subprocess
import sys
import time

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

import bench_client_overhead  # noqa: E402  (benchmarks/: the scripted server)
from harness import free_port, tool  # noqa: E402

STEP_S = 0.004
ACCEPT = 3
# Output tokens of a benchmark that must succeed: 151 decode in 50 steps, 0.2 s a request. At 31 tokens
# (40 ms) a client kept off the CPU for that long by the tests and linters beside it read a whole
# request in one piece, an infinite decode rate, and the module rightly refused the level as
# "implausible" (seen in CI on 2026-12-05).
STEADY_LEN = 151


@pytest.fixture(scope="module")
def server():
    proc, port, _stats = bench_client_overhead.start_scripted_server(step_s=STEP_S, accept=ACCEPT, prefill_s=0.002)
    yield "http://127.0.0.1:%d" % port
    proc.terminate()
    proc.join(5)


@pytest.fixture()
def stalled_server():
    proc, port, _stats = bench_client_overhead.start_scripted_server(step_s=STEP_S, accept=ACCEPT, stall_after_tokens=4)
    yield "http://127.0.0.1:%d" % port
    proc.terminate()
    proc.join(5)


@pytest.fixture()
def slow_server():
    """Requests of 90 tokens take about 0.6 s (30 steps of 20 ms): a benchmark of minutes in miniature."""
    proc, port, _stats = bench_client_overhead.start_scripted_server(step_s=0.02, accept=ACCEPT, prefill_s=0.002)
    yield "http://127.0.0.1:%d" % port
    proc.terminate()
    proc.join(5)


def adhoc(env, tmp_path, args, check=False):
    """Run the module with `ansible localhost -m`; returns (rc, result dict)."""
    tree = tmp_path / "tree"
    cmd = [tool("ansible"), "localhost", "-c", "local", "-m", "llmops.sglang.sglang_bench", "-a", json.dumps(args),
           "--tree", str(tree)]
    if check:
        cmd.append("--check")
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120, cwd=str(tmp_path), check=False)
    with open(str(tree / "localhost")) as handle:
        return proc.returncode, json.load(handle)


def playbook(env, tmp_path, text, *extra):
    path = tmp_path / "play.yml"
    path.write_text(text)
    return subprocess.run([tool("ansible-playbook"), "-c", "local", "-i", "localhost,", str(path)] + list(extra),
                          env=env, capture_output=True, text=True, timeout=180, cwd=str(tmp_path), check=False)


def run_role(env, tmp_path, role_vars, *extra, **play):
    """Run the spec_bench role on localhost with ``role_vars`` (plus other play keys, e.g.
    post_tasks); the play is written as JSON, which is YAML."""
    play = dict({"name": "Benchmark", "hosts": "all", "gather_facts": False,
                 "roles": [{"role": "llmops.sglang.spec_bench", "vars": role_vars}]}, **play)
    return playbook(env, tmp_path, json.dumps([play], indent=1), *extra)


def test_module_measures_and_sets_facts(env, tmp_path, server):
    # 150 decode tokens in 50 steps: 0.2 s of decoding, so that a few milliseconds of a busy machine's
    # scheduling delay stay well inside the tolerance (10 steps, 40 ms, were 8% off at load 2.8).
    rc, res = adhoc(env, tmp_path, {"url": server, "concurrency_levels": [1, 3], "requests_per_level": 6,
                                    "output_len": STEADY_LEN, "input_len": 8})
    assert rc == 0, res
    assert res["changed"] is False
    assert [lvl["concurrency"] for lvl in res["levels"]] == [1, 3]
    assert res["ansible_facts"]["sglang_bench"]["levels"] == res["levels"]
    for lvl in res["levels"]:
        assert lvl["requests_completed"] == 6 and lvl["requests_failed"] == 0
        assert lvl["output_tokens"] == 6 * 151
        # the schedule's decode rate: ACCEPT tokens per step of STEP_S
        assert lvl["per_request_tok_s"]["median"] == pytest.approx(150 / (50 * STEP_S), rel=0.05)
        assert lvl["accept_length"] == pytest.approx(151 / 50.0)
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


def test_role_rejects_bad_values_before_any_load(env, tmp_path):
    proc = run_role(env, tmp_path, {"spec_bench_url": "http://127.0.0.1:%d" % free_port(),
                                    "spec_bench_concurrency_levels": [1, 0], "spec_bench_results_dir": str(tmp_path / "results")})
    assert proc.returncode != 0
    assert "spec_bench_concurrency_levels" in proc.stdout
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


# One status line of the role while a benchmark runs (bench_progress.status_line, printed by the
# sglang_bench_follow action plugin on a line of its own).
STATUS = re.compile(r'(?m)^localhost steps 4: level (?P<level>\d+)/2 concurrency (?P<c>\d+) measuring '
                    r'(?P<done>\d+)/(?P<asked>\d+) requests, (?P<rate>[0-9.]+) tok/s, \d+ s in the level, (?P<all>\d+) s in all$')


def test_role_shows_progress_while_a_long_benchmark_runs(env, tmp_path, slow_server):
    """A benchmark of more than 30 s prints a status line every 5 s with the level, the requests done of
    those asked and the rate; the module's result is used as without progress, and nothing is left behind."""
    async_dir, tmp = tmp_path / "async", tmp_path / "tmp"
    tmp.mkdir()
    run_env = dict(env, ANSIBLE_ASYNC_DIR=str(async_dir), TMPDIR=str(tmp))
    results = tmp_path / "results"
    started = time.monotonic()
    proc = run_role(run_env, tmp_path, {
        "spec_bench_url": slow_server, "spec_bench_concurrency_levels": [1, 2], "spec_bench_requests_per_level": 40,
        "spec_bench_output_len": 90, "spec_bench_input_len": 8, "spec_bench_warmup_requests": 1,
        "spec_bench_progress_interval": 5, "spec_bench_progress_label": "steps 4", "spec_bench_results_dir": str(results),
        "spec_bench_progress_tmp": str(tmp),
    })
    took = time.monotonic() - started
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert took > 30, "the benchmark must outlast 30 s to show anything (took %.1f s)" % took
    lines = [m.groupdict() for m in STATUS.finditer(proc.stdout)]
    assert len(lines) >= 3, proc.stdout
    progress = [(int(m["level"]), int(m["done"])) for m in lines]
    # Requests done grow (level by level), the count asked is the level's, the rate is a real one.
    assert progress == sorted(progress) and len(set(progress)) >= 3, progress
    assert all(m["asked"] == "40" and 0 < float(m["rate"]) < 1000 for m in lines), lines
    assert {m["c"] for m in lines} == {"1", "2"}
    # At most 15 s between two lines (interval 5 s plus the looks themselves).
    seconds = [int(m["all"]) for m in lines]
    assert max(b - a for a, b in zip(seconds, seconds[1:])) <= 15, seconds
    # The module's result, as without progress: the table and the result file.
    written = json.loads(next(results.iterdir()).read_text())
    assert [lvl["requests_completed"] for lvl in written["levels"]] == [40, 40]
    assert "req tok/s p50" in proc.stdout
    # The async job's status file and the progress directory are gone.
    assert not list(async_dir.iterdir()) if async_dir.exists() else True
    assert [p.name for p in tmp.iterdir() if p.name.startswith("llmops-sglang-bench-")] == []


def test_role_without_progress_runs_one_task(env, tmp_path, server):
    proc = run_role(env, tmp_path, {
        "spec_bench_url": server, "spec_bench_concurrency_levels": [1], "spec_bench_requests_per_level": 4,
        "spec_bench_output_len": STEADY_LEN, "spec_bench_input_len": 8, "spec_bench_results_dir": str(tmp_path / "results"),
        "spec_bench_progress_interval": 0,
    })
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # The module ran as one task: no look at a job, no status line.
    assert "Look at the benchmark job" not in proc.stdout and "level 1/1" not in proc.stdout
    assert "measured 1 concurrency levels" in proc.stdout


def test_role_with_progress_fails_as_the_module_did(env, tmp_path, stalled_server):
    """A failing benchmark followed through async_status fails the play with the module's own message."""
    proc = run_role(env, tmp_path, {
        "spec_bench_url": stalled_server, "spec_bench_concurrency_levels": [1], "spec_bench_requests_per_level": 2,
        "spec_bench_output_len": 31, "spec_bench_input_len": 8, "spec_bench_warmup_requests": 0,
        "spec_bench_stall_timeout": 2, "spec_bench_progress_interval": 1, "spec_bench_results_dir": str(tmp_path / "results"),
    })
    assert proc.returncode != 0
    assert "server stalled" in proc.stdout and '"fault": "stalled"' in proc.stdout, proc.stdout
    assert "Remove the benchmark job's status file" in proc.stdout


def test_module_writes_its_progress_file(env, tmp_path, server, stalled_server):
    """The module keeps the status while it runs and leaves the last one: done (or failed, with the message)."""
    path = tmp_path / "progress" / "status.json"
    rc, res = adhoc(env, tmp_path, {"url": server, "concurrency_levels": [1, 3], "requests_per_level": 6,
                                    "output_len": STEADY_LEN, "input_len": 8, "progress_file": str(path)})
    assert rc == 0, res
    doc = json.loads(path.read_text())
    assert doc["state"] == "done" and doc["message"] == res["msg"]
    assert doc["level"] == 2 and doc["levels"] == 2 and doc["levels_done"] == 2 and doc["concurrency"] == 3
    assert doc["phase"] == "measure" and doc["requests_done"] == 6 and doc["requests_target"] == 6
    assert doc["output_tokens"] == 6 * STEADY_LEN and doc["output_tok_s"] > 0
    rc, res = adhoc(env, tmp_path, {"url": stalled_server, "concurrency_levels": [1], "requests_per_level": 2,
                                    "output_len": 31, "input_len": 8, "warmup_requests": 0, "stall_timeout": 2,
                                    "progress_file": str(path)})
    assert rc != 0 and res["fault"] == "stalled"
    doc = json.loads(path.read_text())
    assert doc["state"] == "failed" and doc["message"] == res["msg"]
    # Check mode writes nothing.
    path.unlink()
    rc, res = adhoc(env, tmp_path, {"url": server, "progress_file": str(path)}, check=True)
    assert rc == 0 and not path.exists()


def test_the_progress_file_follows_the_levels_as_they_run(server, tmp_path):
    """Every write of a running benchmark: levels in order, requests done never going back within a level."""
    from ansible_collections.llmops.sglang.plugins.modules import sglang_bench
    from ansible_collections.llmops.sglang.plugins.module_utils.bench_progress import ProgressFile

    docs = []

    def record(path, data, mode=None):
        docs.append(json.loads(data))

    params = dict(url=server, api="native", api_key=None, model=None, connect_timeout=3.0, request_timeout=30.0,
                  validate_certs=True, requests_per_level=40, duration_s=None, warmup_requests=1, seed=0,
                  workload="synthetic", input_len=8, output_len=61, temperature=0.7, flush_cache=True, stall_timeout=10)
    progress = ProgressFile(str(tmp_path / "p.json"), [1, 2], every=0.05, write=record)
    result, problem = asyncio.run(sglang_bench.run_benchmark(params, [1, 2], None, report=progress))
    assert problem is None
    running = [(d["level"], d["requests_done"]) for d in docs if d["phase"] == "measure"]
    assert len(running) >= 6 and running == sorted(running)
    assert {d["level"] for d in docs} == {1, 2} and docs[-1]["levels_done"] == 2
    assert max(done for level, done in running if level == 1) == 40
    assert all(d["requests_target"] == 40 for d in docs if d["phase"] == "measure")
    assert [lvl["requests_completed"] for lvl in result["levels"]] == [40, 40]
