"""Start a sweep and interrupt it (Ctrl-C, as an operator would) once N configurations are stored.

    python3 interrupt_sweep.py RESULTS_DIR HOST N LOG -- ansible-playbook ...

Exits 0 when the sweep was interrupted with exactly N..N+ configurations stored, 1 when it
finished (or died) on its own before that: then the resume test would prove nothing.

ansible-core 2.19 can lose a Ctrl-C: its SIGINT handler raises KeyboardInterrupt wherever the
main thread is, and when that is the interpreter's after-fork hook of the worker it is starting
(logging's _releaseLock), Python prints "Exception ignored in: <function _releaseLock ...>" and
the playbook goes on with SIGINT back at its default action (about 1 Ctrl-C in 10 here, sent
right after a configuration was stored: a stretch of short tasks, one fork each). An operator
presses Ctrl-C again, which then ends the process at once; so does this script, after
SECOND_CTRL_C_S, and the record says how many it took. Now and then the first Ctrl-C leaves no
trace at all and the playbook prints nothing more (it hangs on its way out): the second one ends
it the same way.

A second Ctrl-C that ends the process with SIGINT's default action (rc -2) is itself the proof that
ansible-playbook's handler took the first one: that handler (TaskQueueManager._signal_handler)
puts SIGINT back to its default before it raises KeyboardInterrupt. Had anything else caught or
ignored the first Ctrl-C, the second would not kill the process either.
"""

import glob
import json
import os
import signal
import subprocess
import sys
import time

# A stopped sweep exits 0.2-0.3 s after Ctrl-C; a configuration takes longer than this to deploy and
# measure, so a second Ctrl-C still finds the store as the first one left it.
SECOND_CTRL_C_S = 5.0


def stored(results_dir, host):
    base = os.path.join(results_dir, host, 'measurements')
    return sorted(set(os.path.basename(os.path.dirname(p))
                      for p in glob.glob(os.path.join(base, 'steps-*', '*.json'))))


def what_it_waits_on(pid):
    """Where a process that did not end after Ctrl-C sits: its state, kernel wait channel and children."""
    def read(path):
        try:
            with open(path) as fh:
                return fh.read().strip()
        except OSError:
            return None
    children = (read('/proc/%d/task/%d/children' % (pid, pid)) or '').split()
    return {'state': (read('/proc/%d/stat' % pid) or '').split(') ')[-1][:1],
            'wchan': read('/proc/%d/wchan' % pid),
            'children': [{'pid': int(c), 'cmdline': (read('/proc/%s/cmdline' % c) or '').replace('\0', ' ')[:200],
                          'wchan': read('/proc/%s/wchan' % c)} for c in children]}


def main():
    sep = sys.argv.index('--')
    results_dir, host, wanted, log = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    cmd = sys.argv[sep + 1:]
    with open(log, 'w') as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
        while proc.poll() is None and len(stored(results_dir, host)) < wanted:
            time.sleep(0.2)
        if proc.poll() is not None:
            print('the sweep ended (rc %s) before %d configurations were stored' % (proc.returncode, wanted))
            return 1
        at_signal = stored(results_dir, host)
        signalled = time.time()
        ctrl_c = 1
        stuck = None
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=SECOND_CTRL_C_S)
        except subprocess.TimeoutExpired:
            ctrl_c = 2
            stuck = what_it_waits_on(proc.pid)
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.terminate()
                proc.wait(timeout=30)
        stop_s = time.time() - signalled
    # What verify checks: Ctrl-C ends the sweep promptly (ansible-playbook's rc 99 for the first, the
    # default action of SIGINT, -2, for a second one), and what was stored.
    record = {'stored_at_signal': at_signal, 'stored': stored(results_dir, host), 'rc': proc.returncode,
              'stop_s': round(stop_s, 1), 'ctrl_c': ctrl_c}
    with open(log, errors='replace') as fh:
        text = fh.read()
    record['lost_ctrl_c'] = 'Exception ignored in' in text and 'KeyboardInterrupt' in text
    if stuck is not None:
        record['after_first_ctrl_c'] = stuck
    if proc.returncode != 99:
        # The log is gone with the scenario's ephemeral directory: keep its end, where a traceback is.
        record['log_tail'] = text[-4000:]
    with open(log + '.json', 'w') as fh:
        json.dump(record, fh)
    print('interrupted after %s (rc %s, %d Ctrl-C, stopped %.1f s after the first)'
          % (', '.join(record['stored']), proc.returncode, ctrl_c, stop_s))
    return 0


if __name__ == '__main__':
    sys.exit(main())
