# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.sglang contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""systemd, journald, /proc and nvidia-smi helpers for the sglang_service_* modules.

Private to llmops.sglang. Stdlib only, Python 3.8+: it runs on the GPU host.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import collections
import json
import os
import signal
import subprocess
import time

SHOW_PROPERTIES = (
    'ActiveState', 'SubState', 'Result', 'NRestarts', 'MainPID', 'ExecMainStatus',
    'ExecMainStartTimestampMonotonic', 'ExecMainExitTimestampMonotonic', 'InvocationID', 'ControlGroup',
    'LoadState', 'NeedDaemonReload',
)
_INT_PROPERTIES = ('NRestarts', 'MainPID', 'ExecMainStatus', 'ExecMainStartTimestampMonotonic',
                   'ExecMainExitTimestampMonotonic')

# The option both unit modules take (sglang_service_stop, sglang_service_wait; documented by the
# llmops.sglang.service_unit doc fragment).
UNIT_ARGUMENT_SPEC = dict(name=dict(type='str', required=True))

# The options of the wait for a stopped unit's GPUs, which sglang_service_stop and sglang_service_wait
# (stop=true) share (documented by the llmops.sglang.gpu_release doc fragment). Each module names its
# own bound of the whole wait: timeout, and stop_timeout where timeout is the readiness wait's.
GPU_RELEASE_ARGUMENT_SPEC = dict(
    gpus=dict(type='list', elements='str', default=[]),
    gpu_memory_used_max_mib=dict(type='int', default=1024),
    nvidia_smi_timeout=dict(type='int', default=10),
)


def unit_name(name):
    """The unit's full name: ``sglang`` and ``sglang.service`` are the same unit."""
    return name if name.endswith('.service') else name + '.service'


def parse_show(text):
    """Parse ``systemctl show`` KEY=VALUE output; numeric properties become ints."""
    props = {}
    for line in text.splitlines():
        key, sep, value = line.partition('=')
        if not sep:
            continue
        if key in _INT_PROPERTIES:
            try:
                value = int(value)
            except ValueError:
                value = 0
        props[key] = value
    for key in _INT_PROPERTIES:
        props.setdefault(key, 0)
    return props


def systemctl_show(module, unit):
    systemctl = module.get_bin_path('systemctl', required=True)
    rc, out, err = module.run_command([systemctl, 'show', '-p', ','.join(SHOW_PROPERTIES), unit])
    if rc != 0:
        module.fail_json(msg='systemctl show %s failed: %s' % (unit, err.strip()))
    return parse_show(out)


def journal_cursor(module):
    """Cursor of the newest journal entry (None when the journal is empty or absent)."""
    journalctl = module.get_bin_path('journalctl')
    if not journalctl:
        return None
    rc, out, dummy = module.run_command([journalctl, '-n', '1', '--show-cursor', '-q', '-o', 'cat', '--no-pager'])
    if rc != 0:
        return None
    for line in reversed(out.splitlines()):
        if line.startswith('-- cursor: '):
            return line[len('-- cursor: '):].strip()
    return None


def journal_lines(module, unit, cursor=None, limit=400):
    """Message lines the unit logged after ``cursor`` (or its last ``limit`` lines)."""
    journalctl = module.get_bin_path('journalctl')
    if not journalctl:
        return []
    cmd = [journalctl, '-u', unit, '-o', 'cat', '--no-pager', '-q', '-n', str(limit)]
    if cursor:
        cmd.extend(['--after-cursor', cursor])
    rc, out, dummy = module.run_command(cmd)
    if rc != 0:
        return []
    return out.splitlines()


def journal_first_match_monotonic(module, invocation_id, needle, limit=5000):
    """__MONOTONIC_TIMESTAMP (usec) of the first line of this invocation containing ``needle``."""
    journalctl = module.get_bin_path('journalctl')
    if not journalctl or not invocation_id:
        return None
    rc, out, dummy = module.run_command(
        [journalctl, '_SYSTEMD_INVOCATION_ID=%s' % invocation_id, '-o', 'json', '--no-pager', '-q', '-n', str(limit)])
    if rc != 0:
        return None
    for line in out.splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        message = entry.get('MESSAGE')
        if isinstance(message, list):  # journald stores non-UTF-8 messages as byte arrays
            message = bytes(message).decode('utf-8', 'replace')
        if isinstance(message, str) and needle in message:
            try:
                return int(entry.get('__MONOTONIC_TIMESTAMP'))
            except (TypeError, ValueError):
                return None
    return None


def cgroup_pids(control_group):
    """All PIDs in the unit's cgroup (v2 unified, or v1 name=systemd hierarchy)."""
    if not control_group:
        return set()
    pids = set()
    for root in ('/sys/fs/cgroup', '/sys/fs/cgroup/systemd', '/sys/fs/cgroup/unified'):
        base = root + control_group
        if not os.path.isdir(base):
            continue
        for dirpath, dummy, filenames in os.walk(base):
            if 'cgroup.procs' not in filenames:
                continue
            try:
                with open(os.path.join(dirpath, 'cgroup.procs')) as f:
                    pids.update(int(p) for p in f.read().split())
            except (IOError, OSError, ValueError):
                continue
        if pids:
            break
    return pids


def pid_alive(pid):
    return os.path.exists('/proc/%d' % pid)


class NvidiaSmiError(Exception):
    """nvidia-smi failed or did not answer in time."""


class BoundedRun(collections.namedtuple('BoundedRun', 'rc stdout stderr ran')):
    """A bounded command's result: ``ran`` is False when it could not be executed (rc 127) or ran too
    long and was killed (rc 124), as coreutils' timeout says it. The command's own exit code 124 or
    127 is then told apart by ``ran``, not guessed from the rc."""
    __slots__ = ()


def run_with_timeout(argv, timeout):
    """Run ``argv`` for at most ``timeout`` seconds; return a BoundedRun.

    nvidia-smi can hang on a wedged driver; the call runs in its own session so that, on
    timeout, the whole process group (children included) is killed, not only the first process.
    """
    try:
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,  # pylint: disable=consider-using-with
                                universal_newlines=True, start_new_session=True)
    except OSError as exc:
        return BoundedRun(127, '', '%s: %s' % (argv[0], exc.strerror or exc), False)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
        proc.communicate()
        return BoundedRun(124, '', '%s did not answer within %.0f s' % (' '.join(argv[:2]), timeout), False)
    return BoundedRun(proc.returncode, out, err, True)


def run_bounded(argv, timeout):
    """Run ``argv`` for at most ``timeout`` seconds (run_with_timeout); return its stdout.
    Raises NvidiaSmiError on timeout, non-zero exit or a missing binary."""
    done = run_with_timeout(argv, timeout)
    if not done.ran:
        raise NvidiaSmiError(done.stderr)
    if done.rc != 0:
        raise NvidiaSmiError('%s exited with %d: %s' % (' '.join(argv[:2]), done.rc, (done.stderr or done.stdout).strip()[:300]))
    return done.stdout


def _csv_rows(text):
    return [[field.strip() for field in line.split(',')] for line in text.splitlines() if line.strip()]


def gpu_snapshot(nvidia_smi, timeout):
    """What holds memory on which GPU, from two bounded nvidia-smi queries.

    Returns ``{'gpus': [{'index': int, 'uuid': str, 'memory_used_mib': int}],
    'apps': [{'pid': int, 'gpu_uuid': str, 'used_memory_mib': int or None, 'name': str}]}``.
    """
    gpus = []
    out = run_bounded([nvidia_smi, '--query-gpu=index,uuid,memory.used', '--format=csv,noheader,nounits'], timeout)
    for row in _csv_rows(out):
        try:
            gpus.append({'index': int(row[0]), 'uuid': row[1], 'memory_used_mib': int(float(row[2]))})
        except (IndexError, ValueError):
            raise NvidiaSmiError('unexpected nvidia-smi --query-gpu line: %s' % ', '.join(row))
    apps = []
    out = run_bounded([nvidia_smi, '--query-compute-apps=pid,gpu_uuid,used_memory,process_name',
                       '--format=csv,noheader,nounits'], timeout)
    for row in _csv_rows(out):
        if len(row) < 2 or not row[0].isdigit():
            continue
        try:
            used = int(float(row[2]))
        except (IndexError, ValueError):
            used = None  # "[N/A]" without the rights to see other users' processes
        apps.append({'pid': int(row[0]), 'gpu_uuid': row[1], 'used_memory_mib': used,
                     'name': row[3] if len(row) > 3 else ''})
    return {'gpus': gpus, 'apps': apps}


def select_gpus(snapshot, wanted):
    """The GPUs of ``snapshot`` named in ``wanted`` (indexes or UUIDs, as CUDA_VISIBLE_DEVICES
    spells them); all of them when ``wanted`` is empty. Unknown names raise NvidiaSmiError."""
    if not wanted:
        return list(snapshot['gpus'])
    chosen = []
    for name in wanted:
        name = str(name).strip()
        match = [g for g in snapshot['gpus'] if str(g['index']) == name or g['uuid'] == name
                 or (name.startswith('GPU-') and g['uuid'].startswith(name))]
        if not match:
            raise NvidiaSmiError('GPU %s is not among the GPUs nvidia-smi lists (%s)'
                                 % (name, ', '.join('%d %s' % (g['index'], g['uuid']) for g in snapshot['gpus'])))
        chosen.extend(g for g in match if g not in chosen)
    return chosen


def gpu_holders(snapshot, gpus, max_used_mib, own_pids):
    """Why ``gpus`` are not free yet: a GPU is free when its memory.used is at most
    ``max_used_mib`` and none of ``own_pids`` (the stopped unit's) has a context on it. Each
    reason names the GPU, its used memory and every process nvidia-smi lists on it. [] = free."""
    reasons = []
    for gpu in gpus:
        apps = [a for a in snapshot['apps'] if a['gpu_uuid'] == gpu['uuid']]
        ours = [a for a in apps if a['pid'] in own_pids]
        if gpu['memory_used_mib'] <= max_used_mib and not ours:
            continue
        held = ', '.join(
            'pid %d %s%s (%s MiB)' % (a['pid'], a['name'] or '?', ' [this unit]' if a['pid'] in own_pids else '',
                                      a['used_memory_mib'] if a['used_memory_mib'] is not None else '?')
            for a in apps)
        where = (' by ' + held) if held else ', no process listed (another container or a leak?)'
        reasons.append('GPU %d: %d MiB used%s' % (gpu['index'], gpu['memory_used_mib'], where))
    return reasons


def wait_until_released(pids, gpu_busy, timeout, interval=0.5):
    """Wait until none of ``pids`` runs and the GPUs are free, for at most ``timeout`` seconds.

    ``gpu_busy(remaining_s)`` returns the reasons the GPUs are not free ([] when they are, None
    without nvidia-smi); it may raise NvidiaSmiError, which counts as "not confirmed free".
    Returns (released, alive, busy, waited_s).
    """
    started = time.monotonic()
    while True:
        alive = sorted(p for p in pids if pid_alive(p))
        remaining = timeout - (time.monotonic() - started)
        try:
            busy = gpu_busy(max(1.0, remaining)) or []
        except NvidiaSmiError as exc:
            busy = ['GPUs not confirmed free: %s' % exc]
        waited = round(time.monotonic() - started, 2)
        if not alive and not busy:
            return True, alive, busy, waited
        if waited >= timeout:
            return False, alive, busy, waited
        time.sleep(min(interval, max(0.0, timeout - waited)))


def gpu_checker(nvidia_smi, gpus, max_used_mib, own_pids, call_timeout):
    """The ``gpu_busy`` of wait_until_released for the unit's GPUs (None without nvidia-smi)."""
    def busy(remaining):
        if not nvidia_smi:
            return None
        snapshot = gpu_snapshot(nvidia_smi, min(call_timeout, remaining))
        # nvidia-smi lists host PIDs; SGLang's children are all in the cgroup, so the PIDs seen
        # before the stop are the unit's.
        return gpu_holders(snapshot, select_gpus(snapshot, gpus), max_used_mib, own_pids)
    return busy


def stop_unit(module, unit, timeout, gpus, gpu_memory_used_max_mib, nvidia_smi_timeout):
    """Stop ``unit``, wait until its processes and GPUs are free, clear its failed state.

    Returns (result, error). ``result``: changed (it was running), stopped_pids, stop_s (from the stop
    to processes and GPUs free: SGLang drains its requests first), waited_s, gpu_checked, gpu_busy and
    journal_cursor (taken after the stop, for the next start's diagnosis). ``error`` is
    a message when the stop failed or the release timed out (the unit then stays stopped), else
    None. In check mode nothing is stopped.
    """
    state = systemctl_show(module, unit)
    pids = cgroup_pids(state.get('ControlGroup'))
    if state.get('MainPID'):
        pids.add(state['MainPID'])
    running = state.get('ActiveState') not in ('inactive', 'failed') or bool(pids)
    result = dict(changed=running, stopped_pids=sorted(pids), stop_s=0.0, waited_s=0.0, gpu_checked=False,
                  gpu_busy=[], journal_cursor=None)
    if module.check_mode:
        return result, None

    systemctl = module.get_bin_path('systemctl', required=True)
    began = time.monotonic()
    if running:
        rc, dummy, err = module.run_command([systemctl, 'stop', unit])
        if rc != 0:
            return result, 'systemctl stop %s failed: %s' % (unit, err.strip())

    nvidia_smi = module.get_bin_path('nvidia-smi')
    checker = gpu_checker(nvidia_smi, [g for g in gpus if g.strip()], gpu_memory_used_max_mib, set(pids),
                          nvidia_smi_timeout)
    released, alive, busy, waited = wait_until_released(pids, checker, timeout)
    result.update(gpu_checked=nvidia_smi is not None, waited_s=waited, gpu_busy=busy,
                  stop_s=round(time.monotonic() - began, 2) if running else 0.0)
    if not released:
        return result, ('%s stopped, but after %.0f s %s%s%s. The unit stays stopped; free the GPUs (or raise '
                        'sglang_service_stop_timeout) and run again.'
                        % (unit, waited, ('processes %s of the unit are still alive' % alive) if alive else '',
                           '; ' if alive and busy else '', '; '.join(busy)))

    # A unit that hit StartLimitBurst refuses to start until its failed state is cleared.
    module.run_command([systemctl, 'reset-failed', unit])
    result['journal_cursor'] = journal_cursor(module)
    return result, None
