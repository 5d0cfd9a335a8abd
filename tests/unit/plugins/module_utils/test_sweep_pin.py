# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.sglang contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests of the host_vars pin (round trip, comments kept, no change when equal) and the report."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import csv
import io
import json
import os

from ansible_collections.llmops.sglang.plugins.module_utils import sweep_pin, sweep_report, sweep_decide

import pytest
import yaml

USER_FILE = """---
# Connection settings: keep me
ansible_host: 10.0.0.5  # the GPU box
team: inference   # owner
sglang_service_speculative_num_steps: 2  # set by hand
extra:
  - a
  - b
"""


def pinned(steps, date='2026-11-29T00:00:00Z'):
    return {'sglang_service_speculative_num_steps': steps, 'sglang_service_speculative_eagle_topk': 1,
            'sglang_service_speculative_num_draft_tokens': steps + 1,
            'sglang_spec_sweep': {'objective': 'agentic', 'date': date, 'winner': steps,
                                  'results': [{'steps': steps, 'per_request_tok_s': {1: 277.0}}]}}


def test_update_keeps_comments_and_other_keys():
    new, changed = sweep_pin.update_text(USER_FILE, pinned(4))
    assert set(changed) == {'sglang_service_speculative_num_steps', 'sglang_service_speculative_eagle_topk',
                            'sglang_service_speculative_num_draft_tokens', 'sglang_spec_sweep'}
    for kept in ('# Connection settings: keep me', '# the GPU box', '# owner', '  - a'):
        assert kept in new
    data = yaml.safe_load(new)
    assert data['team'] == 'inference' and data['extra'] == ['a', 'b']
    assert data['sglang_service_speculative_num_steps'] == 4 and data['sglang_spec_sweep']['winner'] == 4
    assert new.startswith('---\n')


def test_same_outcome_changes_nothing_even_with_a_new_date():
    first, _changed = sweep_pin.update_text(USER_FILE, pinned(4))
    second, changed = sweep_pin.update_text(first, pinned(4, date='2026-12-01T00:00:00Z'))
    assert changed == [] and second == first


def test_another_winner_changes_the_file():
    first, _changed = sweep_pin.update_text(USER_FILE, pinned(4))
    second, changed = sweep_pin.update_text(first, pinned(3))
    assert 'sglang_service_speculative_num_steps' in changed and yaml.safe_load(second)['sglang_service_speculative_num_steps'] == 3


def test_empty_file_and_path_choice(tmp_path):
    new, changed = sweep_pin.update_text('', pinned(4))
    assert yaml.safe_load(new)['sglang_service_speculative_num_steps'] == 4 and changed
    inv = str(tmp_path)
    assert sweep_pin.host_vars_path(inv, 'gpu1') == os.path.join(inv, 'host_vars', 'gpu1.yml')
    os.makedirs(os.path.join(inv, 'host_vars', 'gpu2'))
    assert sweep_pin.host_vars_path(inv, 'gpu2') == os.path.join(inv, 'host_vars', 'gpu2', 'sweep.yml')
    with open(os.path.join(inv, 'host_vars', 'gpu3.yaml'), 'w') as fh:
        fh.write('a: 1\n')
    assert sweep_pin.host_vars_path(inv, 'gpu3') == os.path.join(inv, 'host_vars', 'gpu3.yaml')


def test_non_mapping_file_is_refused():
    try:
        sweep_pin.update_text('- a\n- b\n', pinned(4))
    except sweep_pin.PinError as exc:
        assert 'mapping' in str(exc)
    else:
        raise AssertionError('a list file must be refused')


@pytest.mark.parametrize('text, reason', [
    ('a: [1\n', 'the file is not valid YAML'),
    ('a: 1\n---\nb: 2\n', 'the file holds 2 YAML documents; host_vars must be one mapping'),
    ('just text\n', 'the file does not hold a mapping at the top level'),
])
def test_files_that_are_not_one_mapping_are_refused(text, reason):
    with pytest.raises(sweep_pin.PinError, match=reason):
        sweep_pin.update_text(text, pinned(4))


def test_a_file_of_comments_only_is_an_empty_mapping():
    new, changed = sweep_pin.update_text('---\n# hand-kept, nothing set yet\n', pinned(4))
    assert '# hand-kept, nothing set yet' in new and changed
    assert yaml.safe_load(new)['sglang_service_speculative_num_steps'] == 4


def _level(c, prt, agg):
    return {'concurrency': c, 'requests_completed': 8, 'requests_failed': 0, 'per_request_tok_s': {'median': prt},
            'aggregate_output_tok_s': agg, 'accept_length': 3.5, 'max_running_requests': 17, 'ttft_s': {'p99': 0.1},
            'duration_s': 2.0}


def test_report_table_csv_json_and_chart(tmp_path):
    configs = [
        {'steps': 3, 'status': 'ok', 'repeats': [{'levels': [_level(1, 234.0, 234.0), _level(32, 60.0, 1979.0)]}]},
        {'steps': 4, 'status': 'ok', 'repeats': [{'levels': [_level(1, 277.0, 277.0), _level(32, 50.0, 1600.0)]}]},
        {'steps': 10, 'status': 'failed', 'repeats': [], 'failure': {'diagnosis': 'not_enough_memory'}},
    ]
    # No schedule here (its report is tested below): the statics alone.
    evaluation = sweep_decide.evaluate(configs, 'agentic', 1, [1, 32], {'schedule': False})
    assert evaluation['decision']['winner'] == 4
    md = sweep_report.markdown('gpu1', evaluation, {'model': 'm'})
    assert '| 4 | 1 | 277.0 | 277.0 | - | 3.50 | 17 | ok (winner) |' in md
    assert '| 10 | - | - | - | - | - | - | failed: not_enough_memory |' in md
    rows = sweep_report.measurement_rows('gpu1', evaluation['configs'])
    parsed = list(csv.DictReader(io.StringIO(sweep_report.to_csv(rows))))
    assert len(parsed) == 5 and parsed[-1]['diagnosis'] == 'not_enough_memory'
    doc = json.loads(sweep_report.to_json('gpu1', evaluation, {}, rows))
    assert doc['decision']['winner'] == 4 and len(doc['measurements']) == 5
    png = str(tmp_path / 'chart.png')
    # matplotlib is pinned in requirements-dev.txt: without it this fails instead of skipping the chart.
    assert sweep_report.chart(png, 'gpu1', evaluation), 'matplotlib is missing (requirements-dev.txt pins it)'
    with open(png, 'rb') as fh:
        assert fh.read(8) == b'\x89PNG\r\n\x1a\n'


def test_the_report_names_the_levels_measured_again_for_a_starved_client():
    starved = dict(_level(32, 61.0, 1985.0), client_lag={'late_s': 0.01, 'max_s': 0.01, 'fraction': 0.004},
                   discarded=[{'why': 'starved', 'duration_s': 2.1, 'warmup_s': 0.0, 'requests': 8,
                               'client_lag': {'late_s': 0.3, 'max_s': 0.2, 'fraction': 0.143}},
                              {'why': 'starved', 'duration_s': 2.0, 'warmup_s': 0.0, 'requests': 8,
                               'client_lag': {'late_s': 0.1, 'max_s': 0.1, 'fraction': 0.057}}])
    configs = [
        {'steps': 3, 'status': 'ok', 'repeats': [{'levels': [_level(1, 234.0, 234.0), starved]}]},
        {'steps': 4, 'status': 'ok', 'repeats': [{'levels': [_level(1, 277.0, 277.0), _level(32, 50.0, 1600.0)]}]},
    ]
    evaluation = sweep_decide.evaluate(configs, 'agentic', 1, [1, 32], {'schedule': False})
    md = sweep_report.markdown('gpu1', evaluation, {})
    assert ('- steps 3, concurrency 32: 2 tries discarded (the client woke late for 14%, 6% of the level); '
            'the try that counts: 0%') in md.split('## Measured again')[1], md
    parsed = list(csv.DictReader(io.StringIO(sweep_report.to_csv(sweep_report.measurement_rows('gpu1', evaluation['configs'])))))
    assert [(r['steps'], r['concurrency'], r['discarded_tries'], r['client_lag_fraction']) for r in parsed] == [
        ('3', '1', '0', ''), ('3', '32', '2', '0.004'), ('4', '1', '0', ''), ('4', '32', '0', '')]
    # Without any, no such section.
    assert '## Measured again' not in sweep_report.markdown('gpu1', sweep_decide.evaluate(
        configs[1:], 'agentic', 1, [1, 32], {'schedule': False}), {})


# A host_vars file as operators keep them: every feature a YAML dumper would rewrite.
HAND_KEPT = """\
# Managed by the inference team -- header above the document start
---
# Connection settings
ansible_host: 10.0.0.5  # the GPU box
defaults: &gpu_defaults  # shared GPU settings
  tp: 4
  dtype:   bf16
gpu_copy: *gpu_defaults  # alias with a comment
secret_token: !vault |
          $ANSIBLE_VAULT;1.1;AES256
          32343232306639363435343965656561623635653064666533623833346338366630636364303737
motd: >
    folded text that
    spans lines
odd_indent:
     - one
     -   two
flow_list: [a, b,   c]
flow_map: {x: 1, y: 2}
sglang_service_speculative_num_steps: 2   # pinned by hand earlier
# trailing comment 1

# trailing comment 2
"""


def _changed_lines(old, new):
    import difflib
    return [line for line in difflib.unified_diff(old.splitlines(), new.splitlines(), lineterm='', n=0)
            if line[:1] in '+-' and not line.startswith(('+++', '---'))]


def test_hand_kept_file_only_pinned_lines_and_the_evidence_block_change():
    new, _changed = sweep_pin.update_text(HAND_KEPT, pinned(4))
    diff = _changed_lines(HAND_KEPT, new)
    removed = [line for line in diff if line.startswith('-')]
    added = [line[1:] for line in diff if line.startswith('+')]
    assert removed == ['-sglang_service_speculative_num_steps: 2   # pinned by hand earlier']
    assert added[0] == 'sglang_service_speculative_num_steps: 4   # pinned by hand earlier'
    assert added[1:3] == ['sglang_service_speculative_eagle_topk: 1', 'sglang_service_speculative_num_draft_tokens: 5']
    assert added[3] == sweep_pin.BEGIN and added[-1] == sweep_pin.END
    # every original line is still there, in order, and the trailing comments stay last
    kept = [line for line in new.splitlines() if line in HAND_KEPT.splitlines()]
    assert kept == [line for line in HAND_KEPT.splitlines() if not line.startswith('sglang_service_speculative_num_steps')]
    assert new.endswith('# trailing comment 1\n\n# trailing comment 2\n')


def test_hand_kept_file_second_identical_pin_is_byte_identical():
    first, _changed = sweep_pin.update_text(HAND_KEPT, pinned(4))
    second, changed = sweep_pin.update_text(first, pinned(4, date='2026-12-24T00:00:00Z'))
    assert changed == [] and second == first
    third, changed = sweep_pin.update_text(first, pinned(3))
    diff = _changed_lines(first, third)
    # only the pinned lines and lines inside the evidence block differ
    inside = third.split(sweep_pin.BEGIN)[1].split(sweep_pin.END)[0].splitlines()
    for line in diff:
        assert line[1:].startswith('sglang_service_speculative_') or line[1:] in inside or line[1:] in first, line


def test_evidence_pinned_by_the_old_round_trip_moves_into_the_marked_block():
    old = USER_FILE + "sglang_spec_sweep:\n  winner: 2\n  date: x\n# user's note after it\nlast: 1\n"
    new, changed = sweep_pin.update_text(old, pinned(4))
    assert 'sglang_spec_sweep' in changed
    assert new.count('sglang_spec_sweep:') == 1 and sweep_pin.BEGIN in new
    assert "# user's note after it\nlast: 1\n" in new
    assert yaml.safe_load(new)['last'] == 1


def test_files_that_cannot_be_edited_line_by_line_are_refused():
    cases = {
        'block value': 'sglang_service_speculative_num_steps:\n  - 3\n',
        'anchored value': 'sglang_service_speculative_num_steps: &s 3\nother: *s\n',
        'twice': 'sglang_service_speculative_num_steps: 3\nsglang_service_speculative_num_steps: 4\n',
        'two documents': 'a: 1\n---\nb: 2\n',
        'flow top level': '{a: 1, sglang_service_speculative_num_steps: 2}\n',
        'from a merge key': 'base: &b\n  sglang_service_speculative_num_steps: 3\n<<: *b\n',
    }
    for what, text in cases.items():
        try:
            sweep_pin.update_text(text, pinned(4))
        except sweep_pin.PinError as exc:
            assert str(exc), what
        else:
            raise AssertionError('%s must be refused' % what)


def test_a_file_with_only_comments_and_the_document_start_gets_the_keys_after_them():
    new, changed = sweep_pin.update_text('---\n# pinned here\n', pinned(4))
    assert new.startswith('---\n# pinned here\nsglang_service_speculative_num_steps: 4\n') and changed
    assert yaml.safe_load(new)['sglang_spec_sweep']['winner'] == 4


def test_a_schedule_is_pinned_as_one_flow_mapping_and_replaced_by_the_next_pin():
    """The sweep pins an adaptive schedule's config on its key's line; the next sweep replaces that line
    (a schedule, a static step count: null) and leaves the rest alone."""
    schedule = {'1': {'candidate_steps': [4]}, '13': {'candidate_steps': [3]}}
    values = dict(pinned(4), sglang_service_speculative_adaptive=True, sglang_service_speculative_adaptive_config=schedule)
    first, changed = sweep_pin.update_text(USER_FILE, values)
    assert 'sglang_service_speculative_adaptive_config' in changed
    line = [ln for ln in first.splitlines() if ln.startswith('sglang_service_speculative_adaptive_config:')]
    assert len(line) == 1 and yaml.safe_load(first)['sglang_service_speculative_adaptive_config'] == schedule
    other = {'1': {'candidate_steps': [5]}, '9': {'candidate_steps': [2]}}
    second, changed = sweep_pin.update_text(first, dict(values, sglang_service_speculative_adaptive_config=other))
    assert changed == ['sglang_service_speculative_adaptive_config']
    assert yaml.safe_load(second)['sglang_service_speculative_adaptive_config'] == other
    assert len(second.splitlines()) == len(first.splitlines())
    static, changed = sweep_pin.update_text(second, dict(values, sglang_service_speculative_adaptive=False,
                                                         sglang_service_speculative_adaptive_config=None))
    data = yaml.safe_load(static)
    assert data['sglang_service_speculative_adaptive'] is False and data['sglang_service_speculative_adaptive_config'] is None
    assert '# Connection settings: keep me' in static and data['extra'] == ['a', 'b']
    # A flow mapping holding an alias or anchor is the operator's construction: refused.
    with pytest.raises(sweep_pin.PinError):
        sweep_pin.update_text('x: &a [3]\nsglang_service_speculative_adaptive_config: {"1": *a}\n',
                              dict(values, sglang_service_speculative_adaptive_config=other))
