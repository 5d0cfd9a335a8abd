# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.sglang contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""sglang_bench against a simulator that stops (SIGSTOP) mid-level, and the per-server lock.

A stopped server still accepts connections into its backlog: without a stall deadline each
request would wait for request_timeout. After SIGCONT the backlog comes out in a burst that
must not pass for a measurement.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from ansible_collections.llmops.sglang.plugins.module_utils import bench_progress
from ansible_collections.llmops.sglang.plugins.module_utils.bench_client import BenchmarkBusy, Endpoint, LevelRun, ServerLock, make_parser
from ansible_collections.llmops.sglang.plugins.module_utils.bench_workloads import body_factory

from harness import Sim  # noqa: E402
from test_bench_sim import bench_client_overhead, params, run, sglang_bench  # noqa: E402  (the sibling test's helpers and scripted server)

STALL_S = 3.0

PROFILE = """\
name: bench-faults
seed: 0
timing:
  load_time_s: 0.3
  warmup_s: 0.05
  jitter: 0.0
acceptance:
  deterministic: true
"""


@pytest.fixture()
def sim(tmp_path):
    path = tmp_path / "faults.yaml"
    path.write_text(PROFILE)
    server = Sim(str(path))
    yield server
    server.proc.send_signal(signal.SIGCONT)
    server.stop()


def test_sigstop_ends_the_level_within_the_stall_deadline(sim):
    stop = threading.Timer(1.0, sim.proc.send_signal, args=(signal.SIGSTOP,))
    stop.start()
    started = time.time()
    result, problem = run(params(sim.url, requests_per_level=64, output_len=512, warmup_requests=2,
                                 stall_timeout=STALL_S, request_timeout=600.0), [4])
    elapsed = time.time() - started
    sim.proc.send_signal(signal.SIGCONT)
    assert result["fault"] == "stalled"
    assert "server stalled" in problem
    # ended by the stall deadline (plus the watchdog's tick), not by request_timeout
    assert elapsed < 1.0 + STALL_S + 5, elapsed
    level = result["levels"][0]
    assert "no token" in level["invalid"]
    # SIGCONT afterwards: the backlog flows again, but nothing of it becomes a result
    time.sleep(1.0)
    assert result["fault"] == "stalled" and len(result["levels"]) == 1


def test_stopped_server_at_the_start_is_a_stall_not_a_hang(sim):
    sim.proc.send_signal(signal.SIGSTOP)
    started = time.time()
    with pytest.raises(Exception, match="server stalled"):
        run(params(sim.url, stall_timeout=STALL_S, request_timeout=600.0), [1])
    assert time.time() - started < STALL_S + 3


def test_burst_after_a_short_stop_is_not_a_measurement(sim):
    """Stopped for less than the stall deadline: the requests queued meanwhile come out at once."""
    def pause():
        sim.proc.send_signal(signal.SIGSTOP)
        time.sleep(2.0)
        sim.proc.send_signal(signal.SIGCONT)
    timer = threading.Timer(1.0, pause)
    timer.start()
    result, problem = run(params(sim.url, requests_per_level=32, output_len=256, warmup_requests=1,
                                 stall_timeout=10.0), [1, 8])
    timer.join()
    bad = [lv for lv in result["levels"] if lv.get("invalid")]
    assert result["fault"] in ("implausible", "stalled"), (result["fault"], problem)
    assert bad, "the level with the burst must be marked invalid"
    print("burst level:", bad[0]["concurrency"], bad[0]["invalid"])


def _run_with_a_starved_client(p, levels, at_s, for_s, report=None):
    """run(), with the client's event loop kept off the CPU for ``for_s`` seconds, ``at_s`` seconds in: what
    a client starved of CPU on its host goes through (the server, another process, goes on)."""
    loop = asyncio.new_event_loop()
    loop.call_later(at_s, time.sleep, for_s)
    try:
        return loop.run_until_complete(sglang_bench.run_benchmark(p, levels, None, report=report))
    finally:
        loop.close()


def _starvable(url, **overrides):
    # 8 requests of 128 tokens at concurrency 2: a level of a few seconds, measured from the start (no warm-up).
    settings = dict(requests_per_level=8, output_len=128, warmup_requests=0, stall_timeout=10.0, client_lag_limit=0.05)
    settings.update(overrides)
    return params(url, **settings)


def test_a_level_whose_client_was_starved_is_measured_again(sim, tmp_path):
    progress = bench_progress.ProgressFile(str(tmp_path / "progress.json"), [2])
    result, problem = _run_with_a_starved_client(_starvable(sim.url, client_lag_retries=1), [2], at_s=1.0, for_s=1.5,
                                                 report=progress)
    assert problem is None and result["fault"] is None, problem
    level = result["levels"][0]
    assert "invalid" not in level
    [discarded] = level["discarded"]
    assert discarded["client_lag"]["late_s"] >= 1.4 and discarded["client_lag"]["fraction"] > 0.05, discarded
    assert "starved of CPU" in discarded["why"] and discarded["requests"] >= 1
    # The try that counts ran with its client on the CPU.
    assert level["client_lag"]["fraction"] <= 0.05, level["client_lag"]
    assert level["requests_completed"] == 8
    # The operator's status line says the level is measured again, so that its count starting over is no surprise.
    doc = json.loads((tmp_path / "progress.json").read_text())
    assert doc["level_try"] == 2 and doc["retry_reason"] == sglang_bench.CLIENT_STARVED, doc
    assert "measuring 8/8 requests (try 2, measured again: the benchmark client was starved of CPU on its host)" \
        in bench_progress.status_line(doc, "gpu1"), bench_progress.status_line(doc, "gpu1")


def test_a_client_starved_in_every_try_is_a_fault_not_a_figure(sim):
    result, problem = _run_with_a_starved_client(_starvable(sim.url, client_lag_retries=0), [2, 4], at_s=1.0, for_s=1.5)
    assert result["fault"] == "starved", (result["fault"], problem)
    [level] = result["levels"]  # the benchmark ends at the starved level
    assert "starved of CPU" in level["invalid"] and level["discarded"] == []
    assert "starved of CPU" in problem and "measured 1 times" in problem


def test_client_lag_limit_1_turns_the_check_off(sim):
    result, problem = _run_with_a_starved_client(_starvable(sim.url, client_lag_limit=1.0, client_lag_retries=2), [2],
                                                 at_s=1.0, for_s=1.5)
    level = result["levels"][0]
    assert level["client_lag"]["late_s"] >= 1.4, level["client_lag"]  # measured and reported, not acted on
    assert level["discarded"] == [] and result["fault"] != "starved", (result["fault"], problem)


def test_overall_deadline_from_the_expected_work():
    """A level far slower than the pace measured before it ends at its overall deadline.

    The reference says a request took 10 ms; the scripted server needs about 1.3 s per request
    (256 steps of 5 ms), and never stalls for stall_timeout.
    """
    proc, port, _stats = bench_client_overhead.start_scripted_server(step_s=0.005, accept=2)
    try:
        endpoint = Endpoint("http://127.0.0.1:%d" % port, request_timeout=600.0)
        make_body = body_factory("native", "synthetic", None, 16, 512, 0.0, 0, None)
        level = LevelRun(endpoint, "/generate", make_parser("native"), make_body, 1, 8, 0,
                         stall_timeout=1.0, reference=(0.01, 1))
        started = time.time()
        loop = asyncio.new_event_loop()
        try:
            loop.run_until_complete(level.run())
        finally:
            loop.close()
        elapsed = time.time() - started
    finally:
        proc.terminate()
        proc.join(5)
    # 1 s stall timeout + 4 x 8 rounds x 10 ms
    assert level.deadline_s == pytest.approx(1.0 + 4 * 8 * 0.01)
    assert level.stalled and "overall deadline" in level.stalled
    assert elapsed < level.deadline_s + 1.5


def _holder(lock_path_dir, url):
    code = ("import sys, time; sys.path[:0] = %r\n"
            "from ansible_collections.llmops.sglang.plugins.module_utils.bench_client import ServerLock\n"
            "lock = ServerLock(%r, lock_dir=%r); lock.acquire(1)\n"
            "print('locked', flush=True); time.sleep(60)\n") % (sys.path, url, lock_path_dir)
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)
    assert proc.stdout.readline().strip() == b"locked"
    return proc


def test_one_benchmark_per_server(tmp_path):
    url = "http://127.0.0.1:30099"
    leftover = _holder(str(tmp_path), url)
    try:
        lock = ServerLock(url, lock_dir=str(tmp_path))
        started = time.time()
        with pytest.raises(BenchmarkBusy, match="pid %d" % leftover.pid):
            lock.acquire(1.0, "wait")
        assert time.time() - started >= 1.0
        # another server's benchmark is not held up
        ServerLock("http://127.0.0.1:30098", lock_dir=str(tmp_path)).acquire(0.1)
        # stop: the leftover is terminated and the lock taken
        assert lock.acquire(10.0, "stop") == leftover.pid
        assert leftover.wait(5) == -signal.SIGTERM
        assert lock.holder() == os.getpid()
        lock.release()
    finally:
        if leftover.poll() is None:
            leftover.kill()
