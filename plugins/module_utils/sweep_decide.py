# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.sglang contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Decision logic of the speculative-decoding step sweep (private to llmops.sglang).

Pure functions over plain dicts so that they can be unit tested without Ansible.

A *configuration record* describes one step count on one host::

    {"steps": 4, "status": "ok" | "failed" | "missing",
     "repeats": [{"levels": [<sglang_bench level dict>, ...]}, ...],
     "failure": {"diagnosis": "not_enough_memory", "message": "...", ...} or None}

Step count 0 is the *baseline*: speculative decoding off (no speculative flags at all). It is
measured like any other configuration but takes no part in early stop, in the memory rule or in
"the smaller step count wins a tie": it wins only when it beats the best speculative step count by
more than the margin plus the noise. The *schedule* (steps ``'schedule'``) is an adaptive config
(SGLang 0.5.23 ``--speculative-adaptive``) derived from the measured statics: each measured
concurrency level's best static step count, keyed by the running batch size (``derive_schedule()``).

``plan()`` says which step counts still need measuring (and which early stop skips);
``decide()`` picks the winner for an objective and explains why.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import math
from statistics import NormalDist

from ansible_collections.llmops.sglang.plugins.module_utils.speculative import adaptive_config_plain

OBJECTIVES = ('agentic', 'throughput', 'constrained', 'balanced')

STATUS_OK = 'ok'
STATUS_FAILED = 'failed'
STATUS_SKIPPED = 'skipped'
STATUS_MISSING = 'missing'

# Step count 0: speculative decoding off, what every speedup is measured against.
BASELINE = 0
# The derived adaptive schedule's name where a step count would stand (records, table rows, verdicts).
SCHEDULE = 'schedule'

# Concurrency levels that break a tie at concurrency 1 for the agentic objective, in order.
AGENTIC_TIEBREAK_LEVELS = (2, 3, 4)

DEFAULTS = {
    'margin': 0.02,
    'early_stop': True,
    'early_stop_margin': 0.02,
    'skip_after_memory_failure': True,
    'throughput_concurrency': 32,
    'max_ttft_p99_s': None,
    'min_per_request_tok_s': None,
    # Whether the sweep's benchmarks stop adaptively on the objective's ranked figure (sweep_stop adaptive).
    'adaptive_stop': False,
    # Whether a schedule is derived from the statics and measured as one more candidate (sweep_schedule).
    'schedule': True,
    # What the plan says when the schedule is off.
    'schedule_off_reason': 'sweep_schedule is false',
    # Why SGLang 0.5.23 would not run the schedule adaptive (adaptive_unsupported_reason), or None.
    'adaptive_unsupported': None,
    # How many hosts share the step counts (sweep_split): only the time-left estimate of progress() uses it.
    'sharing_hosts': 1,
}


class SweepError(ValueError):
    """Raised for inputs the sweep cannot work with (message names the variable)."""


def median(values):
    """Median of a non-empty list of numbers (mean of the middle two for even lengths)."""
    vals = sorted(v for v in values if v is not None)
    if not vals:
        return None
    mid = len(vals) // 2
    if len(vals) % 2:
        return float(vals[mid])
    return (vals[mid - 1] + vals[mid]) / 2.0


def spread(values):
    """Range (max - min) of the repeats: the measured noise a winner has to clear."""
    vals = [v for v in values if v is not None]
    if len(vals) < 2:
        return 0.0
    return float(max(vals) - min(vals))


def _params(params):
    merged = dict(DEFAULTS)
    merged.update(dict((k, v) for k, v in (params or {}).items() if v is not None))
    return merged


def validate(objective, steps, concurrency_levels, repeats, params=None):
    """Check the sweep inputs; raise SweepError naming the variable and the allowed values."""
    p = _params(params)
    if objective not in OBJECTIVES:
        raise SweepError('sweep_objective must be one of %s, got %r' % (', '.join(OBJECTIVES), objective))
    if not isinstance(steps, (list, tuple)) or not steps:
        raise SweepError('sweep_steps must be a non-empty list of integers >= 0 (0: the baseline, speculative decoding off), got %r'
                         % (steps,))
    for s in steps:
        if isinstance(s, bool) or not isinstance(s, int) or s < 0:
            raise SweepError('sweep_steps must be a list of integers >= 0 (0: the baseline, speculative decoding off), got %r' % (s,))
    if len(set(steps)) != len(steps):
        raise SweepError('sweep_steps must not repeat a step count, got %r' % (list(steps),))
    if not isinstance(concurrency_levels, (list, tuple)) or not concurrency_levels:
        raise SweepError('sweep_concurrency_levels must be a non-empty list of integers >= 1, got %r' % (concurrency_levels,))
    for c in concurrency_levels:
        if isinstance(c, bool) or not isinstance(c, int) or c < 1:
            raise SweepError('sweep_concurrency_levels must be a list of integers >= 1, got %r' % (c,))
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
        raise SweepError('sweep_repeats must be an integer >= 1, got %r' % (repeats,))
    for key, var in (('margin', 'sweep_margin'), ('early_stop_margin', 'sweep_early_stop_margin')):
        val = p[key]
        if isinstance(val, bool) or not isinstance(val, (int, float)) or val < 0 or val >= 1:
            raise SweepError('%s must be a fraction in [0, 1) (0.02 = 2%%), got %r' % (var, val))
    if objective == 'agentic' and 1 not in concurrency_levels:
        raise SweepError('sweep_objective agentic ranks on concurrency 1: sweep_concurrency_levels must contain 1, got %r'
                         % (list(concurrency_levels),))
    if objective == 'throughput' and p['throughput_concurrency'] not in concurrency_levels:
        raise SweepError('sweep_throughput_concurrency (%r) must be one of sweep_concurrency_levels %r'
                         % (p['throughput_concurrency'], list(concurrency_levels)))
    if objective == 'constrained':
        if p['max_ttft_p99_s'] is None and p['min_per_request_tok_s'] is None:
            raise SweepError('sweep_objective constrained needs a bound: set sweep_max_ttft_p99_s and/or sweep_min_per_request_tok_s')
        for key, var in (('max_ttft_p99_s', 'sweep_max_ttft_p99_s'), ('min_per_request_tok_s', 'sweep_min_per_request_tok_s')):
            val = p[key]
            if val is not None and (isinstance(val, bool) or not isinstance(val, (int, float)) or val <= 0):
                raise SweepError('%s must be a positive number or null, got %r' % (var, val))
    return p


def _by_concurrency(levels):
    return dict((int(lv['concurrency']), lv) for lv in levels or [] if lv.get('concurrency') is not None)


def _per_request(level):
    prt = (level or {}).get('per_request_tok_s') or {}
    return prt.get('median')


def _reported_se(level, metric):
    """The standard error sglang_bench reported for a level's figure (its ``precision``), or None."""
    prec = ((level or {}).get('precision') or {}).get(metric) or {}
    return float(prec['se']) if prec.get('se') is not None else None


def _median_se(level):
    """Standard error of a level's median per-request tok/s: what sglang_bench measured (its
    ``precision``), else, for runs stored before it reported one, from its p10-p90 and request count.

    Normal approximation: sigma ~ (p90 - p10) / 2.563 and SE(median) ~ 1.2533 sigma / sqrt(n).
    It lets a single run say how precisely it measured, not only repeats.
    """
    reported = _reported_se(level, 'per_request')
    if reported is not None:
        return reported
    prt = (level or {}).get('per_request_tok_s') or {}
    n = (level or {}).get('requests_completed') or 0
    if prt.get('p10') is None or prt.get('p90') is None or n < 2:
        return 0.0
    return 1.2533 * (float(prt['p90']) - float(prt['p10'])) / 2.563 / math.sqrt(n)


def _ttft_p99(level):
    return ((level or {}).get('ttft_s') or {}).get('p99')


def level_ok(level):
    """A level counts only if at least one request completed."""
    return bool(level) and (level.get('requests_completed') or 0) > 0


def score_repeat(levels, objective, params=None):
    """Score one benchmark run (the levels of one repeat).

    Returns ``{"score": float or None, "tiebreak": [float or None, ...], "at": concurrency or None}``.
    ``score`` is None when the run does not qualify (level missing, every request failed, or
    no level meets the bounds of the constrained objective).
    """
    p = _params(params)
    by_c = _by_concurrency(levels)
    if objective == 'agentic':
        lv = by_c.get(1)
        score = _per_request(lv) if level_ok(lv) else None
        ties, tie_ses = [], []
        for c in AGENTIC_TIEBREAK_LEVELS:
            if c in by_c:
                ok_level = level_ok(by_c[c])
                ties.append(_per_request(by_c[c]) if ok_level else None)
                tie_ses.append(_median_se(by_c[c]) if ok_level else 0.0)
        return {'score': score, 'tiebreak': ties, 'tiebreak_se': tie_ses, 'at': 1,
                'se': _median_se(lv) if score is not None else 0.0}
    if objective == 'throughput':
        c = p['throughput_concurrency']
        lv = by_c.get(c)
        score = lv.get('aggregate_output_tok_s') if level_ok(lv) else None
        # Not the run's batch-means precision of its aggregate (sglang_bench's precision.aggregate): it
        # overstates the noise of a closed loop's aggregate (molecule sweep, steps 3 vs 2 at c=32: +4.4%
        # and +5.6% measured inside bands of 6.6-7%, where repeated runs agree within about 1%), so no
        # step count could win. The noise is the spread across repeats, as before it was reported.
        se = 0.0
        return {'score': score, 'tiebreak': [], 'at': c, 'se': se}
    if objective == 'constrained':
        best, at = None, None
        for c in sorted(by_c):
            lv = by_c[c]
            if not level_ok(lv) or (lv.get('requests_failed') or 0) > 0:
                continue
            if p['max_ttft_p99_s'] is not None:
                ttft = _ttft_p99(lv)
                if ttft is None or ttft > p['max_ttft_p99_s']:
                    continue
            if p['min_per_request_tok_s'] is not None:
                prt = _per_request(lv)
                if prt is None or prt < p['min_per_request_tok_s']:
                    continue
            agg = lv.get('aggregate_output_tok_s')
            if agg is not None and (best is None or agg > best):
                best, at = agg, c
        return {'score': best, 'tiebreak': [], 'at': at, 'se': 0.0}
    raise SweepError('sweep_objective must be one of %s, got %r' % (', '.join(OBJECTIVES), objective))


def summarize(config, objective, params=None):
    """Medians and spread of the objective over a configuration's repeats."""
    scored = [score_repeat(r.get('levels'), objective, params) for r in config.get('repeats') or []]
    scores = [s['score'] for s in scored]
    qualified = [s for s in scores if s is not None]
    ties, tie_spreads, tie_ses = [], [], []
    n_ties = max([len(s['tiebreak']) for s in scored] or [0])
    for i in range(n_ties):
        column = [s['tiebreak'][i] for s in scored if i < len(s['tiebreak'])]
        ties.append(median(column))
        tie_spreads.append(spread(column))
        se_column = [(s.get('tiebreak_se') or [])[i] for s in scored if i < len(s.get('tiebreak_se') or [])]
        tie_ses.append((median(se_column) or 0.0) / math.sqrt(len(se_column)) if se_column else 0.0)
    ats = [s['at'] for s in scored if s['at'] is not None]
    ses = [s.get('se') or 0.0 for s in scored]
    return {
        'steps': config['steps'],
        # A configuration qualifies only if every repeat does: one bad run is not hidden by a median.
        'score': median(qualified) if qualified and len(qualified) == len(scores) else None,
        'spread': spread(qualified),
        # Within-run precision; repeats shrink it like the standard error of a mean.
        'se': (median(ses) or 0.0) / math.sqrt(len(ses)) if ses else 0.0,
        'tiebreak': ties,
        'tiebreak_spread': tie_spreads,
        'tiebreak_se': tie_ses,
        'at': median(ats) if ats else None,
        'repeats': len(scores),
        'max_running_requests': _batch_room(config),
    }


def _batch_room(config):
    """The server's effective max_running_requests over the repeats (what sglang_bench reports per level:
    the limit that applies, not SGLang 0.5.23's resolved top-level 48)."""
    values = [lv.get('max_running_requests') for r in config.get('repeats') or [] for lv in r.get('levels') or []]
    room = median([v for v in values if v is not None])
    return None if room is None else int(room)


def _gain(new, old):
    if new is None or old is None or old <= 0:
        return None
    return (new - old) / old


def _fmt(value):
    # tok/s to one decimal; the balanced objective's ratios (below 2) and their noise to three.
    if value is None:
        return 'n/a'
    return '%.3f' % value if 0 < abs(value) < 2 else '%.1f' % value


def _at(values, idx):
    return (values or [])[idx] if idx < len(values or []) else 0.0


def _noise(spread_a, spread_b, se_a, se_b, z=1.96):
    """The larger of either side's repeat range and z standard errors of the difference."""
    return max(spread_a or 0.0, spread_b or 0.0, z * math.sqrt((se_a or 0.0) ** 2 + (se_b or 0.0) ** 2))


def _z_for(looks):
    """Two-sided 95% band, Bonferroni-corrected: every extra figure looked at (tie-breakers) is
    another chance for noise to crown the larger step count."""
    return NormalDist().inv_cdf(1.0 - 0.025 / max(1, looks))


def label(steps):
    """How a candidate is named in verdicts and reasons: 'steps 4', 'the baseline (steps 0, ...)', 'the schedule'."""
    if steps == SCHEDULE:
        return 'the schedule'
    if steps == BASELINE:
        return 'the baseline (steps 0, speculative decoding off)'
    return 'steps %d' % steps


def beats(larger, smaller, margin, stays=None, tiebreakers=True):
    """Whether ``larger`` (more steps) beats ``smaller`` by more than ``margin`` plus the measured spread.

    Returns ``(wins, why)``: the reason says which figure decided. ``stays`` replaces the closing words
    of a tie ("the smaller step count stays ...") where the challenger is not a larger step count
    (the baseline, the schedule). ``tiebreakers`` false: a tie on the main figure keeps ``smaller``
    whatever the tie-breakers say (the baseline and the schedule must win on the objective's own figure).
    """
    def _clears(new, old, noise):
        # The lead beyond the margin must itself be larger than the noise: a test of "better by more
        # than the margin", the comparison adaptive stopping settles (bench_stopping.StopRule's bounds
        # are the incumbent raised by the margin). A point estimate just past the margin, inside the
        # noise, is a tie: the truth may as well be below the margin.
        return _gain(new, old) is not None and (new - old * (1 + margin)) > noise

    def _behind(new, old, noise):
        # Behind on the main figure (no tie-breaker can save it): by more than the margin, and really.
        gain = _gain(new, old)
        return gain is not None and gain > margin and (new - old) > noise

    # The measured spread: the range of either side's repeats, or z standard errors of the difference
    # (a 95% band, corrected for the number of figures compared) from the runs' own per-request
    # dispersion, whichever is larger.
    looks = 1 + (sum(1 for lt, st in zip(larger['tiebreak'], smaller['tiebreak']) if lt is not None and st is not None)
                 if tiebreakers else 0)
    z = _z_for(looks)
    noise = _noise(larger['spread'], smaller['spread'], larger.get('se'), smaller.get('se'), z)
    other = label(smaller['steps'])
    if _clears(larger['score'], smaller['score'], noise):
        return True, 'beats %s by %+.1f%% (%s vs %s; margin %.1f%% plus spread %s)' % (
            other, 100 * _gain(larger['score'], smaller['score']), _fmt(larger['score']),
            _fmt(smaller['score']), 100 * margin, _fmt(noise))
    if _behind(smaller['score'], larger['score'], noise):
        return False, 'is %+.1f%% behind %s (%s vs %s)' % (
            100 * _gain(larger['score'], smaller['score']), other, _fmt(larger['score']), _fmt(smaller['score']))
    # A tie on the main figure: tie-breakers (agentic: concurrency 2-4) may decide, still by the margin.
    for idx, (lt, st) in enumerate(zip(larger['tiebreak'], smaller['tiebreak']) if tiebreakers else ()):
        if lt is None or st is None:
            continue
        tie_noise = _noise(larger['tiebreak_spread'][idx], smaller['tiebreak_spread'][idx],
                           _at(larger.get('tiebreak_se'), idx), _at(smaller.get('tiebreak_se'), idx), z)
        if _clears(lt, st, tie_noise):
            return True, 'ties %s on the main figure (%s vs %s) and wins tie-breaker #%d by %+.1f%% (%s vs %s)' % (
                other, _fmt(larger['score']), _fmt(smaller['score']), idx + 1, 100 * _gain(lt, st), _fmt(lt), _fmt(st))
        if _behind(st, lt, tie_noise):
            break
    gain = _gain(larger['score'], smaller['score'])
    if stays is None:
        room = 'more batch room'
        if smaller.get('max_running_requests') is not None and larger.get('max_running_requests') is not None:
            room = 'more batch room: max_running_requests %d against %d' % (
                smaller['max_running_requests'], larger['max_running_requests'])
        stays = 'the smaller step count stays (less memory, %s)' % room
    return False, ('does not beat %s by more than the %.1f%% margin plus the spread %s (%s vs %s, %s); %s') % (
        other, 100 * margin, _fmt(noise), _fmt(larger['score']), _fmt(smaller['score']),
        'n/a' if gain is None else '%+.1f%%' % (100 * gain), stays)


def describe_objective(objective, params=None):
    """The objective in words, for the reason, the report and the pinned evidence."""
    p = _params(params)
    if objective == 'agentic':
        return 'agentic: best median per-request tok/s at concurrency 1 (tie-breakers: concurrency 2, 3, 4)'
    if objective == 'throughput':
        return 'throughput: best aggregate output tok/s at concurrency %d' % p['throughput_concurrency']
    bounds = []
    if p['max_ttft_p99_s'] is not None:
        bounds.append('p99 TTFT <= %gs' % p['max_ttft_p99_s'])
    if p['min_per_request_tok_s'] is not None:
        bounds.append('median per-request tok/s >= %g' % p['min_per_request_tok_s'])
    if objective == 'balanced':
        return ('balanced: best worst-case ratio, over the concurrency levels, of aggregate output tok/s to the best static '
                'step count at that level')
    return 'constrained: best aggregate output tok/s at a concurrency where %s' % ' and '.join(bounds)


def failure_text(failure):
    """'failed to start: <diagnosis>', 'failed under load: <diagnosis>' or, for a schedule the sweep
    did not deploy because SGLang would not run it, 'not deployed: <diagnosis>'."""
    failure = failure or {}
    kind = {'load': 'failed under load', 'not_deployed': 'not deployed'}.get(failure.get('kind'), 'failed to start')
    return '%s: %s' % (kind, failure.get('diagnosis') or 'unknown')


def failure_details(failure):
    """What a verdict's reader needs beyond its diagnosis: the journal's evidence and, for a start with no known
    cause, the control that made it the configuration's (classify_start_failure); '' without either."""
    failure = failure or {}
    parts = []
    if failure.get('evidence'):
        parts.append('journal: %s' % failure['evidence'])
    if failure.get('control'):
        parts.append(failure['control'].strip())
    return (' (%s)' % '; '.join(parts)) if parts else ''


# Start failures that say the configuration needs more GPU memory than the host has. The sweep keeps
# one top-k (sweep_speculative_eagle_topk, part of the fingerprint: every stored configuration of a
# plan has the same), and with the same top-k a larger step count needs more memory, never less
# (more draft tokens per verify step: larger draft KV and CUDA-graph buffers). So a larger step
# count would fail the same way and is skipped instead of deployed (option
# skip_after_memory_failure). Memory ones (diagnosis.py keys, SGLang 0.5.23):
#   not_enough_memory   the KV pool got nothing once weights, speculative buffers and graphs took theirs
#   cuda_out_of_memory  a CUDA allocation failed while the server was starting
#   cuda_graph_capture_failed, only when its journal evidence is an out-of-memory (0.5.23 wraps the
#                       torch error: "Capture cuda graph failed: CUDA out of memory. ..."); a capture
#                       can fail for other reasons (a kernel, a backend), which a larger count need not share
# Not memory in this sense: unbalanced_memory (another process holds a GPU: says nothing about what
# this configuration needs, and goes away once the GPU is free), bad_argument, timeout, unknown,
# verification_mismatch; and no failure under load (kind 'load': the load, not the start, failed).
MEMORY_DIAGNOSES = ('not_enough_memory', 'cuda_out_of_memory')
CAPTURE_DIAGNOSIS = 'cuda_graph_capture_failed'
_OUT_OF_MEMORY = ('out of memory', 'outofmemoryerror')


def memory_failure(failure):
    """The diagnosis of a start failure caused by memory (see MEMORY_DIAGNOSES), else None."""
    failure = failure or {}
    if failure.get('kind') == 'load':
        return None
    diagnosis = failure.get('diagnosis')
    if diagnosis in MEMORY_DIAGNOSES:
        return diagnosis
    if diagnosis == CAPTURE_DIAGNOSIS:
        text = ' '.join(str(t) for t in [failure.get('evidence'), failure.get('message'), failure.get('error')]
                        + list(failure.get('journal_tail') or []) if t).lower()
        if any(word in text for word in _OUT_OF_MEMORY):
            return diagnosis
    return None


def _order(steps):
    """Static step counts ascending, then the schedule."""
    return (1, 0) if steps == SCHEDULE else (0, steps)


def _sorted_configs(configs):
    return sorted(configs, key=lambda c: _order(c['steps']))


def _statics(configs):
    """The configurations of one step count each (the baseline included), not the schedule."""
    return [c for c in _sorted_configs(configs) if c['steps'] != SCHEDULE]


def ranked_concurrency(objective, params=None):
    """The concurrency level whose figure the objective ranks (None: constrained looks at every level)."""
    p = _params(params)
    return {'agentic': 1, 'throughput': p['throughput_concurrency']}.get(objective)


def _measured_for(repeat, concurrency):
    """Whether a stored run measured the ranked level as a ranked level: a level that adaptive stopping
    gave only its minimum (another objective ranked another figure) is too coarse to decide on."""
    level = _by_concurrency(repeat.get('levels')).get(concurrency)
    return level is not None and ((level.get('stop') or {}).get('mode') != 'minimum')


def for_objective(configs, objective, params=None):
    """The configurations with only the runs that measured what ``objective`` ranks.

    With adaptive stopping a benchmark measures the ranked level until its figure is precise and the
    other levels to a minimum, so a run of an agentic sweep (concurrency 1 ranked) says little about
    the concurrency-32 aggregate a throughput sweep ranks. Such runs are set aside (``set_aside``
    counts them) and the configuration is measured again for this objective.
    """
    p = _params(params)
    concurrency = ranked_concurrency(objective, p)
    if not p['adaptive_stop'] or concurrency is None:
        return list(configs)
    out = []
    for cfg in configs:
        repeats = cfg.get('repeats') or []
        kept = [r for r in repeats if _measured_for(r, concurrency)]
        if len(kept) == len(repeats):
            out.append(cfg)
            continue
        cfg = dict(cfg, repeats=kept, set_aside=len(repeats) - len(kept))
        if not kept and cfg.get('status') == STATUS_OK:
            cfg['status'] = STATUS_MISSING
        out.append(cfg)
    return out


def _baseline_entry(cfg, repeats):
    """The plan of the baseline: measured like any configuration, never stopped or skipped (it needs
    the least memory of all, and says nothing about whether a larger step count pays)."""
    have = len(cfg.get('repeats') or [])
    entry = {'steps': cfg['steps'], 'missing_repeats': max(0, repeats - have)}
    if cfg.get('status') == STATUS_FAILED:
        entry.update(action='failed', reason=failure_text(cfg.get('failure')))
    elif have >= repeats:
        entry.update(action='done', reason='measured (%d repeat%s; the baseline)' % (have, '' if have == 1 else 's'))
    else:
        entry.update(action='measure', reason='%d of %d repeats to measure (the baseline, speculative decoding off)'
                     % (entry['missing_repeats'], repeats), bounds=[])
    return entry


def _balanced_gain(summary_levels, best_levels):
    """The largest relative gain of a step count's per-level figures over the best smaller step count
    at the same level (None when no level compares): what balanced early stop looks at."""
    gains = [_gain(lv['score'], best_levels[c]) for c, lv in summary_levels.items() if c in best_levels]
    gains = [g for g in gains if g is not None]
    return max(gains) if gains else None


def plan(configs, objective, repeats, params=None):
    """Walk the step counts in ascending order and say what each one needs.

    Returns a list of ``{"steps", "action", "reason", "missing_repeats"}`` (and ``"bounds"`` when measured) with action one of
    ``done`` (all repeats measured), ``failed`` (a recorded start failure), ``measure`` (repeats
    missing), ``skip`` (early stop, or a smaller step count failed to start for memory) or ``pending``
    (depends on a step count still to be measured).
    Measured data is always kept; early stop and the memory rule only save measuring. The memory
    rule (``skip_after_memory_failure``) holds with early stop off too: once steps N failed to start
    for memory (``memory_failure()``), a larger step count that never started is skipped. ``bounds`` of a step count to
    measure are the objective's figures it is compared with (the best so far raised by the margin
    and by the early-stop margin), for adaptive stopping: once the benchmark knows on which side
    of them the figure lies, more requests would not change the decision.
    The baseline (steps 0) is planned on its own (``_baseline_entry``). For ``balanced`` early stop
    asks whether steps N is better than every smaller step count at some level by the early-stop
    margin: a step count that leads no level neither wins nor enters a schedule.
    """
    p = _params(params)
    out = []
    incumbent = None
    stopped = None
    blocked = False
    no_memory = None    # why larger step counts would not fit (the smallest memory failure at start)
    best_levels = {}    # balanced: the best figure per level among the smaller step counts
    for cfg in _statics(for_objective(configs, objective, p)):
        steps = cfg['steps']
        if steps == BASELINE:
            out.append(_baseline_entry(cfg, repeats))
            continue
        have = len(cfg.get('repeats') or [])
        entry = {'steps': steps, 'missing_repeats': max(0, repeats - have)}
        if cfg.get('status') == STATUS_FAILED:
            entry.update(action='failed', reason=failure_text(cfg.get('failure')))
            memory = memory_failure(cfg.get('failure'))
            if p['skip_after_memory_failure'] and memory and no_memory is None:
                no_memory = 'steps %d failed to start for memory (%s); a larger step count needs more' % (steps, memory)
            if p['early_stop'] and (incumbent is not None or best_levels) and stopped is None and not blocked:
                stopped = 'steps %d %s' % (steps, failure_text(cfg.get('failure')))
            out.append(entry)
            continue
        if have >= repeats:
            entry.update(action='done', reason='measured (%d repeat%s)' % (have, '' if have == 1 else 's'))
            if not blocked and objective == 'balanced':
                mine = level_summaries(cfg)
                if best_levels:
                    gain = _balanced_gain(mine, best_levels)
                    if p['early_stop'] and stopped is None and (gain is None or gain < p['early_stop_margin']):
                        stopped = ('steps %d leads no concurrency level by the %.1f%% early-stop margin over the smaller step counts '
                                   '(best gain %s)') % (steps, 100 * p['early_stop_margin'], 'n/a' if gain is None else '%+.1f%%' % (100 * gain))
                for c, lv in mine.items():
                    if lv['score'] is not None and (c not in best_levels or lv['score'] > best_levels[c]):
                        best_levels[c] = lv['score']
            elif not blocked:
                summary = summarize(cfg, objective, p)
                if incumbent is None:
                    if summary['score'] is not None:
                        incumbent = summary
                else:
                    gain = _gain(summary['score'], incumbent['score'])
                    if p['early_stop'] and stopped is None and (gain is None or gain < p['early_stop_margin']):
                        stopped = 'steps %d improved the objective by %s over steps %d (less than the %.1f%% early-stop margin)' % (
                            steps, 'n/a' if gain is None else '%+.1f%%' % (100 * gain), incumbent['steps'], 100 * p['early_stop_margin'])
                    if beats(summary, incumbent, p['margin'])[0]:
                        incumbent = summary
            out.append(entry)
            continue
        if no_memory is not None and have == 0:
            # Known to fail: not deployed, whatever early stop says. One that has started before
            # (a repeat is stored) evidently fits and gets its missing repeats.
            entry.update(action='skip', reason='skipped: %s' % no_memory)
        elif stopped is not None:
            entry.update(action='skip', reason='skipped by early stop: %s' % stopped)
        elif blocked:
            entry.update(action='pending', reason='waits for a smaller step count to be measured')
        else:
            why = '%d of %d repeats to measure' % (entry['missing_repeats'], repeats)
            if cfg.get('set_aside'):
                why += (' (%d stored run%s measured concurrency %s only to the minimum: another objective ranked another figure)'
                        % (cfg['set_aside'], '' if cfg['set_aside'] == 1 else 's', ranked_concurrency(objective, p)))
            entry.update(action='measure', reason=why, bounds=[])
            # Balanced ranks ratios between configurations, not a figure one benchmark could bound.
            if incumbent is not None and incumbent['score'] is not None and objective not in ('constrained', 'balanced'):
                raise_by = (p['margin'], p['early_stop_margin'])
                entry['bounds'] = sorted(set(round(incumbent['score'] * (1 + m), 3) for m in raise_by))
                # The bounds carry the incumbent's own error, and beats() compares at a z corrected for the
                # tie-breakers it looks at: a benchmark that stops on the bounds must have settled that comparison.
                entry['bounds_se'] = round((incumbent.get('se') or 0.0) * (1 + max(raise_by)), 4)
                entry['bounds_z'] = round(_z_for(1 + sum(1 for t in incumbent.get('tiebreak') or [] if t is not None)), 4)
            # Whether larger step counts run depends on this result.
            blocked = p['early_stop']
        out.append(entry)
    return out


# --- Per-level figures: the schedule and the balanced objective ----------------------------------

def level_summaries(config):
    """``{concurrency: summary}`` of a configuration's aggregate output tok/s at every level it measured
    on every repeat, shaped like ``summarize()`` so that ``beats()`` compares them.

    The aggregate is what a level delivers under its load (at concurrency 1 the one stream's
    end-to-end rate). Its noise is the spread across repeats or the level's own dispersion: the
    relative standard error of the median per-request tok/s (what sglang_bench measured, ``_median_se``)
    applied to the aggregate. Not the batch-means precision of the aggregate, which overstates it
    (see ``score_repeat``'s throughput note).
    """
    per_rep = [_by_concurrency(r.get('levels')) for r in config.get('repeats') or []]
    if not per_rep:
        return {}
    out = {}
    for c in sorted(set.intersection(*[set(lv) for lv in per_rep])):
        levels = [lv[c] for lv in per_rep]
        if not all(level_ok(lv) and lv.get('aggregate_output_tok_s') is not None for lv in levels):
            continue
        aggs = [float(lv['aggregate_output_tok_s']) for lv in levels]
        ses = []
        for lv, agg in zip(levels, aggs):
            prt = _per_request(lv)
            ses.append(agg * _median_se(lv) / prt if prt else 0.0)
        rooms = [lv.get('max_running_requests') for lv in levels if lv.get('max_running_requests') is not None]
        out[c] = {'steps': config['steps'], 'score': median(aggs), 'spread': spread(aggs),
                  'se': (median(ses) or 0.0) / math.sqrt(len(ses)), 'tiebreak': [], 'tiebreak_spread': [], 'tiebreak_se': [],
                  'at': c, 'max_running_requests': int(median(rooms)) if rooms else None}
    return out


def _ok(configs):
    return [c for c in configs if c.get('status') == STATUS_OK]


def best_static_per_level(configs, concurrency_levels, params=None):
    """For each measured concurrency level, the best static step count by aggregate tok/s.

    Within the noise the smaller step count stays, as in ``decide()``: ascending, a larger one
    replaces the best so far only when it ``beats()`` it by more than the margin plus the spread.
    The baseline (steps 0: no drafting, a schedule's candidate 0) takes the level only when it beats
    the best speculative step count there. Returns
    ``[{"concurrency", "steps", "score", "max_running_requests", "why"}, ...]`` in level order,
    levels no configuration measured left out.
    """
    p = _params(params)
    by_steps = [(c['steps'], level_summaries(c)) for c in _statics(_ok(configs))]
    out = []
    for conc in concurrency_levels:
        best, why, base = None, '', None
        for steps, levels in by_steps:
            lv = levels.get(conc)
            if lv is None:
                continue
            if steps == BASELINE:
                base = lv
                continue
            if best is None:
                best, why = lv, 'first measured'
                continue
            wins, text = beats(lv, best, p['margin'])
            if wins:
                best, why = lv, '%s %s' % (label(steps), text)
        if base is not None:
            if best is None:
                best, why = base, 'only the baseline measured'
            else:
                wins, text = beats(base, best, p['margin'], stays='speculative decoding pays here')
                if wins:
                    best, why = base, 'the baseline %s' % text
        if best is None:
            continue
        out.append({'concurrency': conc, 'steps': best['steps'], 'score': best['score'],
                    'max_running_requests': best['max_running_requests'], 'why': why})
    return out


def derive_schedule(picks, batch_room):
    """The adaptive config (SGLang 0.5.23 ``--speculative-adaptive-config``) that runs each level's best
    static step count: ``{"1": {"candidate_steps": [4]}, "13": {"candidate_steps": [3]}}``, or None
    when every level picks the same step count (the static one is the schedule).

    ``picks``: ``best_static_per_level()``; ``batch_room``: ``{steps: effective max running requests}``
    of the static configurations (what the records hold from /server_info).

    SGLang 0.5.23 pads a running batch to the next captured CUDA-graph batch size and routes it to the
    entry with the largest key not above that; it sizes memory, and so the batch room, for the largest
    candidate. So a level's running batch under the schedule is its concurrency capped by the room of
    the largest pick, and that is its key. Levels capped to the same batch size run the same batch: the
    largest level's pick (the one that saturates it) takes it. Should that drop the largest pick, the
    schedule's real room is larger than the cap, which changes nothing: batches above the cap reach the
    last entry either way, and only the levels that took it fill them. Adjacent equal entries merge; the
    first key is 1 (0.5.23 routes batches below the smallest key to it anyway).
    """
    picks = [p for p in picks if p.get('steps') is not None]
    if len(set(p['steps'] for p in picks)) < 2:
        return None
    room = batch_room.get(max(p['steps'] for p in picks))
    entries = []
    for pick in sorted(picks, key=lambda p: p['concurrency']):
        key = min(pick['concurrency'], room) if room else pick['concurrency']
        if entries and key <= entries[-1][0]:
            entries[-1] = (entries[-1][0], pick['steps'])
        elif entries and entries[-1][1] == pick['steps']:
            continue
        else:
            entries.append((key, pick['steps']))
    merged = []
    for key, steps in entries:
        if not (merged and merged[-1][1] == steps):
            merged.append((key, steps))
    if len(merged) < 2:
        return None
    merged[0] = (1, merged[0][1])
    return dict((str(key), {'candidate_steps': [steps]}) for key, steps in merged)


def schedule_start_steps(config):
    """--speculative-num-steps of a schedule: its largest candidate (0.5.23 requires one of them; memory
    is sized for the largest anyway)."""
    return max(s for entry in config.values() if isinstance(entry, dict) for s in entry.get('candidate_steps') or [])


def balanced_summaries(configs, concurrency_levels, params=None):
    """``{steps: summary}`` for the balanced objective: each candidate's worst ratio, over the levels, of its
    aggregate tok/s to the best static at that level (the largest measured, the baseline included).

    The ratio's noise is the candidate's own at that level, in the same units (spread and standard error
    divided by the best). A candidate that misses a level some static measured does not qualify.
    """
    statics = _statics(_ok(configs))
    per = dict((c['steps'], level_summaries(c)) for c in _ok(configs))
    best = {}
    for cfg in statics:
        for conc, lv in per[cfg['steps']].items():
            if conc in concurrency_levels and lv['score'] is not None and (conc not in best or lv['score'] > best[conc]):
                best[conc] = lv['score']
    out = {}
    for steps, levels in per.items():
        worst = None
        for conc in sorted(best):
            lv = levels.get(conc)
            if lv is None or not best[conc]:
                worst = None
                break
            ratio = lv['score'] / best[conc]
            if worst is None or ratio < worst['score']:
                worst = {'steps': steps, 'score': ratio, 'spread': lv['spread'] / best[conc], 'se': lv['se'] / best[conc],
                         'tiebreak': [], 'tiebreak_spread': [], 'tiebreak_se': [], 'at': conc,
                         'max_running_requests': lv['max_running_requests']}
        out[steps] = worst or {'steps': steps, 'score': None, 'spread': 0.0, 'se': 0.0, 'tiebreak': [], 'at': None,
                               'max_running_requests': None}
    return out


# --- The decision ---------------------------------------------------------------------------------

def _fmt_score(objective, value):
    if objective == 'balanced' and value is not None:
        return '%.3f of the best static per level' % value
    return _fmt(value)


def decide(configs, objective, params=None, concurrency_levels=None):
    """Pick the winner among measured configurations.

    Returns ``{"winner": steps, SCHEDULE or None, "winner_kind": "static" | "baseline" | "schedule" or None,
    "objective": text, "reason": text, "score": the winner's score or None,
    "verdicts": [{"steps", "status", "score", "spread", "verdict"}, ...]}``.

    The speculative step counts are compared ascending (a larger one must beat the best smaller one);
    then the baseline and then the schedule, each of which wins only by beating the winner so far by
    more than the margin plus the noise (neither is "the smaller one" of a tie).
    """
    p = _params(params)
    if objective == 'balanced':
        levels = concurrency_levels or sorted(set(int(lv['concurrency']) for c in _ok(configs) for r in c.get('repeats') or []
                                                  for lv in r.get('levels') or [] if lv.get('concurrency') is not None))
        balanced = balanced_summaries(configs, levels, p)
    incumbent = None
    verdicts = []
    notes = []
    ordered = [c for c in _statics(configs) if c['steps'] != BASELINE]
    ordered += [c for c in configs if c['steps'] == BASELINE] + [c for c in configs if c['steps'] == SCHEDULE]
    for cfg in ordered:
        steps = cfg['steps']
        status = cfg.get('status')
        name = label(steps)
        if status != STATUS_OK:
            if status == STATUS_FAILED:
                failure = cfg.get('failure') or {}
                why = failure_text(failure)
                if steps == SCHEDULE and failure.get('message'):
                    why = '%s (%s)' % (why, failure['message'])
                verdict = why + failure_details(failure)
            else:
                why = verdict = cfg.get('reason') or status
            notes.append('%s %s' % (name, why))
            verdicts.append({'steps': steps, 'status': status, 'score': None, 'spread': None, 'verdict': verdict})
            continue
        summary = balanced.get(steps) if objective == 'balanced' else summarize(cfg, objective, p)
        if summary is None or summary['score'] is None:
            why = 'does not qualify for the objective (%s)' % {
                'constrained': 'no level meets the bounds', 'balanced': 'a level another configuration measured is missing'}.get(
                    objective, 'no completed request at the ranked level')
            verdicts.append({'steps': steps, 'status': status, 'score': None, 'spread': summary and summary['spread'], 'verdict': why})
            notes.append('%s %s' % (name, why))
            continue
        if incumbent is None:
            incumbent = summary
            why = {BASELINE: 'the only qualifying configuration (no speculative step count qualified)',
                   SCHEDULE: 'the only qualifying configuration'}.get(steps, 'first qualifying step count')
        else:
            stays = None
            if steps == BASELINE:
                stays = 'speculative decoding stays on (%s)' % label(incumbent['steps'])
            elif steps == SCHEDULE:
                stays = '%s stays (a static step count: nothing switches, memory for one step count)' % label(incumbent['steps'])
            # The baseline and the schedule win only on the objective's own figure: a schedule that ties the best
            # static there and wins a tie-breaker (agentic: concurrency 2) would cost the static's batch room for it.
            wins, why = beats(summary, incumbent, p['margin'], stays=stays, tiebreakers=steps not in (BASELINE, SCHEDULE))
            if wins:
                incumbent = summary
        verdicts.append({'steps': steps, 'status': status, 'score': summary['score'], 'spread': summary['spread'], 'verdict': why})
        notes.append('%s %s' % (name, why))
    objective_text = describe_objective(objective, p)
    if incumbent is None:
        reason = 'objective %s. No step count qualified: %s.' % (objective_text, '; '.join(notes) or 'nothing measured')
        return {'winner': None, 'winner_kind': None, 'objective': objective_text, 'reason': reason, 'score': None,
                'verdicts': verdicts}
    at = ''
    if objective == 'constrained':
        at = ' at concurrency %s' % _fmt_int(incumbent['at'])
    elif objective == 'balanced':
        at = ' (worst at concurrency %s)' % _fmt_int(incumbent['at'])
    winner = incumbent['steps']
    kind = 'schedule' if winner == SCHEDULE else 'baseline' if winner == BASELINE else 'static'
    reason = 'objective %s. Winner: %s with %s%s. %s.' % (
        objective_text, label(winner), _fmt_score(objective, incumbent['score']), at, '; '.join(notes))
    return {'winner': winner, 'winner_kind': kind, 'objective': objective_text, 'reason': reason, 'score': incumbent['score'],
            'verdicts': verdicts}


def _fmt_int(value):
    return 'n/a' if value is None else '%d' % value


def table(configs, concurrency_levels):
    """Rows for the report: one per configuration x concurrency, medians over repeats.

    ``speedup``: the aggregate tok/s over the baseline's at the same concurrency (None without a
    measured baseline)."""
    rows = []
    for cfg in _sorted_configs(configs):
        status = cfg.get('status')
        if status != STATUS_OK:
            reason = (cfg.get('failure') or {}).get('diagnosis') if status == STATUS_FAILED else cfg.get('reason')
            rows.append({'steps': cfg['steps'], 'concurrency': None, 'status': status, 'note': reason or '',
                         'per_request_tok_s': None, 'aggregate_tok_s': None, 'accept_length': None,
                         'max_running_requests': None, 'ttft_p99_s': None, 'repeats': 0, 'requests_failed': None,
                         'speedup': None})
            continue
        per_rep = [_by_concurrency(r.get('levels')) for r in cfg.get('repeats') or []]
        for c in concurrency_levels:
            levels = [lv[c] for lv in per_rep if c in lv]
            if not levels:
                continue
            rows.append({
                'steps': cfg['steps'], 'concurrency': c, 'status': status, 'note': '',
                'per_request_tok_s': median([_per_request(lv) for lv in levels]),
                'aggregate_tok_s': median([lv.get('aggregate_output_tok_s') for lv in levels]),
                'accept_length': median([lv.get('accept_length') for lv in levels]),
                'max_running_requests': median([lv.get('max_running_requests') for lv in levels]),
                'ttft_p99_s': median([_ttft_p99(lv) for lv in levels]),
                'repeats': len(levels),
                'requests_failed': sum(int(lv.get('requests_failed') or 0) for lv in levels),
            })
    base = dict((r['concurrency'], r['aggregate_tok_s']) for r in rows
                if r['steps'] == BASELINE and r['concurrency'] is not None and r['aggregate_tok_s'])
    for r in rows:
        if r['concurrency'] is not None:
            agg, ref = r['aggregate_tok_s'], base.get(r['concurrency'])
            r['speedup'] = round(agg / ref, 3) if agg is not None and ref else None
    return rows


def _schedule_status(statics_plan, derived, record, p):
    """The schedule candidate: ``(config record, plan entry)``; the record is None when no schedule
    is measured (none derived, statics still to measure, or switched off)."""
    waiting = [e['steps'] for e in statics_plan if e['action'] in ('measure', 'pending')]
    if not p['schedule']:
        return None, {'action': 'none', 'reason': 'not measured (%s)' % p['schedule_off_reason']}
    if waiting:
        return None, {'action': 'pending', 'reason': 'waits for the static step counts (%s)' % ', '.join(str(s) for s in waiting)}
    if derived is None:
        return None, {'action': 'none', 'reason': 'no schedule: every measured level picks the same static step count'}
    start = schedule_start_steps(derived)
    if p['adaptive_unsupported']:
        # SGLang 0.5.23 would start it and fall back to static steps (speculative_hook._maybe_disable_adaptive):
        # the sweep does not deploy what cannot run, and records SGLang's own reason.
        failure = {'kind': 'not_deployed', 'diagnosis': 'speculative_adaptive_disabled',
                   'message': 'speculative_adaptive disabled: %s. Falling back to static speculative params.' % p['adaptive_unsupported'],
                   'remedy': 'SGLang 0.5.23 runs adaptive speculative decoding with EAGLE, EAGLE3 or NEXTN and topk 1 only.'}
        rec = {'steps': SCHEDULE, 'status': STATUS_FAILED, 'repeats': [], 'failure': failure, 'config': derived, 'start_steps': start}
        return rec, {'action': 'failed', 'reason': failure_text(failure) + ' (' + failure['message'] + ')', 'config': derived,
                     'start_steps': start}
    record = dict(record or {'status': STATUS_MISSING, 'repeats': [], 'failure': None})
    record.update(steps=SCHEDULE, config=derived, start_steps=start)
    entry = {'config': derived, 'start_steps': start, 'missing_repeats': max(0, p['_repeats'] - len(record.get('repeats') or []))}
    if record.get('status') == STATUS_FAILED:
        entry.update(action='failed', reason=failure_text(record.get('failure')))
    elif entry['missing_repeats'] == 0:
        entry.update(action='done', reason='measured (%d repeat%s)' % (len(record['repeats']), '' if len(record['repeats']) == 1 else 's'))
    else:
        entry.update(action='measure', reason='%d of %d repeats to measure' % (entry['missing_repeats'], p['_repeats']))
    return record, entry


def evaluate(configs, objective, repeats, concurrency_levels, params=None, schedule_record=None):
    """Everything the playbook, the pin and the report need, from the stored configurations.

    Configurations that early stop skips (or that still wait) are marked so in the decision.
    ``schedule_record``: the stored measurement of the derived schedule (``sweep_store.load_schedule``
    for ``schedule.config`` of an evaluation without it), or None.
    """
    p = _params(params)
    p['_repeats'] = repeats
    configs = for_objective([c for c in configs if c['steps'] != SCHEDULE], objective, p)
    steps_plan = plan(configs, objective, repeats, p)
    by_steps = dict((e['steps'], e) for e in steps_plan)
    marked = []
    for cfg in _sorted_configs(configs):
        entry = by_steps[cfg['steps']]
        cfg = dict(cfg)
        if entry['action'] == 'skip':
            cfg.update(status=STATUS_SKIPPED, reason=entry['reason'])
        elif entry['action'] in ('measure', 'pending'):
            # An incomplete set of repeats is not compared: medians over fewer runs than asked would mislead.
            cfg.update(status=STATUS_MISSING, reason='not measured yet (%s)' % entry['reason'])
        marked.append(cfg)
    picks = best_static_per_level(marked, concurrency_levels, p)
    derived = derive_schedule(picks, dict((c['steps'], _batch_room(c)) for c in _ok(marked)))
    if schedule_record is not None and derived is not None and \
            adaptive_config_plain(schedule_record.get('config')) != adaptive_config_plain(derived):
        schedule_record = None    # measured another schedule: this one is still to measure
    sched_cfg, sched_entry = _schedule_status(steps_plan, derived, schedule_record, p)
    if sched_cfg is not None and sched_entry['action'] in ('measure', 'pending'):
        sched_cfg = dict(sched_cfg, status=STATUS_MISSING, reason='not measured yet (%s)' % sched_entry['reason'])
    candidates = marked + ([sched_cfg] if sched_cfg is not None else [])
    decision = decide(candidates, objective, p, concurrency_levels)
    rows = table(candidates, concurrency_levels)
    verdicts = dict((v['steps'], v) for v in decision['verdicts'])
    evidence = []
    schedule_evidence = None
    for cfg in candidates:
        per_step = [r for r in rows if r['steps'] == cfg['steps'] and r['concurrency'] is not None]
        verdict = verdicts.get(cfg['steps']) or {}
        item = {'steps': cfg['steps'], 'status': cfg['status'], 'score': _round(verdict.get('score'), 3 if objective == 'balanced' else 1),
                'verdict': verdict.get('verdict') or ''}
        if cfg['status'] == STATUS_FAILED:
            item['diagnosis'] = (cfg.get('failure') or {}).get('diagnosis') or 'unknown'
        # Which host measured it (sweep_split shares the step counts among hosts).
        measured_by = sorted(set(h for h in [(r.get('result') or {}).get('host') for r in cfg.get('repeats') or []]
                                 + [(cfg.get('failure') or {}).get('measured_by')] if h))
        if measured_by:
            item['measured_by'] = measured_by
        if per_step:
            item['per_request_tok_s'] = dict((r['concurrency'], _round(r['per_request_tok_s'])) for r in per_step)
            item['aggregate_tok_s'] = dict((r['concurrency'], _round(r['aggregate_tok_s'])) for r in per_step)
            item['accept_length'] = _round(median([r['accept_length'] for r in per_step]), 2)
            item['max_running_requests'] = median([r['max_running_requests'] for r in per_step])
            if item['max_running_requests'] is not None:
                item['max_running_requests'] = int(item['max_running_requests'])
            speedups = dict((r['concurrency'], r['speedup']) for r in per_step if r.get('speedup') is not None)
            if speedups:
                item['speedup'] = speedups
        if cfg['steps'] == SCHEDULE:
            item.update(config=cfg['config'], start_steps=cfg['start_steps'])
            schedule_evidence = item
        else:
            evidence.append(item)
    schedule = dict(sched_entry, picks=picks, derived=derived)
    if derived is not None:
        schedule.setdefault('config', derived)
        schedule.setdefault('start_steps', schedule_start_steps(derived))
    return {'plan': steps_plan, 'configs': candidates, 'decision': decision, 'table': rows, 'evidence': evidence,
            'schedule': schedule, 'schedule_evidence': schedule_evidence,
            'progress': progress(steps_plan, candidates, sched_entry, repeats, p['sharing_hosts'])}


# --- Where the sweep stands: the line that announces each configuration --------------------------

def run_parts(result):
    """A stored run's own time in the parts ``make demo`` (tools/demo.sh) reports: ``restart_s``, the server's stop
    and its start to ready (its deployment; 0 without one); ``levels_s`` and ``warmup_s``, the benchmark's levels
    and their warm-ups, the tries measured again (a starved client) included."""
    levels = result.get('levels') or []
    tries = list(levels) + [t for lv in levels for t in lv.get('discarded') or []]

    def seconds(doc, *keys):
        return sum(float(doc.get(k) or 0) for k in keys)
    return {'restart_s': seconds(result.get('deployment') or {}, 'time_to_stop_s', 'time_to_ready_s'),
            'levels_s': sum(seconds(t, 'duration_s') for t in tries),
            'warmup_s': sum(seconds(t, 'warmup_s') for t in tries)}


def run_seconds(result):
    """A stored run's own time, its ``run_parts`` together. None without a deployment record (a run stored by an
    older version): its restart is not known."""
    if not isinstance(result.get('deployment'), dict):
        return None
    return sum(run_parts(result).values())


def _duration(seconds):
    if seconds < 100:
        return '%d s' % round(seconds)
    if seconds < 100 * 60:
        return '%d min' % round(seconds / 60.0)
    return '%.1f h' % (seconds / 3600.0)


def progress(steps_plan, configs, schedule_entry, repeats=1, hosts=1):
    """Where the sweep stands: how many configurations are settled (measured, failed or skipped), how many
    runs may still come (the step counts to measure or waiting for a smaller one, and the schedule while it
    may be measured: early stop and the memory rule can still skip some, so "up to"), and a rough time left
    at the pace of the runs stored so far (their median restart and benchmark, the server's own time:
    Ansible's, a few seconds a configuration, comes on top). ``hosts`` that share the runs (sweep_split) take
    them side by side: the time left is that of the runs each one still has. ``text`` is the line's tail."""
    entries = list(steps_plan) + ([schedule_entry] if schedule_entry.get('action') not in (None, 'none') else [])
    settled = sum(1 for e in entries if e['action'] in ('done', 'failed', 'skip'))
    runs_left = sum(int(e['missing_repeats']) if e.get('missing_repeats') is not None else repeats
                    for e in entries if e['action'] in ('measure', 'pending'))
    seconds = [run_seconds(r.get('result') or {}) for c in configs for r in c.get('repeats') or []]
    run_s = median([x for x in seconds if x is not None])
    out = {'settled': settled, 'configurations': len(entries), 'runs_left': runs_left,
           'run_s': None if run_s is None else round(run_s, 1),
           'left_s': None if run_s is None else round(run_s * int(math.ceil(runs_left / float(max(1, hosts)))), 1)}
    text = '%d of %d configurations settled' % (settled, len(entries))
    if runs_left:
        text += ', up to %d run%s left' % (runs_left, '' if runs_left == 1 else 's')
        if run_s is not None:
            text += ', about %s more at %s a run (restart and benchmark, the median so far%s)' % (
                _duration(out['left_s']), _duration(run_s), ', %d hosts sharing them' % hosts if hosts > 1 else '')
    out['text'] = text
    return out


def _round(value, digits=1):
    return None if value is None else round(float(value), digits)
