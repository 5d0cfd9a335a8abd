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
    cgroup has exited and, when C(nvidia-smi) exists, no longer holds a CUDA context.
    SGLang spawns scheduler and detokenizer children per GPU; starting a new server while they
    still hold memory fails with "The memory capacity is unbalanced".
  - Only the unit's own processes are considered; nothing else on the host is signalled.
  - Clears the unit's failed state (C(systemctl reset-failed)) so that a unit that hit its start
    limit can be started again.
  - Returns a journal cursor taken after the stop, so that a later readiness check reads only
    what the next start logs.
author:
  - llmops.sglang contributors (@llmops)
options:
  name:
    description: Name of the systemd unit, with or without the C(.service) suffix.
    type: str
    required: true
  timeout:
    description: Seconds to wait for the processes and GPUs to be released after C(systemctl stop) returned.
    type: int
    default: 300
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
    support: full
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
    support: none
notes:
  - Runs on the GPU host; needs C(systemctl) and (optionally) C(journalctl) and C(nvidia-smi).
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
journal_cursor:
  description: Cursor of the newest journal entry after the stop (null when the journal is empty).
  returned: always
  type: str
'''

import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.llmops.sglang.plugins.module_utils.service_systemd import (
    cgroup_pids, gpu_pids, journal_cursor, pid_alive, systemctl_show)


def wait_until_released(pids, list_gpu_pids, timeout, interval=0.5):
    """Wait until none of ``pids`` runs or holds a GPU.

    ``list_gpu_pids`` returns the PIDs with a CUDA context, or None without nvidia-smi.
    Returns (released, alive, holding_gpu, waited_s).
    """
    started = time.monotonic()
    while True:
        alive = sorted(p for p in pids if pid_alive(p))
        on_gpu = list_gpu_pids()
        # nvidia-smi lists host PIDs; SGLang's children are all in the cgroup, so the PIDs seen
        # before the stop are the ones to wait for.
        holding_gpu = sorted(on_gpu & set(pids)) if on_gpu else []
        waited = round(time.monotonic() - started, 2)
        if not alive and not holding_gpu:
            return True, alive, holding_gpu, waited
        if waited > timeout:
            return False, alive, holding_gpu, waited
        time.sleep(interval)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            name=dict(type='str', required=True),
            timeout=dict(type='int', default=300),
        ),
        supports_check_mode=True,
    )
    unit = module.params['name']
    if not unit.endswith('.service'):
        unit += '.service'

    state = systemctl_show(module, unit)
    pids = cgroup_pids(state.get('ControlGroup'))
    if state.get('MainPID'):
        pids.add(state['MainPID'])
    running = state.get('ActiveState') not in ('inactive', 'failed') or bool(pids)
    result = dict(changed=running, stopped_pids=sorted(pids), waited_s=0.0, gpu_checked=False, journal_cursor=None)

    if module.check_mode:
        module.exit_json(**result)

    systemctl = module.get_bin_path('systemctl', required=True)
    if running:
        rc, dummy, err = module.run_command([systemctl, 'stop', unit])
        if rc != 0:
            module.fail_json(msg='systemctl stop %s failed: %s' % (unit, err.strip()), **result)

    released, alive, holding_gpu, waited = wait_until_released(
        pids, lambda: gpu_pids(module), module.params['timeout'])
    result['gpu_checked'] = gpu_pids(module) is not None
    result['waited_s'] = waited
    if not released:
        module.fail_json(
            msg='%s stopped, but after %ds processes %s are still alive and %s still hold a GPU'
                % (unit, module.params['timeout'], alive, holding_gpu), **result)

    # A unit that hit StartLimitBurst refuses to start until its failed state is cleared.
    module.run_command([systemctl, 'reset-failed', unit])
    result['journal_cursor'] = journal_cursor(module)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
