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
extends_documentation_fragment:
  - llmops.sglang.attributes
  - llmops.sglang.service_unit
  - llmops.sglang.gpu_release
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
stop_s:
  description:
    - Seconds from C(systemctl stop) to the processes and GPUs free, 0 when nothing ran.
    - SGLang drains on C(SIGTERM) (0.5.23 notices it within 5 s and exits once no request remains; it keeps
      accepting requests meanwhile), so a stop under load lasts until the load pauses or C(TimeoutStopSec) ends it.
  returned: always
  type: float
  sample: 2.61
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

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.llmops.sglang.plugins.module_utils.service_systemd import (
    GPU_RELEASE_ARGUMENT_SPEC, UNIT_ARGUMENT_SPEC, stop_unit, unit_name)


def main():
    module = AnsibleModule(
        argument_spec=dict(UNIT_ARGUMENT_SPEC, timeout=dict(type='int', default=300), **GPU_RELEASE_ARGUMENT_SPEC),
        supports_check_mode=True,
    )
    p = module.params
    result, error = stop_unit(module, unit_name(p['name']), p['timeout'], p['gpus'], p['gpu_memory_used_max_mib'],
                              p['nvidia_smi_timeout'])
    if error:
        module.fail_json(msg=error, **result)
    module.exit_json(**result)


if __name__ == '__main__':
    main()
