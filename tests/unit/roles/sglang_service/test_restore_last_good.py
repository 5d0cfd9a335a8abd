"""The rollback guard's script (roles/sglang_service/files/restore_last_good.py) on real files.

What it puts back and when it leaves things alone; that systemd runs it when the unit fails and
that the last good server then serves is molecule sglang_service's interrupted-deploy check."""
import fcntl
import importlib.util
import json
import os
import stat
import time

import pytest

SCRIPT = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "roles", "sglang_service", "files",
                      "restore_last_good.py")
spec = importlib.util.spec_from_file_location("restore_last_good", SCRIPT)
restore_last_good = importlib.util.module_from_spec(spec)
spec.loader.exec_module(restore_last_good)


@pytest.fixture(autouse=True)
def never_started(monkeypatch):
    """systemd knows no start of the unit unless a test says when it was (the machine's systemctl is not asked)."""
    monkeypatch.setattr(restore_last_good, "_last_start", lambda unit: None)


@pytest.fixture
def host(tmp_path):
    """A configuration directory whose last good configuration is steps 4, with steps 10 in place."""
    live, last_good = tmp_path / "etc", tmp_path / "etc" / "sglang.last-good"
    last_good.mkdir(parents=True)
    paths = {name: str(live / name) for name in ("unit", "env", "config", "sim-profile", "adaptive-config")}
    for name, content in (("unit", "[Service]\n"), ("env", "A=1\n"), ("config", "speculative-num-steps: 4\n")):
        (last_good / name).write_text(content)
        os.chmod(last_good / name, 0o640)
    (last_good / "config.json").write_text(json.dumps(
        {"files": ["unit", "env", "config"], "speculative": {"num_steps": 4}, "api_key": "sk-secret"}))
    (live / "unit").write_text("[Service]\n")
    (live / "env").write_text("A=1\n")
    (live / "config").write_text("speculative-num-steps: 10\n")
    os.chmod(live / "config", 0o600)
    return paths, str(last_good)


def test_puts_back_only_what_differs_with_the_copys_mode(host):
    paths, last_good = host
    unit_inode = os.stat(paths["unit"]).st_ino
    restored, record = restore_last_good.restore(last_good, paths)
    assert restored == ["config"]
    assert record["speculative"] == {"num_steps": 4}
    with open(paths["config"]) as fh:
        assert fh.read() == "speculative-num-steps: 4\n"
    assert stat.S_IMODE(os.stat(paths["config"]).st_mode) == 0o640
    assert os.stat(paths["unit"]).st_ino == unit_inode  # an equal file is not rewritten
    assert not [n for n in os.listdir(os.path.dirname(paths["config"])) if ".rollback-" in n]


def test_a_missing_file_in_place_is_put_back(host):
    paths, last_good = host
    os.unlink(paths["env"])
    assert restore_last_good.restore(last_good, paths)[0] == ["env", "config"]


def test_nothing_to_do_when_the_last_good_configuration_is_in_place(host, capsys, monkeypatch):
    paths, last_good = host
    monkeypatch.setattr(restore_last_good, "_result", lambda unit: "exit-code")  # it failed (not a stop)
    restore_last_good.restore(last_good, paths)
    assert restore_last_good.restore(last_good, paths)[0] == []
    # main() ends there too, without touching systemd (no restart loop of a configuration that once served)
    assert restore_last_good.main(["sglang.service", last_good] + ["%s=%s" % kv for kv in paths.items()]) == 0
    out = capsys.readouterr().out
    assert "nothing to roll back" in out and "sk-secret" not in out


def test_nothing_to_do_without_a_last_good_configuration(tmp_path, capsys):
    assert restore_last_good.restore(str(tmp_path / "none"), {"unit": str(tmp_path / "u")}) == ([], None)
    assert restore_last_good.main(["sglang.service", str(tmp_path / "none"), "unit=%s" % (tmp_path / "u")]) == 0
    assert "nothing to roll back to" in capsys.readouterr().out


def test_a_file_of_unknown_kind_is_refused_before_anything_changes(host, capsys):
    paths, last_good = host
    del paths["config"]
    with pytest.raises(ValueError, match="config"):
        restore_last_good.restore(last_good, paths)
    assert restore_last_good.main(["sglang.service", last_good] + ["%s=%s" % kv for kv in paths.items()]) == 1
    assert "could not be restored" in capsys.readouterr().out


def test_usage_without_paths():
    assert restore_last_good.main(["sglang.service"]) == 2


def _note(last_good):
    with open(os.path.join(last_good, restore_last_good.GUARD_RECORD)) as fh:
        return json.load(fh)


def test_a_rollback_leaves_a_note_for_the_next_run(host, monkeypatch):
    paths, last_good = host
    calls = []
    monkeypatch.setattr(restore_last_good.subprocess, "run", lambda argv, check: calls.append(argv))
    assert restore_last_good.main(["sglang.service", last_good] + ["%s=%s" % kv for kv in paths.items()]) == 0
    note = _note(last_good)
    assert (note["action"], note["restored"], note["speculative"]) == ("restored", ["config"], {"num_steps": 4})
    assert note["unit"] == "sglang.service" and "restored the last good configuration" in note["message"]
    assert "sk-secret" not in json.dumps(note)
    assert stat.S_IMODE(os.stat(os.path.join(last_good, restore_last_good.GUARD_RECORD)).st_mode) == 0o600
    assert calls[-1] == ["systemctl", "start", "--no-block", "sglang.service"]


def test_leaving_the_unit_failed_leaves_a_note_too(host, monkeypatch):
    paths, last_good = host
    monkeypatch.setattr(restore_last_good, "_result", lambda unit: "exit-code")
    restore_last_good.restore(last_good, paths)  # the last good files are in place now
    assert restore_last_good.main(["sglang.service", last_good] + ["%s=%s" % kv for kv in paths.items()]) == 0
    note = _note(last_good)
    assert note["action"] == "none" and note["restored"] == [] and "not a deployment's" in note["message"]


@pytest.fixture
def systemd(monkeypatch):
    """The unit's state as the deadline timer finds it, whether it is ready, and the systemctl calls."""
    fake = {"state": "active", "ready": False, "calls": []}
    monkeypatch.setattr(restore_last_good, "_active_state", lambda unit: fake["state"])
    monkeypatch.setattr(restore_last_good, "_ready", lambda url: fake["ready"])
    monkeypatch.setattr(restore_last_good, "_systemctl", lambda *args: fake["calls"].append(list(args)))
    return fake


def _timer(host):
    paths, last_good = host
    return restore_last_good.main(["--health", "http://127.0.0.1:30010", "sglang.service", last_good]
                                  + ["%s=%s" % kv for kv in paths.items()])


def test_the_deadline_stops_a_start_that_hangs_then_restores(host, systemd):
    paths, last_good = host
    assert _timer(host) == 0
    assert systemd["calls"][0] == ["stop", "sglang.service"]  # before its files change under it
    assert systemd["calls"][-1] == ["start", "--no-block", "sglang.service"]
    with open(paths["config"]) as fh:
        assert fh.read() == "speculative-num-steps: 4\n"
    note = _note(last_good)
    assert note["action"] == "restored" and "not ready by its deployment's deadline" in note["message"]


@pytest.mark.parametrize("state, ready", [("active", True), ("inactive", False), ("deactivating", False)])
def test_the_deadline_leaves_a_ready_or_stopped_unit_alone(host, systemd, state, ready):
    paths, last_good = host
    systemd.update(state=state, ready=ready)
    assert _timer(host) == 0
    assert systemd["calls"] == []
    with open(paths["config"]) as fh:
        assert fh.read() == "speculative-num-steps: 10\n"
    assert not os.path.exists(os.path.join(last_good, restore_last_good.GUARD_RECORD))


def test_the_deadline_leaves_the_last_good_configuration_starting_and_the_guards_note(host, systemd):
    paths, last_good = host
    restore_last_good.restore(last_good, paths)  # the OnFailure= guard put it back; it loads
    with open(os.path.join(last_good, restore_last_good.GUARD_RECORD), "w") as fh:
        fh.write('{"action": "restored"}\n')
    assert _timer(host) == 0
    assert systemd["calls"] == []
    assert _note(last_good) == {"action": "restored"}


def test_the_deadline_on_a_failed_unit_takes_the_onfailure_path(host, systemd):
    paths, last_good = host
    systemd["state"] = "failed"
    assert _timer(host) == 0
    assert systemd["calls"][0] == ["daemon-reload"]  # no stop: it is not running
    assert "failed with a configuration that never reached ready" in _note(last_good)["message"]


def test_a_unit_the_role_watches_is_left_to_it_until_the_lock_goes(host, systemd, tmp_path):
    """A stop that outlasted TimeoutStopSec fails the unit (OnFailure=) while sglang_service_wait goes on to
    start the new configuration: the guard must not put the old files back under it."""
    paths, last_good = host
    lock = str(tmp_path / "sglang.watched")
    systemd["state"] = "failed"
    argv = ["--health", "http://127.0.0.1:30010", "--watch-lock", lock, "sglang.service", last_good] + [
        "%s=%s" % kv for kv in paths.items()]
    held = os.open(lock, os.O_RDONLY | os.O_CREAT, 0o600)
    fcntl.flock(held, fcntl.LOCK_SH)  # as sglang_service_wait holds it
    assert restore_last_good.main(argv) == 0
    assert systemd["calls"] == []
    with open(paths["config"]) as fh:
        assert fh.read() == "speculative-num-steps: 10\n"
    assert not os.path.exists(os.path.join(last_good, restore_last_good.GUARD_RECORD))
    os.close(held)  # the deployment ended (or was killed): the guard is the host's again
    assert restore_last_good.main(argv) == 0
    assert systemd["calls"][0] == ["daemon-reload"]
    assert _note(last_good)["action"] == "restored"


def test_a_lock_file_nobody_holds_or_none_at_all_changes_nothing(tmp_path):
    lock = str(tmp_path / "sglang.watched")
    assert restore_last_good.watched(lock) is False
    open(lock, "w").close()
    assert restore_last_good.watched(lock) is False


def test_a_stop_that_outlasted_timeoutstopsec_is_a_stop_not_a_failure_to_report(host, monkeypatch, capsys):
    paths, last_good = host
    restore_last_good.restore(last_good, paths)  # the last good files are in place
    monkeypatch.setattr(restore_last_good, "_result", lambda unit: "timeout")
    assert restore_last_good.main(["sglang.service", last_good] + ["%s=%s" % kv for kv in paths.items()]) == 0
    assert "its stop outlasted TimeoutStopSec" in capsys.readouterr().out
    assert not os.path.exists(os.path.join(last_good, restore_last_good.GUARD_RECORD))


def test_files_written_after_the_failed_process_started_are_a_deployments_and_stay(host, monkeypatch, capsys):
    """The unit failed (StartLimitBurst after a crash) while the role deploys the next configuration: the
    process that failed ran the last good files, the differing ones were written after its start."""
    paths, last_good = host
    started = time.monotonic() - 30.0  # the config file in place (steps 10) is younger
    monkeypatch.setattr(restore_last_good, "_last_start", lambda unit: started)
    monkeypatch.setattr(restore_last_good, "_systemctl", lambda *args: pytest.fail("systemctl %s" % (args,)))
    assert restore_last_good.main(["sglang.service", last_good] + ["%s=%s" % kv for kv in paths.items()]) == 0
    with open(paths["config"]) as fh:
        assert fh.read() == "speculative-num-steps: 10\n"  # the deployment's file stays
    assert "were written after its last start" in capsys.readouterr().out
    # For the role's next run, should no deployment be in progress (one that reaches ready removes it).
    assert _note(last_good)["action"] == "none"
    assert _note(last_good)["restored"] == []
    assert "were written after its last start" in _note(last_good)["message"]


def test_files_the_failed_process_ran_are_put_back(host, monkeypatch):
    paths, last_good = host
    calls = []
    monkeypatch.setattr(restore_last_good, "_last_start", lambda unit: time.monotonic() + 1.0)  # started after the write
    monkeypatch.setattr(restore_last_good, "_systemctl", lambda *args: calls.append(list(args)))
    assert restore_last_good.main(["sglang.service", last_good] + ["%s=%s" % kv for kv in paths.items()]) == 0
    with open(paths["config"]) as fh:
        assert fh.read() == "speculative-num-steps: 4\n"
    assert calls[-1] == ["start", "--no-block", "sglang.service"]


def test_the_last_start_is_read_from_systemds_monotonic_timestamp(monkeypatch):
    monkeypatch.undo()
    shown = {"ExecMainStartTimestampMonotonic": "5000000"}
    monkeypatch.setattr(restore_last_good, "_show", lambda unit, prop: shown[prop])
    assert restore_last_good._last_start("sglang.service") == 5.0
    shown["ExecMainStartTimestampMonotonic"] = "0"
    assert restore_last_good._last_start("sglang.service") is None
