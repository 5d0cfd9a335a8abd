"""Waiting for a stopped server's processes and GPUs, with real processes and stand-in nvidia-smi
scripts (healthy, slow to free memory, someone else's process, hanging, failing)."""
import os
import subprocess
import threading
import time

import pytest

from ansible_collections.llmops.sglang.plugins.module_utils.service_systemd import (
    NvidiaSmiError, gpu_snapshot, run_bounded)
from ansible_collections.llmops.sglang.plugins.module_utils.service_systemd import gpu_checker, wait_until_released

UUIDS = ["GPU-0000aaaa-0000-0000-0000-000000000000", "GPU-1111bbbb-0000-0000-0000-000000000000"]
# The unit's process in these tests, already gone: above the kernel's PID_MAX_LIMIT (2**22), so never a live
# process (4711 was once a thread of another run's ansible-playbook on a shared machine).
GONE = 2 ** 22 + 1


def fake_nvidia_smi(tmp_path, gpus_csv, apps_csv, extra=""):
    """A stand-in nvidia-smi answering the two queries the module makes from files the test edits."""
    (tmp_path / "gpus.csv").write_text(gpus_csv)
    (tmp_path / "apps.csv").write_text(apps_csv)
    script = tmp_path / "nvidia-smi"
    script.write_text("#!/bin/sh\n%s\ncase \"$1\" in\n  --query-gpu=*) cat %s ;;\n  --query-compute-apps=*) cat %s ;;\n"
                      "  *) echo \"unexpected $*\" >&2; exit 9 ;;\nesac\n"
                      % (extra, tmp_path / "gpus.csv", tmp_path / "apps.csv"))
    script.chmod(0o755)
    return str(script)


def gpus_csv(used0, used1):
    return "0, %s, %d\n1, %s, %d\n" % (UUIDS[0], used0, UUIDS[1], used1)


def test_waits_until_the_processes_are_gone():
    proc = subprocess.Popen(["sleep", "30"])  # pylint: disable=consider-using-with
    threading.Timer(0.6, proc.kill).start()
    reaper = threading.Thread(target=proc.wait)
    reaper.start()
    released, alive, busy, waited = wait_until_released({proc.pid}, lambda remaining: None, timeout=10, interval=0.1)
    reaper.join()
    assert released and alive == [] and busy == []
    assert 0.5 <= waited < 5


def test_waits_until_the_units_gpus_are_free(tmp_path):
    # the process is gone at once, but nvidia-smi still lists it and its memory for a while
    smi = fake_nvidia_smi(tmp_path, gpus_csv(40960, 3), "%d, %s, 40950, python3\n" % (GONE, UUIDS[0]))
    threading.Timer(0.6, lambda: ((tmp_path / "apps.csv").write_text(""),
                                  (tmp_path / "gpus.csv").write_text(gpus_csv(2, 3)))).start()
    released, dummy, busy, waited = wait_until_released({GONE}, gpu_checker(smi, [], 1024, {GONE}, 5), timeout=10,
                                                        interval=0.1)
    assert released and busy == [] and waited >= 0.5


def test_memory_held_by_another_process_on_the_units_gpu_is_waited_for_and_named(tmp_path):
    smi = fake_nvidia_smi(tmp_path, gpus_csv(30000, 3), "999, %s, 29990, other-trainer\n" % UUIDS[0])
    released, dummy, busy, waited = wait_until_released({GONE}, gpu_checker(smi, ["0"], 1024, {GONE}, 5), timeout=1,
                                                        interval=0.1)
    assert not released and 1 <= waited < 3
    assert busy == ["GPU 0: 30000 MiB used by pid 999 other-trainer (29990 MiB)"]


def test_memory_without_a_listed_process_still_counts(tmp_path):
    # another container's process is invisible to nvidia-smi here, but its memory is not
    smi = fake_nvidia_smi(tmp_path, gpus_csv(3, 50000), "")
    released, dummy, busy, dummy2 = wait_until_released(set(), gpu_checker(smi, [UUIDS[1]], 1024, set(), 5), timeout=0.5,
                                                        interval=0.1)
    assert not released and busy[0].startswith("GPU 1: 50000 MiB used, no process listed")


def test_other_gpus_are_not_waited_for(tmp_path):
    # GPU 1 is someone else's; the unit runs on GPU 0 (CUDA_VISIBLE_DEVICES=0)
    smi = fake_nvidia_smi(tmp_path, gpus_csv(2, 50000), "999, %s, 49990, other\n" % UUIDS[1])
    released, dummy, busy, waited = wait_until_released({GONE}, gpu_checker(smi, ["0"], 1024, {GONE}, 5), timeout=10,
                                                        interval=0.1)
    assert released and busy == [] and waited < 2


def test_a_gpu_nvidia_smi_does_not_list_is_a_clear_error(tmp_path):
    smi = fake_nvidia_smi(tmp_path, gpus_csv(2, 3), "")
    released, dummy, busy, dummy2 = wait_until_released(set(), gpu_checker(smi, ["7"], 1024, set(), 5), timeout=0.3,
                                                        interval=0.1)
    assert not released and "GPU 7 is not among the GPUs nvidia-smi lists" in busy[0]


def test_a_hanging_nvidia_smi_is_killed_and_the_wait_stays_bounded(tmp_path):
    # a wedged driver: nvidia-smi (and a child of it) never answers
    smi = fake_nvidia_smi(tmp_path, gpus_csv(2, 3), "", extra="sleep 60 & echo $! > %s/child.pid; wait" % tmp_path)
    started = time.monotonic()
    released, dummy, busy, dummy2 = wait_until_released(set(), gpu_checker(smi, [], 1024, set(), 1), timeout=2,
                                                        interval=0.1)
    elapsed = time.monotonic() - started
    assert not released and elapsed < 5
    assert busy == ["GPUs not confirmed free: %s --query-gpu=index,uuid,memory.used did not answer within 1 s" % smi]
    child = int((tmp_path / "child.pid").read_text())
    time.sleep(0.2)
    assert not os.path.exists("/proc/%d" % child) or open("/proc/%d/stat" % child).read().split()[2] == "Z"


def test_a_failing_nvidia_smi_is_reported(tmp_path):
    smi = fake_nvidia_smi(tmp_path, gpus_csv(2, 3), "", extra="echo 'NVIDIA-SMI has failed' >&2; exit 12")
    with pytest.raises(NvidiaSmiError, match="exited with 12: NVIDIA-SMI has failed"):
        gpu_snapshot(smi, 5)


def test_run_bounded_returns_output():
    assert run_bounded(["echo", "hi"], 5) == "hi\n"


def test_an_nvidia_smi_that_itself_exits_127_is_reported_as_its_exit(tmp_path):
    # Its own 127 (or 124) with nothing on stdout is an exit like any other, not "could not run":
    # the message must name the exit code beside what it said.
    smi = fake_nvidia_smi(tmp_path, "", "", extra="echo 'libnvidia-ml.so: not found' >&2; exit 127")
    with pytest.raises(NvidiaSmiError, match="exited with 127: libnvidia-ml.so: not found"):
        run_bounded([smi, "--query-gpu=index"], 5)


def test_run_bounded_says_why_a_command_did_not_run(tmp_path):
    with pytest.raises(NvidiaSmiError, match="No such file or directory"):
        run_bounded([str(tmp_path / "nvidia-smi")], 5)
    hung = tmp_path / "hung"
    hung.write_text("#!/bin/sh\nsleep 30\n")
    hung.chmod(0o755)
    with pytest.raises(NvidiaSmiError, match="did not answer within 1 s"):
        run_bounded([str(hung)], 1)


def test_without_nvidia_smi_only_processes_count():
    released, dummy, busy, dummy2 = wait_until_released(set(), gpu_checker(None, [], 1024, set(), 5), timeout=1)
    assert released and busy == []


def test_gives_up_after_the_timeout():
    proc = subprocess.Popen(["sleep", "30"])  # pylint: disable=consider-using-with
    try:
        released, alive, dummy, waited = wait_until_released({proc.pid}, lambda remaining: None, timeout=0.5, interval=0.1)
        assert not released and alive == [proc.pid] and 0.5 <= waited < 2
    finally:
        proc.kill()
        proc.wait()


def test_both_unit_modules_name_the_unit_alike():
    from ansible_collections.llmops.sglang.plugins.module_utils.service_systemd import unit_name
    assert unit_name('sglang-qwen') == 'sglang-qwen.service'
    assert unit_name('sglang-qwen.service') == 'sglang-qwen.service'
