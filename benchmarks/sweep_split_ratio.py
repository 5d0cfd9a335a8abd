"""The shared sweep (sweep_split) against one host's, with model loads of GPU-server length.

Molecule scenario sweep_split compares the two wall times with the simulator's 0.4 s model load and
short benchmarks: there a step count costs about 8.5 s and the sweep's fixed parts (preflight, the
first deployment's checks, the winner's deployment, pinning, the report) about 12-14 s, so the
whole-sweep ratio stays near 0.64 whatever the measuring does. On a GPU server a step count costs a
model load of minutes. This script runs the same two sweeps as the scenario (two fresh test hosts,
steps 1-6, the same benchmark settings) with longer loads (``--load-time-s``, one or more values,
default 20 s; the two hosts serve every value in turn) and prints, for each load and for the one-host
sweep and the shared one: the wall time, the measuring part (first benchmark start to last benchmark
end, from the store) and who measured what, and their ratios; then the ratios by load in one table.

As the load L grows, each host's restarts dominate: the one-host sweep restarts 7 times (six step
counts and the winner), each shared host 4 times (three and the winner), so the wall ratio falls
towards 4/7 = 0.57 and never below it for six step counts.

Usage (repository root, as root, dev venv, after ``make install``; SSH ports 2261-2262 and service
ports 30042-30043 are this benchmark's; it creates and destroys its own two test hosts only, and keeps
its logs when a step fails):
    .venv/bin/python benchmarks/sweep_split_ratio.py --load-time-s 0.4 5 10 20
"""

import argparse
import datetime
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
BIN = os.path.dirname(sys.executable)
HOSTS = {"ratio1": (2261, 30042), "ratio2": (2262, 30043)}
STEPS = [1, 2, 3, 4, 5, 6]
# As molecule scenario sweep_split (extensions/molecule/sweep_split/vars/sweep_test.yml).
EXTRA = {"sweep_steps": STEPS, "sweep_objective": "agentic", "sweep_early_stop": False, "sweep_schedule": False,
         "sweep_concurrency_levels": [1, 2], "sweep_warmup_requests": 1, "sweep_stop": "fixed",
         "sweep_requests_per_level": 4, "sweep_input_len": 256, "sweep_output_len": 128}
FMT = "%Y-%m-%dT%H:%M:%S.%fZ"


def run(argv, log=None, **kw):
    with open(log, "w") if log else open(os.devnull, "w") as out:
        return subprocess.run(argv, stdout=out, stderr=subprocess.STDOUT, cwd=ROOT, check=False, **kw).returncode


def write_inventory(inv, profile):
    os.makedirs(os.path.join(inv, "group_vars"))
    os.makedirs(os.path.join(inv, "host_vars"))
    shutil.copy(os.path.join(ROOT, "inventories", "sim", "group_vars", "sglang_servers.yml"),
                os.path.join(inv, "group_vars", "sglang_servers.yml"))
    with open(os.path.join(inv, "hosts.yml"), "w") as fh:
        fh.write("---\nsglang_servers:\n  hosts:\n")
        for name, (_ssh, port) in HOSTS.items():
            fh.write("    %s:\n      sglang_service_port: %d\n      sglang_sim_profile: %s\n" % (name, port, profile))
    key = subprocess.run([os.path.join(ROOT, "tools", "testhost"), "key"], capture_output=True, text=True,
                         check=True).stdout.strip()
    for name, (ssh, _port) in HOSTS.items():
        with open(os.path.join(inv, "host_vars", name + ".yml"), "w") as fh:
            fh.write("---\nansible_host: 127.0.0.1\nansible_port: %d\nansible_user: root\n"
                     "ansible_ssh_private_key_file: %s\n"
                     "ansible_ssh_common_args: -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null\n"
                     "ansible_python_interpreter: /usr/bin/python3\n" % (ssh, key))


def timed_sweep(inv, results, log, extra_args):
    argv = [os.path.join(BIN, "ansible-playbook"), "-i", inv, "playbooks/sweep.yml", "-e", json.dumps(EXTRA),
            "-e", "sweep_results_dir=" + results] + extra_args
    start = time.monotonic()
    rc = run(argv, log)
    wall = time.monotonic() - start
    if rc != 0:
        raise SystemExit("sweep failed (rc %d), see %s" % (rc, log))
    windows = []
    for path in glob.glob(os.path.join(results, "*", "measurements", "steps-*", "repeat-*.json")):
        with open(path) as fh:
            res = json.load(fh)["result"]
        windows.append((datetime.datetime.strptime(res["started_at"], FMT),
                        datetime.datetime.strptime(res["finished_at"], FMT), res["host"],
                        int(os.path.basename(os.path.dirname(path)).split("-")[1])))
    measuring = (max(w[1] for w in windows) - min(w[0] for w in windows)).total_seconds()
    by_host = {}
    for w in sorted(windows, key=lambda w: w[3]):
        by_host.setdefault(w[2], []).append(w[3])
    return {"wall_s": round(wall, 1), "measuring_s": round(measuring, 1), "measured_by": by_host}


def measure(work, load):
    """Both sweeps with this model load on the two hosts (each serving steps 0 first): their figures."""
    os.makedirs(work)
    profile = os.path.join(work, "gpu-load.yaml")
    with open(profile, "w") as fh:
        fh.write("---\n# The default machine with a model load of GPU-server length.\nname: gpu-load\n"
                 "description: default profile, %g s model load\ntiming:\n  load_time_s: %s\n  warmup_s: 0.1\n"
                 % (load, load))
    inv = os.path.join(work, "inventory")
    write_inventory(inv, profile)
    # As the scenario: both hosts serve steps 0 first, so every swept step count costs its restart.
    if run([os.path.join(BIN, "ansible-playbook"), "-i", inv, "playbooks/deploy.yml", "-e", "spec_steps=0"],
           os.path.join(work, "deploy.log")) != 0:
        raise SystemExit("first deployment failed, see %s" % os.path.join(work, "deploy.log"))
    one = timed_sweep(inv, os.path.join(work, "results-one"), os.path.join(work, "one.log"), ["--limit", "ratio1"])
    shared = timed_sweep(inv, os.path.join(work, "results-split"), os.path.join(work, "split.log"),
                         ["-e", "sweep_split=true"])
    figures = {"load_time_s": load, "steps": STEPS, "one_host": one, "shared": shared,
               "ratio_wall": round(shared["wall_s"] / one["wall_s"], 3),
               "ratio_measuring": round(shared["measuring_s"] / one["measuring_s"], 3)}
    print("model load %g s, steps %s:" % (load, STEPS))
    print("  one host: %.1f s wall, measuring %.1f s" % (one["wall_s"], one["measuring_s"]))
    print("  shared:   %.1f s wall, measuring %.1f s, measured by %s"
          % (shared["wall_s"], shared["measuring_s"], shared["measured_by"]))
    print("  ratio: wall %.2f, measuring %.2f" % (figures["ratio_wall"], figures["ratio_measuring"]), flush=True)
    return figures


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--load-time-s", type=float, nargs="+", default=[20.0],
                    help="the simulator's model load, one or more values (default 20)")
    ap.add_argument("--json", help="also write the figures here (a list, one entry per load)")
    args = ap.parse_args()
    os.environ.setdefault("LLMOPS_TESTHOST_RUN", "bench-split-ratio-%d" % os.getpid())
    os.environ["ANSIBLE_HOST_KEY_CHECKING"] = "false"
    os.environ["PATH"] = BIN + os.pathsep + os.environ["PATH"]
    work = tempfile.mkdtemp(prefix="llmops-split-ratio-")
    testhost = os.path.join(ROOT, "tools", "testhost")
    done = False
    try:
        for name, (ssh, _port) in HOSTS.items():
            if run([testhost, "create", name, "--ssh-port", str(ssh)]) != 0:
                raise SystemExit("could not create test host %s" % name)
        all_figures = [measure(os.path.join(work, "load-%g" % load), load) for load in args.load_time_s]
        print("\n| model load (s) | one host (s) | shared (s) | wall ratio | measuring ratio |")
        print("| ---: | ---: | ---: | ---: | ---: |")
        for f in all_figures:
            row = (f["load_time_s"], f["one_host"]["wall_s"], f["shared"]["wall_s"], f["ratio_wall"], f["ratio_measuring"])
            print("| %g | %.1f | %.1f | %.3f | %.3f |" % row)
        if args.json:
            with open(args.json, "w") as fh:
                json.dump(all_figures, fh, indent=2)
        done = True
    finally:
        run([testhost, "destroy"] + list(HOSTS))
        if done:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print("logs kept in %s" % work, file=sys.stderr)


if __name__ == "__main__":
    main()
