#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.sglang contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: sglang_bench_follow
short_description: Follow an asynchronous M(llmops.sglang.sglang_bench) job with one call per status line
version_added: 0.2.0
description:
  - Waits at most O(wait) seconds for an M(llmops.sglang.sglang_bench) job started with C(async) and C(poll 0),
    then returns the benchmark's progress (its O(progress_file)) and whether the job has finished.
    The wait ends early once the progress file says C(done) or C(failed), or the job has finished.
  - Once the job has finished it returns the job's own result, as C(ansible.builtin.async_status) does (and
    fails when the benchmark failed, with the benchmark's C(msg) and C(fault)), and removes O(cleanup), so that
    a status line, the look at the job and the clean-up cost one remote call instead of four.
  - Reads the job's results file (C(results_file) of the task that started the job), the file
    C(ansible.builtin.async_status) reads.
  - A host that stops answering while it is followed fails the task (C(host_unreachable)), so that a
    C(rescue) runs; Ansible does not rescue unreachable hosts.
author:
  - llmops.sglang contributors (@llmops)
options:
  progress_file:
    description: The O(llmops.sglang.sglang_bench#module:progress_file) the job writes.
    type: path
    required: true
  job_file:
    description: The job's results file (C(results_file) of the task that started it).
    type: path
    required: true
  wait:
    description: Seconds to wait at most before returning the progress of a job that still runs.
    type: float
    default: 10
  settle:
    description:
      - Seconds to wait at most, once the progress file says the benchmark ended, for the job to
        write its result (the module still returns its figures after it wrote the last progress).
    type: float
    default: 5
  cleanup:
    description: Files and directories to remove once the job has finished (its results file, the progress directory).
    type: list
    elements: path
    default: []
  follow:
    description:
      - Look again until the job has finished, printing one status line after each look that finds it
        running (which level and concurrency, requests done of those asked, the rate so far), so that a
        benchmark of any length is one task. Without it the task looks once (loop it with C(until)).
      - Done by the action plugin on the controller.
    type: bool
    default: false
  status_host:
    description: The host named in the status lines (the one measured; default the host the task runs on).
    type: str
  status_label:
    description: A label for the status lines, for example the configuration being measured (C(steps 4)).
    type: str
  timeout:
    description:
      - With O(follow), fail when the job has not finished after this many seconds (a net for a job
        whose host lost it; the job's own C(async) limit normally ends it first).
    type: float
extends_documentation_fragment:
  - llmops.sglang.attributes
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
notes:
  - Runs on the host that runs the benchmark (stdlib only).
seealso:
  - module: llmops.sglang.sglang_bench
  - module: ansible.builtin.async_status
'''

EXAMPLES = r'''
- name: Start the benchmark
  llmops.sglang.sglang_bench:
    url: http://127.0.0.1:30000
    concurrency_levels: [1, 32]
    requests_per_level: 64
    progress_file: "{{ progress_dir.path }}/progress.json"
  async: 3600
  poll: 0
  register: bench_job

- name: Follow the benchmark to its end, a status line every 10 s
  llmops.sglang.sglang_bench_follow:
    progress_file: "{{ progress_dir.path }}/progress.json"
    job_file: "{{ bench_job.results_file }}"
    wait: 10
    follow: true
    status_label: steps 4
    cleanup:
      - "{{ bench_job.results_file }}"
      - "{{ progress_dir.path }}"
  register: bench
'''

RETURN = r'''
finished:
  description: Whether the job has finished; then the job's own result keys are returned with it.
  returned: always
  type: bool
bench_progress:
  description: The progress file's content (null before the job wrote it).
  returned: always
  type: dict
cleaned:
  description: Whether O(cleanup) was removed (the job finished).
  returned: always
  type: bool
looks:
  description: How many looks it took (with O(follow)).
  returned: with O(follow)
  type: int
host_unreachable:
  description: The host stopped answering while it was followed.
  returned: when it happened
  type: bool
'''

import json
import os
import shutil
import time

from ansible.module_utils.basic import AnsibleModule

ENDED = ('done', 'failed')

# The options the action plugin (plugins/action/sglang_bench_follow.py) handles on the controller; the
# module accepts and ignores them.
FOLLOW_OPTIONS = dict(
    follow=dict(type='bool', default=False),
    status_host=dict(type='str'),
    status_label=dict(type='str'),
    timeout=dict(type='float'),
)


def read_json(path):
    """The JSON document in ``path``; None while it is missing, empty or half written."""
    try:
        with open(path) as fh:
            return json.loads(fh.read())
    except (IOError, OSError, ValueError):
        return None


def job_finished(job):
    """Whether a results file's document is the job's result (async_status' rule: the
    wrapper's own placeholder has C(started))."""
    return job is not None and 'started' not in job


def follow(progress_file, job_file, wait, settle, clock=time.monotonic, sleep=time.sleep, interval=0.2):
    """Wait for the job as the module does; returns (progress document, job document or None)."""
    started = clock()
    deadline = started + wait
    ended_at = None
    while True:
        progress = read_json(progress_file)
        job = read_json(job_file)
        if job_finished(job):
            return progress, job
        now = clock()
        if progress is not None and progress.get('state') in ENDED:
            ended_at = now if ended_at is None else ended_at
            if now - ended_at >= settle:
                return progress, job
        elif now >= deadline:
            return progress, job
        sleep(interval)


def _text(item):
    """A warning, deprecation or exception of the job as text: ansible-core 2.19 writes them as structured
    summaries ({"event": {"msg": ...}, "__ansible_type": "WarningSummary"}), which a module may not hand on
    as they are (the controller refuses them: "Event.msg must be <class 'str'>")."""
    if isinstance(item, dict):
        event = item.get('event') if isinstance(item.get('event'), dict) else item
        text = event.get('formatted_traceback') or event.get('msg') or json.dumps(item, sort_keys=True)
        return text if isinstance(text, str) else json.dumps(text, sort_keys=True)
    return item if isinstance(item, str) else json.dumps(item, sort_keys=True)


def job_result(module, job):
    """The finished job's result to return as this module's: its warnings and deprecations become this
    module's own (as text), its exception text; the invocation is the benchmark's, not this look's."""
    result = dict((k, v) for k, v in job.items() if k not in ('invocation', 'warnings', 'deprecations'))
    for warning in job.get('warnings') or []:
        module.warn(_text(warning))
    for deprecation in job.get('deprecations') or []:
        module.warn('the benchmark reported a deprecation: %s' % _text(deprecation))
    if 'exception' in result:
        result['exception'] = _text(result['exception'])
    return result


def remove(paths):
    for path in paths:
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        elif os.path.lexists(path):
            os.unlink(path)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            progress_file=dict(type='path', required=True),
            job_file=dict(type='path', required=True),
            wait=dict(type='float', default=10),
            settle=dict(type='float', default=5),
            cleanup=dict(type='list', elements='path', default=[]),
            **FOLLOW_OPTIONS
        ),
        supports_check_mode=True,
    )
    p = module.params
    if not os.path.exists(p['job_file']):
        module.fail_json(msg='could not find job %s' % p['job_file'], finished=True, bench_progress=None, cleaned=False)
    progress, job = follow(p['progress_file'], p['job_file'], max(0.0, p['wait']), max(0.0, p['settle']))
    if not job_finished(job):
        module.exit_json(changed=False, finished=False, bench_progress=progress, cleaned=False)
    remove(p['cleanup'])
    # The job's own result, as async_status returns it.
    result = job_result(module, job)
    result.update(finished=True, bench_progress=progress, cleaned=True)
    if result.get('failed'):
        result.pop('failed')
        module.fail_json(**dict(result, msg=result.get('msg') or 'the benchmark failed'))
    module.exit_json(**result)


if __name__ == '__main__':
    main()
