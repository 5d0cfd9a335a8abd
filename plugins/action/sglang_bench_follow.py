# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.sglang contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""sglang_bench_follow: with ``follow``, one task that follows the benchmark job to its end.

Each look is one run of the module on the host (it waits up to ``wait`` seconds, ends early when
the benchmark is done); after each look that finds the job still running the plugin prints one
status line, then looks again. So a benchmark of any length is one task, instead of a few tasks
and an include per status line. The last look returns the job's own result (and fails as the
benchmark did). A host that stops answering fails the task, naming it, so that the caller's rescue
runs (Ansible rescues failures, not unreachable hosts).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import time

from ansible.errors import AnsibleConnectionFailure
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

from ansible_collections.llmops.sglang.plugins.module_utils.bench_progress import status_line
# Handled here; the module gets the rest.
from ansible_collections.llmops.sglang.plugins.modules.sglang_bench_follow import FOLLOW_OPTIONS

display = Display()

MODULE = 'llmops.sglang.sglang_bench_follow'


class ActionModule(ActionBase):
    _supports_check_mode = True
    _supports_async = False

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        module_args = dict((k, v) for k, v in self._task.args.items() if k not in FOLLOW_OPTIONS)
        validated = ArgumentSpecValidator(FOLLOW_OPTIONS).validate(
            dict((k, v) for k, v in self._task.args.items() if k in FOLLOW_OPTIONS))
        if validated.error_messages:
            result.update(failed=True, msg='; '.join(validated.error_messages))
            return result
        opts = validated.validated_parameters
        host = (self._task.delegate_to or (task_vars or {}).get('inventory_hostname') or 'the host')
        if not opts['follow']:
            return self._look(result, module_args, task_vars, host)

        started = time.monotonic()
        controller = os.getppid()
        looks = 0
        while True:
            # A worker whose ansible-playbook was killed has nobody to report to: it stops, as a single
            # look would have, instead of following the benchmark to its end. The next run deals with
            # the leftover benchmark (sglang_bench's leftover option).
            if os.getppid() != controller:
                result.update(failed=True, finished=False, looks=looks,
                              msg='ansible-playbook ended while it followed the benchmark on %s' % host)
                return result
            look = self._look(dict(result), module_args, task_vars, host)
            looks += 1
            if look.get('failed') or look.get('finished'):
                look['looks'] = looks
                return look
            display.display(status_line(look.get('bench_progress'), opts['status_host'] or host,
                                        opts['status_label'], time.monotonic() - started))
            if opts['timeout'] is not None and time.monotonic() - started > opts['timeout']:
                result.update(failed=True, finished=False, looks=looks, bench_progress=look.get('bench_progress'),
                              msg='the benchmark job on %s did not end within %.0f s' % (host, opts['timeout']))
                return result

    def _look(self, result, module_args, task_vars, host):
        try:
            look = self._execute_module(module_name=MODULE, module_args=module_args, task_vars=task_vars)
        except AnsibleConnectionFailure as exc:
            look = dict(unreachable=True, msg=str(exc))
        if look.pop('unreachable', False):
            result.update(failed=True, finished=False, host_unreachable=True,
                          msg='%s became unreachable while it ran the benchmark of %s: %s'
                          % (host, (task_vars or {}).get('inventory_hostname'), look.get('msg', '')))
            return result
        result.update(look)
        return result
