"""tools/testhost: real systemd hosts come up, are reusable, and go away cleanly.

Runs as root only (systemd-nspawn needs it); boots two hosts at once on ports 2240/2241, each
tagged with a test run of its own, under a machine-wide lock so that two pytest runs (two
checkouts' `make test`) take turns instead of fighting over the names and ports.
"""
import contextlib
import fcntl
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import uuid

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
TESTHOST = os.path.join(ROOT, "tools", "testhost")
HOSTS = {"pytest-th-a": 2240, "pytest-th-b": 2241}
# Each host belongs to a run of its own, so that `destroy --run` and `leftovers --run` can be
# shown to touch one run's hosts and not another's.
# Unique beyond this process: a run's record (runs/ID under the test-host root) outlives a run that was
# killed before it checked its leftovers, and pids repeat across boots of the machine (a stale record
# of an earlier pytest with this pid made leftovers count 2 hosts created instead of 1).
RUNS = {name: "pytest-%d-%s-%s" % (os.getpid(), uuid.uuid4().hex[:8], name[-1]) for name in HOSTS}
LOCK = os.path.join(os.environ.get("LLMOPS_TESTHOST_ROOT", "/var/lib/llmops-testhost"), "locks", "pytest-testhost")

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="systemd-nspawn needs root")


def run_testhost(*args, run=None):
    env = dict(os.environ)
    env.pop("LLMOPS_TESTHOST_RUN", None)
    if run:
        env["LLMOPS_TESTHOST_RUN"] = run
    return subprocess.run([TESTHOST] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, check=False, timeout=300, env=env)


@contextlib.contextmanager
def machine_lock():
    os.makedirs(os.path.dirname(LOCK), exist_ok=True)
    with open(LOCK, "w", encoding="ascii") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print("another test run on this machine is using %s; waiting for %s" % (", ".join(HOSTS), LOCK),
                  file=sys.stderr)
            fcntl.flock(fh, fcntl.LOCK_EX)
        yield


def nspawn_pids():
    out = subprocess.run(["pgrep", "-f", "systemd-nspawn .*-M pytest-th-"], stdout=subprocess.PIPE,
                         text=True, check=False).stdout
    return [int(p) for p in out.split()]


@pytest.fixture(scope="module")
def two_hosts():
    with machine_lock():
        yield from boot_two_hosts()


def boot_two_hosts():
    results = {}

    def create(name, port):
        results[name] = run_testhost("create", name, "--ssh-port", str(port), run=RUNS[name])

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
        for name, proc in results.items():
            # A retried boot says why here (shown with a failing test's captured output).
            print("%s: %s" % (name, proc.stderr.strip()))
        yield {name: json.loads(proc.stdout) for name, proc in results.items()}
    finally:
        run_testhost("destroy", *HOSTS)
        for run in RUNS.values():
            run_testhost("leftovers", "--run", run)  # forgets the run's record once nothing is left


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
    again = run_testhost("create", "pytest-th-a", "--ssh-port", "2240", run=RUNS["pytest-th-a"])
    assert again.returncode == 0, again.stderr
    assert "already running" in again.stderr
    assert json.loads(again.stdout)["pid"] == two_hosts["pytest-th-a"]["pid"]
    assert sorted(nspawn_pids()) == before


def test_same_name_on_another_port_is_refused(two_hosts):
    proc = run_testhost("create", "pytest-th-a", "--ssh-port", "2242", run=RUNS["pytest-th-a"])
    assert proc.returncode != 0
    assert "already runs on SSH port 2240" in proc.stderr


def test_a_host_of_another_run_is_not_adopted(two_hosts):
    proc = run_testhost("create", "pytest-th-a", "--ssh-port", "2240", run=RUNS["pytest-th-b"])
    assert proc.returncode != 0
    assert "already running for test run %s" % RUNS["pytest-th-a"] in proc.stderr
    proc = run_testhost("create", "pytest-th-a", "--ssh-port", "2240")
    assert proc.returncode != 0 and "this is no test run" in proc.stderr


def test_list_shows_each_hosts_run(two_hosts):
    listing = run_testhost("list").stdout.splitlines()
    for name, run in RUNS.items():
        assert any(line.split()[0] == name and line.split()[-1] == run for line in listing), listing


def test_leftovers_names_a_running_host_of_the_run(two_hosts):
    proc = run_testhost("leftovers", "--run", RUNS["pytest-th-b"])
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "host pytest-th-b: systemd-nspawn pid %d still running" % two_hosts["pytest-th-b"]["pid"] in proc.stdout


def test_destroy_run_stops_only_that_runs_host_and_leaves_nothing_mounted(two_hosts):
    pid_b = two_hosts["pytest-th-b"]["pid"]
    proc = run_testhost("destroy", "--run", RUNS["pytest-th-a"])
    assert proc.returncode == 0, proc.stderr
    time.sleep(0.5)
    assert two_hosts["pytest-th-a"]["pid"] not in nspawn_pids()
    assert pid_b in nspawn_pids(), "destroying one run's hosts must not touch another run's"
    with open("/proc/mounts", encoding="utf-8") as fh:
        assert "pytest-th-a" not in fh.read()
    assert not os.path.exists(os.path.dirname(two_hosts["pytest-th-a"]["rootfs"]))
    proc = run_testhost("leftovers", "--run", RUNS["pytest-th-a"])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 host(s) created, none left running or mounted" in proc.stderr
