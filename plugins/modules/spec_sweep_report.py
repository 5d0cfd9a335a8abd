#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.sglang contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: spec_sweep_report
short_description: Write a speculative-decoding sweep's report (markdown, CSV, JSON, PNG chart)
version_added: 0.1.0
description:
  - From the output of M(llmops.sglang.spec_sweep_decide), writes into O(dest)
    C(report.md) (step count x concurrency table with per-request and aggregate tok/s, accept length,
    max_running_requests and status, the objective and why the winner won, and the levels measured again
    because the benchmark client was starved of CPU), C(measurements.csv) and
    C(measurements.json) (every repeat of every level, with the client's lateness and discarded tries) and C(chart.png) (tok/s against concurrency,
    one line per step count, the winner marked).
  - Runs on the controller (delegate it to V(localhost)); the chart needs matplotlib there.
author:
  - llmops.sglang contributors (@llmops)
requirements:
  - matplotlib (optional, for the chart)
attributes:
  check_mode:
    support: partial
    description: Reports whether the text files would change; the chart is not drawn.
    details: In check mode the markdown, CSV and JSON are compared with the files on disk; the PNG chart is neither drawn nor compared.
  diff_mode:
    support: none
    description: Report files are written whole.
extends_documentation_fragment:
  - llmops.sglang.attributes
  - llmops.sglang.attributes.controller
options:
  dest:
    description: Directory for the report files (created if missing).
    type: path
    required: true
  host:
    description: Inventory hostname the report is about.
    type: str
    required: true
  evaluation:
    description: The registered result of M(llmops.sglang.spec_sweep_decide).
    type: dict
    required: true
  meta:
    description: Facts shown in the report header (date, sglang_version, model, workload, ...).
    type: dict
    default: {}
notes:
  - Supports check mode. Files are rewritten only when their content changes.
seealso:
  - module: llmops.sglang.spec_sweep_decide
'''

EXAMPLES = r'''
- name: Write the report
  llmops.sglang.spec_sweep_report:
    dest: "/srv/sweeps/{{ inventory_hostname }}/report"
    host: "{{ inventory_hostname }}"
    evaluation: "{{ sweep_state }}"
    meta:
      model: Qwen/Qwen3.5-122B-A10B-FP8
  delegate_to: localhost
'''

RETURN = r'''
markdown_path:
  description: The markdown report.
  returned: always
  type: str
  sample: /srv/sweeps/gpu1/report/report.md
csv_path:
  description: Every measurement as CSV.
  returned: always
  type: str
json_path:
  description: Every measurement and the decision as JSON.
  returned: always
  type: str
chart_path:
  description: The PNG chart, or null without matplotlib (a warning says so).
  returned: always
  type: str
table:
  description: The markdown table alone (for printing).
  returned: always
  type: str
'''

import os
import tempfile

from ansible_collections.llmops.sglang.plugins.module_utils import sweep_report
from ansible_collections.llmops.sglang.plugins.module_utils.atomic_file import make_dirs, write_atomic
from ansible_collections.llmops.sglang.plugins.module_utils.module_runner import ModuleFailed, run_as_module

# Also run in-process by its action plugin (plugins/action/spec_sweep_report.py; module_utils/module_runner.py).
ARGUMENT_SPEC = dict(
    dest=dict(type='path', required=True),
    host=dict(type='str', required=True),
    evaluation=dict(type='dict', required=True),
    meta=dict(type='dict', default={}),
)
MODULE_KWARGS = {}


def _write(path, text, check_mode):
    """Write text atomically if it differs; returns whether it did (would, in check mode)."""
    if os.path.exists(path):
        with open(path) as fh:
            if fh.read() == text:
                return False
    if not check_mode:
        write_atomic(path, text, mode=0o644)
    return True


def _read_bytes(path):
    """The file's bytes, or None when it does not exist."""
    if not os.path.exists(path):
        return None
    with open(path, 'rb') as fh:
        return fh.read()


def run(p, check_mode):
    evaluation = p['evaluation']
    for key in ('decision', 'table', 'configs', 'plan'):
        if key not in evaluation:
            raise ModuleFailed('evaluation must be the registered result of llmops.sglang.spec_sweep_decide (missing %r)' % key)
    dest = p['dest']
    if not check_mode:
        make_dirs(dest)
    meta = dict(p['meta'])
    paths = dict((k, os.path.join(dest, name)) for k, name in (
        ('markdown_path', 'report.md'), ('csv_path', 'measurements.csv'), ('json_path', 'measurements.json'), ('chart_path', 'chart.png')))
    changed = False
    warnings = []
    chart_path = paths['chart_path']
    if not check_mode:
        # matplotlib draws into a scratch file; the chart is then written like the other files.
        fd, tmp = tempfile.mkstemp(prefix='.chart.', suffix='.png', dir=dest)
        os.close(fd)
        try:
            drawn = sweep_report.chart(tmp, p['host'], evaluation)
            png = _read_bytes(tmp) if drawn else None
        finally:
            os.unlink(tmp)
        if not drawn:
            chart_path = None
            warnings.append('matplotlib is not installed on the controller: the report has no chart')
        elif png != _read_bytes(chart_path):
            write_atomic(chart_path, png, mode=0o644)
            changed = True
    if chart_path:
        meta['chart'] = os.path.basename(chart_path)
    rows = sweep_report.measurement_rows(p['host'], evaluation['configs'])
    changed |= _write(paths['markdown_path'], sweep_report.markdown(p['host'], evaluation, meta), check_mode)
    changed |= _write(paths['csv_path'], sweep_report.to_csv(rows), check_mode)
    changed |= _write(paths['json_path'], sweep_report.to_json(p['host'], evaluation, meta, rows), check_mode)
    paths['chart_path'] = chart_path
    result = dict(changed=changed, table=sweep_report.markdown_table(evaluation['table'], evaluation['decision']['winner']), **paths)
    if warnings:
        result['warnings'] = warnings
    return result


def main():
    run_as_module(ARGUMENT_SPEC, run, **MODULE_KWARGS)


if __name__ == '__main__':
    main()
