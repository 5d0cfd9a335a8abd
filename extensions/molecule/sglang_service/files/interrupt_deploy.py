"""Start a deployment and interrupt it (Ctrl-C) once the host has started the new configuration.

    python3 interrupt_deploy.py TESTHOST HOST UNIT LOG -- ansible-playbook ...

Ctrl-C reaches the whole foreground process group in a terminal (ansible-playbook, its workers and
their ssh clients), so the playbook runs in a process group of its own and the signal goes to all
of it. The moment: after the unit's InvocationID changed (systemd started the new configuration),
before the role could notice that it fails and roll back itself. A second Ctrl-C follows after
SECOND_CTRL_C_S if the first was lost (ansible-core 2.19 can lose one; see the sweep scenario's
interrupt_sweep.py), then SIGKILL.

Exits 0 once the playbook was interrupted in that window, 1 when it ended on its own first (then
the check that follows would prove nothing).
"""

import os
import signal
import subprocess
import sys
import time

SECOND_CTRL_C_S = 5.0
STARTED_TIMEOUT_S = 300.0


def invocation(testhost, host, unit):
    out = subprocess.run([testhost, "ssh", host, "systemctl show -p InvocationID --value " + unit],
                         capture_output=True, text=True, check=False)
    return out.stdout.strip()


def main():
    sep = sys.argv.index("--")
    testhost, host, unit, log = sys.argv[1:sep]
    cmd = sys.argv[sep + 1:]
    before = invocation(testhost, host, unit)
    with open(log, "w") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + STARTED_TIMEOUT_S
        now = before
        while proc.poll() is None and time.monotonic() < deadline:
            now = invocation(testhost, host, unit)
            if now and now != before:
                break
            time.sleep(0.1)
        if proc.poll() is not None or not now or now == before:
            print("the deployment ended (rc %s) or did not start the unit before it could be interrupted"
                  % proc.poll())
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
            return 1
        signals = ["SIGINT"]
        os.killpg(proc.pid, signal.SIGINT)
        try:
            proc.wait(timeout=SECOND_CTRL_C_S)
        except subprocess.TimeoutExpired:
            signals.append("SIGINT")
            os.killpg(proc.pid, signal.SIGINT)
            try:
                proc.wait(timeout=SECOND_CTRL_C_S)
            except subprocess.TimeoutExpired:
                signals.append("SIGKILL")
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    print("interrupted with %s after the unit started a new invocation (%s -> %s); the playbook exited rc %s"
          % (" then ".join(signals), before, now, proc.returncode))
    return 0


if __name__ == "__main__":
    sys.exit(main())
