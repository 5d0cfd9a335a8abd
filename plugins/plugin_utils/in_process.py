# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.sglang contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action base for the sweep's controller modules (private to llmops.sglang).

On the controller (the sweep delegates these tasks to localhost, a local connection) the module's
``run(params, check_mode)`` is called in the worker that runs the task: the same arguments
(validated by the module's own spec) and the same result, without starting a Python process and
shipping an AnsiballZ payload for it. Anywhere else the module runs as usual, and so does a
module with a ``no_log`` option: AnsibleModule masks those values in its result and invocation,
and a direct call would not.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.plugins.action import ActionBase

from ansible_collections.llmops.sglang.plugins.module_utils.module_runner import ModuleFailed


def has_secret_option(argument_spec):
    """Whether any option of the spec, nested ones included, is ``no_log``."""
    for option in (argument_spec or {}).values():
        if option.get('no_log') or has_secret_option(option.get('options')):
            return True
    return False


class InProcessModuleAction(ActionBase):
    """Subclasses set ``MODULE``: the imported module (ARGUMENT_SPEC, MODULE_KWARGS, run)."""

    MODULE = None
    _supports_check_mode = True
    _supports_async = False

    def run(self, tmp=None, task_vars=None):
        result = super(InProcessModuleAction, self).run(tmp, task_vars)
        if self._connection.transport != 'local' or has_secret_option(self.MODULE.ARGUMENT_SPEC):
            result.update(self._execute_module(task_vars=task_vars))
            return result
        validator = ArgumentSpecValidator(self.MODULE.ARGUMENT_SPEC, **self.MODULE.MODULE_KWARGS)
        validated = validator.validate(self._task.args)
        if validated.error_messages:
            result.update(failed=True, msg='; '.join(validated.error_messages))
            return result
        try:
            result.update(self.MODULE.run(validated.validated_parameters, bool(self._task.check_mode)))
        except ModuleFailed as exc:
            result.update(exc.result)
            result.update(failed=True, msg=exc.msg)
        if not self._task.diff:
            result.pop('diff', None)  # as module_runner: a run()'s diff is shown in diff mode only
        result.setdefault('changed', False)
        return result
