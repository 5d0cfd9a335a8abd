"""sglang_service_host_info: everything a deployment reads of its host in one call, with real files and
stand-in executables (an interpreter, dpkg-query, nvidia-smi that answer, fail, are missing or hang)."""
import grp
import os
import pwd
import sys
import time

import pytest

from ansible_collections.llmops.sglang.plugins.modules.sglang_service_host_info import login_uid_min, read_host, run


def params(**kw):
    out = dict(interpreter=None, packages=[], simulator_python=None, simulator_digest_file=None, guard_record=None,
               model_config=None, nvidia_smi=False, layout=None, unit_enabled=None, command_timeout=20)
    out.update(kw)
    return out


def executable(path, body):
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return str(path)


@pytest.fixture
def path_with(tmp_path, monkeypatch):
    """A PATH whose first directory holds the stand-ins a test writes."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    monkeypatch.setenv("PATH", "%s:%s" % (bin_dir, os.environ["PATH"]))
    return bin_dir


def test_nothing_asked_reads_nothing():
    assert read_host(params()) == dict(interpreter=None, packages=None, simulator=None, guard_record=None,
                                       model_config=None, nvidia_smi=None, layout=None, unit_enabled=None)


def test_reads_the_interpreters_version():
    got = read_host(params(interpreter=sys.executable))["interpreter"]
    assert got == dict(rc=0, version="%d.%d.%d" % sys.version_info[:3], stderr="")


def test_an_interpreter_that_does_not_exist_is_rc_127_with_the_reason(tmp_path):
    got = read_host(params(interpreter=str(tmp_path / "python3.99")))["interpreter"]
    assert got["rc"] == 127 and got["version"] == ""
    assert "python3.99" in got["stderr"] and "No such file" in got["stderr"]


def test_an_interpreter_that_fails_gives_its_rc_and_stderr(tmp_path):
    python = executable(tmp_path / "python", "echo 'cannot start' >&2; exit 3\n")
    assert read_host(params(interpreter=python))["interpreter"] == dict(rc=3, version="", stderr="cannot start")


def test_files_are_read_and_a_missing_one_is_null(tmp_path):
    (tmp_path / "config.json").write_text('{"num_attention_heads": 32}')
    got = read_host(params(model_config=str(tmp_path / "config.json"), guard_record=str(tmp_path / "guard.json")))
    assert got["model_config"] == {"content": '{"num_attention_heads": 32}'}
    assert got["guard_record"] is None
    got = read_host(params(model_config=str(tmp_path / "none" / "config.json")))
    assert got["model_config"] == {"content": None}


def test_a_file_that_exists_but_cannot_be_read_is_an_error(tmp_path):
    # A directory where the file should be: unreadable as a file, whoever runs the test (root included).
    (tmp_path / "config.json").mkdir()
    with pytest.raises(OSError):
        read_host(params(model_config=str(tmp_path / "config.json")))


def test_packages_as_dpkg_reports_them(path_with):
    # dpkg-query prints the known packages and exits 1 when it knows one not at all.
    executable(path_with / "dpkg-query",
               "echo 'python3-packaging installed'\necho 'python3-venv not-installed'\n"
               "echo 'dpkg-query: no packages found matching python3-foo' >&2\nexit 1\n")
    got = read_host(params(packages=["python3-venv", "python3-packaging", "python3-foo"]))["packages"]
    assert got == dict(rc=1, installed=["python3-packaging"], missing=["python3-venv", "python3-foo"])


def test_without_dpkg_every_package_is_missing_and_rc_says_why(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    got = read_host(params(packages=["python3-venv"]))["packages"]
    assert got == dict(rc=127, installed=[], missing=["python3-venv"])


def test_the_simulator_in_the_venv_and_its_digest(tmp_path):
    works = executable(tmp_path / "python-ok", "exit 0\n")
    broken = executable(tmp_path / "python-broken", "echo 'No module named sglang_sim' >&2; exit 1\n")
    (tmp_path / "sglang-sim.sha256").write_text("abc123\n")
    digest = str(tmp_path / "sglang-sim.sha256")
    assert read_host(params(simulator_python=works, simulator_digest_file=digest))["simulator"] == dict(
        importable=True, digest="abc123")
    assert read_host(params(simulator_python=broken, simulator_digest_file=str(tmp_path / "none")))["simulator"] == dict(
        importable=False, digest=None)
    # a venv that does not exist yet
    assert read_host(params(simulator_python=str(tmp_path / "venv" / "bin" / "python")))["simulator"] == dict(
        importable=False, digest=None)


def test_nvidia_smi_listed_failing_and_missing(path_with, tmp_path, monkeypatch):
    smi = path_with / "nvidia-smi"
    executable(smi, "echo 'GPU 0: NVIDIA RTX PRO 6000 (UUID: GPU-a)'\necho 'GPU 1: NVIDIA RTX PRO 6000 (UUID: GPU-b)'\n")
    got = read_host(params(nvidia_smi=True))["nvidia_smi"]
    assert got["rc"] == 0 and len(got["stdout_lines"]) == 2 and got["stdout_lines"][1].startswith("GPU 1:")
    executable(smi, "echo 'NVIDIA-SMI has failed because it could not communicate with the driver' >&2; exit 9\n")
    assert read_host(params(nvidia_smi=True))["nvidia_smi"] == dict(
        rc=9, stdout_lines=[], stderr="NVIDIA-SMI has failed because it could not communicate with the driver")
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert read_host(params(nvidia_smi=True))["nvidia_smi"]["rc"] == 127


def test_a_command_that_hangs_is_killed_with_its_children_and_is_rc_124(tmp_path):
    # The child sleeps on after its parent would have been killed alone: the whole group goes.
    marker = tmp_path / "still-running"
    script = executable(tmp_path / "hang", "(sleep 1.5; touch %s) &\nsleep 30\n" % marker)
    started = time.monotonic()
    got = run([script], timeout=1)
    assert got["rc"] == 124 and "did not answer within 1 s" in got["stderr"]
    assert time.monotonic() - started < 5
    time.sleep(1.5)
    assert not marker.exists()


def me():
    """This process's user, its primary group, home and shell, as the host's databases say."""
    entry = pwd.getpwuid(os.getuid())
    return entry.pw_name, grp.getgrgid(entry.pw_gid).gr_name, entry.pw_dir, entry.pw_shell


def test_the_layout_is_in_place_when_account_and_directories_are_as_named(tmp_path):
    user, group, home, shell = me()
    (tmp_path / "work").mkdir(mode=0o750)
    (tmp_path / "work").chmod(0o750)
    layout = dict(group=group, user=dict(name=user, group=group, home=home, shell=shell),
                  directories=[dict(path=str(tmp_path / "work"), owner=user, group=group, mode="0750")])
    assert read_host(params(layout=layout))["layout"] == dict(in_place=True, differs=[], user_differs=[],
                                                              user_is_login=os.getuid() >= login_uid_min())


def test_each_difference_of_the_layout_is_named(tmp_path):
    user, group, home, shell = me()
    (tmp_path / "open").mkdir()
    (tmp_path / "open").chmod(0o755)
    (tmp_path / "file").write_text("")
    layout = dict(group="llmops-no-such-group",
                  user=dict(name=user, group=group, home="/nonexistent-home", shell="/usr/sbin/nologin"),
                  directories=[dict(path=str(tmp_path / "open"), owner=user, group=group, mode="0700"),
                               dict(path=str(tmp_path / "missing"), owner=user, group=group, mode="0700"),
                               dict(path=str(tmp_path / "file"), owner=user, group=group, mode="0700"),
                               dict(path=str(tmp_path / "open"), owner=user, group=group, mode="u=rwx")])
    got = read_host(params(layout=layout))["layout"]
    assert got["in_place"] is False
    expected = ["group llmops-no-such-group: missing",
                "user %s: home %s, not /nonexistent-home" % (user, home),
                "directory %s: mode 0755, not 0700" % (tmp_path / "open"),
                "directory %s: missing" % (tmp_path / "missing"),
                "directory %s: not a directory" % (tmp_path / "file"),
                "directory %s: mode 0755, not u=rwx" % (tmp_path / "open")]
    if shell != "/usr/sbin/nologin":
        expected.insert(2, "user %s: shell %s, not /usr/sbin/nologin" % (user, shell))
    assert got["differs"] == expected
    assert got["user_differs"] == [line for line in expected if line.startswith("user ")]


def test_a_missing_user_and_another_owner_are_named(tmp_path):
    user, group, home, shell = me()
    (tmp_path / "d").mkdir()
    (tmp_path / "d").chmod(0o700)
    layout = dict(user=dict(name="llmops-no-such-user", group=group, home=home, shell=shell),
                  directories=[dict(path=str(tmp_path / "d"), owner="llmops-someone-else", group=group, mode="700")])
    assert read_host(params(layout=layout))["layout"]["differs"] == [
        "user llmops-no-such-user: missing",
        "directory %s: owner %s, not llmops-someone-else" % (tmp_path / "d", user)]


@pytest.mark.parametrize("printed, rc, expected", [("enabled", 0, "enabled"), ("disabled", 1, "disabled"),
                                                   ("not-found", 1, "not-found"), ("", 1, "unknown")])
def test_the_units_enabled_state_is_what_systemctl_printed(path_with, printed, rc, expected):
    prints = 'printf "%%s\\n" "%s"; ' % printed if printed else ""
    executable(path_with / "systemctl", '[ "$1 $2" = "is-enabled sglang-qwen.service" ] || exit 9\n%sexit %d\n' % (prints, rc))
    assert read_host(params(unit_enabled="sglang-qwen.service"))["unit_enabled"] == expected


def test_uid_min_is_read_from_login_defs_and_is_1000_without_it(tmp_path):
    defs = tmp_path / "login.defs"
    defs.write_text("# UID_MIN 5\nUID_MAX\t\t60000\nUID_MIN\t\t 2000\n")
    assert login_uid_min(str(defs)) == 2000
    assert login_uid_min(str(tmp_path / "none")) == 1000
    defs.write_text("UID_MIN lots\n")
    assert login_uid_min(str(defs)) == 1000


def test_a_login_account_is_told_apart_from_a_system_one(monkeypatch, tmp_path):
    # The role must not make a login account (alice, UID 1000) the service's system account; the
    # passwd database is the only thing stood in for here.
    user, group, home, shell = me()
    alice = pwd.struct_passwd(("alice", "x", 1000, os.getgid(), "", "/home/alice", "/bin/bash"))
    real = pwd.getpwnam
    monkeypatch.setattr(pwd, "getpwnam", lambda name: alice if name == "alice" else real(name))
    layout = dict(user=dict(name="alice", group=group, home="/var/lib/sglang", shell="/usr/sbin/nologin"))
    got = read_host(params(layout=layout))["layout"]
    assert got["user_is_login"] is True
    assert got["differs"] == ["user alice: home /home/alice, not /var/lib/sglang", "user alice: shell /bin/bash, not /usr/sbin/nologin"]
    assert got["user_differs"] == got["differs"]
