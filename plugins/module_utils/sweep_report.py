# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.sglang contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Renders the sweep report: markdown table, CSV and JSON of every measurement, PNG chart.

Private to llmops.sglang; runs on the controller (matplotlib is optional: without it the
report has no chart and says so).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import csv
import io
import json

CSV_FIELDS = ('host', 'steps', 'repeat', 'status', 'concurrency', 'requests_completed', 'requests_failed',
              'per_request_tok_s_median', 'aggregate_output_tok_s', 'accept_length', 'max_running_requests',
              'max_total_num_tokens', 'ttft_p99_s', 'tpot_p50_s', 'duration_s', 'client_lag_fraction', 'discarded_tries',
              'diagnosis', 'recorded_at')


def _fmt(value, digits=1):
    if value is None:
        return '-'
    if isinstance(value, float):
        return '%.*f' % (digits, value)
    return str(value)


def _steps_cell(steps):
    """The configuration column: a step count, 0 (baseline) or the schedule."""
    if steps == 'schedule':
        return 'schedule'
    if steps == 0:
        return '0 (baseline)'
    return str(steps)


def _speedup(value):
    return '-' if value is None else '%.2fx' % value


def markdown_table(rows, winner=None):
    """Configuration x concurrency: per-request and aggregate tok/s, speedup over the baseline (aggregate
    tok/s at the same concurrency), accept length, max_running_requests, status."""
    lines = ['| steps | concurrency | per-request tok/s (median) | aggregate tok/s | speedup over baseline | accept length '
             '| max_running_requests | status |',
             '| ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |']
    for r in rows:
        status = r['status']
        if r.get('note'):
            # A reason that already starts with the status ('skipped: steps 10 failed ...') is shown once.
            status = r['note'] if r['note'].startswith(status) else '%s: %s' % (status, r['note'])
        if winner is not None and r['steps'] == winner and r['status'] == 'ok':
            status += ' (winner)'
        lines.append('| %s | %s | %s | %s | %s | %s | %s | %s |' % (
            _steps_cell(r['steps']), _fmt(r['concurrency']), _fmt(r['per_request_tok_s']), _fmt(r['aggregate_tok_s']),
            _speedup(r.get('speedup')), _fmt(r['accept_length'], 2), _fmt(r['max_running_requests'], 0), status.replace('|', '/')))
    return '\n'.join(lines) + '\n'


def _label(steps):
    if steps == 'schedule':
        return 'the schedule'
    if steps == 0:
        return 'the baseline (steps 0, speculative decoding off)'
    return 'steps %s' % steps


def _winner_text(decision, schedule):
    winner = decision['winner']
    if winner is None:
        return 'none (every configuration failed or none qualified)'
    if winner == 'schedule':
        return 'the schedule %s (--speculative-adaptive, --speculative-num-steps %s)' % (
            json.dumps((schedule or {}).get('config'), sort_keys=True), (schedule or {}).get('start_steps'))
    return _label(winner)


def _schedule_section(evaluation):
    """Per-level best static, the derived schedule and what became of it."""
    schedule = evaluation.get('schedule') or {}
    picks = schedule.get('picks') or []
    if not picks and not schedule:
        return []
    out = ['## Best static step count per concurrency level', '',
           'Aggregate tok/s; within the margin plus the noise the smaller step count stays, and the baseline takes a level '
           'only by beating the best step count there.', '',
           '| concurrency | best static | aggregate tok/s | max_running_requests | why |', '| ---: | --- | ---: | ---: | --- |']
    for pick in picks:
        out.append('| %s | %s | %s | %s | %s |' % (
            pick['concurrency'], _steps_cell(pick['steps']), _fmt(pick['score']), _fmt(pick.get('max_running_requests'), 0),
            (pick.get('why') or '').replace('|', '/')))
    out += ['', '## Schedule', '']
    derived = schedule.get('derived')
    if derived:
        out.append('- derived: `%s` (keys: running batch sizes; SGLang 0.5.23 pads a batch to the next captured CUDA-graph '
                   'size and uses the entry with the largest key not above it)' % json.dumps(derived, sort_keys=True))
        out.append('- started with --speculative-num-steps %s (the largest candidate; memory and batch room follow it)'
                   % schedule.get('start_steps'))
    out.append('- %s: %s' % (schedule.get('action', 'none'), schedule.get('reason', '')))
    return out + ['']


def _lateness(measured):
    """A level's or a discarded try's client lateness (sglang_bench client_lag), as a percentage."""
    return '%.0f%%' % (100 * ((measured.get('client_lag') or {}).get('fraction') or 0))


def _measured_again_section(configs):
    """The levels measured again because the benchmark client was starved of CPU (sglang_bench client_lag_limit)."""
    lines = []
    for cfg in configs:
        repeats = cfg.get('repeats') or []
        for idx, rep in enumerate(repeats, 1):
            for lv in rep.get('levels') or []:
                tries = lv.get('discarded') or []
                if not tries:
                    continue
                where = '%s%s, concurrency %s' % (_label(cfg['steps']), ' repeat %d' % idx if len(repeats) > 1 else '',
                                                  lv.get('concurrency'))
                lines.append('- %s: %d %s discarded (the client woke late for %s of the level); the try that counts: %s'
                             % (where, len(tries), 'try' if len(tries) == 1 else 'tries',
                                ', '.join(_lateness(t) for t in tries), _lateness(lv)))
    if not lines:
        return []
    return ['', '## Measured again', '',
            'Levels whose benchmark client was starved of CPU on its host were measured again; only the last try counts.', ''] + lines


def markdown(host, evaluation, meta):
    decision = evaluation['decision']
    winner = decision['winner']
    out = ['# Speculative decoding sweep: %s' % host, '']
    out.append('- objective: %s' % decision['objective'])
    out.append('- winner: %s' % _winner_text(decision, evaluation.get('schedule')))
    for key in ('serving', 'date', 'sglang_version', 'model', 'workload', 'concurrency_levels', 'repeats', 'margin', 'early_stop'):
        if meta.get(key) is not None:
            out.append('- %s: %s' % (key.replace('_', ' '), meta[key]))
    out += ['', '## Why', '', decision['reason'], '', '## Results (medians over repeats)', '',
            markdown_table(evaluation['table'], winner)]
    out += _schedule_section(evaluation)
    out += ['## Verdicts', '']
    for v in decision['verdicts']:
        out.append('- %s (%s): %s' % (_label(v['steps']), v['status'], v['verdict']))
    out += _measured_again_section(evaluation['configs'])
    if meta.get('chart'):
        out += ['', '![tok/s against concurrency](%s)' % meta['chart']]
    return '\n'.join(out) + '\n'


def measurement_rows(host, configs):
    """One CSV/JSON row per host x step count x repeat x concurrency (failures get one row)."""
    rows = []
    for cfg in configs:
        if cfg.get('status') != 'ok':
            rows.append({'host': host, 'steps': cfg['steps'], 'repeat': None, 'status': cfg.get('status'),
                         'diagnosis': (cfg.get('failure') or {}).get('diagnosis') or cfg.get('reason'),
                         'recorded_at': cfg.get('recorded_at')})
            continue
        for idx, rep in enumerate(cfg.get('repeats') or [], 1):
            for lv in rep.get('levels') or []:
                rows.append({
                    'host': host, 'steps': cfg['steps'], 'repeat': idx, 'status': 'ok', 'concurrency': lv.get('concurrency'),
                    'requests_completed': lv.get('requests_completed'), 'requests_failed': lv.get('requests_failed'),
                    'per_request_tok_s_median': (lv.get('per_request_tok_s') or {}).get('median'),
                    'aggregate_output_tok_s': lv.get('aggregate_output_tok_s'), 'accept_length': lv.get('accept_length'),
                    'max_running_requests': lv.get('max_running_requests'), 'max_total_num_tokens': lv.get('max_total_num_tokens'),
                    'ttft_p99_s': (lv.get('ttft_s') or {}).get('p99'), 'tpot_p50_s': (lv.get('tpot_s') or {}).get('p50'),
                    'duration_s': lv.get('duration_s'), 'recorded_at': cfg.get('recorded_at'),
                    # The benchmark client's own health (sglang_bench): the level's lateness, the tries it measured again.
                    'client_lag_fraction': (lv.get('client_lag') or {}).get('fraction'),
                    'discarded_tries': len(lv.get('discarded') or []),
                })
    return rows


def to_csv(rows):
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=CSV_FIELDS, extrasaction='ignore', lineterminator='\n')
    writer.writeheader()
    for row in rows:
        writer.writerow(dict((k, '' if row.get(k) is None else row.get(k)) for k in CSV_FIELDS))
    return buf.getvalue()


def to_json(host, evaluation, meta, rows):
    doc = {'host': host, 'meta': meta, 'decision': evaluation['decision'], 'plan': evaluation['plan'],
           'table': evaluation['table'], 'measurements': rows,
           'raw': [dict((k, v) for k, v in cfg.items() if k != 'repeats') for cfg in evaluation['configs']]}
    return json.dumps(doc, indent=2, sort_keys=True, default=str) + '\n'


def chart(path, host, evaluation):
    """PNG: tok/s against concurrency, one line per step count, the winner marked. Returns False without matplotlib."""
    try:
        import matplotlib
        matplotlib.use('Agg')  # no display on a controller or in CI
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    winner = evaluation['decision']['winner']
    rows = [r for r in evaluation['table'] if r['status'] == 'ok' and r['concurrency'] is not None]
    fig, (ax_agg, ax_req) = plt.subplots(1, 2, figsize=(12, 4.8))
    statics = sorted(set(r['steps'] for r in rows if r['steps'] != 'schedule'))
    for steps in statics + (['schedule'] if any(r['steps'] == 'schedule' for r in rows) else []):
        mine = sorted((r for r in rows if r['steps'] == steps), key=lambda r: r['concurrency'])
        xs = [r['concurrency'] for r in mine]
        is_winner = steps == winner
        name = {'schedule': 'schedule', 0: 'baseline (steps 0)'}.get(steps, 'steps %s' % steps)
        style = {'linewidth': 3.0 if is_winner else 1.2, 'marker': '*' if is_winner else 'o',
                 'markersize': 11 if is_winner else 4, 'label': '%s%s' % (name, ' (winner)' if is_winner else '')}
        if steps == 'schedule':
            style.update(linestyle='--', color='black', linewidth=3.0 if is_winner else 2.0)
        elif steps == 0:
            style.update(linestyle=':', color='grey')
        ax_agg.plot(xs, [r['aggregate_tok_s'] for r in mine], **style)
        ax_req.plot(xs, [r['per_request_tok_s'] for r in mine], **style)
    for ax, title in ((ax_agg, 'aggregate output tok/s'), (ax_req, 'median per-request tok/s')):
        ax.set_xscale('log', base=2)
        ax.set_xlabel('concurrency')
        ax.set_ylabel('tok/s')
        ax.set_title(title)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    notes = []
    for status in ('failed', 'skipped'):
        which = [_steps_cell(c['steps']) for c in evaluation['configs'] if c.get('status') == status]
        if which:
            notes.append('; %s: steps %s' % (status, ', '.join(str(s) for s in which)))
    fig.suptitle('%s: %s%s' % (host, evaluation['decision']['objective'], ''.join(notes)), fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return True
