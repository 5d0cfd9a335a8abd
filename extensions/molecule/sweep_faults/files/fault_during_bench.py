"""Run a sweep and strike while its Nth benchmark drives load.

    python3 fault_during_bench.py LOG N ACTION DELAY -- ansible-playbook ...

ACTION is ``poweroff:<testhost name>`` (an orderly poweroff of the test host: its services stop,
then SSH goes away), ``sigkill`` (SIGKILL of ansible-playbook, as an operator's kill -9 or an
OOM killer would; the benchmark already running on the host is left behind) or
``run:<testhost name>:<shell command>`` (the command on the host, for example a restart of the
server from outside the sweep; the sweep goes on).
Prints the playbook's exit code (``killed`` for sigkill) and exits 0 once it struck; exits 1
when the sweep ended before the Nth benchmark started (then the test would prove nothing).
"""

import os
import signal
import subprocess
import sys
import time

MARK = 'spec_bench : Drive the load and measure'
TESTHOST = os.path.join(os.environ.get('MOLECULE_PROJECT_DIRECTORY', '.'), 'tools', 'testhost')


def main():
    sep = sys.argv.index('--')
    log, nth, action, delay = sys.argv[1], int(sys.argv[2]), sys.argv[3], float(sys.argv[4])
    with open(log, 'w') as out:
        proc = subprocess.Popen(sys.argv[sep + 1:], stdout=out, stderr=subprocess.STDOUT)
        while proc.poll() is None:
            with open(log) as fh:
                if fh.read().count(MARK) >= nth:
                    break
            time.sleep(0.2)
        if proc.poll() is not None:
            print('the sweep ended (rc %s) before benchmark %d started' % (proc.returncode, nth))
            return 1
        time.sleep(delay)
        if action == 'sigkill':
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            print('killed')
            return 0
        kind, host, *command = action.split(':', 2)
        if kind == 'run':
            subprocess.run([TESTHOST, 'ssh', host] + command, check=True, stdout=subprocess.DEVNULL)
        else:
            subprocess.run([TESTHOST, 'destroy', host], check=True, stdout=subprocess.DEVNULL)
        proc.wait(timeout=300)
        if kind == 'run':
            # The host's side of the story (systemd's lines and the server's), kept beside the sweep's log:
            # a failed assertion leaves no host to look at.
            with open(log + '.journal', 'w') as out:
                subprocess.run([TESTHOST, 'ssh', host, 'journalctl --since=-10min -o short-precise --no-pager | tail -n 400'],
                               stdout=out, stderr=subprocess.STDOUT, check=False)
    keep = os.path.join(os.environ.get('MOLECULE_PROJECT_DIRECTORY', '.'), 'tests', 'output', 'molecule', 'sweep_faults-logs')
    os.makedirs(keep, exist_ok=True)
    for path in (log, log + '.journal'):
        if os.path.exists(path):
            with open(path) as src, open(os.path.join(keep, os.path.basename(path)), 'w') as dst:
                dst.write(src.read())
    print(proc.returncode)
    return 0


if __name__ == '__main__':
    sys.exit(main())
