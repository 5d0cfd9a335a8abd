#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.sglang contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: sglang_service_stop
short_description: Stop an SGLang systemd unit and wait until its processes and GPUs are free
version_added: 0.1.0
description:
  - Stops the unit with C(systemctl stop), then waits until every process that was in the unit's
    cgroup has exited and, when C(nvidia-smi) exists, every GPU the unit uses is free (no process of
    the unit has a context on it and its C(memory.used) is at most O(gpu_memory_used_max_mib), whoever
    holds it). SGLang spawns scheduler and detokenizer children per GPU; starting a new server while
    memory is still held fails with C(The memory capacity is unbalanced) or C(Not enough memory).
  - The wait is bounded. Each C(nvidia-smi) call is killed after O(nvidia_smi_timeout) seconds (a wedged driver
    can hang it), and the whole wait ends after O(timeout) seconds with a message naming each GPU
    that is not free, its used memory and the processes listed on it.
  - Nothing on the host is signalled besides the unit (through systemd) and a hung nvidia-smi.
  - Clears the unit's failed state (C(systemctl reset-failed)) so that a unit that hit its start
    limit can be started again.
  - Returns a journal cursor taken after the stop, so that a later readiness check reads only
    what the next start logs.
author:
  - llmops.sglang contributors (@llmops)
options:
  timeout:
    description: Seconds to wait for the processes and GPUs to be released after C(systemctl stop) returned.
    type: int
    default: 300
  gpus:
    description:
      - The GPUs the unit uses, as C(CUDA_VISIBLE_DEVICES) names them (indexes or C(GPU-) UUIDs).
      - Empty means every GPU C(nvidia-smi) lists.
    type: list
    elements: str
    default: []
  gpu_memory_used_max_mib:
    description: A GPU counts as free when its C(memory.used) is at most this many MiB (the driver keeps a little).
    type: int
    default: 1024
  nvidia_smi_timeout:
    description: Seconds one C(nvidia-smi) call may take before it is killed and counted as a failed look.
    type: int
    default: 10
extends_documentation_fragment:
  - llmops.sglang.attributes
  - llmops.sglang.service_unit
notes:
  - Also uses C(journalctl) and C(nvidia-smi) where they exist.
'''

EXAMPLES = r'''
- name: Stop SGLang and wait for the GPUs
  llmops.sglang.sglang_service_stop:
    name: sglang
    timeout: 300
  register: sglang_stop
'''

RETURN = r'''
stopped_pids:
  description: PIDs that were in the unit's cgroup before the stop.
  returned: always
  type: list
  elements: int
  sample: [4711, 4712]
waited_s:
  description: Seconds spent waiting for processes and GPUs after C(systemctl stop) returned.
  returned: always
  type: float
gpu_checked:
  description: Whether nvidia-smi was available to confirm that the GPUs were released.
  returned: always
  type: bool
gpu_busy:
  description: Why the GPUs were not free at the last look (empty when they were, or without nvidia-smi).
  returned: always
  type: list
  elements: str
  sample: ["GPU 2: 40960 MiB used by pid 4711 python3 [this unit] (40950 MiB)"]
journal_cursor:
  description: Cursor of the newest journal entry after the stop (null when the journal is empty).
  returned: always
  type: str
'''

import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.llmops.sglang.plugins.module_utils.service_systemd import (
    UNIT_ARGUMENT_SPEC, NvidiaSmiError, cgroup_pids, gpu_holders, gpu_snapshot, journal_cursor, pid_alive, select_gpus,
    systemctl_show, unit_name)


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


def main():
    module = AnsibleModule(
        argument_spec=dict(
            UNIT_ARGUMENT_SPEC,
            timeout=dict(type='int', default=300),
            gpus=dict(type='list', elements='str', default=[]),
            gpu_memory_used_max_mib=dict(type='int', default=1024),
            nvidia_smi_timeout=dict(type='int', default=10),
        ),
        supports_check_mode=True,
    )
    unit = unit_name(module.params['name'])

    state = systemctl_show(module, unit)
    pids = cgroup_pids(state.get('ControlGroup'))
    if state.get('MainPID'):
        pids.add(state['MainPID'])
    running = state.get('ActiveState') not in ('inactive', 'failed') or bool(pids)
    result = dict(changed=running, stopped_pids=sorted(pids), waited_s=0.0, gpu_checked=False, gpu_busy=[],
                  journal_cursor=None)

    if module.check_mode:
        module.exit_json(**result)

    systemctl = module.get_bin_path('systemctl', required=True)
    if running:
        rc, dummy, err = module.run_command([systemctl, 'stop', unit])
        if rc != 0:
            module.fail_json(msg='systemctl stop %s failed: %s' % (unit, err.strip()), **result)

    nvidia_smi = module.get_bin_path('nvidia-smi')
    checker = gpu_checker(nvidia_smi, [g for g in module.params['gpus'] if g.strip()],
                          module.params['gpu_memory_used_max_mib'], set(pids), module.params['nvidia_smi_timeout'])
    released, alive, busy, waited = wait_until_released(pids, checker, module.params['timeout'])
    result.update(gpu_checked=nvidia_smi is not None, waited_s=waited, gpu_busy=busy)
    if not released:
        module.fail_json(
            msg='%s stopped, but after %.0f s %s%s%s. The unit stays stopped; free the GPUs (or raise '
                'sglang_service_stop_timeout) and run again.'
                % (unit, waited, ('processes %s of the unit are still alive' % alive) if alive else '',
                   '; ' if alive and busy else '', '; '.join(busy)), **result)

    # A unit that hit StartLimitBurst refuses to start until its failed state is cleared.
    module.run_command([systemctl, 'reset-failed', unit])
    result['journal_cursor'] = journal_cursor(module)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
