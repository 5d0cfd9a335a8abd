# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.sglang contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests of the sweep's results store (atomic writes, resume, fingerprints, fresh start)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os

from ansible_collections.llmops.sglang.plugins.module_utils import sweep_store as st

FP = {'workload': 'synthetic', 'levels': [1, 2], 'output_len': 64}


def result(tok):
    return {'levels': [{'concurrency': 1, 'aggregate_output_tok_s': tok}], 'sglang_version': '0.5.9'}


def test_record_and_load_round_trip(tmp_path):
    d = str(tmp_path)
    p1 = st.record_measurement(d, 'sim1', 2, FP, result(10.0))
    p2 = st.record_measurement(d, 'sim1', 2, FP, result(12.0))
    assert p1.endswith('steps-2/repeat-1.json') and p2.endswith('steps-2/repeat-2.json')
    st.record_failure(d, 'sim1', 10, FP, {'diagnosis': 'not_enough_memory'})
    configs = st.load_configs(d, 'sim1', [1, 2, 10], FP)
    assert [c['status'] for c in configs] == ['missing', 'ok', 'failed']
    assert [r['levels'][0]['aggregate_output_tok_s'] for r in configs[1]['repeats']] == [10.0, 12.0]
    assert configs[2]['failure']['diagnosis'] == 'not_enough_memory'
    # no temp files left behind by the atomic writes
    assert sorted(os.listdir(os.path.dirname(p1))) == ['repeat-1.json', 'repeat-2.json']


def test_other_fingerprint_is_ignored(tmp_path):
    d = str(tmp_path)
    st.record_measurement(d, 'sim1', 1, FP, result(10.0))
    other = dict(FP, output_len=128)
    assert st.load_configs(d, 'sim1', [1], other)[0]['status'] == 'missing'
    assert st.load_configs(d, 'sim1', [1], FP)[0]['status'] == 'ok'


def test_torn_file_counts_as_missing(tmp_path):
    d = str(tmp_path)
    path = st.record_measurement(d, 'sim1', 1, FP, result(10.0))
    with open(path, 'w') as fh:
        fh.write('{"schema": 1, "fing')
    assert st.load_configs(d, 'sim1', [1], FP)[0]['status'] == 'missing'


def test_success_supersedes_failure(tmp_path):
    d = str(tmp_path)
    st.record_failure(d, 'sim1', 3, FP, {'diagnosis': 'not_enough_memory'})
    st.record_measurement(d, 'sim1', 3, FP, result(10.0))
    assert st.load_configs(d, 'sim1', [3], FP)[0]['status'] == 'ok'


def test_hosts_are_separate(tmp_path):
    d = str(tmp_path)
    st.record_measurement(d, 'sim1', 1, FP, result(10.0))
    assert st.load_configs(d, 'sim2', [1], FP)[0]['status'] == 'missing'


def test_archive_moves_aside_not_deletes(tmp_path):
    d = str(tmp_path)
    path = st.record_measurement(d, 'sim1', 1, FP, result(10.0))
    dest = st.archive(d, 'sim1')
    assert dest and os.path.isdir(dest) and not os.path.exists(path)
    with open(os.path.join(dest, 'measurements', 'steps-1', 'repeat-1.json')) as fh:
        assert json.load(fh)['result']['levels'][0]['aggregate_output_tok_s'] == 10.0
    assert st.load_configs(d, 'sim1', [1], FP)[0]['status'] == 'missing'
    assert st.archive(d, 'sim1') is None
    st.record_measurement(d, 'sim1', 1, FP, result(11.0))
    assert st.archive(d, 'sim1') != dest  # a second archive in the same second gets its own name


def test_only_verdicts_are_stored_and_old_unclassified_failures_do_not_block(tmp_path):
    import pytest as _pytest
    fp = {'workload': 'synthetic'}
    results = str(tmp_path)
    with _pytest.raises(ValueError, match='only a verdict'):
        st.record_failure(results, 'h', 2, fp, {'kind': 'infrastructure', 'diagnosis': 'stalled'})
    # what releases before the classification wrote for an outage during a benchmark
    st.write_json_atomic(os.path.join(st.config_dir(results, 'h', 2), 'failure.json'), {
        'schema': st.SCHEMA, 'kind': 'failure', 'host': 'h', 'steps': 2, 'fingerprint': fp,
        'failure': {'diagnosis': 'benchmark_failed', 'message': 'connection refused'}})
    # the host's start failures are not verdicts: refused now, ignored where an earlier release stored one
    for diagnosis in ('bad_argument', 'unbalanced_memory', 'too_few_gpus'):
        with _pytest.raises(ValueError, match='only a verdict'):
            st.record_failure(results, 'h', 3, fp, {'kind': 'start', 'diagnosis': diagnosis})
    st.write_json_atomic(os.path.join(st.config_dir(results, 'h', 4), 'failure.json'), {
        'schema': st.SCHEMA, 'kind': 'failure', 'host': 'h', 'steps': 4, 'fingerprint': fp,
        'failure': {'kind': 'start', 'diagnosis': 'unbalanced_memory', 'message': 'another process holds GPU 2'}})
    # a start with no known cause is a verdict only with the control that made it one
    for diagnosis in ('unknown', 'timeout'):
        with _pytest.raises(ValueError, match='only a verdict'):
            st.record_failure(results, 'h', 5, fp, {'kind': 'start', 'diagnosis': diagnosis})
    st.write_json_atomic(os.path.join(st.config_dir(results, 'h', 5), 'failure.json'), {
        'schema': st.SCHEMA, 'kind': 'failure', 'host': 'h', 'steps': 5, 'fingerprint': fp,
        'failure': {'kind': 'start', 'diagnosis': 'timeout', 'message': 'not ready within 1800 s'}})
    st.record_failure(results, 'h', 6, fp, {'kind': 'start', 'diagnosis': 'unknown', 'control': 'steps 3 got ready'})
    st.record_failure(results, 'h', 10, fp, {'kind': 'start', 'diagnosis': 'not_enough_memory'})
    st.record_failure(results, 'h', 11, fp, {'kind': 'load', 'diagnosis': 'crashed_under_load'})
    configs = dict((c['steps'], c) for c in st.load_configs(results, 'h', [2, 4, 5, 6, 10, 11], fp))
    assert configs[2]['status'] == 'missing' and configs[4]['status'] == 'missing' and configs[5]['status'] == 'missing'
    assert configs[6]['status'] == 'failed' and configs[10]['status'] == 'failed' and configs[11]['status'] == 'failed'


def test_measurements_of_another_sglang_version_are_not_reused(tmp_path):
    fp = {'workload': 'synthetic'}
    results = str(tmp_path)
    st.record_measurement(results, 'h', 3, fp, {'sglang_version': '0.5.22', 'levels': []})
    assert st.load_configs(results, 'h', [3], fp, '0.5.22')[0]['status'] == 'ok'
    assert st.load_configs(results, 'h', [3], fp, '0.5.23')[0]['status'] == 'missing'
    assert st.load_configs(results, 'h', [3], fp, None)[0]['status'] == 'ok'


def test_a_run_of_another_setup_is_kept_not_overwritten(tmp_path):
    results = str(tmp_path)
    old = st.record_measurement(results, 'h', 1, {'pip': 'sglang==0.5.22'}, {'levels': []})
    new = st.record_measurement(results, 'h', 1, {'pip': 'sglang==0.5.23'}, {'levels': []})
    assert old != new and os.path.exists(old) and os.path.exists(new)
    assert [i for i, _d in st.list_repeats(results, 'h', 1, {'pip': 'sglang==0.5.22'})] == [1]
    assert [i for i, _d in st.list_repeats(results, 'h', 1, {'pip': 'sglang==0.5.23'})] == [2]


def test_the_schedule_is_stored_with_its_config_in_the_fingerprint(tmp_path):
    results = str(tmp_path)
    fp = {'workload': 'synthetic'}
    schedule = {'config': {1: {'candidate_steps': [4]}, '13': {'candidate_steps': [3]}}, 'start_steps': 4}
    path = st.record_measurement(results, 'gpu1', None, fp, result(300.0), schedule=schedule)
    assert path.endswith(os.path.join('measurements', 'schedule', 'repeat-1.json'))
    with open(path) as fh:
        doc = json.load(fh)
    assert doc['steps'] == 'schedule' and doc['fingerprint']['schedule']['config']['1'] == {'candidate_steps': [4]}
    rec = st.load_schedule(results, 'gpu1', fp, schedule)
    assert rec['status'] == 'ok' and rec['steps'] == 'schedule' and len(rec['repeats']) == 1
    assert rec['config'] == {'1': {'candidate_steps': [4]}, '13': {'candidate_steps': [3]}} and rec['start_steps'] == 4
    # Another schedule (the statics were measured again and picked otherwise) is still to measure.
    other = {'config': {'1': {'candidate_steps': [5]}, '9': {'candidate_steps': [3]}}, 'start_steps': 5}
    assert st.load_schedule(results, 'gpu1', fp, other)['status'] == 'missing'
    # Its start failure is kept like a step count's.
    st.record_failure(results, 'gpu1', None, fp, {'kind': 'start', 'diagnosis': 'speculative_adaptive_disabled'}, schedule=other)
    assert st.load_schedule(results, 'gpu1', fp, other)['status'] == 'failed'
    # The baseline is steps-0.
    assert st.record_measurement(results, 'gpu1', 0, fp, result(60.0)).endswith(os.path.join('steps-0', 'repeat-1.json'))


def test_claims_hand_each_step_count_to_one_host(tmp_path):
    live = ['a', 'b']
    assert st.claim(str(tmp_path), 'split-x', 'run1', 'a', [1, 2, 3], live) == (1, {})
    assert st.claim(str(tmp_path), 'split-x', 'run1', 'b', [1, 2, 3], live) == (2, {1: 'a'})
    # a host asking again (its step count 1 not recorded yet) does not take b's
    assert st.claim(str(tmp_path), 'split-x', 'run1', 'a', [2, 3], live) == (3, {2: 'b'})
    assert st.claim(str(tmp_path), 'split-x', 'run1', 'a', [2], live) == (None, {2: 'b'})
    # claims live outside measurements/: the decision never sees them
    assert [c['status'] for c in st.load_configs(str(tmp_path), 'split-x', [1, 2, 3], FP)] == ['missing'] * 3


def test_a_lost_host_or_an_earlier_run_holds_no_claim(tmp_path):
    assert st.claim(str(tmp_path), 'split-x', 'run1', 'b', [4], ['a', 'b'])[0] == 4
    # b failed or became unreachable: no longer in the play
    assert st.claim(str(tmp_path), 'split-x', 'run1', 'a', [4], ['a']) == (4, {})
    # an interrupted run's claim of a host that is back counts for nothing in the next run
    assert st.claim(str(tmp_path), 'split-x', 'run2', 'b', [4], ['a', 'b']) == (4, {})


def _claim_in_a_process(args):
    results_dir, claimant = args
    return st.claim(results_dir, 'split-x', 'run1', claimant, list(range(1, 9)), ['h%d' % i for i in range(8)])[0]


def test_hosts_claiming_at_once_never_get_the_same_step_count(tmp_path):
    # Each claim runs in a task worker of its own on the controller: processes, as here.
    import multiprocessing
    with multiprocessing.get_context('fork').Pool(8) as pool:
        got = pool.map(_claim_in_a_process, [(str(tmp_path), 'h%d' % i) for i in range(8)])
    assert sorted(got) == list(range(1, 9))
