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
              'max_total_num_tokens', 'ttft_p99_s', 'tpot_p50_s', 'duration_s', 'diagnosis', 'recorded_at')


def _fmt(value, digits=1):
    if value is None:
        return '-'
    if isinstance(value, float):
        return '%.*f' % (digits, value)
    return str(value)


def markdown_table(rows, winner=None):
    """Step count x concurrency: per-request and aggregate tok/s, accept length, max_running_requests, status."""
    lines = ['| steps | concurrency | per-request tok/s (median) | aggregate tok/s | accept length | max_running_requests | status |',
             '| ---: | ---: | ---: | ---: | ---: | ---: | --- |']
    for r in rows:
        status = r['status']
        if r.get('note'):
            # A reason that already starts with the status ('skipped: steps 10 failed ...') is shown once.
            status = r['note'] if r['note'].startswith(status) else '%s: %s' % (status, r['note'])
        if winner is not None and r['steps'] == winner and r['status'] == 'ok':
            status += ' (winner)'
        lines.append('| %s | %s | %s | %s | %s | %s | %s |' % (
            r['steps'], _fmt(r['concurrency']), _fmt(r['per_request_tok_s']), _fmt(r['aggregate_tok_s']),
            _fmt(r['accept_length'], 2), _fmt(r['max_running_requests'], 0), status.replace('|', '/')))
    return '\n'.join(lines) + '\n'


def markdown(host, evaluation, meta):
    decision = evaluation['decision']
    winner = decision['winner']
    out = ['# Speculative decoding sweep: %s' % host, '']
    out.append('- objective: %s' % decision['objective'])
    out.append('- winner: %s' % ('steps %d' % winner if winner is not None else 'none (every configuration failed or none qualified)'))
    for key in ('serving', 'date', 'sglang_version', 'model', 'workload', 'concurrency_levels', 'repeats', 'margin', 'early_stop'):
        if meta.get(key) is not None:
            out.append('- %s: %s' % (key.replace('_', ' '), meta[key]))
    out += ['', '## Why', '', decision['reason'], '', '## Results (medians over repeats)', '',
            markdown_table(evaluation['table'], winner)]
    out += ['## Verdicts', '']
    for v in decision['verdicts']:
        out.append('- steps %d (%s): %s' % (v['steps'], v['status'], v['verdict']))
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
    for steps in sorted(set(r['steps'] for r in rows)):
        mine = sorted((r for r in rows if r['steps'] == steps), key=lambda r: r['concurrency'])
        xs = [r['concurrency'] for r in mine]
        is_winner = steps == winner
        style = {'linewidth': 3.0 if is_winner else 1.2, 'marker': '*' if is_winner else 'o',
                 'markersize': 11 if is_winner else 4, 'label': 'steps %d%s' % (steps, ' (winner)' if is_winner else '')}
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
        which = [c['steps'] for c in evaluation['configs'] if c.get('status') == status]
        if which:
            notes.append('; %s: steps %s' % (status, ', '.join(str(s) for s in which)))
    fig.suptitle('%s: %s%s' % (host, evaluation['decision']['objective'], ''.join(notes)), fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return True
