# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.sglang contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Whose failure a failed benchmark is (private to llmops.sglang): the configuration's or the infrastructure's.

The sweep records only a configuration's own verdict (roles/sweep/tasks/classify.yml); anything
else stops the host's sweep with nothing recorded, and a re-run measures the configuration again.
Two views decide: what the benchmark saw (its ``fault``, sglang_bench's RETURN) and what systemd
shows of the unit before and after it. Both are needed: a server restarted from outside and one that
crashed look alike to the client (its requests fail), not to systemd.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

# Start failures (diagnosis.py keys) that every step count shares, since they say something of the host or
# of the settings the sweep does not vary, not of the configuration: each step count would fail the same way
# until that is fixed. A sweep records none of them as a verdict; it stops as for any infrastructure fault
# (classify_start_failure, which roles/sweep/tasks/classify.yml calls as the spec_sweep_start_failure filter).
#   bad_argument       SGLang's parser refused a flag: the sweep's own speculative flags are valid by
#                      construction, so it is one of the inventory's, on every step count's command line
#   unbalanced_memory  another process holds (part of) a GPU: goes away once it is free
#   too_few_gpus       more tensor-parallel ranks than GPUs the server can see
#   systemd_setup      systemd failed at a step of its own before SGLang ran (219/CGROUP once the role's two
#                      starts again did not help, 203/EXEC, 200/CHDIR...): the host's or the unit's
SHARED_START_DIAGNOSES = ('bad_argument', 'unbalanced_memory', 'too_few_gpus', 'systemd_setup')
# Start failures that name no cause: a server that exited with nothing the diagnosis knows in its journal,
# or one that never got ready. The configuration's, or the host's at that moment (a driver fault, a full
# disk, a slow shared file system)? A control tells: the last good configuration, which the service role
# starts again after the failure (its rollback). If it gets ready on the same host, with the same settings
# but the ones a sweep varies, the host can serve and the failure is the configuration's; if it does not,
# or there is no such control, the sweep records nothing and stops (classify_start_failure).
AMBIGUOUS_START_DIAGNOSES = ('unknown', 'timeout')
# The service role's settings in which the step counts (and the schedule) of one sweep differ.
SWEPT_SETTINGS = ('sglang_service_speculative_algorithm', 'sglang_service_speculative_num_steps',
                  'sglang_service_speculative_num_draft_tokens', 'sglang_service_speculative_adaptive',
                  'sglang_service_speculative_adaptive_config')

# What sglang_bench's fault says of its own accord: nothing of the configuration.
_BENCH_FAULTS = {
    'stalled': 'found the server stalled',
    'implausible': 'measured figures the server cannot produce',
    'busy': 'could not get the server to itself',
    'starved': 'was starved of CPU on its host',
}
# systemd's Result of a unit that ended without a failure of its own: a stop asked of systemd
# (or a SIGTERM), or such a stop that outlasted TimeoutStopSec. SGLang 0.5.23 drains its requests
# on SIGTERM (tokenizer_manager.sigterm_watchdog) and a benchmark keeps sending them.
_NOT_A_CRASH_RESULTS = ('', 'success', 'timeout')
# What SGLang 0.5.23 writes before it ends its own process tree: a child's exception (scheduler.py
# run_scheduler_process, the detokenizer's, the tokenizer manager's, the DP controller's), a dead child
# (utils/watchdog.py SubprocessWatchdog), the SIGQUIT that follows (entrypoints/engine.py
# launch_phase_sigquit_handler, tokenizer_manager.py running_phase_sigquit_handler, which then
# kill_process_tree: the main process SIGKILLs itself).
SGLANG_CRASH_PATTERN = (r' hit an exception: |SIGQUIT received[.] |Received sigquit from a child process'
                        r'|Subprocess .* crashed with exit code')
# systemd's lines about the invocation: how its main process ended, and an OOM kill (systemd 252).
SYSTEMD_END_PATTERN = r': Main process exited, code=|killed by the OOM killer|with result .oom-kill.'
_SIGKILLED = 'Main process exited, code=killed, status=9/KILL'


def _line(lines, index, default=''):
    try:
        return str(lines[index]).strip()
    except (IndexError, TypeError):
        return default


def _count(text):
    try:
        return int(text)
    except (TypeError, ValueError):
        return 0


def _killed_from_outside(journal):
    """Whether the served invocation's main process died of a SIGKILL that SGLang did not send itself:
    systemd saw it killed by signal 9, SGLang logged none of its crash lines and no OOM kill happened."""
    if journal is None:
        return False
    lines = [str(line) for line in journal]
    own = any(re.search(SGLANG_CRASH_PATTERN, line) for line in lines)
    oom = any('OOM killer' in line or 'oom-kill' in line for line in lines)
    return any(_SIGKILLED in line for line in lines) and not own and not oom


def classify_bench_failure(failed, before, after, reachable=True, label='the configuration', host='the host',
                           journal=None):
    """Classify a failed benchmark.

    ``failed``: the failed task's result (``msg``, ``fault``). ``before``, ``after``: the sweep's unit
    probe lines as the deployment left them and after the failure (InvocationID, NRestarts,
    ActiveState, Result; ``after`` then the system's state, ``stopping`` while it shuts down).
    ``reachable``: whether the host answered after the failure. ``journal``: the lines of the served
    invocation's journal (its own and systemd's about it) that match SGLANG_CRASH_PATTERN or
    SYSTEMD_END_PATTERN, or None when it could not be read: a crash is the configuration's verdict
    unless systemd saw a SIGKILL that SGLang did not send itself.

    Returns ``{'fault': message or None, 'diagnosis': 'crashed_under_load' | 'server_error' | None,
    'replaced': bool, 'crashed': bool}``: exactly one of fault (infrastructure) and diagnosis (the
    configuration's verdict) is set.
    """
    failed = failed or {}
    before = list(before or [])
    after = list(after or [])
    msg = str(failed.get('msg') or '')
    fault = failed.get('fault')
    # Another process serves (a new invocation or restart count), or none does.
    replaced = after[:2] != before[:2] or _line(after, 2) != 'active'
    # The server died on its own: systemd restarted it after a failure (Restart=on-failure counts it
    # in NRestarts; SGLang 0.5.23 ends a failed scheduler by SIGKILLing its own process tree), or it
    # is down with a failure result (signal, exit-code, core-dump, oom-kill; "activating" while the
    # restart waits). A manual restart resets NRestarts to 0 and starts with result "success".
    crashed = _count(_line(after, 1)) > _count(_line(before, 1)) or _line(after, 3) not in _NOT_A_CRASH_RESULTS
    result = {'fault': None, 'diagnosis': None, 'replaced': replaced, 'crashed': crashed}

    def infrastructure(text):
        result['fault'] = text
        return result

    if not reachable:
        return infrastructure('host %s became unreachable during the benchmark of %s (%s)' % (host, label, msg[:300]))
    if _line(after, 4) == 'stopping':
        return infrastructure('host %s is shutting down (benchmark of %s: %s)' % (host, label, msg[:300]))
    if replaced and not crashed:
        return infrastructure(
            'the server of %s was %s during its benchmark by something else than the sweep (a systemctl stop or '
            'restart, another deployment, a SIGTERM), not by a failure of its own (systemd: %s, result %s, no '
            'automatic restart); the benchmark: %s'
            % (label, 'restarted' if _line(after, 2) == 'active' else 'stopped', _line(after, 2, '?') or '?',
               _line(after, 3, '?') or '?', msg[:300]))
    if fault in _BENCH_FAULTS or fault is None:
        return infrastructure('benchmark of %s %s: %s' % (label, _BENCH_FAULTS.get(fault, 'failed'), msg[:400] or 'unknown error'))
    if not replaced and fault != 'server_error':
        return infrastructure('benchmark of %s lost its connection to a server that is still running (%s): %s'
                              % (label, fault, msg[:300]))
    if crashed and _killed_from_outside(journal):
        return infrastructure(
            'the server of %s was killed with SIGKILL during its benchmark by something outside SGLang (an operator\'s '
            'kill -9, another tool, a container runtime): systemd saw its main process killed by signal 9, but its log '
            'has none of the lines SGLang 0.5.23 writes before it ends its own process tree ("... hit an exception", '
            '"SIGQUIT received") and the kernel\'s OOM killer was not involved; the benchmark: %s' % (label, msg[:300]))
    # The server crashed under the load, or it still runs and answered with its own errors.
    result['diagnosis'] = 'server_error' if fault == 'server_error' and not crashed else 'crashed_under_load'
    return result


def _describe(speculative):
    if not isinstance(speculative, dict) or not speculative.get('algorithm'):
        return 'no speculative decoding'
    return '%s steps %s, topk %s, draft tokens %s' % (speculative.get('algorithm'), speculative.get('num_steps'),
                                                      speculative.get('eagle_topk'), speculative.get('num_draft_tokens'))


def classify_start_failure(failure, rollback=None, label='the configuration'):
    """Classify a failed start of the sweep: the configuration's verdict, or a fault the sweep stops on.

    ``failure``: the service role's ``sglang_service_failure`` (diagnosis, message, remedy, evidence,
    changed_settings, rolled_back_to, rollback_error, rollback_awaited, rollback_time_to_ready_s).
    ``rollback``: sglang_service_wait's result for the last good configuration's start that the role left
    unawaited (``ready``, ``time_to_ready_s``, ``msg``), or None when it was not awaited.

    Returns ``{'verdict': the failure to record (kind start) or None, 'fault': message or None,
    'await_rollback': bool}``. With ``await_rollback`` true neither is set yet: the answer depends on the
    rolled-back configuration, to be awaited and passed as ``rollback``.
    """
    failure = dict(failure or {})
    diagnosis = failure.get('diagnosis') or 'unknown'
    result = {'verdict': None, 'fault': None, 'await_rollback': False}
    if diagnosis in SHARED_START_DIAGNOSES:
        result['fault'] = ('%s could not start for a reason every step count shares (the host or settings the sweep '
                           'does not vary), not of the configuration (%s): %s %s Journal: %s'
                           % (label, diagnosis, failure.get('message') or '', failure.get('remedy') or '',
                              failure.get('evidence') or '-'))
        return result
    if diagnosis not in AMBIGUOUS_START_DIAGNOSES:
        result['verdict'] = dict(failure, kind='start')
        return result

    def cannot_tell(why, what_to_do):
        result['fault'] = ('%s failed to start (%s: %s; journal: %s) and whether that is the configuration\'s or the '
                           'host\'s cannot be told: %s%s'
                           % (label, diagnosis, (failure.get('message') or '').rstrip('.'), failure.get('evidence') or '-',
                              why, '. ' + what_to_do if what_to_do else ''))
        return result

    # The caller (classify.yml) ends the message with what was recorded and how to resume.
    deploy_one = ('To have a control, deploy one step count that works with these settings first (playbooks/deploy.yml '
                  '-e spec_steps=N), or leave %s out of sweep_steps' % label)
    changed = failure.get('changed_settings')
    if failure.get('rollback_error'):
        return cannot_tell('the last good configuration did not start again either (%s), so the host cannot serve now'
                           % str(failure['rollback_error'])[:300], '')
    if failure.get('rolled_back_to') is None:
        return cannot_tell('no last good configuration was started again to compare with (none has reached ready on '
                           'this host, or sglang_service_rollback is off)', deploy_one)
    if changed is None:
        return cannot_tell('the last good configuration was recorded without its settings (by an older release), so '
                           'what differs from it is not known', deploy_one)
    unswept = sorted(name for name in changed if name not in SWEPT_SETTINGS)
    if unswept:
        return cannot_tell('the last good configuration differs from it in settings the sweep does not vary (%s), so '
                           'its start would not tell' % ', '.join(unswept), deploy_one)
    control = _describe(failure.get('rolled_back_to'))
    if failure.get('rollback_time_to_ready_s') is not None:
        ready, seconds = True, failure['rollback_time_to_ready_s']
    elif rollback is None:
        result['await_rollback'] = True
        return result
    else:
        ready, seconds = bool(rollback.get('ready')), rollback.get('time_to_ready_s')
    if not ready:
        return cannot_tell('the last good configuration (%s), started again right after, did not get ready either (%s), '
                           'so the host cannot serve now' % (control, str(rollback.get('msg') or '')[:300]), '')
    result['verdict'] = dict(failure, kind='start', control=(
        'The last good configuration (%s), with the same settings but the ones the sweep varies, was started again on '
        'this host right after and was ready in %s s: the host can serve, so the failure is %s\'s.'
        % (control, seconds, label)))
    return result
