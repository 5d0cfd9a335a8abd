#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.sglang contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: spec_sweep_decide
short_description: Plan a speculative-decoding step sweep and pick its winner from stored results
version_added: 0.1.0
description:
  - Reads the results that M(llmops.sglang.spec_sweep_store) saved for one host and says, for every
    step count, whether it is measured, failed, still to measure, waiting, or skipped (by early stop, or
    because a smaller step count failed to start for memory, see O(skip_after_memory_failure)).
  - Picks the winner for the objective. A larger step count wins only when it beats the best
    smaller one by more than O(margin) plus the measured spread (what it leads by beyond the margin must
    exceed the range of either side's repeats, and a 95% band of the difference estimated from the runs'
    precision, corrected for the number of figures compared); otherwise the smaller one stays (less
    memory, more batch room). Candidates with repeats are compared on their medians.
  - Objectives are V(agentic) (median per-request tok/s at concurrency 1, concurrency 2-4 as
    tie-breakers), V(throughput) (aggregate tok/s at O(throughput_concurrency)), V(constrained)
    (best aggregate tok/s at a concurrency whose p99 TTFT and median per-request tok/s stay within
    O(max_ttft_p99_s) and O(min_per_request_tok_s)) and V(balanced) (the best worst-case ratio, over the
    concurrency levels, of aggregate tok/s to the best static step count at that level).
  - Step count 0 is the baseline, speculative decoding off. It is measured first and takes no part in early
    stop, in O(skip_after_memory_failure) or in ties; it wins only by beating the best step count by more
    than O(margin) plus the spread. The table and the evidence give every configuration's speedup over it.
  - Once every step count is measured, failed or skipped, derives a schedule (O(schedule)) from the
    statics, the best static step count at each measured concurrency level keyed by the running batch
    size (SGLang 0.5.23 C(--speculative-adaptive-config)), and reads its stored measurement. The
    schedule wins only by beating the best static by more than O(margin) plus the spread.
  - Runs on the controller (delegate it to V(localhost)); never changes anything. There its action plugin runs it
    inside the task's worker, without starting a module process (the sweep plans before every configuration).
author:
  - llmops.sglang contributors (@llmops)
attributes:
  check_mode:
    support: full
    description: Reads only; the same result in check mode.
  diff_mode:
    support: none
    description: Changes nothing.
extends_documentation_fragment:
  - llmops.sglang.attributes
  - llmops.sglang.attributes.controller
  - llmops.sglang.sweep_results
options:
  steps:
    description: Step counts of the sweep (any order; they are considered in ascending order).
    type: list
    elements: int
    required: true
  repeats:
    description: Benchmark runs per step count; the comparison uses medians over them.
    type: int
    default: 1
  objective:
    description: What the winner is best at.
    type: str
    choices: [agentic, throughput, constrained, balanced]
    default: agentic
  concurrency_levels:
    description: Concurrency levels that the benchmark measures.
    type: list
    elements: int
    required: true
  fingerprint:
    description:
      - What identifies the measurements of this sweep (workload, levels, model, speculative settings
        other than the step count). Stored results with a different fingerprint are ignored.
    type: dict
    required: true
  server_version:
    description:
      - The SGLang version the server reports now (null when unknown). Stored measurements taken on
        another version are ignored (measured again), like those of another fingerprint.
    type: str
  margin:
    description: Fraction by which a larger step count must beat the best smaller one to win.
    type: float
    default: 0.02
  early_stop:
    description:
      - Skip larger step counts once one fails to start or improves the objective by less than
        O(early_stop_margin) over the best smaller one.
    type: bool
    default: true
  early_stop_margin:
    description: Improvement below which early stop skips the larger step counts.
    type: float
    default: 0.02
  skip_after_memory_failure:
    description:
      - Once a step count failed to start for memory (diagnosis V(not_enough_memory), V(cuda_out_of_memory), or
        V(cuda_graph_capture_failed) whose journal shows an out-of-memory), plan the larger step counts that never
        started as V(skip) with that reason instead of measuring them. With the same top-k a larger step count needs
        more memory.
      - Applies whether O(early_stop) is on or off. Failures under load and other start failures
        (V(unbalanced_memory), V(bad_argument), V(timeout), ...) do not skip anything.
    type: bool
    default: true
  throughput_concurrency:
    description: Concurrency at which the V(throughput) objective compares aggregate tok/s.
    type: int
    default: 32
  max_ttft_p99_s:
    description: Upper bound of p99 time to first token (seconds) for the V(constrained) objective.
    type: float
  min_per_request_tok_s:
    description: Lower bound of the median per-request tok/s for the V(constrained) objective.
    type: float
  adaptive_stop:
    description:
      - Whether the sweep's benchmarks stop adaptively on the objective's ranked figure (C(sweep_stop=adaptive)).
      - Then a stored run whose ranked level (concurrency 1 for V(agentic), O(throughput_concurrency) for V(throughput))
        got only the minimum request count, because a sweep of another objective ranked another figure, does not count, and
        the step count is measured again to the precision this objective needs.
    type: bool
    default: false
  schedule:
    description:
      - Whether to derive a schedule from the statics and plan it as one more candidate (C(schedule) in the result).
      - When every measured level picks the same static step count there is no schedule.
    type: bool
    default: true
  schedule_off_reason:
    description:
      - Why the schedule is not measured when O(schedule) is false, as the plan and the report say it.
    type: str
    default: sweep_schedule is false
  algorithm:
    description:
      - The sweep's speculative algorithm, with O(eagle_topk) and O(extra_args) to tell whether SGLang 0.5.23 would
        run a schedule adaptive.
      - A schedule it would disable is returned as failed with SGLang's reason (C(speculative_adaptive disabled) and
        why) instead of being planned for measuring.
    type: str
  eagle_topk:
    description: The sweep's C(--speculative-eagle-topk) (SGLang 0.5.23 runs adaptive with topk 1 only).
    type: int
    default: 1
  extra_args:
    description: The host's C(sglang_service_extra_args) (attention DP, two-batch overlap and others disable adaptive in 0.5.23).
    type: list
    elements: str
    default: []
  dp_size:
    description: The host's C(sglang_service_dp_size) (with C(--enable-dp-attention) it is attention DP).
    type: int
    default: 1
  sharing_hosts:
    description:
      - How many hosts share the step counts (C(sweep_split)); only RV(progress)'s time left uses it (the runs left,
        divided among them).
    type: int
    default: 1
notes:
  - Supports check mode (it never changes anything).
seealso:
  - module: llmops.sglang.spec_sweep_store
  - module: llmops.sglang.spec_sweep_report
  - module: llmops.sglang.spec_sweep_pin
'''

EXAMPLES = r'''
- name: What is left to measure, and who wins so far
  llmops.sglang.spec_sweep_decide:
    results_dir: /srv/sweeps
    host: "{{ inventory_hostname }}"
    steps: [1, 2, 3, 4, 5]
    concurrency_levels: [1, 2, 4, 8, 16, 32]
    objective: agentic
    fingerprint: "{{ sweep_fingerprint }}"
  delegate_to: localhost
  register: sweep_state

- name: Show the winner
  ansible.builtin.debug:
    msg: "{{ sweep_state.winner }}: {{ sweep_state.decision.reason }}"
'''

RETURN = r'''
plan:
  description:
    - One entry per step count, ascending.
    - An entry to measure also has C(bounds), the objective's figures (tok/s) it is compared with (the best so far
      raised by O(margin) and by O(early_stop_margin)); the sweep passes them to adaptive stopping.
  returned: always
  type: list
  elements: dict
  sample:
    - {steps: 1, action: done, reason: measured (1 repeat), missing_repeats: 0}
    - {steps: 2, action: measure, reason: 1 of 1 repeats to measure, missing_repeats: 1, bounds: [128.3]}
    - {steps: 10, action: failed, reason: "failed to start: not_enough_memory", missing_repeats: 1}
    - {steps: 11, action: skip, missing_repeats: 1,
       reason: "skipped: steps 10 failed to start for memory (not_enough_memory); a larger step count needs more"}
next_steps:
  description: The step count to measure next, or null when nothing is left to measure.
  returned: always
  type: int
  sample: 3
winner:
  description:
    - The winning step count (V(0) the baseline), V(schedule) when the derived schedule won, or null when none
      qualifies (yet).
  returned: always
  type: raw
  sample: 4
winner_kind:
  description: V(static), V(baseline) or V(schedule), or null without a winner.
  returned: always
  type: str
  sample: static
complete:
  description: Whether every step count and the schedule are measured, failed or skipped (no measuring left).
  returned: always
  type: bool
decision:
  description: The winner, the objective in words, why the winner won, and a verdict per step count.
  returned: always
  type: dict
  sample:
    winner: 4
    objective: "agentic: best median per-request tok/s at concurrency 1 (tie-breakers: concurrency 2, 3, 4)"
    reason: "objective agentic ... Winner: steps 4 with 277.0. ..."
    score: 277.0
    verdicts: []
table:
  description: Medians over repeats, one row per step count and concurrency (failed/skipped ones get one row).
  returned: always
  type: list
  elements: dict
evidence:
  description: Compact per step count results, as pinned into host_vars under C(sglang_spec_sweep.results).
  returned: always
  type: list
  elements: dict
configs:
  description: The stored configurations with status, failure and every repeat's benchmark result (the schedule last).
  returned: always
  type: list
  elements: dict
schedule:
  description:
    - The schedule candidate. C(action) is V(none) (no schedule, or O(schedule) false), V(pending) (static step counts still
      to measure), V(measure), V(done) or V(failed); C(reason) says why.
    - C(picks) are the best static step count per concurrency level, C(derived) and C(config) the adaptive config,
      C(start_steps) its C(--speculative-num-steps) (the largest candidate), C(missing_repeats) what is left to measure.
  returned: always
  type: dict
  sample:
    action: measure
    reason: 1 of 1 repeats to measure
    config: {"1": {"candidate_steps": [4]}, "13": {"candidate_steps": [3]}}
    start_steps: 4
    missing_repeats: 1
schedule_evidence:
  description: The schedule's compact results, as pinned under C(sglang_spec_sweep.schedule); null without a schedule.
  returned: always
  type: dict
progress:
  description:
    - Where the sweep stands. C(settled) of C(configurations) are measured, failed or skipped (the schedule counts while
      it may be measured); up to C(runs_left) runs may still come (early stop and the memory rule can still skip some).
    - C(run_s) is the median of the stored runs' own time (the server's stop and start to ready, then the benchmark's
      levels and warm-ups; Ansible's time around them comes on top), C(left_s) that times the runs each host still
      has (C(runs_left) divided among O(sharing_hosts), rounded up); both null before a run is stored. C(text) says
      it in one line.
  returned: always
  type: dict
  sample:
    settled: 3
    configurations: 8
    runs_left: 5
    run_s: 41.2
    left_s: 206.0
    text: 3 of 8 configurations settled, up to 5 runs left, about 3 min more at 41 s a run (...)
'''

from ansible_collections.llmops.sglang.plugins.module_utils import sweep_decide
from ansible_collections.llmops.sglang.plugins.module_utils import speculative
from ansible_collections.llmops.sglang.plugins.module_utils import sweep_store
from ansible_collections.llmops.sglang.plugins.module_utils.module_runner import ModuleFailed, run_as_module

# Shared with the action plugin, which runs run() in-process on the controller (module_runner).
ARGUMENT_SPEC = dict(
    sweep_store.RESULTS_ARGUMENT_SPEC,
    steps=dict(type='list', elements='int', required=True),
    repeats=dict(type='int', default=1),
    objective=dict(type='str', default='agentic', choices=list(sweep_decide.OBJECTIVES)),
    concurrency_levels=dict(type='list', elements='int', required=True),
    fingerprint=dict(type='dict', required=True),
    server_version=dict(type='str'),
    margin=dict(type='float', default=0.02),
    early_stop=dict(type='bool', default=True),
    early_stop_margin=dict(type='float', default=0.02),
    skip_after_memory_failure=dict(type='bool', default=True),
    throughput_concurrency=dict(type='int', default=32),
    max_ttft_p99_s=dict(type='float'),
    min_per_request_tok_s=dict(type='float'),
    adaptive_stop=dict(type='bool', default=False),
    schedule=dict(type='bool', default=True),
    schedule_off_reason=dict(type='str', default='sweep_schedule is false'),
    algorithm=dict(type='str'),
    eagle_topk=dict(type='int', default=1),
    extra_args=dict(type='list', elements='str', default=[]),
    dp_size=dict(type='int', default=1),
    sharing_hosts=dict(type='int', default=1),
)
MODULE_KWARGS = {}


def run(p, check_mode):
    keys = ('margin', 'early_stop', 'early_stop_margin', 'skip_after_memory_failure', 'throughput_concurrency', 'max_ttft_p99_s',
            'min_per_request_tok_s', 'adaptive_stop', 'sharing_hosts')
    params = dict((k, p[k]) for k in keys)
    params['schedule'] = p['schedule']
    params['schedule_off_reason'] = p['schedule_off_reason']
    if p['algorithm'] not in (None, ''):
        params['adaptive_unsupported'] = speculative.adaptive_unsupported_reason(
            p['algorithm'], p['eagle_topk'], p['extra_args'], p['dp_size'])
    try:
        params = sweep_decide.validate(p['objective'], p['steps'], p['concurrency_levels'], p['repeats'], params)
    except sweep_decide.SweepError as exc:
        raise ModuleFailed(str(exc))
    configs = sweep_store.load_configs(p['results_dir'], p['host'], p['steps'], p['fingerprint'], p['server_version'])
    evaluation = sweep_decide.evaluate(configs, p['objective'], p['repeats'], p['concurrency_levels'], params)
    schedule = evaluation['schedule']
    if schedule['action'] in ('measure', 'done', 'failed') and not params.get('adaptive_unsupported'):
        # The derived schedule is known now: what is stored for exactly it decides.
        record = sweep_store.load_schedule(p['results_dir'], p['host'], p['fingerprint'], schedule, p['server_version'])
        evaluation = sweep_decide.evaluate(configs, p['objective'], p['repeats'], p['concurrency_levels'], params,
                                           schedule_record=record)
    plan = evaluation['plan']
    to_measure = [e['steps'] for e in plan if e['action'] == 'measure']
    waiting = [e['steps'] for e in plan if e['action'] in ('measure', 'pending')]
    return dict(
        changed=False,
        plan=plan,
        next_steps=to_measure[0] if to_measure else None,
        complete=not waiting and evaluation['schedule']['action'] not in ('measure', 'pending'),
        winner=evaluation['decision']['winner'],
        winner_kind=evaluation['decision']['winner_kind'],
        decision=evaluation['decision'],
        table=evaluation['table'],
        evidence=evaluation['evidence'],
        configs=evaluation['configs'],
        schedule=evaluation['schedule'],
        schedule_evidence=evaluation['schedule_evidence'],
        progress=evaluation['progress'],
    )


def main():
    run_as_module(ARGUMENT_SPEC, run, **MODULE_KWARGS)


if __name__ == '__main__':
    main()
