"""Start a sweep and interrupt it (Ctrl-C, as an operator would) once N configurations are stored.

    python3 interrupt_sweep.py RESULTS_DIR HOST N LOG -- ansible-playbook ...

Exits 0 when the sweep was interrupted with exactly N..N+ configurations stored, 1 when it
finished (or died) on its own before that: then the resume test would prove nothing.
"""

import glob
import json
import os
import signal
import subprocess
import sys
import time


def stored(results_dir, host):
    base = os.path.join(results_dir, host, 'measurements')
    return sorted(set(os.path.basename(os.path.dirname(p))
                      for p in glob.glob(os.path.join(base, 'steps-*', '*.json'))))


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
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.terminate()
            proc.wait(timeout=30)
        stop_s = time.time() - signalled
    # What verify checks: Ctrl-C ends the sweep promptly (ansible-playbook's rc 99), and what was stored.
    record = {'stored_at_signal': at_signal, 'stored': stored(results_dir, host), 'rc': proc.returncode, 'stop_s': round(stop_s, 1)}
    with open(log + '.json', 'w') as fh:
        json.dump(record, fh)
    print('interrupted after %s (rc %s, stopped %.1f s after Ctrl-C)' % (', '.join(record['stored']), proc.returncode, stop_s))
    return 0


if __name__ == '__main__':
    sys.exit(main())
