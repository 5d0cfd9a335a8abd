"""SIGTERM once serving, as SGLang 0.5.23 answers it (srt/managers/tokenizer_manager.py
SignalHandler.sigterm_handler and sigterm_watchdog, srt/entrypoints/http_server.py health_generate):
health says 503 at once, requests in flight finish and new ones are still served, the watchdog
notices within one poll and exits 0 once nothing remains. SIGINT (uvicorn's) stops at once."""

import json
import signal
import threading
import time

import pytest

from sglang_sim.testing import Client, SimProcess, write_profile

POLL_S = 0.5
# ~300 tok/s at steps 3: a 600-token request runs about 2 s, several polls.
LONG = {"text": "drain me", "sampling_params": {"max_new_tokens": 600, "temperature": 0, "ignore_eos": True}}
SHORT = {"text": "still served", "sampling_params": {"max_new_tokens": 16, "temperature": 0, "ignore_eos": True}}
ARGS = ["--tp-size", "4", "--speculative-algorithm", "EAGLE", "--speculative-num-steps", "3",
        "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", "4"]


def _sim(tmp_path):
    profile = write_profile({"timing": {"load_time_s": 0.2, "warmup_s": 0.05, "sigterm_poll_s": POLL_S}},
                            directory=str(tmp_path))
    return SimProcess(ARGS, profile=profile)


def test_sigterm_drains_requests_in_flight_and_keeps_serving_until_none_remain(tmp_path):
    with _sim(tmp_path) as sim:
        client = Client(sim.url)
        results = []
        thread = threading.Thread(target=lambda: results.append(client.post("/generate", LONG)))
        thread.start()
        time.sleep(0.3)
        sent = time.monotonic()
        sim.proc.send_signal(signal.SIGTERM)
        time.sleep(0.1)
        assert client.get("/health")[0] == 503
        assert client.get("/health_generate")[0] == 503
        status, _headers, body = client.post("/generate", SHORT)  # still accepted while draining
        assert status == 200 and json.loads(body)["meta_info"]["completion_tokens"] == 16
        assert sim.proc.poll() is None
        thread.join(30)
        status, _headers, body = results[0]
        assert status == 200 and json.loads(body)["meta_info"]["completion_tokens"] == 600
        assert sim.proc.wait(10) == 0
        took = time.monotonic() - sent
        log = sim.output()
    assert "SIGTERM received. signum=None frame=None. Draining requests and shutting down..." in log
    assert "Health check request received during shutdown. Returning 503." in log
    remaining = [int(line.split("Remaining number of requests ")[1].split(".")[0])
                 for line in log.splitlines() if "Gracefully exiting..." in line]
    # One line per poll: the long request was still there at the first, none at the last.
    assert remaining[0] >= 1 and remaining[-1] == 0 and len(remaining) >= 2
    # It ended at the first poll after the long request finished, not before it.
    assert took >= POLL_S


def test_an_idle_server_exits_at_the_watchdogs_next_wake_up(tmp_path):
    with _sim(tmp_path) as sim:
        start = time.monotonic()
        assert sim.stop(sig=signal.SIGTERM) == 0
        took = time.monotonic() - start
        log = sim.output()
    assert took < POLL_S + 1.0
    assert "Gracefully exiting... Remaining number of requests 0. Remaining requests remaining_rids=[]." in log


def test_sigint_ends_a_drain_at_once(tmp_path):
    with _sim(tmp_path) as sim:
        client = Client(sim.url)
        endless = dict(LONG, sampling_params=dict(LONG["sampling_params"], max_new_tokens=6000))
        outcome = []

        def run():
            try:
                outcome.append(client.post("/generate", endless)[0])
            except OSError as exc:  # the stop cut it off
                outcome.append(exc)
        thread = threading.Thread(target=run)
        thread.start()
        time.sleep(0.3)
        sim.proc.send_signal(signal.SIGTERM)
        time.sleep(2 * POLL_S)
        assert sim.proc.poll() is None  # still draining the long request
        start = time.monotonic()
        assert sim.stop(sig=signal.SIGINT) == 0
        assert time.monotonic() - start < 3
        thread.join(10)
        assert outcome and outcome[0] != 200  # not drained: cut off


# SIGQUIT is what SGLang 0.5.23's children send the main process when they fail; it ends the process
# tree, the main process with SIGKILL (utils/common.py kill_process_tree).
def test_sigquit_once_serving_kills_the_process_tree_as_the_running_phase_handler_does(tmp_path):
    with _sim(tmp_path) as sim:
        sim.proc.send_signal(signal.SIGQUIT)
        assert sim.proc.wait(10) == -signal.SIGKILL
        log = sim.output()
    assert "SIGQUIT received. signum=None, frame=None. It usually means one child failed." in log
    assert "kill_process_tree called: parent_pid=%d, include_parent=True, pid=%d" % (sim.proc.pid, sim.proc.pid) in log


def _crashing(tmp_path, at, min_steps):
    return write_profile({"timing": {"load_time_s": 0.2, "warmup_s": 0.05},
                          "faults": {"crash_at_running_requests": at, "crash_min_steps": min_steps}},
                         directory=str(tmp_path))


def _load(url, clients):
    outcome = []

    def run():
        try:
            outcome.append(Client(url).post("/generate", LONG)[0])
        except OSError as exc:  # the crash cut it off
            outcome.append(exc)
    threads = [threading.Thread(target=run) for client in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    return outcome


def test_a_profile_fault_crashes_a_configuration_under_load_as_sglang_does(tmp_path):
    with SimProcess(ARGS, profile=_crashing(tmp_path, 3, 3)) as sim:
        # Below the fault's batch size it serves.
        assert _load(sim.url, 2) == [200, 200]
        outcome = _load(sim.url, 4)
        assert sim.proc.wait(10) == -signal.SIGKILL
        log = sim.output()
    assert 200 not in outcome
    lines = log.splitlines()
    crash = [i for i, line in enumerate(lines) if "Scheduler hit an exception: Traceback" in line]
    quit_line = [i for i, line in enumerate(lines) if "SIGQUIT received. signum=None, frame=None." in line]
    assert crash and quit_line and crash[0] < quit_line[0]
    assert "torch.OutOfMemoryError: CUDA out of memory." in log
    at = [int(line.split("crash at ")[1].split()[0]) for line in lines if "[sglang-sim] profile fault: crash at" in line]
    assert len(at) == 1 and 3 <= at[0] <= 4


def test_the_profile_fault_spares_configurations_below_its_step_count(tmp_path):
    with SimProcess(ARGS, profile=_crashing(tmp_path, 2, 4)) as sim:  # ARGS run steps 3
        assert _load(sim.url, 4) == [200] * 4
        assert sim.proc.poll() is None


# While it loads (before uvicorn runs), 0.5.23 on node rank 0 has the engine's launch-phase SIGQUIT handler
# (entrypoints/engine.py), which kills the tree, and no SIGTERM handler: the signal's default action.
@pytest.mark.parametrize("sig, ends_by, line", [
    (signal.SIGQUIT, signal.SIGKILL, "Received sigquit from a child process. It usually means the child failed."),
    (signal.SIGTERM, signal.SIGTERM, None),
], ids=["sigquit", "sigterm"])
def test_a_signal_while_loading_ends_the_process_as_sglang_does(tmp_path, sig, ends_by, line):
    profile = write_profile({"timing": {"load_time_s": 5.0}}, directory=str(tmp_path))
    with SimProcess(ARGS, profile=profile, wait=False) as sim:
        time.sleep(1.0)
        sim.proc.send_signal(sig)
        assert sim.proc.wait(10) == -ends_by
        log = sim.output()
    assert "SIGQUIT received." not in log and "SIGTERM received" not in log  # the running phase's lines
    assert line is None or line in log
