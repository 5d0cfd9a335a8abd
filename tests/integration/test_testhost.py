"""tools/testhost: real systemd hosts come up, are reusable, and go away cleanly.

Runs as root only (systemd-nspawn needs it); boots two hosts at once on ports 2205/2206.
"""
import json
import os
import subprocess
import sys
import tempfile
import threading
import time

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
TESTHOST = os.path.join(ROOT, "tools", "testhost")
HOSTS = {"pytest-th-a": 2205, "pytest-th-b": 2206}

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="systemd-nspawn needs root")


def run_testhost(*args):
    return subprocess.run([TESTHOST] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, check=False, timeout=300)


def nspawn_pids():
    out = subprocess.run(["pgrep", "-f", "systemd-nspawn .*-M pytest-th-"], stdout=subprocess.PIPE,
                         text=True, check=False).stdout
    return [int(p) for p in out.split()]


@pytest.fixture(scope="module")
def two_hosts():
    results = {}

    def create(name, port):
        results[name] = run_testhost("create", name, "--ssh-port", str(port))

    threads = [threading.Thread(target=create, args=item) for item in HOSTS.items()]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.monotonic() - started
    try:
        for name, proc in results.items():
            assert proc.returncode == 0, "%s: %s" % (name, proc.stderr)
        print("two test hosts booted concurrently in %.1f s" % elapsed)
        yield {name: json.loads(proc.stdout) for name, proc in results.items()}
    finally:
        run_testhost("destroy", *HOSTS)


def test_two_hosts_at_once_answer_ansible_ping(two_hosts):
    inventory = run_testhost("inventory", *HOSTS).stdout
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as fh:
        fh.write(inventory)
    try:
        env = dict(os.environ, ANSIBLE_HOST_KEY_CHECKING="false")
        proc = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible"), "-i", fh.name, "all",
                               "-m", "ansible.builtin.ping", "-o"], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, check=False, env=env, timeout=120)
    finally:
        os.unlink(fh.name)
    assert proc.returncode == 0, proc.stdout
    for name in HOSTS:
        assert "%s | SUCCESS" % name in proc.stdout
    assert {h["ansible_port"] for h in two_hosts.values()} == set(HOSTS.values())


def test_each_host_runs_systemd_as_pid1(two_hosts):
    for name in HOSTS:
        proc = run_testhost("ssh", name, "--", "systemctl is-system-running; cat /proc/1/comm; hostname")
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.split() == ["running", "systemd", name]


def test_create_twice_is_one_host(two_hosts):
    before = sorted(nspawn_pids())
    again = run_testhost("create", "pytest-th-a", "--ssh-port", "2205")
    assert again.returncode == 0, again.stderr
    assert "already running" in again.stderr
    assert json.loads(again.stdout)["pid"] == two_hosts["pytest-th-a"]["pid"]
    assert sorted(nspawn_pids()) == before


def test_same_name_on_another_port_is_refused(two_hosts):
    proc = run_testhost("create", "pytest-th-a", "--ssh-port", "2207")
    assert proc.returncode != 0
    assert "already runs on SSH port 2205" in proc.stderr


def test_destroy_stops_only_its_own_host_and_leaves_nothing_mounted(two_hosts):
    pid_b = two_hosts["pytest-th-b"]["pid"]
    proc = run_testhost("destroy", "pytest-th-a")
    assert proc.returncode == 0, proc.stderr
    time.sleep(0.5)
    assert two_hosts["pytest-th-a"]["pid"] not in nspawn_pids()
    assert pid_b in nspawn_pids(), "destroying one host must not touch another"
    with open("/proc/mounts", encoding="utf-8") as fh:
        assert "pytest-th-a" not in fh.read()
    assert not os.path.exists(os.path.dirname(two_hosts["pytest-th-a"]["rootfs"]))
