"""How often the agentic decision crowns a larger step count that does not lead by the margin.

A Monte Carlo of one comparison the sweep makes at concurrency 1: the incumbent (steps N) and the
challenger (steps N+1) whose true median per-request tok/s leads by less than the margin. Per-request
rates are drawn from a normal distribution. Each side is measured as the sweep measures it:

- ``adaptive``: the incumbent stops on its own bounds (a smaller step count far behind, so it stops at the
  minimum or on the precision target). The challenger's bound is the incumbent's figure raised by the
  margin, with its standard error and the decision's z, checked after every request by the real
  ``bench_stopping.StopRule.satisfied``.
- ``fixed-N``: N requests each.

The decision is the real ``sweep_decide.beats()`` on the two figures and their standard errors
(``bench_stopping.median_precision``). A "false win" is a win for a challenger whose true lead is below
the margin. The stop rule checks its bounds after every request; with the level's cap it asks more of the
early looks (StopRule's O'Brien-Fleming boundary). ``adaptive-uncorrected`` is the rule without it, which
decided close comparisons by chance more often than a fixed count of its minimum.

Usage (repository root, dev venv; no simulator, no network):
    .venv/bin/python benchmarks/decision_false_wins.py
    .venv/bin/python benchmarks/decision_false_wins.py --lead 0.0065 --sd 6.7 --runs 20000

2026-12-07, the defaults (incumbent 276.6 tok/s, the challenger +0.65%, the simulator's steps 4 and 5 at
512 -> 256 tokens; sd 6.7 tok/s as measured there; margin 2%; 20000 runs; 3 figures compared, z 2.39):
false wins adaptive 0.11% (28.5 requests for both sides on average), adaptive-uncorrected (the rule before
its early-look boundary: the cap not given) 0.34% (26.5), fixed-8 0.17% (16), fixed-24 0.00% (48).
"""

import argparse
import os
import random
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(ROOT, "tests"))
# tests/conftest.py makes this checkout importable as ansible_collections.llmops.sglang.
import conftest  # noqa: E402,F401  pylint: disable=unused-import

from ansible_collections.llmops.sglang.plugins.module_utils import sweep_decide  # noqa: E402
from ansible_collections.llmops.sglang.plugins.module_utils.bench_stopping import StopRule, median_precision  # noqa: E402

MINIMUM = 8        # the adaptive minimum at concurrency 1 (sglang_bench.level_plan)
CAP = 24           # the adaptive cap at concurrency 1: 3 x the fixed count of 8
TARGET = 0.01      # the sweep's default target precision


class RatesStopRule(StopRule):
    """The stop rule on a list of per-request rates instead of request records (same checks)."""

    def precision(self, records, start, now, in_flight=()):
        return median_precision(records)


def measure(rng, mean, sd, rule=None, count=None):
    """Rates drawn until ``rule`` is satisfied (or the cap), or ``count`` of them; their precision."""
    rates = []
    while len(rates) < (count or CAP):
        rates.append(rng.gauss(mean, sd))
        if rule is not None and rule.satisfied(rates, None, None):
            break
    return median_precision(rates), len(rates)


def summary(steps, prec, looks):
    """What sweep_decide.beats() reads of a step count: one repeat, its figure and standard error, tie-breakers
    that count as looks (the sweep's agentic objective ranks concurrency 1 with 2, 3 and 4 as tie-breakers)."""
    ties = [prec['estimate']] * (looks - 1)
    return {'steps': steps, 'score': prec['estimate'], 'spread': 0.0, 'se': prec['se'],
            'tiebreak': ties, 'tiebreak_spread': [0.0] * len(ties), 'tiebreak_se': [prec['se']] * len(ties)}


def run(mode, args, rng):
    z = sweep_decide._z_for(args.looks)  # pylint: disable=protected-access
    wins = requests = 0
    for dummy in range(args.runs):
        if mode.startswith('adaptive'):
            # As sglang_bench.level_plan builds the rule: the cap sets the boundary of the early looks.
            cap = None if mode == 'adaptive-uncorrected' else CAP
            # A smaller step count far behind: the incumbent stops at the minimum (or the precision target).
            far = RatesStopRule('per_request', TARGET, MINIMUM, 1, bounds=[0.5 * args.mean], bounds_se=1.0, z=z, cap=cap)
            incumbent, n_inc = measure(rng, args.mean, args.sd, far)
            bound = RatesStopRule('per_request', TARGET, MINIMUM, 1, bounds=[incumbent['estimate'] * (1 + args.margin)],
                                  bounds_se=incumbent['se'] * (1 + args.margin), z=z, cap=cap)
            challenger, n_ch = measure(rng, args.mean * (1 + args.lead), args.sd, bound)
        else:
            count = int(mode.split('-')[1])
            incumbent, n_inc = measure(rng, args.mean, args.sd, count=count)
            challenger, n_ch = measure(rng, args.mean * (1 + args.lead), args.sd, count=count)
        # The tie-breakers repeat the main figure: they only set z (looks), and tie when it ties.
        won, dummy_why = sweep_decide.beats(summary(5, challenger, args.looks), summary(4, incumbent, args.looks), args.margin)
        wins += bool(won)
        requests += n_inc + n_ch
    return wins / float(args.runs), requests / float(args.runs)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--mean', type=float, default=276.6, help='the incumbent\'s true median per-request tok/s')
    parser.add_argument('--lead', type=float, default=0.0065, help='the challenger\'s true lead (a fraction, below the margin)')
    parser.add_argument('--sd', type=float, default=6.7, help='the per-request rates\' standard deviation, tok/s')
    parser.add_argument('--margin', type=float, default=0.02)
    parser.add_argument('--looks', type=int, default=3, help='figures compared (the main one and the tie-breakers): sets z')
    parser.add_argument('--runs', type=int, default=20000)
    parser.add_argument('--seed', type=int, default=1)
    args = parser.parse_args()
    if args.lead >= args.margin:
        parser.error('--lead must be below --margin: a win is then a false one')
    rng = random.Random(args.seed)
    print('true lead %+.2f%%, margin %.0f%%, sd %.1f tok/s, z %.2f, %d runs'
          % (100 * args.lead, 100 * args.margin, args.sd, sweep_decide._z_for(args.looks), args.runs))  # pylint: disable=protected-access
    for mode in ('adaptive', 'adaptive-uncorrected', 'fixed-8', 'fixed-24'):
        rate, requests = run(mode, args, rng)
        print('%-20s false wins %.2f%%  requests (both sides) %.1f' % (mode, 100 * rate, requests))


if __name__ == '__main__':
    main()
