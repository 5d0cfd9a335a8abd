# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.sglang contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The spec_sweep_* modules as Ansible runs them (ad-hoc on localhost): check mode, diff, idempotence."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import stat
import subprocess
import sys
import tempfile

# tests/conftest.py links this checkout there as ansible_collections/llmops/sglang.
BASE = os.environ['LLMOPS_PYTEST_COLLECTIONS_PATH']
# The pinned venv (make venv) has it; without it these tests fail instead of skipping.
ANSIBLE = os.path.join(os.path.dirname(sys.executable), 'ansible')


def run(module, args, *flags):
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=BASE, ANSIBLE_PYTHON_INTERPRETER=sys.executable,
               ANSIBLE_LOCALHOST_WARNING='0', ANSIBLE_INVENTORY_UNPARSED_WARNING='0', ANSIBLE_NOCOLOR='1')
    cmd = [ANSIBLE, 'localhost', '-m', 'llmops.sglang.' + module, '-a', json.dumps(args)] + list(flags)
    proc = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, check=False)
    # The ad-hoc (minimal) output: any diff text, then "localhost | STATUS => {json}".
    head, sep, body = proc.stdout.partition('localhost | ')
    assert sep, proc.stdout + proc.stderr
    status, payload = body.split(' => ', 1)
    result = json.loads(payload)
    result['_diff_text'] = head
    result['_status'] = status.strip()
    return result


def level(c, prt, agg):
    return {'concurrency': c, 'requests_completed': 8, 'requests_failed': 0, 'per_request_tok_s': {'median': prt},
            'aggregate_output_tok_s': agg, 'accept_length': 3.0, 'max_running_requests': 17, 'duration_s': 1.0}


def test_pin_check_diff_apply_idempotent(tmp_path):
    inv = tmp_path / 'inv'
    (inv / 'host_vars').mkdir(parents=True)
    hv = inv / 'host_vars' / 'gpu1.yml'
    hv.write_text('---\n# mine\nfoo: 1  # keep\n')
    args = {'inventory_dir': str(inv), 'host': 'gpu1',
            'values': {'sglang_service_speculative_num_steps': 4, 'sglang_spec_sweep': {'winner': 4, 'date': 'd1'}}}
    res = run('spec_sweep_pin', args, '--check', '--diff')
    assert res['changed'] and '+sglang_service_speculative_num_steps: 4' in res['_diff_text']
    assert hv.read_text() == '---\n# mine\nfoo: 1  # keep\n'
    res = run('spec_sweep_pin', args)
    assert res['changed'] and res['path'] == str(hv)
    text = hv.read_text()
    assert '# keep' in text and 'sglang_service_speculative_num_steps: 4' in text
    args['values']['sglang_spec_sweep']['date'] = 'd2'
    res = run('spec_sweep_pin', args)
    assert not res['changed'] and hv.read_text() == text


def test_store_decide_report(tmp_path):
    results = str(tmp_path / 'results')
    fp = {'workload': 'synthetic'}
    for steps, c1, c32 in ((1, 123.0, 1500.0), (2, 186.0, 1800.0), (3, 234.0, 1979.0)):
        res = run('spec_sweep_store', {'results_dir': results, 'host': 'gpu1', 'steps': steps, 'fingerprint': fp,
                                       'result': {'levels': [level(1, c1, c1), level(32, c32 / 32, c32)]}})
        assert res['changed'] and res['path'].endswith('steps-%d/repeat-1.json' % steps)
    run('spec_sweep_store', {'results_dir': results, 'host': 'gpu1', 'steps': 10, 'fingerprint': fp, 'state': 'failed',
                             'failure': {'diagnosis': 'not_enough_memory'}})
    decide_args = {'results_dir': results, 'host': 'gpu1', 'steps': [1, 2, 3, 4, 10], 'concurrency_levels': [1, 32],
                   'fingerprint': fp, 'objective': 'throughput'}
    res = run('spec_sweep_decide', decide_args)
    assert not res['changed'] and res['winner'] == 3 and res['next_steps'] == 4
    assert [p['action'] for p in res['plan']] == ['done', 'done', 'done', 'measure', 'failed']
    report_dir = str(tmp_path / 'report')
    rep = run('spec_sweep_report', {'dest': report_dir, 'host': 'gpu1', 'evaluation': res})
    assert rep['changed'] and os.path.exists(rep['markdown_path']) and os.path.exists(rep['csv_path'])
    # matplotlib is pinned (requirements-dev.txt): the chart is drawn, world-readable like the other files.
    with open(rep['chart_path'], 'rb') as fh:
        assert fh.read(8) == b'\x89PNG\r\n\x1a\n'
    assert sorted(os.listdir(report_dir)) == ['chart.png', 'measurements.csv', 'measurements.json', 'report.md']
    assert all(os.stat(os.path.join(report_dir, f)).st_mode & 0o777 == 0o644 for f in os.listdir(report_dir))
    assert 'failed: not_enough_memory' in rep['table']
    again = run('spec_sweep_report', {'dest': report_dir, 'host': 'gpu1', 'evaluation': res})
    assert not again['changed']
    bad = run('spec_sweep_decide', dict(decide_args, concurrency_levels=[1, 2]))
    assert bad['_status'] == 'FAILED!' and 'sweep_throughput_concurrency (32)' in bad['msg']
    archived = run('spec_sweep_store', {'results_dir': results, 'host': 'gpu1', 'state': 'archived'})
    assert archived['changed'] and '.archived-' in archived['path']
    assert run('spec_sweep_decide', decide_args)['next_steps'] == 1


def test_decide_says_where_the_sweep_stands_from_the_stored_runs_timings(tmp_path):
    """The stored runs' deployments and level durations go through the store to the decide module's progress."""
    results = str(tmp_path / 'results')
    fp = {'workload': 'synthetic'}
    for steps, ready_s in ((1, 50.0), (2, 70.0)):
        levels = [dict(level(1, 100.0 + steps, 100.0 + steps), duration_s=20.0, warmup_s=2.0)]
        run('spec_sweep_store', {'results_dir': results, 'host': 'gpu1', 'steps': steps, 'fingerprint': fp,
                                 'result': {'levels': levels, 'deployment': {'time_to_stop_s': 8.0, 'time_to_ready_s': ready_s}}})
    res = run('spec_sweep_decide', {'results_dir': results, 'host': 'gpu1', 'steps': [1, 2, 3, 4], 'concurrency_levels': [1],
                                    'fingerprint': fp, 'early_stop': False})
    progress = res['progress']
    # Runs of 8 + 50 + 22 = 80 s and 100 s: 90 s each for steps 3, 4 and the schedule.
    assert (progress['settled'], progress['configurations'], progress['runs_left']) == (2, 5, 3)
    assert progress['run_s'] == 90.0 and progress['left_s'] == 270.0
    assert progress['text'].startswith('2 of 5 configurations settled, up to 3 runs left, about 4 min more at 90 s a run')


def test_decide_skips_after_a_memory_failure_and_the_report_says_why(tmp_path):
    results = str(tmp_path / 'results')
    fp = {'workload': 'synthetic'}
    for steps, c1 in ((1, 123.0), (2, 186.0)):
        run('spec_sweep_store', {'results_dir': results, 'host': 'gpu1', 'steps': steps, 'fingerprint': fp,
                                 'result': {'levels': [level(1, c1, c1)]}})
    run('spec_sweep_store', {'results_dir': results, 'host': 'gpu1', 'steps': 10, 'fingerprint': fp, 'state': 'failed',
                             'failure': {'kind': 'start', 'diagnosis': 'not_enough_memory'}})
    decide_args = {'results_dir': results, 'host': 'gpu1', 'steps': [1, 2, 10, 11], 'concurrency_levels': [1],
                   'fingerprint': fp, 'early_stop': False}
    res = run('spec_sweep_decide', decide_args)
    assert [p['action'] for p in res['plan']] == ['done', 'done', 'failed', 'skip']
    assert res['complete'] and res['next_steps'] is None and res['winner'] == 2
    reason = 'skipped: steps 10 failed to start for memory (not_enough_memory); a larger step count needs more'
    assert res['plan'][-1]['reason'] == reason
    assert res['evidence'][-1]['status'] == 'skipped' and res['evidence'][-1]['verdict'] == reason
    rep = run('spec_sweep_report', {'dest': str(tmp_path / 'report'), 'host': 'gpu1', 'evaluation': res})
    assert '| 11 | - | - | - | - | - | - | %s |' % reason in rep['table']
    with open(rep['markdown_path']) as fh:
        assert '- steps 11 (skipped): %s' % reason in fh.read()
    # The option off: steps 11 is measured.
    res = run('spec_sweep_decide', dict(decide_args, skip_after_memory_failure=False))
    assert res['plan'][-1]['action'] == 'measure' and res['next_steps'] == 11


def test_pin_preflight_refuses_before_the_sweep_and_writes_nothing(tmp_path):
    inv = tmp_path / 'inv'
    (inv / 'host_vars').mkdir(parents=True)
    hv = inv / 'host_vars' / 'gpu1.yml'
    hv.write_text('---\nsglang_service_speculative_num_steps:  # a block the operator wrote\n  - 3\n')
    args = {'inventory_dir': str(inv), 'host': 'gpu1', 'preflight': True,
            'values': {'sglang_service_speculative_num_steps': 1, 'sglang_spec_sweep': {'preflight': True}}}
    res = run('spec_sweep_pin', args)
    assert res['_status'] == 'FAILED!' and 'not a one-line value' in res['msg'], res
    hv.write_text('---\nfoo: 1\n')
    res = run('spec_sweep_pin', args)
    assert res['_status'] == 'SUCCESS' and not res['changed']
    assert hv.read_text() == '---\nfoo: 1\n', 'preflight writes nothing'


def test_store_refuses_an_infrastructure_failure(tmp_path):
    args = {'results_dir': str(tmp_path), 'host': 'gpu1', 'state': 'failed', 'steps': 2, 'fingerprint': {'a': 1},
            'failure': {'diagnosis': 'benchmark_failed', 'message': 'connection refused'}}
    res = run('spec_sweep_store', args)
    assert res['_status'] == 'FAILED!' and 'refusing to store steps 2' in res['msg']
    assert not os.path.exists(os.path.join(str(tmp_path), 'gpu1', 'measurements', 'steps-2', 'failure.json'))


def test_baseline_and_schedule_round_trip(tmp_path):
    """Steps 0 is stored as steps-0; once the statics are measured the decide module derives the schedule,
    the store keeps its run under measurements/schedule with the config in its fingerprint, and the next
    decide reads it back (a differently derived schedule would not match)."""
    results = str(tmp_path / 'results')
    fp = {'workload': 'synthetic'}
    # c=1: steps 4 leads; c=32: steps 3 leads (memory: 17 against 13 running).
    figures = {0: (60.0, 1300.0, 32), 3: (232.0, 2645.0, 17), 4: (274.0, 2523.0, 13)}
    for steps, (c1, c32, room) in figures.items():
        lv1, lv32 = level(1, c1, c1), level(32, c32 / room, c32)
        lv1['max_running_requests'] = lv32['max_running_requests'] = room
        res = run('spec_sweep_store', {'results_dir': results, 'host': 'gpu1', 'steps': steps, 'fingerprint': fp,
                                       'result': {'levels': [lv1, lv32]}})
        assert res['path'].endswith('steps-%d/repeat-1.json' % steps)
    args = {'results_dir': results, 'host': 'gpu1', 'steps': [0, 3, 4], 'concurrency_levels': [1, 32],
            'fingerprint': fp, 'objective': 'balanced', 'algorithm': 'NEXTN'}
    res = run('spec_sweep_decide', args)
    assert res['schedule']['action'] == 'measure' and not res['complete']
    assert res['schedule']['config'] == {'1': {'candidate_steps': [4]}, '13': {'candidate_steps': [3]}}
    assert res['winner'] == 4 and res['winner_kind'] == 'static'
    lv1, lv32 = level(1, 274.5, 274.5), level(32, 2640.0 / 13, 2640.0)
    stored = run('spec_sweep_store', {'results_dir': results, 'host': 'gpu1', 'fingerprint': fp,
                                      'schedule': {'config': res['schedule']['config'], 'start_steps': 4},
                                      'result': {'levels': [lv1, lv32]}})
    assert stored['path'].endswith('measurements/schedule/repeat-1.json')
    res = run('spec_sweep_decide', args)
    assert res['complete'] and res['schedule']['action'] == 'done'
    assert res['winner'] == 'schedule' and res['winner_kind'] == 'schedule'
    assert res['schedule_evidence']['config'] == {'1': {'candidate_steps': [4]}, '13': {'candidate_steps': [3]}}
    rep = run('spec_sweep_report', {'dest': str(tmp_path / 'report'), 'host': 'gpu1', 'evaluation': res})
    assert '| schedule | 32 |' in rep['table'] and '(winner)' in rep['table']
    # topk 2: SGLang 0.5.23 would disable adaptive; the schedule is a failed candidate, the best static wins.
    res = run('spec_sweep_decide', dict(args, eagle_topk=2))
    assert res['schedule']['action'] == 'failed' and 'only topk=1 is supported' in res['schedule']['reason']
    assert res['winner'] == 4 and res['complete']
    # Neither steps nor schedule: refused, naming both.
    bad = run('spec_sweep_store', {'results_dir': results, 'host': 'gpu1', 'fingerprint': fp, 'result': {'levels': []}})
    assert bad['_status'] == 'FAILED!' and 'needs steps' in bad['msg'] and 'schedule' in bad['msg']


def run_module_process(module, args):
    """The module as a module: its own Python process, arguments from a file (what AnsiballZ runs)."""
    path = os.path.join(BASE, 'ansible_collections', 'llmops', 'sglang', 'plugins', 'modules', module + '.py')
    env = dict(os.environ, PYTHONPATH=BASE)
    with tempfile.NamedTemporaryFile('w', suffix='.json', delete=False) as fh:
        json.dump({'ANSIBLE_MODULE_ARGS': args}, fh)
    try:
        proc = subprocess.run([sys.executable, path, fh.name], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, check=False)
    finally:
        os.unlink(fh.name)
    assert proc.stdout.strip().startswith('{'), proc.stdout + proc.stderr
    return json.loads(proc.stdout)


def test_the_controller_modules_run_in_process_with_the_module_result(tmp_path):
    """spec_sweep_store, spec_sweep_decide and spec_sweep_report on a local connection run in the task's worker
    (no module process: Ansible logs no EXEC for them), with the same arguments checked and the same result."""
    results = str(tmp_path / 'results')
    fp = {'workload': 'synthetic'}
    for steps, c1 in ((1, 123.0), (2, 186.0)):
        res = run('spec_sweep_store', {'results_dir': results, 'host': 'gpu1', 'steps': steps, 'fingerprint': fp,
                                       'result': {'levels': [level(1, c1, c1)]}}, '-vvv')
        assert res['changed'] and 'EXEC' not in res['_diff_text'], res['_diff_text']
    decide_args = {'results_dir': results, 'host': 'gpu1', 'steps': [1, 2, 3], 'concurrency_levels': [1], 'fingerprint': fp}
    in_process = run('spec_sweep_decide', decide_args, '-vvv')
    assert 'EXEC' not in in_process['_diff_text'], in_process['_diff_text']
    as_module = run_module_process('spec_sweep_decide', decide_args)
    for key in ('plan', 'next_steps', 'complete', 'winner', 'decision', 'table', 'evidence', 'schedule'):
        assert in_process[key] == as_module[key], key
    assert in_process['next_steps'] == 3 and not in_process['changed']
    # The report too (once a sweep): the same files and table as the module process writes.
    report_args = {'dest': str(tmp_path / 'report-in-process'), 'host': 'gpu1', 'evaluation': in_process}
    rep = run('spec_sweep_report', report_args, '-vvv')
    assert rep['changed'] and 'EXEC' not in rep['_diff_text'], rep['_diff_text']
    as_module = run_module_process('spec_sweep_report', dict(report_args, dest=str(tmp_path / 'report-module')))
    assert rep['table'] == as_module['table'] and not as_module.get('failed')
    for name in ('report.md', 'measurements.csv', 'measurements.json'):
        with open(os.path.join(str(tmp_path / 'report-in-process'), name)) as a, open(os.path.join(str(tmp_path / 'report-module'), name)) as b:
            assert a.read() == b.read(), name
    bad = run('spec_sweep_report', dict(report_args, evaluation={'plan': []}))
    assert bad['_status'] == 'FAILED!' and "missing 'decision'" in bad['msg'], bad
    # The module's own argument checks, in-process too: a missing option and a wrong choice are refused by name.
    bad = run('spec_sweep_decide', {'results_dir': results, 'host': 'gpu1', 'steps': [1], 'fingerprint': fp})
    assert bad['_status'] == 'FAILED!' and 'concurrency_levels' in bad['msg'], bad
    bad = run('spec_sweep_store', {'results_dir': results, 'host': 'gpu1', 'state': 'kept'})
    assert bad['_status'] == 'FAILED!' and 'state' in bad['msg'] and 'probed' in bad['msg'], bad
    bad = run('spec_sweep_store', {'results_dir': results, 'host': 'gpu1', 'steps': 3})
    assert bad['_status'] == 'FAILED!' and 'fingerprint' in bad['msg'], bad
    # Check mode: the in-process store writes nothing either.
    res = run('spec_sweep_store', {'results_dir': results, 'host': 'gpu1', 'steps': 3, 'fingerprint': fp,
                                   'result': {'levels': [level(1, 234.0, 234.0)]}}, '--check')
    assert res['changed'] and not os.path.exists(os.path.join(results, 'gpu1', 'measurements', 'steps-3'))


def test_store_probe_creates_the_directory_and_leaves_no_file(tmp_path):
    results = tmp_path / 'results'
    res = run('spec_sweep_store', {'results_dir': str(results), 'host': 'gpu1', 'state': 'probed'})
    measurements = results / 'gpu1' / 'measurements'
    assert res['_status'] == 'SUCCESS' and not res['changed'] and res['path'] == str(measurements)
    assert measurements.is_dir() and list(measurements.iterdir()) == []
    if os.geteuid() == 0:
        return  # root writes into a read-only directory; the molecule sweep scenario uses a read-only mount
    measurements.chmod(0o555)
    try:
        res = run('spec_sweep_store', {'results_dir': str(results), 'host': 'gpu1', 'state': 'probed'})
    finally:
        measurements.chmod(0o755)
    assert res['_status'] == 'FAILED!' and 'cannot write the sweep results under' in res['msg'], res


def test_report_without_matplotlib_says_so_and_writes_the_rest(tmp_path, monkeypatch):
    """The chart is optional: without matplotlib the report has no chart and a warning says why."""
    from ansible_collections.llmops.sglang.plugins.module_utils import sweep_report
    from ansible_collections.llmops.sglang.plugins.modules import spec_sweep_report
    results = str(tmp_path / 'results')
    fp = {'workload': 'synthetic'}
    run('spec_sweep_store', {'results_dir': results, 'host': 'gpu1', 'steps': 1, 'fingerprint': fp,
                             'result': {'levels': [level(1, 123.0, 123.0)]}})
    evaluation = run('spec_sweep_decide', {'results_dir': results, 'host': 'gpu1', 'steps': [1], 'concurrency_levels': [1],
                                           'fingerprint': fp})
    monkeypatch.setattr(sweep_report, 'chart', lambda *args: False)
    dest = str(tmp_path / 'report')
    res = spec_sweep_report.run({'dest': dest, 'host': 'gpu1', 'evaluation': evaluation, 'meta': {}}, False)
    assert res['chart_path'] is None and res['changed']
    assert res['warnings'] == ['matplotlib is not installed on the controller: the report has no chart']
    assert sorted(os.listdir(dest)) == ['measurements.csv', 'measurements.json', 'report.md']


def test_pin_keeps_the_mode_of_the_operators_file_and_gives_a_new_one_the_umasks(tmp_path):
    """In-process (the action plugin on a local connection) the file is replaced as atomic_move replaced it."""
    inv = tmp_path / 'inv'
    (inv / 'host_vars').mkdir(parents=True)
    hv = inv / 'host_vars' / 'gpu1.yml'
    hv.write_text('---\nfoo: 1\n')
    os.chmod(str(hv), 0o640)
    args = {'inventory_dir': str(inv), 'host': 'gpu1', 'values': {'sglang_service_speculative_num_steps': 4}}
    res = run('spec_sweep_pin', args, '-vvv')
    assert res['changed'] and 'EXEC' not in res['_diff_text'], res['_diff_text']
    assert stat.S_IMODE(os.stat(str(hv)).st_mode) == 0o640
    assert 'sglang_service_speculative_num_steps: 4' in hv.read_text()
    new = inv / 'host_vars' / 'gpu2.yml'
    args['host'] = 'gpu2'
    umask = os.umask(0)
    os.umask(umask)
    assert run('spec_sweep_pin', args)['changed']
    assert stat.S_IMODE(os.stat(str(new)).st_mode) == 0o666 & ~umask
