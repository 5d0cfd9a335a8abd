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
# (roles/sweep/tasks/classify.yml reads the role's copy, _sweep_shared_start_diagnoses; a unit test keeps
# them equal).
#   bad_argument       SGLang's parser refused a flag: the sweep's own speculative flags are valid by
#                      construction, so it is one of the inventory's, on every step count's command line
#   unbalanced_memory  another process holds (part of) a GPU: goes away once it is free
#   too_few_gpus       more tensor-parallel ranks than GPUs the server can see
SHARED_START_DIAGNOSES = ('bad_argument', 'unbalanced_memory', 'too_few_gpus')

# What sglang_bench's fault says of its own accord: nothing of the configuration.
_BENCH_FAULTS = {
    'stalled': 'found the server stalled',
    'implausible': 'measured figures the server cannot produce',
    'busy': 'could not get the server to itself',
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
