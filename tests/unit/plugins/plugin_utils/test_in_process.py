# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.sglang contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The in-process action base: which modules it calls directly, and which it runs as modules."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import types

import pytest
from ansible.plugins.action import ActionBase

from ansible_collections.llmops.sglang.plugins.modules import spec_sweep_decide, spec_sweep_pin, spec_sweep_store
from ansible_collections.llmops.sglang.plugins.plugin_utils import in_process


def test_secret_options_are_found_nested_or_not():
    assert not in_process.has_secret_option({'path': {'type': 'path'}})
    assert in_process.has_secret_option({'token': {'type': 'str', 'no_log': True}})
    assert in_process.has_secret_option({'auth': {'type': 'dict', 'options': {'key': {'type': 'str', 'no_log': True}}}})
    assert not in_process.has_secret_option({'auth': {'type': 'dict', 'options': {'user': {'type': 'str'}}}})
    assert not in_process.has_secret_option(None)


@pytest.mark.parametrize('module', [spec_sweep_decide, spec_sweep_pin, spec_sweep_store])
def test_the_sweep_controller_modules_have_no_secret_and_run_in_process(module):
    assert not in_process.has_secret_option(module.ARGUMENT_SPEC)


def _action(spec, args, transport='local', diff=False):
    """An action of the base class as Ansible would set it up, for a module of spec ``spec`` whose
    own run() echoes its parameters; the module process path returns what AnsibleModule would."""
    calls = []

    def run(params, check_mode):
        calls.append('in_process')
        return {'changed': False, 'echo': params, 'diff': {'before': 'a', 'after': 'b'}}

    class Action(in_process.InProcessModuleAction):
        MODULE = types.SimpleNamespace(ARGUMENT_SPEC=spec, MODULE_KWARGS={}, run=run)

        def _execute_module(self, *args, **kwargs):
            calls.append('module')
            return {'changed': False, 'echo': {'token': 'VALUE_SPECIFIED_IN_NO_LOG_PARAMETER'}}

    action = Action.__new__(Action)
    action._connection = types.SimpleNamespace(transport=transport)
    action._task = types.SimpleNamespace(args=args, check_mode=False, diff=diff)
    return action, calls


@pytest.fixture(autouse=True)
def _base_run(monkeypatch):
    # ActionBase.run checks the task's async and check mode settings against the plugin's; the
    # tasks here are plain ones.
    monkeypatch.setattr(ActionBase, 'run', lambda self, tmp=None, task_vars=None: {})


def test_a_module_without_secrets_is_called_in_the_worker():
    action, calls = _action({'name': {'type': 'str'}}, {'name': 'x'})
    assert action.run(task_vars={}) == {'changed': False, 'echo': {'name': 'x'}}
    assert calls == ['in_process']


def test_a_runs_diff_is_returned_in_diff_mode_only():
    action, dummy = _action({'name': {'type': 'str'}}, {'name': 'x'}, diff=True)
    assert action.run(task_vars={})['diff'] == {'before': 'a', 'after': 'b'}


def test_a_module_with_a_secret_runs_as_a_module_which_masks_it():
    action, calls = _action({'token': {'type': 'str', 'no_log': True}}, {'token': 's3cret'})
    result = action.run(task_vars={})
    assert calls == ['module']
    assert 's3cret' not in repr(result)


def test_off_the_controller_every_module_runs_as_a_module():
    action, calls = _action({'name': {'type': 'str'}}, {'name': 'x'}, transport='ssh')
    action.run(task_vars={})
    assert calls == ['module']
