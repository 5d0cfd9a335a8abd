# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.sglang contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Whose failure a failed benchmark is: each case of the sweep's classification (module_utils/sweep_classify.py).

The unit probe lines are what systemd 252 (Debian 12) showed on a test host for each event (InvocationID,
NRestarts, ActiveState, Result, then systemctl is-system-running): a SIGKILL of the unit's processes with
Restart=on-failure shows "activating" (auto-restart) with result "signal", then a new invocation with
NRestarts 1 and result "success"; a `systemctl restart` a new invocation with NRestarts reset to 0 and
result "success"; a `systemctl stop` or a SIGTERM of the main process "inactive" with result "success".
Molecule scenario sweep_faults checks the restart and the crash end to end under a real systemd.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.llmops.sglang.plugins.filter.spec_sweep_bench_failure import FilterModule
from ansible_collections.llmops.sglang.plugins.module_utils.sweep_classify import classify_bench_failure

BEFORE = ['45c83e0f', '0', 'active', 'success']
LOST = {'msg': 'some requests failed: concurrency 1: 2 of 2 requests failed (connection closed)', 'fault': 'connection'}
REFUSED = {'msg': 'cannot connect to http://127.0.0.1:30000', 'fault': 'unreachable'}
ERRORS = {'msg': 'concurrency 4: 3 of 8 requests failed (HTTP 500)', 'fault': 'server_error'}


def after(invocation='45c83e0f', restarts='0', state='active', result='success', system='running'):
    return [invocation, restarts, state, result, system]


def classify(failed, after_lines, **kwargs):
    return classify_bench_failure(failed, BEFORE, after_lines, label='steps 4', host='gpu1', **kwargs)


@pytest.mark.parametrize('failed, after_lines', [
    # SIGKILLed (SGLang's failed scheduler kills its own tree): systemd waits RestartSec to restart it...
    (LOST, after('', '0', 'activating', 'signal')),
    # ...and then runs it again, counted in NRestarts.
    (LOST, after('3c613e5e', '1', 'active', 'success')),
    (REFUSED, after('3c613e5e', '1', 'active', 'success')),
    # Restart=no: it stays down with its failure result.
    (LOST, after('', '0', 'failed', 'exit-code')),
    (LOST, after('', '0', 'failed', 'core-dump')),
    # The kernel's OOM killer ended it.
    (LOST, after('', '0', 'failed', 'oom-kill')),
    # It crashed and its errors reached the client first.
    (ERRORS, after('3c613e5e', '1', 'active', 'success')),
], ids=['auto-restart-pending', 'auto-restarted', 'auto-restarted-refused', 'exit-code', 'core-dump', 'oom-kill',
        'crash-with-errors'])
def test_a_crash_under_load_is_the_configurations_verdict(failed, after_lines):
    found = classify(failed, after_lines)
    assert found['diagnosis'] == 'crashed_under_load', found
    assert found['fault'] is None
    assert found['crashed'] and found['replaced']


def test_errors_of_a_server_that_still_runs_are_its_verdict():
    found = classify(ERRORS, after())
    assert found == {'fault': None, 'diagnosis': 'server_error', 'replaced': False, 'crashed': False}


@pytest.mark.parametrize('after_lines, how', [
    # systemctl restart: a new invocation, NRestarts reset (here from 0; from 2 below), result success.
    (after('be2553b3', '0', 'active', 'success'), 'restarted'),
    # An earlier crash counted 2 restarts at deployment time; the manual restart resets the count.
    (None, 'restarted'),
    # systemctl stop, or a SIGTERM to the main process (a clean exit, no Restart=on-failure).
    (after('', '0', 'inactive', 'success'), 'stopped'),
    # A stop that outlasted TimeoutStopSec (SGLang drains on SIGTERM while the benchmark sends).
    (after('', '0', 'failed', 'timeout'), 'stopped'),
], ids=['restart', 'restart-resets-count', 'stop', 'stop-timed-out'])
def test_a_stop_or_restart_from_outside_is_infrastructure(after_lines, how):
    before = BEFORE
    if after_lines is None:
        before = ['45c83e0f', '2', 'active', 'success']
        after_lines = after('be2553b3', '0', 'active', 'success')
    found = classify_bench_failure(LOST, before, after_lines, label='steps 4', host='gpu1')
    assert found['diagnosis'] is None, found
    assert found['fault'].startswith('the server of steps 4 was %s during its benchmark by something else than the sweep' % how)
    assert 'connection closed' in found['fault']  # the benchmark's own message goes along
    assert found['replaced'] and not found['crashed']


def test_an_unreachable_host_is_infrastructure_whatever_the_benchmark_saw():
    found = classify(ERRORS, [], reachable=False)
    assert found['diagnosis'] is None
    assert found['fault'].startswith('host gpu1 became unreachable during the benchmark of steps 4')


def test_a_host_shutting_down_is_infrastructure():
    found = classify(LOST, after('', '0', 'inactive', 'success', 'stopping'))
    assert found['diagnosis'] is None
    assert found['fault'].startswith('host gpu1 is shutting down')


@pytest.mark.parametrize('fault, words', [
    ('stalled', 'found the server stalled'),
    ('implausible', 'measured figures the server cannot produce'),
    ('busy', 'could not get the server to itself'),
    ('starved', 'was starved of CPU on its host'),
    (None, 'failed'),
])
def test_what_the_benchmark_found_of_its_own_accord_is_infrastructure(fault, words):
    found = classify({'msg': 'no token for 30 s', 'fault': fault}, after())
    assert found['diagnosis'] is None
    assert found['fault'] == 'benchmark of steps 4 %s: no token for 30 s' % words


@pytest.mark.parametrize('failed', [LOST, REFUSED], ids=['connection', 'unreachable'])
def test_a_lost_connection_to_a_server_that_still_runs_is_infrastructure(failed):
    found = classify(failed, after())
    assert found['diagnosis'] is None
    assert found['fault'].startswith('benchmark of steps 4 lost its connection to a server that is still running (%s)' % failed['fault'])


def test_the_filter_is_the_function():
    found = FilterModule().filters()['spec_sweep_bench_failure'](LOST, BEFORE, after('', '0', 'activating', 'signal'), label='steps 4')
    assert found['diagnosis'] == 'crashed_under_load'


# The served invocation's end as `journalctl INVOCATION_ID=ID + _SYSTEMD_INVOCATION_ID=ID` shows it (systemd 252,
# SGLang 0.5.23's lines), filtered by the role's pattern (roles/sweep/vars/main.yml).
KILLED = 'sglang-qwen.service: Main process exited, code=killed, status=9/KILL'
SCHEDULER = '[2026-12-06 15:30:46 TP0] Scheduler hit an exception: Traceback (most recent call last):'
SIGQUIT = '[2026-12-06 15:30:46] SIGQUIT received. signum=None, frame=None. It usually means one child failed.'
WATCHDOG = '[2026-12-06 15:30:46] Subprocess scheduler_0 (pid=412) crashed with exit code -11. Triggering SIGQUIT for cleanup...'
LAUNCH = '[2026-12-06 15:30:46] Received sigquit from a child process. It usually means the child failed.'
OOM = 'sglang-qwen.service: A process of this unit has been killed by the OOM killer.'
RESTARTED = after('3c613e5e', '1', 'active', 'success')


@pytest.mark.parametrize('journal', [
    [SCHEDULER, SIGQUIT, KILLED],          # a scheduler's exception: SGLang kills its own tree
    [WATCHDOG, SIGQUIT, KILLED],           # a child died without a Python exception (NCCL, segfault)
    [LAUNCH, KILLED],                      # before the first request
    [OOM, KILLED],                         # the kernel's OOM killer
    ['sglang-qwen.service: Main process exited, code=dumped, status=11/SEGV'],
    ['sglang-qwen.service: Main process exited, code=exited, status=1/FAILURE'],
    [],                                    # nothing matched (journald lost it): no evidence of an outside kill
    None,                                  # the journal could not be read
], ids=['scheduler-exception', 'child-died', 'launch-phase', 'oom-killer', 'segfault', 'exit-code', 'no-lines', 'unread'])
def test_a_crash_with_sglangs_own_end_or_without_an_outside_sigkill_is_the_configurations_verdict(journal):
    found = classify(LOST, RESTARTED, journal=journal)
    assert found['diagnosis'] == 'crashed_under_load', found
    assert found['fault'] is None


@pytest.mark.parametrize('after_lines', [RESTARTED, after('', '0', 'activating', 'signal'), after('', '0', 'failed', 'signal')],
                         ids=['auto-restarted', 'auto-restart-pending', 'restart-no'])
def test_a_sigkill_sglang_did_not_send_itself_is_infrastructure(after_lines):
    found = classify(LOST, after_lines, journal=[KILLED, "sglang-qwen.service: Failed with result 'signal'."])
    assert found['diagnosis'] is None, found
    assert found['fault'].startswith('the server of steps 4 was killed with SIGKILL during its benchmark by something outside SGLang')
    assert 'connection closed' in found['fault']


def test_the_roles_journal_pattern_is_the_classifiers():
    """classify.yml greps the journal on the host with the role's pattern; it must select what the classifier reads."""
    import os
    import re
    import yaml
    from ansible_collections.llmops.sglang.plugins.module_utils import sweep_classify
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, '..', '..', '..', '..', 'roles', 'sweep', 'vars', 'main.yml')) as fh:
        pattern = yaml.safe_load(fh)['_sweep_journal_end_pattern']
    assert pattern == sweep_classify.SGLANG_CRASH_PATTERN + '|' + sweep_classify.SYSTEMD_END_PATTERN
    for line in (KILLED, SCHEDULER, SIGQUIT, WATCHDOG, LAUNCH, OOM, "sglang-qwen.service: Failed with result 'oom-kill'."):
        assert re.search(pattern, line), line
    for line in ('[2026-12-06 15:30:40 TP0] Decode batch. #running-req: 2', 'Started sglang-qwen.service - SGLang'):
        assert not re.search(pattern, line), line


def test_the_start_diagnoses_the_sweep_weighs_are_diagnoses():
    from ansible_collections.llmops.sglang.plugins.module_utils import sweep_classify
    from ansible_collections.llmops.sglang.plugins.module_utils.diagnosis import DIAGNOSIS_KEYS
    assert set(sweep_classify.SHARED_START_DIAGNOSES) <= set(DIAGNOSIS_KEYS)
    assert set(sweep_classify.AMBIGUOUS_START_DIAGNOSES) <= set(DIAGNOSIS_KEYS)
    assert not set(sweep_classify.SHARED_START_DIAGNOSES) & set(sweep_classify.AMBIGUOUS_START_DIAGNOSES)


def test_the_swept_settings_are_role_variables():
    """Each setting the control may differ in is one the service role reports in changed_settings."""
    import os
    import yaml
    from ansible_collections.llmops.sglang.plugins.module_utils import sweep_classify
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, '..', '..', '..', '..', 'roles', 'sglang_service', 'defaults', 'main.yml')) as fh:
        defaults = yaml.safe_load(fh)
    assert set(sweep_classify.SWEPT_SETTINGS) <= set(defaults)


# What the service role's sglang_service_failure holds after a failed start in a sweep (measure.yml:
# the rollback started, not awaited).
STEPS_3 = {'algorithm': 'EAGLE', 'num_steps': 3, 'eagle_topk': 1, 'num_draft_tokens': 4, 'draft_model_path': None}


def start_failure(diagnosis='unknown', **changes):
    failure = {
        'diagnosis': diagnosis, 'message': 'The server exited during startup and the journal shows no known cause.',
        'remedy': 'Read the journal lines below.', 'evidence': None, 'rolled_back_to': STEPS_3, 'rollback_error': None,
        'rollback_awaited': False, 'rollback_time_to_ready_s': None,
        'changed_settings': {'sglang_service_speculative_num_steps': {'asked': 5, 'last_good': 3},
                             'sglang_service_speculative_num_draft_tokens': {'asked': 6, 'last_good': 4}}}
    failure.update(changes)
    return failure


def start(failure, rollback=None):
    from ansible_collections.llmops.sglang.plugins.filter.spec_sweep_start_failure import FilterModule as StartFilters
    return StartFilters().filters()['spec_sweep_start_failure'](failure, rollback=rollback, label='steps 5')


@pytest.mark.parametrize('diagnosis', ['not_enough_memory', 'cuda_out_of_memory', 'cuda_graph_capture_failed',
                                       'verification_mismatch', 'speculative_adaptive_disabled'])
def test_a_start_failure_with_a_known_cause_of_the_configuration_is_its_verdict(diagnosis):
    found = start(start_failure(diagnosis))
    assert found['fault'] is None and not found['await_rollback']
    assert found['verdict']['kind'] == 'start' and found['verdict']['diagnosis'] == diagnosis


@pytest.mark.parametrize('diagnosis', ['bad_argument', 'unbalanced_memory', 'too_few_gpus', 'systemd_setup'])
def test_a_start_failure_every_step_count_shares_is_a_fault(diagnosis):
    found = start(start_failure(diagnosis, message='Another process holds GPU 3.', remedy='Free GPU 3.',
                                evidence='RuntimeError: ...'))
    assert found['verdict'] is None and not found['await_rollback']
    assert found['fault'].startswith('steps 5 could not start for a reason every step count shares')
    assert '(%s): Another process holds GPU 3. Free GPU 3. Journal: RuntimeError: ...' % diagnosis in found['fault']


@pytest.mark.parametrize('diagnosis', ['unknown', 'timeout'])
def test_a_start_failure_with_no_known_cause_waits_for_the_control_and_is_the_verdict_once_it_got_ready(diagnosis):
    failure = start_failure(diagnosis)
    first = start(failure)
    assert first == {'verdict': None, 'fault': None, 'await_rollback': True}
    found = start(failure, rollback={'ready': True, 'time_to_ready_s': 41.5})
    assert found['fault'] is None
    assert found['verdict']['diagnosis'] == diagnosis and found['verdict']['kind'] == 'start'
    assert found['verdict']['control'] == (
        'The last good configuration (EAGLE steps 3, topk 1, draft tokens 4), with the same settings but the ones the '
        'sweep varies, was started again on this host right after and was ready in 41.5 s: the host can serve, so the '
        'failure is steps 5\'s.')


def test_a_control_the_role_awaited_itself_needs_no_second_wait():
    found = start(start_failure(rollback_awaited=True, rollback_time_to_ready_s=12.0))
    assert not found['await_rollback'] and 'was ready in 12.0 s' in found['verdict']['control']


@pytest.mark.parametrize('changes, rollback, why', [
    ({}, {'ready': False, 'msg': 'sglang-qwen.service exited during startup'},
     'the last good configuration (EAGLE steps 3, topk 1, draft tokens 4), started again right after, did not get '
     'ready either (sglang-qwen.service exited during startup), so the host cannot serve now'),
    ({'rolled_back_to': None, 'rollback_error': 'timed out'}, None,
     'the last good configuration did not start again either (timed out)'),
    ({'rolled_back_to': None, 'rollback_awaited': None}, None,
     'no last good configuration was started again to compare with'),
    ({'changed_settings': None}, None, 'the last good configuration was recorded without its settings'),
    ({'changed_settings': {'sglang_service_speculative_num_steps': {'asked': 5, 'last_good': 3},
                           'sglang_service_sim_profile': {'asked': 'b.yaml', 'last_good': 'a.yaml'},
                           'sglang_service_speculative_eagle_topk': {'asked': 1, 'last_good': 2}}}, None,
     'the last good configuration differs from it in settings the sweep does not vary (sglang_service_sim_profile, '
     'sglang_service_speculative_eagle_topk), so its start would not tell'),
], ids=['control-not-ready', 'rollback-failed', 'nothing-to-roll-back-to', 'control-without-settings', 'other-settings'])
def test_a_start_failure_with_no_known_cause_and_no_control_that_got_ready_is_a_fault(changes, rollback, why):
    found = start(start_failure(**changes), rollback=rollback)
    assert found['verdict'] is None and not found['await_rollback']
    assert found['fault'].startswith('steps 5 failed to start (unknown: The server exited during startup and the journal '
                                     'shows no known cause; journal: -) and ')
    assert "whether that is the configuration's or the host's cannot be told: " + why in found['fault']
