# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.sglang contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The sglang_bench_follow action: one task follows a benchmark job to its end, a status line per
look, the job's own result at the end, and a host that stops answering as a failure naming it."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import types

import pytest
from ansible.errors import AnsibleConnectionFailure
from ansible.plugins.action import ActionBase

from ansible_collections.llmops.sglang.plugins.action import sglang_bench_follow as follow_action

ARGS = {'progress_file': '/tmp/p/progress.json', 'job_file': '/root/.ansible_async/j1', 'wait': 5,
        'cleanup': ['/root/.ansible_async/j1', '/tmp/p']}


def _action(looks, args, delegate_to='gpu1'):
    """The action with the remote module replaced by ``looks``: one result (or exception) per call."""
    calls = []

    class Action(follow_action.ActionModule):
        def _execute_module(self, module_name=None, module_args=None, task_vars=None, **kwargs):
            calls.append((module_name, module_args))
            look = looks.pop(0)
            if isinstance(look, Exception):
                raise look
            return look

    action = Action.__new__(Action)
    action._task = types.SimpleNamespace(args=args, check_mode=False, delegate_to=delegate_to)
    return action, calls


@pytest.fixture(autouse=True)
def _base_run(monkeypatch):
    monkeypatch.setattr(ActionBase, 'run', lambda self, tmp=None, task_vars=None: {})


@pytest.fixture()
def shown(monkeypatch):
    lines = []
    monkeypatch.setattr(follow_action.display, 'display', lambda msg, *a, **kw: lines.append(msg))
    return lines


def _running(done):
    return {'changed': False, 'finished': False, 'cleaned': False,
            'bench_progress': {'state': 'running', 'level': 1, 'levels': 1, 'concurrency': 1, 'phase': 'measure',
                               'requests_done': done, 'requests_target': 8, 'output_tok_s': 100.0,
                               'level_elapsed_s': done, 'elapsed_s': done}}


def test_it_looks_until_the_job_ends_and_returns_the_job_result(shown):
    finished = {'changed': False, 'finished': True, 'cleaned': True, 'levels': [{'concurrency': 1}], 'msg': 'measured'}
    action, calls = _action([_running(2), _running(5), dict(finished)],
                            dict(ARGS, follow=True, status_host='node1', status_label='steps 4'))
    result = action.run(task_vars={'inventory_hostname': 'node1'})
    assert result['finished'] and result['levels'] == [{'concurrency': 1}] and result['looks'] == 3
    # The module is given its own options only.
    assert all(name == 'llmops.sglang.sglang_bench_follow' and args == ARGS for name, args in calls)
    assert shown == ['node1 steps 4: level 1/1 concurrency 1 measuring 2/8 requests, 100.0 tok/s, 2 s in the level, 2 s in all',
                     'node1 steps 4: level 1/1 concurrency 1 measuring 5/8 requests, 100.0 tok/s, 5 s in the level, 5 s in all']


def test_a_failed_benchmark_fails_the_task_with_its_message(shown):
    failed = {'failed': True, 'finished': True, 'cleaned': True, 'msg': 'server stalled', 'fault': 'stalled'}
    action, calls = _action([_running(1), failed], dict(ARGS, follow=True))
    result = action.run(task_vars={'inventory_hostname': 'gpu1'})
    assert result['failed'] and result['fault'] == 'stalled' and result['msg'] == 'server stalled'
    assert len(calls) == 2 and len(shown) == 1


def test_a_host_that_stops_answering_fails_the_task_naming_it(shown):
    action, calls = _action([_running(1), AnsibleConnectionFailure('ssh: connect to host 10.0.0.5 port 22: No route to host')],
                            dict(ARGS, follow=True), delegate_to='bench-client')
    result = action.run(task_vars={'inventory_hostname': 'gpu1'})
    assert result['failed'] and result['host_unreachable'] and 'unreachable' not in result
    assert result['msg'].startswith('bench-client became unreachable while it ran the benchmark of gpu1: ssh: connect')


def test_an_unreachable_result_is_a_failure_too(shown):
    action, calls = _action([{'unreachable': True, 'msg': 'Data could not be sent to remote host'}], dict(ARGS, follow=True))
    result = action.run(task_vars={'inventory_hostname': 'gpu1'})
    assert result['failed'] and result['host_unreachable'] and 'unreachable' not in result


def test_it_gives_up_after_the_timeout(shown, monkeypatch):
    clock = iter(range(0, 1000, 20))
    monkeypatch.setattr(follow_action.time, 'monotonic', lambda: float(next(clock)))
    action, calls = _action([_running(n) for n in range(10)], dict(ARGS, follow=True, timeout=50))
    result = action.run(task_vars={'inventory_hostname': 'gpu1'})
    assert result['failed'] and not result['finished']
    assert result['msg'] == 'the benchmark job on gpu1 did not end within 50 s'
    assert 2 <= len(calls) <= 3


def test_without_follow_it_looks_once(shown):
    action, calls = _action([_running(3)], dict(ARGS))
    result = action.run(task_vars={'inventory_hostname': 'gpu1'})
    assert not result['finished'] and len(calls) == 1 and shown == []


def test_a_bad_follow_option_is_refused_by_name(shown):
    action, calls = _action([], dict(ARGS, follow='sometimes'))
    result = action.run(task_vars={'inventory_hostname': 'gpu1'})
    assert result['failed'] and 'follow' in result['msg'] and calls == []


def test_a_worker_whose_controller_died_stops_following(shown, monkeypatch):
    parents = iter([100, 100, 100, 1, 1])
    monkeypatch.setattr(follow_action.os, 'getppid', lambda: next(parents))
    action, calls = _action([_running(n) for n in range(10)], dict(ARGS, follow=True))
    result = action.run(task_vars={'inventory_hostname': 'gpu1'})
    assert result['failed'] and result['msg'] == 'ansible-playbook ended while it followed the benchmark on gpu1'
    assert len(calls) == 2 and result['looks'] == 2
