# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.sglang contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the operator sees while a benchmark runs: the spec_bench role's status lines and the
sglang_bench module's progress file, against the scripted server (fixtures in conftest.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import asyncio
import json
import re
import time

from bench_runs import STEADY_LEN, adhoc, run_role


# One status line of the role while a benchmark runs (bench_progress.status_line, printed by the
# sglang_bench_follow action plugin on a line of its own).
STATUS = re.compile(r'(?m)^localhost steps 4: level (?P<level>\d+)/2 concurrency (?P<c>\d+) measuring '
                    r'(?P<done>\d+)/(?P<asked>\d+) requests(?: \(try (?P<try>\d+), measured again: [^)]+\))?, '
                    r'(?P<rate>[0-9.]+) tok/s, \d+ s in the level, (?P<all>\d+) s in all$')


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
    progress = [(int(m["level"]), int(m["try"] or 1), int(m["done"])) for m in lines]
    # Requests done grow (level by level; a level measured again because its client was starved, as on a busy
    # machine, counts from 0 again under its try's number), the count asked is the level's, the rate is a real one.
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


def test_module_writes_its_progress_file(env, tmp_path, server, slow_server, stalled_server):
    """The module keeps the status while it runs and leaves the last one: done (or failed, with the message)."""
    path = tmp_path / "progress" / "status.json"
    # 20 ms steps: at the 4 ms ones a loaded machine slowed concurrency 1 enough that concurrency 3 read as an
    # implausible burst (more than 2x its pace) once in CI; this test is about the file, not that guard.
    # 151 tokens of 20 ms steps decode for 1 s, longer than STEADY_LEN's 0.4 s at 4 ms.
    slow_len = 151
    rc, res = adhoc(env, tmp_path, {"url": slow_server, "concurrency_levels": [1, 3], "requests_per_level": 6,
                                    "output_len": slow_len, "input_len": 8, "progress_file": str(path)})
    assert rc == 0, res
    doc = json.loads(path.read_text())
    assert doc["state"] == "done" and doc["message"] == res["msg"]
    assert doc["level"] == 2 and doc["levels"] == 2 and doc["levels_done"] == 2 and doc["concurrency"] == 3
    assert doc["phase"] == "measure" and doc["requests_done"] == 6 and doc["requests_target"] == 6
    assert doc["output_tokens"] == 6 * slow_len and doc["output_tok_s"] > 0
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
    # A periodic write before the first level starts (the server's info, the model, the cache flush: more than
    # 0.05 s on a loaded machine) has no level yet; from level 1 on every write names one.
    seen = [d["level"] for d in docs]
    first = seen.index(1)
    assert all(level is None and d["levels_done"] == 0 for level, d in zip(seen[:first], docs))
    assert set(seen[first:]) == {1, 2} and docs[-1]["levels_done"] == 2
    assert max(done for level, done in running if level == 1) == 40
    assert all(d["requests_target"] == 40 for d in docs if d["phase"] == "measure")
    assert [lvl["requests_completed"] for lvl in result["levels"]] == [40, 40]
