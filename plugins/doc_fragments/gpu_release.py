# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.sglang contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type


class ModuleDocFragment(object):
    """The options of the wait for a stopped unit's GPUs, which sglang_service_stop and
    sglang_service_wait (with stop=true) share; their argument spec is
    module_utils/service_systemd.GPU_RELEASE_ARGUMENT_SPEC."""

    DOCUMENTATION = r'''
options:
  gpus:
    description:
      - The GPUs the unit uses, as C(CUDA_VISIBLE_DEVICES) names them (indexes or C(GPU-) UUIDs), whose release the stop waits for.
      - Empty means every GPU C(nvidia-smi) lists.
    type: list
    elements: str
    default: []
  gpu_memory_used_max_mib:
    description: After the stop, a GPU counts as free when its C(memory.used) is at most this many MiB (the driver keeps a little).
    type: int
    default: 1024
  nvidia_smi_timeout:
    description: Seconds one C(nvidia-smi) call may take before it is killed and counted as a failed look.
    type: int
    default: 10
'''
