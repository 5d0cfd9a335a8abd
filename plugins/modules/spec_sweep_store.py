#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.sglang contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: spec_sweep_store
short_description: Save one measurement or start failure of a speculative-decoding sweep, or archive a host's results
version_added: 0.1.0
description:
  - Writes one JSON file per host, step count and repeat under O(results_dir), atomically (temp file
    and rename), as soon as it is measured; an interrupted sweep resumes from these files
    (see M(llmops.sglang.spec_sweep_decide)).
  - With O(state=archived), moves a host's earlier results aside (to C(<host>.archived-<UTC time>))
    so that the sweep starts fresh; nothing is deleted.
  - With O(state=claimed), claims the next step count for one host of a shared store (the sweep's
    C(sweep_split)), so that the hosts take step counts as soon as they are free and never the same one.
  - Runs on the controller (delegate it to V(localhost)). There its action plugin runs it inside the task's
    worker, without starting a module process (about 0.4 s a call less; the sweep stores every configuration).
author:
  - llmops.sglang contributors (@llmops)
attributes:
  check_mode:
    support: full
    description: Reports the file it would write without writing it.
  diff_mode:
    support: none
    description: Results are JSON files written whole.
extends_documentation_fragment:
  - llmops.sglang.attributes
  - llmops.sglang.attributes.controller
  - llmops.sglang.sweep_results
options:
  state:
    description:
      - V(measured) saves O(result) as the next repeat of O(steps).
      - V(failed) saves O(failure) for O(steps).
      - V(archived) moves every result of O(host) aside.
      - V(probed) creates the host's C(measurements) directory and writes and removes a probe file in it,
        so that a results directory that cannot take a file fails before anything is deployed (the sweep's
        preflight). Nothing that stays is written, so it reports no change.
      - V(claimed) claims the first of O(candidates) that no other host of O(live) holds in this O(run), for
        O(claimant), under a lock on the controller. A claim of a host that is not in O(live) (it failed or
        became unreachable) or of another run (an interrupted sweep) holds nothing. Returns C(steps), null
        when every candidate is held.
    type: str
    choices: [measured, failed, archived, probed, claimed]
    default: measured
  steps:
    description:
      - Step count of the configuration (V(0) is the baseline, speculative decoding off).
      - Required unless O(state=archived), O(state=probed) or O(schedule) is given.
    type: int
  schedule:
    description:
      - The derived adaptive schedule the result or failure belongs to, instead of O(steps), as
        M(llmops.sglang.spec_sweep_decide) returns it under C(schedule) (C(config), the adaptive config,
        and C(start_steps), its C(--speculative-num-steps)).
      - Stored under C(measurements/schedule/) with the config in its fingerprint, so that a schedule
        derived differently is measured again.
    type: dict
  candidates:
    description: With O(state=claimed), the step counts still to measure, in the order to measure them.
    type: list
    elements: int
  claimant:
    description: With O(state=claimed), the host that claims (its inventory name).
    type: str
  live:
    description: With O(state=claimed), the hosts whose claims hold (those still in the play).
    type: list
    elements: str
  run:
    description: With O(state=claimed), what names this run of the sweep, the same for all its hosts.
    type: str
  fingerprint:
    description: What identifies the measurements of this sweep. Required with O(state=measured) and O(state=failed).
    type: dict
  result:
    description: The benchmark result (the C(spec_bench_result) fact). Required with O(state=measured).
    type: dict
  failure:
    description:
      - The configuration's own verdict. Required with O(state=failed).
      - C(kind) is V(start) (it failed to start; the C(sglang_service_failure) fact) or V(load) (it
        failed under load - the server crashed or answered with errors). Anything else (outages,
        stalls, controller errors) is refused; those are not the configuration's result.
    type: dict
notes:
  - Supports check mode (reports what it would write) .
seealso:
  - module: llmops.sglang.spec_sweep_decide
'''

EXAMPLES = r'''
- name: Save the benchmark of this configuration
  llmops.sglang.spec_sweep_store:
    results_dir: /srv/sweeps
    host: "{{ inventory_hostname }}"
    steps: 4
    fingerprint: "{{ sweep_fingerprint }}"
    result: "{{ spec_bench_result }}"
  delegate_to: localhost

- name: Record that steps 10 did not start
  llmops.sglang.spec_sweep_store:
    results_dir: /srv/sweeps
    host: "{{ inventory_hostname }}"
    state: failed
    steps: 10
    fingerprint: "{{ sweep_fingerprint }}"
    failure: "{{ sglang_service_failure }}"
  delegate_to: localhost

- name: Take the next step count nobody measures (hosts sharing one store)
  llmops.sglang.spec_sweep_store:
    results_dir: /srv/sweeps
    host: split-group
    state: claimed
    candidates: [3, 4, 5]
    claimant: "{{ inventory_hostname }}"
    live: "{{ ansible_play_hosts }}"
    run: "2026-12-06T01:00:00Z"
  delegate_to: localhost
  register: claim

- name: Start over (earlier results are moved aside)
  llmops.sglang.spec_sweep_store:
    results_dir: /srv/sweeps
    host: "{{ inventory_hostname }}"
    state: archived
  delegate_to: localhost
'''

RETURN = r'''
path:
  description:
    - The file written, or the directory the old results were moved to (null if there were none).
    - With O(state=probed), the host's C(measurements) directory.
    - With O(state=claimed), the directory of the claims (null when nothing was claimed).
  returned: always
  type: str
  sample: /srv/sweeps/gpu1/measurements/steps-4/repeat-1.json
steps:
  description: With O(state=claimed), the step count claimed, null when every candidate is held.
  returned: when O(state=claimed)
  type: int
  sample: 4
held:
  description: With O(state=claimed), the candidates passed over, each with the host that holds it.
  returned: when O(state=claimed)
  type: dict
  sample: {"3": gpu2}
'''

import os

from ansible_collections.llmops.sglang.plugins.module_utils import sweep_store
from ansible_collections.llmops.sglang.plugins.module_utils.module_runner import ModuleFailed, run_as_module

# Shared with the action plugin, which runs run() in-process on the controller (module_runner).
ARGUMENT_SPEC = dict(
    sweep_store.RESULTS_ARGUMENT_SPEC,
    state=dict(type='str', default='measured', choices=['measured', 'failed', 'archived', 'probed', 'claimed']),
    steps=dict(type='int'),
    candidates=dict(type='list', elements='int'),
    claimant=dict(type='str'),
    live=dict(type='list', elements='str'),
    run=dict(type='str'),
    schedule=dict(type='dict'),
    fingerprint=dict(type='dict'),
    result=dict(type='dict'),
    failure=dict(type='dict'),
)
MODULE_KWARGS = dict(
    required_if=[
        ('state', 'measured', ('fingerprint', 'result')),
        ('state', 'failed', ('fingerprint', 'failure')),
        ('state', 'claimed', ('candidates', 'claimant', 'live', 'run')),
    ],
    mutually_exclusive=[('steps', 'schedule')],
)


def run(p, check_mode):
    if p['state'] == 'archived':
        src = sweep_store.host_dir(p['results_dir'], p['host'])
        if not os.path.isdir(src):
            return dict(changed=False, path=None)
        if check_mode:
            return dict(changed=True, path=None)
        return dict(changed=True, path=sweep_store.archive(p['results_dir'], p['host']))
    if p['state'] == 'probed':
        # Nothing that stays is written: the directory is created (as the first measurement would
        # create it) and a probe file is written and removed. Check mode writes no probe either.
        path = sweep_store.measurements_dir(p['results_dir'], p['host'])
        if check_mode:
            return dict(changed=False, path=path)
        try:
            return dict(changed=False, path=sweep_store.probe(p['results_dir'], p['host']))
        except (IOError, OSError) as exc:
            raise ModuleFailed('cannot write the sweep results under %s: %s' % (path, exc), path=path)
    if p['state'] == 'claimed':
        # Check mode claims nothing: it says what it would take, the first candidate.
        if check_mode:
            return dict(changed=bool(p['candidates']), path=None, steps=(p['candidates'] or [None])[0], held={})
        try:
            steps, held = sweep_store.claim(p['results_dir'], p['host'], p['run'], p['claimant'], p['candidates'], p['live'])
        except (IOError, OSError) as exc:
            raise ModuleFailed('cannot claim a step count under %s: %s' % (sweep_store.claims_dir(p['results_dir'], p['host']), exc))
        return dict(changed=steps is not None, path=None if steps is None else sweep_store.claims_dir(p['results_dir'], p['host']),
                    steps=steps, held=held)
    schedule = p['schedule']
    if p['steps'] is None and schedule is None:
        raise ModuleFailed('state=%s needs steps (a step count) or schedule (the derived schedule: config, start_steps)' % p['state'])
    if schedule is not None and (not isinstance(schedule.get('config'), dict) or schedule.get('start_steps') is None):
        raise ModuleFailed('schedule must hold config (the adaptive config mapping) and start_steps, got %r' % (schedule,))
    what = 'the schedule' if schedule is not None else 'steps %d' % p['steps']
    if check_mode:
        return dict(changed=True, path=sweep_store.config_dir(p['results_dir'], p['host'],
                                                              sweep_store.SCHEDULE if schedule is not None else p['steps']))
    if p['state'] == 'failed' and not sweep_store.is_verdict(p['failure']):
        raise ModuleFailed('refusing to store %s: only a failure to start (kind start) or under load (kind load) is a '
                           'configuration\'s result; got kind %r, diagnosis %r' % (
                               what, p['failure'].get('kind'), p['failure'].get('diagnosis')))
    try:
        if p['state'] == 'measured':
            path = sweep_store.record_measurement(p['results_dir'], p['host'], p['steps'], p['fingerprint'], p['result'],
                                                  schedule=schedule)
        else:
            path = sweep_store.record_failure(p['results_dir'], p['host'], p['steps'], p['fingerprint'], p['failure'],
                                              schedule=schedule)
    except (IOError, OSError) as exc:
        raise ModuleFailed('cannot write the sweep result under %s: %s' % (p['results_dir'], exc))
    return dict(changed=True, path=path)


def main():
    run_as_module(ARGUMENT_SPEC, run, **MODULE_KWARGS)


if __name__ == '__main__':
    main()
