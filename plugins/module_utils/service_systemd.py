# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.sglang contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""systemd, journald, /proc and nvidia-smi helpers for the sglang_service_* modules.

Private to llmops.sglang. Stdlib only, Python 3.8+: it runs on the GPU host.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os

SHOW_PROPERTIES = (
    'ActiveState', 'SubState', 'Result', 'NRestarts', 'MainPID', 'ExecMainStatus',
    'ExecMainStartTimestampMonotonic', 'ExecMainExitTimestampMonotonic', 'InvocationID', 'ControlGroup',
    'LoadState',
)
_INT_PROPERTIES = ('NRestarts', 'MainPID', 'ExecMainStatus', 'ExecMainStartTimestampMonotonic',
                   'ExecMainExitTimestampMonotonic')


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


def gpu_pids(module):
    """PIDs holding a CUDA context per nvidia-smi, or None when there is no nvidia-smi."""
    nvidia_smi = module.get_bin_path('nvidia-smi')
    if not nvidia_smi:
        return None
    rc, out, dummy = module.run_command([nvidia_smi, '--query-compute-apps=pid', '--format=csv,noheader,nounits'])
    if rc != 0:
        return None
    pids = set()
    for line in out.splitlines():
        line = line.strip()
        if line.isdigit():
            pids.add(int(line))
    return pids
