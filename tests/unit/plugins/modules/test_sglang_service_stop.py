"""Waiting for a stopped server's processes and GPUs, with real processes."""
import subprocess
import threading
import time

from ansible_collections.llmops.sglang.plugins.modules.sglang_service_stop import wait_until_released


def test_waits_until_the_processes_are_gone():
    proc = subprocess.Popen(["sleep", "30"])  # pylint: disable=consider-using-with
    threading.Timer(0.6, proc.kill).start()
    reaper = threading.Thread(target=proc.wait)
    reaper.start()
    released, alive, holding, waited = wait_until_released({proc.pid}, lambda: None, timeout=10, interval=0.1)
    reaper.join()
    assert released and alive == [] and holding == []
    assert 0.5 <= waited < 5


def test_waits_until_the_gpu_is_free():
    # the process is gone at once, but nvidia-smi still lists it for a while
    freed_at = time.monotonic() + 0.5

    def gpu_pids():
        return {999999, 4242} if time.monotonic() < freed_at else {4242}

    released, dummy, holding, waited = wait_until_released({999999}, gpu_pids, timeout=10, interval=0.1)
    assert released and holding == []
    assert waited >= 0.4


def test_other_gpu_users_are_not_waited_for():
    # 4242 belongs to someone else: only the service's own PIDs count
    released, dummy, dummy2, waited = wait_until_released({999999}, lambda: {4242}, timeout=10, interval=0.1)
    assert released and waited < 1


def test_gives_up_after_the_timeout():
    proc = subprocess.Popen(["sleep", "30"])  # pylint: disable=consider-using-with
    try:
        released, alive, dummy, waited = wait_until_released({proc.pid}, lambda: None, timeout=0.5, interval=0.1)
        assert not released and alive == [proc.pid] and waited >= 0.5
    finally:
        proc.kill()
        proc.wait()
