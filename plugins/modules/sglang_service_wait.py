#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.sglang contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: sglang_service_wait
short_description: Wait for an SGLang systemd unit to be ready, diagnose crashes, verify its configuration
version_added: 0.1.0
description:
  - Polls the server's C(/health_generate) (a one-token generation, so it is only 200 once the
    server can really serve) while watching the unit in systemd (C(ActiveState), C(SubState),
    C(Result), C(NRestarts), C(MainPID)).
  - A crash is noticed on the next poll, not at the end of the timeout, whether the unit ends up
    C(failed) or C(Restart=) brings it back to C(activating) (C(NRestarts) rises, C(MainPID) changes or
    C(SubState) is C(auto-restart)).
  - On a crash it reads the journal the unit wrote since O(journal_cursor) and names the cause
    (bad_argument, not_enough_memory, cuda_graph_capture_failed, too_few_gpus, cuda_out_of_memory,
    unbalanced_memory, systemd_setup or unknown) with SGLang's own remedy and the last journal lines; a timeout is
    diagnosed as C(timeout).
  - A start whose main process systemd could not move into the unit's cgroup (exit status 219/CGROUP, before
    SGLang ran; most often the kernel's EBUSY while the previous invocation's cgroup is still being removed) is
    started again, up to twice (RV(setup_retries)), instead of being reported as the server's crash.
  - Once ready it reads C(/server_info) (C(/get_server_info) on servers older than SGLang 0.5.23,
    which deprecates that name) and compares it with O(expect); any difference fails with the
    diagnosis C(verification_mismatch), except a server that reports C(speculative_adaptive) false although
    O(expect) has it true (SGLang 0.5.23 turns adaptive off at start and only logs why), which fails as
    C(speculative_adaptive_disabled) with SGLang's reason from the journal.
  - With O(start), it first starts the unit (after C(systemctl daemon-reload) with O(daemon_reload)) unless
    it is already active or activating, so that a deployment costs one remote call for start and wait.
  - With O(stop) as well, it first stops the unit and waits until its processes and GPUs are free, as
    M(llmops.sglang.sglang_service_stop) does, so that the stop and the start of a restart are one remote call;
    a controller interrupted between two tasks cannot leave the server stopped, and a lost connection
    (C(SIGHUP)) does not end the module between the stop and the start.
  - Failures return the same keys as success plus C(diagnosis), so that a C(rescue) can read them
    from C(ansible_failed_result).
author:
  - llmops.sglang contributors (@llmops)
options:
  url:
    description: Base URL of the server, for example C(http://127.0.0.1:30000).
    type: str
    required: true
  api_key:
    description: SGLang API key (C(--api-key)); sent as a Bearer token to endpoints that need it.
    type: str
  timeout:
    description: Seconds to wait for readiness before failing with the diagnosis C(timeout).
    type: int
    default: 1800
  poll_interval:
    description: Seconds between two looks at systemd and the health endpoint.
    type: float
    default: 1.0
  journal_cursor:
    description:
      - Journal cursor taken just before the start (see M(llmops.sglang.sglang_service_stop)).
      - Only lines after it are diagnosed, so that an older crash is not blamed. Without it the
        unit's last O(journal_lines_max) lines are read.
    type: str
  expect:
    description:
      - Server arguments the running server must report, for example C(tp_size), C(kv_cache_dtype),
        C(speculative_algorithm), C(speculative_num_steps). Keys whose value is null are skipped.
      - C(NEXTN) and C(EAGLE) compare equal (SGLang rewrites NEXTN to EAGLE), so do C(bf16) and C(bfloat16).
    type: dict
    default: {}
  start:
    description:
      - Start the unit (C(systemctl start)) before waiting, unless it is already active or activating; the
        result is C(changed) when it was started.
      - In check mode a unit that would be started is not, and nothing is waited for (C(ready) false).
    type: bool
    default: false
  daemon_reload:
    description:
      - Run C(systemctl daemon-reload) first (a changed unit file). Not in check mode.
      - Without it the module still reloads when systemd says the unit file changed on disk since it was
        loaded (C(NeedDaemonReload), for example a run interrupted between writing the unit and starting it).
    type: bool
    default: false
  stop:
    description:
      - Stop the unit first and wait until its processes and GPUs are free (see
        M(llmops.sglang.sglang_service_stop)), clear its failed state, then start it (O(start) is implied).
      - The journal is then read from the stop on, and O(journal_cursor) is not needed.
      - O(gpus), O(gpu_memory_used_max_mib) and O(nvidia_smi_timeout) apply only with O(stop).
      - In check mode nothing is stopped or started; the result is C(changed), as the unit would be started either way.
    type: bool
    default: false
  stop_timeout:
    description: With O(stop), seconds to wait for the processes and GPUs to be released after C(systemctl stop).
    type: int
    default: 300
  wait:
    description:
      - Wait for readiness, verify and keep O(keep_files) (the default). With V(false) the module returns right after
        the stop and start it made (O(start) or O(stop) is then required), with C(ready) false and the O(watchdog)
        armed, leaving the server to come up alone.
      - For a start the caller does not need to see ready because another deployment replaces it next (a sweep's
        rollback after a failed configuration); it saves waiting for a model load whose server is stopped again
        soon after. The O(watchdog) deadline stays armed, as after any start, until a later call sees the server ready.
    type: bool
    default: true
  watchdog:
    description:
      - A service unit (for example the role's C(<name>-rollback.service)) that systemd starts if a start this module
        made is not ready O(timeout) plus O(watchdog_grace) seconds later, because nobody watches it any more (the
        controller was interrupted or lost its connection while a configuration that hangs was starting).
      - Armed as a transient timer of the same name (C(systemd-run --on-active)) right after the start, disarmed
        (C(systemctl stop NAME.timer)) before a stop or start and once the server is ready and verified. After a failure it
        stays armed, so that the start is rolled back by the host should the caller's own rollback never come.
      - A timer that cannot be armed is a warning, not a failure of the deployment.
    type: str
  watchdog_grace:
    description: Seconds after O(timeout) before the O(watchdog) fires, time for the caller's own rollback of a failed start.
    type: int
    default: 120
  watch_lock:
    description:
      - A file (created if missing) on which this module holds a shared C(flock) from before its stop to its end, so that
        a guard started meanwhile (the unit's C(OnFailure=), the O(watchdog)) can tell that the unit is watched and leave
        what fails to this module and its caller. The lock goes with this process.
      - A unit fails under a watched deployment without any fault of a configuration; SGLang drains on C(SIGTERM) and keeps
        accepting requests, so a stop under steady traffic ends at C(TimeoutStopSec)'s C(SIGKILL), which systemd
        records as a failure.
      - The role's C(<name>-rollback.service) checks the same path (C(--watch-lock)). Not taken in check mode.
    type: path
  keep_files:
    description:
      - Files to write once the server is ready and verified, and only then, in the same call (for example the role's copy
        of the configuration that last reached ready, which its rollback restores). Each entry has the keys of
        O(llmops.sglang.sglang_service_files#module:files) and is handled as that module handles it, without a diff.
      - Not written in check mode, nor when the server is not ready or runs another configuration than O(expect).
      - Their content may hold O(api_key), which is masked wherever it would be shown.
    type: list
    elements: dict
    default: []
  journal_tail:
    description: How many of the last journal lines to return with a failure.
    type: int
    default: 40
  journal_lines_max:
    description: How many journal lines to read at most for the diagnosis.
    type: int
    default: 2000
extends_documentation_fragment:
  - llmops.sglang.attributes
  - llmops.sglang.service_unit
  - llmops.sglang.gpu_release
notes:
  - Also needs C(journalctl).
  - Diagnosis patterns follow SGLang 0.5.x log messages.
seealso:
  - module: llmops.sglang.sglang_service_stop
'''

EXAMPLES = r'''
- name: Restart SGLang on its new unit file in one call (stop, GPUs free, start), wait and verify
  llmops.sglang.sglang_service_wait:
    name: sglang
    stop: true
    daemon_reload: true
    gpus: ["0", "1", "2", "3"]
    url: http://127.0.0.1:30000
    expect:
      speculative_num_steps: 4

- name: Start SGLang (its unit file changed), wait for it and check it runs what was deployed
  llmops.sglang.sglang_service_wait:
    name: sglang
    start: true
    daemon_reload: true
    url: http://127.0.0.1:30000
    timeout: 1800
    journal_cursor: "{{ sglang_stop.journal_cursor }}"
    expect:
      tp_size: 4
      kv_cache_dtype: bf16
      speculative_algorithm: NEXTN
      speculative_num_steps: 4
      speculative_eagle_topk: 1
      speculative_num_draft_tokens: 5
  register: sglang_ready
'''

RETURN = r'''
stopped:
  description:
    - With O(stop), what the stop did (as M(llmops.sglang.sglang_service_stop) returns it).
  returned: with O(stop), when not in check mode
  type: dict
  contains:
    changed:
      description: Whether the unit was running.
      type: bool
    stopped_pids:
      description: The unit's processes when the stop began.
      type: list
      elements: int
    stop_s:
      description: Seconds from C(systemctl stop) to the processes and GPUs free (SGLang's drain included).
      type: float
    waited_s:
      description: Seconds waited for the processes and GPUs after C(systemctl stop).
      type: float
    gpu_checked:
      description: Whether C(nvidia-smi) was there to check the GPUs.
      type: bool
    gpu_busy:
      description: Why the GPUs were not free when the wait gave up (empty once released).
      type: list
      elements: str
    journal_cursor:
      description: The journal cursor after the stop, from which the start was diagnosed.
      type: str
ready:
  description: Whether the server answered C(/health_generate) with 200 and matched O(expect).
  returned: always
  type: bool
time_to_ready_s:
  description:
    - Seconds from the start of the server's main process to readiness (from the journal's
      "ready to roll" line when the start was not watched). Null when unknown.
  returned: always
  type: float
time_to_crash_s:
  description:
    - Seconds from the start of the server's main process to its exit, when it crashed during startup
      (the server's own time to fail, without the stop before it). Null otherwise or when systemd did
      not record both times.
  returned: always
  type: float
waited_s:
  description: Seconds this module waited.
  returned: always
  type: float
version:
  description: SGLang version reported by the server.
  returned: when ready
  type: str
max_running_requests:
  description:
    - The limit the scheduler applies, requests at once over all DP ranks (SGLang 0.5.23
      C(internal_states[].effective_max_running_requests_per_dp); older servers' top-level value).
    - Not the top-level C(max_running_requests) of SGLang 0.5.23, which is the resolved argument
      (48 with speculative decoding when unset, whatever the KV cache holds).
  returned: when ready
  type: int
resolved_max_running_requests:
  description: The top-level C(max_running_requests) the server reports (on SGLang 0.5.23 the resolved argument).
  returned: when ready
  type: int
max_total_num_tokens:
  description: Size of the KV cache pool in tokens.
  returned: when ready
  type: int
server_info:
  description:
    - The server arguments compared (O(expect)), the model path and the served model name, as the server reports them.
  returned: when ready
  type: dict
mismatches:
  description: List of C(key), C(expected), C(actual) for every expected value the server does not report.
  returned: always
  type: list
  elements: dict
diagnosis:
  description: Why the server is not ready; null on success.
  returned: always
  type: dict
  contains:
    key:
      description: >-
        One of bad_argument (SGLang 0.5.23's parser refused a flag; names the valid spelling), not_enough_memory,
        cuda_graph_capture_failed, too_few_gpus (more tensor-parallel ranks than visible GPUs), cuda_out_of_memory,
        unbalanced_memory, timeout, verification_mismatch,
        speculative_adaptive_disabled, unknown.
      type: str
    message:
      description: What happened.
      type: str
    remedy:
      description: What to do about it (SGLang's own advice where it gives one).
      type: str
    evidence:
      description: The journal line that matched, or the mismatches; for V(unknown) the last exception line of a traceback (null without one).
      type: str
journal_tail:
  description: The last journal lines of the failed start.
  returned: always
  type: list
  elements: str
setup_retries:
  description:
    - How many times the unit was started again because systemd could not move its main process into the unit's
      cgroup (exit status 219/CGROUP) before SGLang ran.
  returned: always
  type: int
crash_noticed_after_s:
  description:
    - Seconds between the exit of the server's main process (systemd's ExecMainExitTimestamp) and the
      moment this module noticed the crash; null when there was no crash.
  returned: always
  type: float
watchdog_armed:
  description: Whether the O(watchdog) timer is armed when the module returns (after a failed start this module made).
  returned: always
  type: bool
kept_files:
  description: The names of the O(keep_files) entries that changed.
  returned: when ready
  type: list
  elements: str
  sample: ["unit", "config.json"]
systemd:
  description:
    - The unit's last seen ActiveState, SubState, Result, NRestarts, MainPID, ExecMainStatus and InvocationID.
    - On success the process that serves (InvocationID, NRestarts), so that a caller can tell a later crash
      or restart from it without asking systemd again.
  returned: always
  type: dict
'''

import fcntl
import json
import os
import signal
import time

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.module_utils.errors import UnsupportedError
from ansible.module_utils.six.moves.urllib.error import HTTPError, URLError
from ansible.module_utils.urls import open_url
from ansible_collections.llmops.sglang.plugins.module_utils.diagnosis import (
    adaptive_disabled_diagnosis, diagnose, mismatch_diagnosis, timeout_diagnosis)
from ansible_collections.llmops.sglang.plugins.module_utils import server_info as sinfo
from ansible_collections.llmops.sglang.plugins.module_utils import server_args
from ansible_collections.llmops.sglang.plugins.module_utils.speculative import resolved_algorithm
from ansible_collections.llmops.sglang.plugins.module_utils.service_files import (
    FILE_ENTRY_OPTIONS, FilesError, duplicate_names, handle as handle_files)
from ansible_collections.llmops.sglang.plugins.module_utils.service_systemd import (
    GPU_RELEASE_ARGUMENT_SPEC, UNIT_ARGUMENT_SPEC, journal_first_match_monotonic, journal_lines, stop_unit, systemctl_show,
    unit_name)

READY_LINE = 'The server is fired up and ready to roll'
HEALTH_TIMEOUT_S = 5
_SYSTEMD_KEYS = ('ActiveState', 'SubState', 'Result', 'NRestarts', 'MainPID', 'ExecMainStatus', 'InvocationID')


def systemd_summary(state):
    """The unit's state as the module reports it (result.systemd)."""
    return dict((k, state.get(k)) for k in _SYSTEMD_KEYS)


def http_get(url, api_key=None, timeout=HEALTH_TIMEOUT_S):
    """(status, body) of a GET; status 0 when the server cannot be reached."""
    headers = {'Authorization': 'Bearer %s' % api_key} if api_key else {}
    try:
        resp = open_url(url, method='GET', headers=headers, timeout=timeout, validate_certs=False)
        return resp.getcode(), resp.read()
    except HTTPError as e:
        return e.code, b''
    except (URLError, IOError, OSError, ValueError):
        return 0, b''


def normalize(key, value):
    if value is None:
        return None
    if key == 'speculative_algorithm':
        # SGLang's ServerArgs rewrites NEXTN to EAGLE (0.5.x and master).
        return resolved_algorithm(value)
    if key == 'kv_cache_dtype':
        value = str(value).lower()
        return 'bf16' if value == 'bfloat16' else value
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return float(value)
    try:
        return float(value)
    except (TypeError, ValueError):
        return str(value)


def compare(expect, info):
    mismatches = []
    for key in sorted(expect):
        expected = expect[key]
        if expected is None:
            continue
        actual = info.get(key)
        if normalize(key, expected) != normalize(key, actual):
            mismatches.append({'key': key, 'expected': expected, 'actual': actual})
    return mismatches


# systemd's exit status 219, EXIT_CGROUP (src/basic/exit-status.h): the process systemd forked for ExecStart
# could not be moved into the unit's cgroup, so SGLang never ran. Mostly transient: the kernel refuses
# (EBUSY) while the previous invocation's cgroup is still being removed (systemd issue #23164, podman #27369;
# seen on a test host once, on the start that followed a stop). Started again at once, as Restart= would
# after RestartSec, and at most twice: a persistent cause is the host's and is diagnosed as systemd_setup.
EXIT_CGROUP = 219
SETUP_RETRIES = 2


def cgroup_setup_failed(now):
    """Whether the unit's last start ended at systemd's cgroup step (and the unit is not running)."""
    return now.get('ExecMainStatus') == EXIT_CGROUP and (now['ActiveState'] == 'failed' or now['SubState'] == 'auto-restart')


def crash_reason(first, now):
    """Why ``now`` shows the start has failed, or None while it may still come up."""
    if now['ActiveState'] == 'failed':
        return 'unit failed (Result=%s, ExecMainStatus=%s)' % (now['Result'], now['ExecMainStatus'])
    if now['SubState'] == 'auto-restart':
        return 'main process exited (Result=%s, ExecMainStatus=%s); systemd is restarting it' % (
            now['Result'], now['ExecMainStatus'])
    if now['NRestarts'] > first['NRestarts']:
        return 'systemd restarted the unit %d time(s)' % (now['NRestarts'] - first['NRestarts'])
    if first['MainPID'] and now['MainPID'] and now['MainPID'] != first['MainPID']:
        return 'main process changed from %d to %d' % (first['MainPID'], now['MainPID'])
    if now['ActiveState'] in ('inactive', 'deactivating'):
        return 'unit is %s (Result=%s)' % (now['ActiveState'], now['Result'])
    return None


def fetch_server_info(base, api_key):
    """(info dict or None, last HTTP status): /server_info, else /get_server_info (older servers)."""
    status = 0
    for path in sinfo.PATHS:
        status, body = http_get(base + path, api_key, timeout=30)
        if status == 200:
            try:
                return json.loads(body), status
            except ValueError:
                return None, status
        if status not in sinfo.FALL_BACK_ON:
            break
    return None, status


def _timer(watchdog):
    return unit_name(watchdog).rsplit('.', 1)[0] + '.timer'


def disarm(module, watchdog):
    """Stop the watchdog's timer; one that is not loaded (elapsed or never armed) is fine."""
    module.run_command([module.get_bin_path('systemctl', required=True), 'stop', _timer(watchdog)])


def arm(module, watchdog, seconds):
    """A transient timer that starts the existing ``watchdog`` service ``seconds`` from now; False with a warning if not."""
    systemd_run = module.get_bin_path('systemd-run')
    if systemd_run is None:
        module.warn('systemd-run not found: no deadline for this start while nobody watches it (%s).' % watchdog)
        return False
    rc, dummy, err = module.run_command([systemd_run, '--on-active=%ds' % seconds, '--unit=' + unit_name(watchdog),
                                         '--timer-property=AccuracySec=1s'])
    if rc != 0:
        module.warn('could not arm %s (%s): no deadline for this start while nobody watches it.' % (
            _timer(watchdog), err.strip()))
    return rc == 0


def hold_watch_lock(module, path):
    """Share-lock ``path`` until this process ends (the descriptor stays open): the guard's exclusive probe fails meanwhile."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CREAT, 0o600)
        fcntl.flock(fd, fcntl.LOCK_SH)
    except OSError as exc:
        module.fail_json(msg='cannot lock %s (watch_lock): %s' % (path, exc))
    return fd


def main():
    module = AnsibleModule(
        argument_spec=dict(
            UNIT_ARGUMENT_SPEC,
            url=dict(type='str', required=True),
            api_key=dict(type='str', no_log=True),
            timeout=dict(type='int', default=1800),
            poll_interval=dict(type='float', default=1.0),
            journal_cursor=dict(type='str'),
            expect=dict(type='dict', default={}),
            keep_files=dict(type='list', elements='dict', default=[]),
            journal_tail=dict(type='int', default=40),
            journal_lines_max=dict(type='int', default=2000),
            start=dict(type='bool', default=False),
            daemon_reload=dict(type='bool', default=False),
            stop=dict(type='bool', default=False),
            stop_timeout=dict(type='int', default=300),
            wait=dict(type='bool', default=True),
            watchdog=dict(type='str'),
            watchdog_grace=dict(type='int', default=120),
            watch_lock=dict(type='path'),
            **GPU_RELEASE_ARGUMENT_SPEC
        ),
        supports_check_mode=True,
    )
    p = module.params
    unit = unit_name(p['name'])
    if not p['wait'] and not (p['start'] or p['stop']):
        module.fail_json(msg='wait=false needs start=true or stop=true: without a start there is nothing to do')
    # Checked before anything changes on the host: a bad entry must not cost a restart.
    keep_files = validated_keep_files(module)
    base = p['url'].rstrip('/')
    started = time.monotonic()
    deadline = started + p['timeout']
    result = dict(changed=False, ready=False, time_to_ready_s=None, time_to_crash_s=None, waited_s=0.0, mismatches=[],
                  diagnosis=None, journal_tail=[], systemd={}, crash_noticed_after_s=None, watchdog_armed=False,
                  setup_retries=0)

    def fail(msg, diagnosis, lines):
        result['diagnosis'] = diagnosis
        result['journal_tail'] = lines[-p['journal_tail']:] if p['journal_tail'] > 0 else []
        result['waited_s'] = round(time.monotonic() - started, 2)
        module.fail_json(msg='%s: %s [%s] %s Remedy: %s' % (
            unit, msg, diagnosis['key'], diagnosis['message'], diagnosis['remedy']), **result)

    def read_journal():
        return journal_lines(module, unit, cursor, p['journal_lines_max'])

    systemctl = module.get_bin_path('systemctl', required=True)
    cursor = p['journal_cursor']
    if p['watch_lock'] and not module.check_mode:
        hold_watch_lock(module, p['watch_lock'])
    sighup = None
    if p['stop']:
        if module.check_mode:
            result['changed'] = True
            module.exit_json(msg='check mode: %s would be stopped and started again' % unit, **result)
        if p['watchdog']:
            # An earlier start's deadline must not fire on the stop or on the start that follows.
            disarm(module, p['watchdog'])
        # From the stop to the start nothing may end this process: a lost SSH connection (SIGHUP)
        # would leave the server stopped with nobody to start it.
        sighup = signal.signal(signal.SIGHUP, signal.SIG_IGN)
        stopped, error = stop_unit(module, unit, p['stop_timeout'], p['gpus'], p['gpu_memory_used_max_mib'],
                                   p['nvidia_smi_timeout'])
        result['stopped'] = stopped
        result['changed'] = stopped['changed']
        if error:
            module.fail_json(msg=error, **result)
        cursor = stopped['journal_cursor'] or cursor
    # A changed unit file (daemon_reload), or one that systemd says changed on disk since it loaded it.
    first = None if p['daemon_reload'] else systemctl_show(module, unit)
    if not module.check_mode and (first is None or first.get('NeedDaemonReload') == 'yes'):
        rc, dummy, err = module.run_command([systemctl, 'daemon-reload'])
        if rc != 0:
            module.fail_json(msg='systemctl daemon-reload failed: %s' % err.strip(), **result)
        first = None
    if first is None:
        first = systemctl_show(module, unit)
    if first.get('LoadState') == 'not-found':
        module.fail_json(msg='%s is not installed' % unit, **result)
    if (p['start'] or p['stop']) and first.get('ActiveState') not in ('active', 'activating', 'reloading'):
        result['changed'] = True
        if module.check_mode:
            module.exit_json(msg='check mode: %s would be started' % unit, **result)
        if p['watchdog'] and not p['stop']:  # with stop, disarmed before it
            disarm(module, p['watchdog'])
        # A start that systemd refuses leaves the unit failed: the watch below diagnoses it from the journal.
        module.run_command([systemctl, 'start', unit])
        first = systemctl_show(module, unit)
        if p['watchdog']:
            result['watchdog_armed'] = arm(module, p['watchdog'], p['timeout'] + p['watchdog_grace'])
    if sighup is not None:
        signal.signal(signal.SIGHUP, sighup)
    if not p['wait']:
        # Left to come up alone; the watchdog's deadline stays armed until a later call sees it ready.
        result['systemd'] = systemd_summary(first)
        result['waited_s'] = round(time.monotonic() - started, 2)
        module.exit_json(msg='%s %s; readiness not awaited (wait=false)' % (
            unit, 'started' if result['changed'] else 'is ' + str(first.get('ActiveState'))), **result)
    saw_not_ready = False
    while True:
        now = systemctl_show(module, unit)
        result['systemd'] = systemd_summary(now)
        reason = crash_reason(first, now)
        if cgroup_setup_failed(now) and result['setup_retries'] < SETUP_RETRIES:
            result['setup_retries'] += 1
            module.warn('%s: systemd could not move the new server process into its cgroup (exit status 219/CGROUP, '
                        'before SGLang ran); starting it again (%d of %d)' % (unit, result['setup_retries'], SETUP_RETRIES))
            time.sleep(max(p['poll_interval'], 1.0))  # room for the old cgroup's removal to finish
            module.run_command([systemctl, 'reset-failed', unit])
            module.run_command([systemctl, 'start', unit])
            first = systemctl_show(module, unit)
            continue
        if reason:
            exited_us = now.get('ExecMainExitTimestampMonotonic')
            if exited_us:
                # How long after the main process died the crash was noticed (same monotonic clock).
                result['crash_noticed_after_s'] = round(time.monotonic() - exited_us / 1e6, 2)
                started_us = now.get('ExecMainStartTimestampMonotonic')
                if started_us and exited_us > started_us:
                    result['time_to_crash_s'] = round((exited_us - started_us) / 1e6, 2)
            lines = read_journal()
            diagnosis = diagnose(lines)
            if diagnosis['key'] == 'unknown':
                # journald may not have the last lines yet: look once more before giving up.
                time.sleep(1.5)
                lines = read_journal()
                diagnosis = diagnose(lines)
            fail('crashed during startup, %s.' % reason, diagnosis, lines)
        if now['ActiveState'] == 'active':
            status, dummy = http_get(base + '/health_generate', p['api_key'])
            if status == 200:
                break
        saw_not_ready = True
        if time.monotonic() > deadline:
            fail('not ready after %ds.' % p['timeout'], timeout_diagnosis(), read_journal())
        time.sleep(p['poll_interval'])

    if saw_not_ready:
        ready_mono_us = time.monotonic() * 1e6  # same clock as systemd's *Monotonic properties
    else:
        ready_mono_us = journal_first_match_monotonic(module, now.get('InvocationID'), READY_LINE)
    start_us = now.get('ExecMainStartTimestampMonotonic')
    if ready_mono_us and start_us:
        result['time_to_ready_s'] = round((ready_mono_us - start_us) / 1e6, 2)

    info, status = fetch_server_info(base, p['api_key'])
    if info is None:
        hint = ' (is api_key the server\'s --api-key?)' if status in (401, 403) else ''
        fail('answers /health_generate but /server_info gave HTTP %s%s.' % (status, hint), mismatch_diagnosis(
            [{'key': 'server_info', 'expected': 'HTTP 200 with JSON', 'actual': status}]), read_journal())
    facts = sinfo.summary(info)
    result['version'] = facts['version']
    result['max_running_requests'] = facts['max_running_requests']
    result['resolved_max_running_requests'] = facts['resolved_max_running_requests']
    result['max_total_num_tokens'] = facts['max_total_num_tokens']
    result['server_info'] = dict((k, info.get(k)) for k in sorted(set(p['expect']) | set(server_args.REPORTED_INFO_KEYS)))
    result['mismatches'] = compare(p['expect'], info)
    if result['mismatches']:
        lines = read_journal()
        if [m for m in result['mismatches'] if m['key'] == 'speculative_adaptive']:
            # SGLang 0.5.23 turns adaptive off at start and only logs why: say so with its reason.
            fail('is ready but runs static speculative decoding although adaptive was deployed.',
                 adaptive_disabled_diagnosis(lines, result['mismatches']), lines)
        fail('is ready but runs a different configuration than deployed.',
             mismatch_diagnosis(result['mismatches']), lines)

    result['ready'] = True
    result['waited_s'] = round(time.monotonic() - started, 2)
    if p['watchdog'] and not module.check_mode:
        disarm(module, p['watchdog'])
        result['watchdog_armed'] = False
    result['kept_files'] = []
    if keep_files and not module.check_mode:
        try:
            kept = handle_files(keep_files, False, False)
        except (FilesError, OSError) as exc:
            module.fail_json(msg='%s is ready and verified, but keeping its files failed: %s' % (unit, exc), **result)
        result['kept_files'] = kept['changed_names']
        result['changed'] = result['changed'] or kept['changed']
    module.exit_json(**result)


def validated_keep_files(module):
    """keep_files with each entry checked and completed as sglang_service_files' files[] (fails the module otherwise)."""
    entries = []
    for index, entry in enumerate(module.params['keep_files']):
        checked = ArgumentSpecValidator(FILE_ENTRY_OPTIONS).validate(entry)
        if checked.error_messages:
            module.fail_json(msg='keep_files[%d]: %s' % (index, '; '.join(
                ('unsupported parameters: %s' if isinstance(error, UnsupportedError) else '%s') % error.msg
                for error in checked.errors.errors)))
        entries.append(checked.validated_parameters)
    if duplicate_names(entries):
        module.fail_json(msg='keep_files: every name must be unique, got %s' % duplicate_names(entries))
    return entries


if __name__ == '__main__':
    main()
