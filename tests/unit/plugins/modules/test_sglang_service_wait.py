"""Crash detection from systemd state, verification against /server_info, the files kept once ready."""
import importlib.util
import os

import pytest

from ansible_collections.llmops.sglang.plugins.modules.sglang_service_wait import (
    arm, cgroup_setup_failed, compare, crash_reason, disarm, hold_watch_lock, validated_keep_files)
from ansible_collections.llmops.sglang.plugins.module_utils.service_systemd import parse_show


def state(**kw):
    base = dict(ActiveState="active", SubState="running", Result="success", NRestarts=0, MainPID=100, ExecMainStatus=0)
    base.update(kw)
    return base


def test_running_is_not_a_crash():
    assert crash_reason(state(), state()) is None
    assert crash_reason(state(ActiveState="activating", SubState="start", MainPID=0), state()) is None


def test_crash_seen_through_restart_policy():
    first = state()
    # Restart=on-failure: between attempts the unit is activating/auto-restart, not failed
    between_attempts = state(ActiveState="activating", SubState="auto-restart", MainPID=0, Result="exit-code", ExecMainStatus=1)
    assert "restarting" in crash_reason(first, between_attempts)
    assert "restarted" in crash_reason(first, state(NRestarts=1, MainPID=200))
    assert "changed" in crash_reason(first, state(MainPID=200))
    assert "failed" in crash_reason(first, state(ActiveState="failed", SubState="failed", MainPID=0, Result="exit-code"))
    assert crash_reason(first, state(ActiveState="inactive", SubState="dead", MainPID=0))


def test_only_a_start_that_ended_at_systemds_cgroup_step_is_started_again():
    # systemd's EXIT_CGROUP: the forked process never became SGLang.
    assert cgroup_setup_failed(state(ActiveState="activating", SubState="auto-restart", MainPID=0, Result="exit-code", ExecMainStatus=219))
    assert cgroup_setup_failed(state(ActiveState="failed", SubState="failed", MainPID=0, Result="exit-code", ExecMainStatus=219))
    # SGLang's own exits, systemd's other steps (203/EXEC: a missing program does not come back) and a running unit.
    assert not cgroup_setup_failed(state(ActiveState="failed", SubState="failed", MainPID=0, Result="exit-code", ExecMainStatus=1))
    assert not cgroup_setup_failed(state(ActiveState="failed", SubState="failed", MainPID=0, Result="exit-code", ExecMainStatus=203))
    assert not cgroup_setup_failed(state(ExecMainStatus=219))


def test_parse_show():
    props = parse_show("ActiveState=active\nNRestarts=2\nMainPID=4711\nExecMainStartTimestampMonotonic=123\nFoo\n")
    assert props["ActiveState"] == "active" and props["NRestarts"] == 2 and props["MainPID"] == 4711
    assert props["ExecMainStatus"] == 0


def test_compare_normalises_sglang_rewrites():
    info = {"tp_size": 4, "kv_cache_dtype": "bfloat16", "speculative_algorithm": "EAGLE",
            "speculative_num_steps": 4, "speculative_eagle_topk": 1, "speculative_num_draft_tokens": 5}
    expect = {"tp_size": 4, "kv_cache_dtype": "bf16", "speculative_algorithm": "NEXTN",
              "speculative_num_steps": 4, "speculative_eagle_topk": 1, "speculative_num_draft_tokens": 5,
              "dp_size": None}
    assert compare(expect, info) == []


def test_compare_reports_each_difference():
    info = {"tp_size": 2, "kv_cache_dtype": "auto", "speculative_algorithm": "EAGLE", "speculative_num_steps": 3}
    expect = {"tp_size": 4, "kv_cache_dtype": "bf16", "speculative_algorithm": "EAGLE3", "speculative_num_steps": 4}
    keys = [m["key"] for m in compare(expect, info)]
    assert keys == ["kv_cache_dtype", "speculative_algorithm", "speculative_num_steps", "tp_size"]
    assert compare({"speculative_num_steps": 4}, {})[0]["actual"] is None


class FakeModule:
    """What arm() and disarm() use of AnsibleModule: binaries, commands, warnings."""

    def __init__(self, rc=0, systemd_run="/usr/bin/systemd-run"):
        self.rc, self.systemd_run, self.calls, self.warnings = rc, systemd_run, [], []

    def get_bin_path(self, name, required=False):
        return {"systemctl": "/usr/bin/systemctl", "systemd-run": self.systemd_run}[name]

    def run_command(self, argv):
        self.calls.append(argv)
        return self.rc, "", "Unit sglang-rollback.timer was already loaded" if self.rc else ""

    def warn(self, msg):
        self.warnings.append(msg)


def test_the_deadline_timer_starts_the_watchdog_service_and_is_stopped_by_name():
    module = FakeModule()
    assert arm(module, "sglang-rollback", 1920) is True
    assert module.calls == [["/usr/bin/systemd-run", "--on-active=1920s", "--unit=sglang-rollback.service",
                             "--timer-property=AccuracySec=1s"]]
    disarm(module, "sglang-rollback.service")
    assert module.calls[-1] == ["/usr/bin/systemctl", "stop", "sglang-rollback.timer"]
    assert module.warnings == []


def test_a_deadline_that_cannot_be_armed_is_a_warning():
    module = FakeModule(rc=1)
    assert arm(module, "sglang-rollback", 60) is False
    assert "already loaded" in module.warnings[0]
    module = FakeModule(systemd_run=None)
    assert arm(module, "sglang-rollback", 60) is False and module.calls == []
    assert "systemd-run not found" in module.warnings[0]


class ParamsModule:
    """What validated_keep_files() uses of AnsibleModule: params and fail_json."""

    class Failed(Exception):
        pass

    def __init__(self, keep_files):
        self.params = {"keep_files": keep_files}

    def fail_json(self, msg, **kwargs):
        raise self.Failed(msg)


def test_keep_files_get_the_file_modules_defaults():
    entries = validated_keep_files(ParamsModule([{"name": "unit", "path": "/etc/x/unit", "src": "/etc/systemd/system/x.service"},
                                                 {"name": "guard", "path": "/etc/x/guard.json", "state": "absent"}]))
    assert [(e["name"], e["state"], e["diff"], e["content"]) for e in entries] == [
        ("unit", "present", True, None), ("guard", "absent", True, None)]


@pytest.mark.parametrize("keep_files, message", [
    ([{"name": "unit"}], "keep_files[0]: missing required arguments: path"),
    ([{"name": "a", "path": "/a", "content": ""}, {"name": "b", "path": "/b", "state": "gone"}],
     "keep_files[1]: value of state must be one of: present, absent, got: gone"),
    ([{"name": "a", "path": "/a", "content": "", "colour": "red"}], "keep_files[0]: unsupported parameters: colour. Supported parameters include: content,"),
    ([{"name": "a", "path": "/a", "content": ""}, {"name": "a", "path": "/b", "content": ""}],
     "keep_files: every name must be unique, got ['a']"),
])
def test_bad_keep_files_fail_before_anything_changes(keep_files, message):
    with pytest.raises(ParamsModule.Failed) as failed:
        validated_keep_files(ParamsModule(keep_files))
    assert message in str(failed.value)


def _guard():
    path = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "roles", "sglang_service", "files",
                        "restore_last_good.py")
    spec = importlib.util.spec_from_file_location("restore_last_good", path)
    guard = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(guard)
    return guard


def test_the_watch_lock_is_what_the_rollback_guard_sees_as_watched(tmp_path):
    guard = _guard()
    lock = str(tmp_path / "sglang.watched")
    fd = hold_watch_lock(ParamsModule([]), lock)  # creates it
    try:
        assert guard.watched(lock) is True
        second = hold_watch_lock(ParamsModule([]), lock)  # another watcher of the same unit is not refused
        os.close(second)
        assert guard.watched(lock) is True
    finally:
        os.close(fd)
    assert guard.watched(lock) is False  # gone with the module's process


def test_a_watch_lock_that_cannot_be_created_fails_naming_the_option(tmp_path):
    with pytest.raises(ParamsModule.Failed) as failed:
        hold_watch_lock(ParamsModule([]), str(tmp_path / "no-such-dir" / "sglang.watched"))
    assert "watch_lock" in str(failed.value)
