# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.sglang contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One body for a module that also runs in-process on the controller (private to llmops.sglang).

The sweep's controller modules (spec_sweep_store, spec_sweep_decide) are called once or twice per
configuration. Run as modules they cost a Python start and an AnsiballZ payload each (about 0.4 s);
their action plugins (plugins/action/) run the same ``run(params, check_mode)`` inside the worker
instead when the task runs on the controller. A module built this way states:

- ``ARGUMENT_SPEC`` and ``MODULE_KWARGS`` (mutually_exclusive, required_if, ...: what AnsibleModule
  and ArgumentSpecValidator both take);
- ``run(params, check_mode)``, which returns the result dict or raises ``ModuleFailed``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.module_utils.basic import AnsibleModule


class ModuleFailed(Exception):
    """A module's failure: ``msg`` and the result keys that go with it."""

    def __init__(self, msg, **result):
        super(ModuleFailed, self).__init__(msg)
        self.msg = msg
        self.result = result


def run_as_module(argument_spec, run, **module_kwargs):
    """The module's main(): parse the arguments, call ``run`` and exit with its result or failure."""
    module = AnsibleModule(argument_spec=argument_spec, supports_check_mode=True, **module_kwargs)
    try:
        result = run(module.params, module.check_mode)
    except ModuleFailed as exc:
        module.fail_json(msg=exc.msg, **exc.result)
    if not module._diff:
        result.pop('diff', None)  # a run() may return its diff; it is shown in diff mode only
    module.exit_json(**result)
