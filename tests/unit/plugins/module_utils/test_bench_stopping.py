# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.sglang contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests of sglang_bench's adaptive stopping: the precision of both ranked figures, the
stopping rule (minimum, whole rounds, target, bounds) and the request plan of a level."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import math
import random

import pytest

from ansible_collections.llmops.sglang.plugins.module_utils import bench_stopping as bs
from ansible_collections.llmops.sglang.plugins.module_utils.bench_client import RequestRecord
from ansible_collections.llmops.sglang.plugins.modules import sglang_bench


def record(t_send, rate, tokens=101, t_first=None, chunk=1):
    """A completed request decoding ``tokens`` tokens at ``rate`` tok/s, one chunk per ``chunk`` tokens."""
    rec = RequestRecord()
    rec.ok = True
    rec.t_send = t_send
    first = t_send + 0.05 if t_first is None else t_first
    rec.times = [first + i * chunk / rate for i in range(tokens // chunk)]
    rec.counts = [(i + 1) * chunk for i in range(tokens // chunk)]
    rec.completion_tokens = rec.counts[-1]
    rec.t_end = rec.times[-1]
    return rec


def sequential(rates, tokens=101):
    """Requests sent back to back at concurrency 1."""
    out, t = [], 0.0
    for rate in rates:
        rec = record(t, rate, tokens)
        out.append(rec)
        t = rec.t_end
    return out


def test_t_quantiles():
    assert bs.t975(1) == pytest.approx(12.706)
    assert bs.t975(10) == pytest.approx(2.228)
    assert bs.t975(500) == 1.96
    with pytest.raises(ValueError):
        bs.t975(0)


def test_median_precision_needs_eight_requests_and_follows_its_formula():
    assert bs.median_precision([100.0] * 7) is None
    rates = [100.0 + i for i in range(10)]
    prec = bs.median_precision(rates)
    p10, p90 = 100.9, 108.1            # linear percentiles of 100..109
    se = 1.2533 * (p90 - p10) / 2.563 / math.sqrt(10)
    assert prec["estimate"] == pytest.approx(104.5)
    assert prec["se"] == pytest.approx(se)
    assert prec["half_width"] == pytest.approx(2.262 * se)
    assert prec["relative"] == pytest.approx(2.262 * se / 104.5)
    assert prec["samples"] == 10 and prec["confidence"] == 0.95


def test_median_precision_shrinks_with_more_requests():
    rng = random.Random(1)
    few = bs.median_precision([rng.gauss(280, 4) for _i in range(8)])
    many = bs.median_precision([rng.gauss(280, 4) for _i in range(200)])
    assert many["relative"] < few["relative"] / 3


def test_request_rates_are_the_decode_rates_of_completed_requests():
    recs = sequential([200.0, 250.0])
    failed = RequestRecord()
    failed.error = "boom"
    rates = bs.request_rates(recs + [failed])
    assert rates == pytest.approx([200.0, 250.0])


def closed_loop(rng, workers, rounds, tokens=40, chunk=4, dur=1.0, noise=0.02, ramp=0.3, lag=0.05):
    """A closed loop of ``workers`` sending back to back: each round's requests share one duration (a
    batch shares its steps; relative noise ``noise``) plus a per-request jitter of up to ``lag`` seconds;
    the first round also waits ``ramp`` x ``dur`` for everybody's prefill (the ramp-up)."""
    recs, ends = [], [0.0] * workers
    for m in range(rounds):
        extra = ramp * dur if m == 0 else 0.0
        length = dur * (1 + noise * rng.gauss(0, 1)) + extra
        for w in range(workers):
            rec = record(ends[w], 1.0, tokens=tokens, chunk=chunk)
            first, t_end = ends[w] + extra + 0.05 * dur, ends[w] + length + lag * rng.random()
            n = len(rec.times)
            rec.times = [first + (t_end - first) * i / (n - 1) for i in range(n)]
            rec.t_end = ends[w] = t_end
            recs.append(rec)
    return recs


def test_round_batches_are_rounds_of_completions_ending_at_their_mean_completion():
    # Two workers, one round: it ends at the mean of its two completions.
    recs = [record(t0, 10.0, tokens=10, t_first=t0 + 0.1, chunk=1) for t0 in (0.0, 0.0)]
    recs[1].t_end += 0.2
    tokens, seconds = bs.round_batches(recs, 0.0, 2)
    assert tokens == [20] and seconds == pytest.approx([recs[0].t_end + 0.1])
    # An incomplete round is left out; tokens of requests in flight count where they arrived.
    late = record(2.0, 10.0, tokens=10, t_first=2.1, chunk=1)
    assert bs.round_batches(recs + [late], 0.0, 2) == (tokens, seconds)
    early = record(0.0, 100.0, tokens=10, t_first=0.01, chunk=1)
    assert bs.round_batches(recs, 0.0, 2, in_flight=[early])[0] == [30]


def test_aggregate_precision_of_a_steady_and_of_an_uneven_server():
    steady = sequential([250.0] * 12)
    prec = bs.aggregate_precision(steady, 0.0, steady[-1].t_end)
    assert prec["relative"] < 0.01
    assert prec["estimate"] == pytest.approx(sum(r.completion_tokens for r in steady) / steady[-1].t_end)
    uneven = sequential([150.0, 350.0] * 6)
    assert bs.aggregate_precision(uneven, 0.0, uneven[-1].t_end)["relative"] > 0.05
    # Fewer than three steady rounds (the first is ramp-up, the last of a finished level drain): none yet.
    assert bs.aggregate_precision(steady[:4], 0.0, steady[3].t_end) is None
    assert bs.aggregate_precision(steady[:5], 0.0, steady[4].t_end)["samples"] == 3
    # While requests are in flight the last round is no drain and counts.
    assert bs.aggregate_precision(steady[:4], 0.0, steady[3].t_end, in_flight=steady[4:5])["samples"] == 3


def test_ramp_up_and_drain_are_not_noise():
    """Rounds that repeat exactly but for a slow first round (everybody's prefill) and a faster last one
    (the drain): every run measures the same figure, so its standard error is 0. The former estimator,
    windows of one request's median time from the start, took the slow start for noise (SE 6.8% of the figure)."""
    recs = closed_loop(random.Random(0), 4, 8, noise=0.0, lag=0.0, ramp=0.5)
    for rec in recs[-4:]:
        rec.t_end -= 0.2
        rec.times = [t - 0.2 * i / (len(rec.times) - 1) for i, t in enumerate(rec.times)]
    prec = bs.aggregate_precision(recs, 0.0, max(r.t_end for r in recs), running=4)
    assert prec["samples"] == 6
    assert prec["se"] == pytest.approx(0.0, abs=1e-6)


@pytest.mark.parametrize("workers, rounds, ramp", [(8, 10, 0.3), (1, 12, 0.1)])
def test_aggregate_standard_error_matches_the_spread_across_repeated_levels(workers, rounds, ramp):
    """The standard error of one level matches the spread of the figure over repeated levels, within 30%.

    The former estimator (time windows of one request's median end-to-end time) overstated it 4.7x
    (8 workers) and 2.6x (1 worker) here: a window cut through the rounds at a varying phase, and the
    first window held the ramp-up. On the simulator (steps 2 at concurrency 32, 8 repeats) it was 15x.
    """
    rng = random.Random(7)
    figures, ses = [], []
    for _rep in range(200):
        recs = closed_loop(rng, workers, rounds, ramp=ramp)
        end = max(r.t_end for r in recs)
        figures.append(sum(r.completion_tokens for r in recs) / end)
        ses.append(bs.aggregate_precision(recs, 0.0, end, running=workers)["se"])
    mean = sum(figures) / len(figures)
    spread = math.sqrt(sum((f - mean) ** 2 for f in figures) / (len(figures) - 1))
    median_se = sorted(ses)[len(ses) // 2]
    assert 0.7 * spread < median_se < 1.3 * spread


def test_stop_rule_waits_for_the_minimum_and_whole_rounds():
    recs = sequential([280.0] * 16)
    rule = bs.StopRule("per_request", 0.01, min_requests=12, running=4)
    assert not rule.satisfied(recs[:11], 0.0, recs[10].t_end)   # below the minimum
    assert not rule.satisfied(recs[:13], 0.0, recs[12].t_end)   # not a whole round of 4
    assert rule.satisfied(recs[:12], 0.0, recs[11].t_end)
    assert rule.reached["why"] == "precision"


def test_stop_rule_goes_on_while_imprecise_and_stops_when_the_interval_clears_the_bounds():
    rng = random.Random(3)
    recs = sequential([rng.gauss(280, 14) for _i in range(8)])   # 5% noise: +-1% needs far more requests
    rule = bs.StopRule("per_request", 0.01, min_requests=4, running=1)
    assert not rule.satisfied(recs, 0.0, recs[-1].t_end)
    prec = rule.precision(recs, 0.0, recs[-1].t_end)
    low, high = prec["estimate"] - prec["half_width"], prec["estimate"] + prec["half_width"]
    # A bound far from the interval decides the comparison already; one inside it does not.
    assert bs.StopRule("per_request", 0.01, 4, 1, bounds=[high * 1.2]).satisfied(recs, 0.0, recs[-1].t_end)
    assert bs.StopRule("per_request", 0.01, 4, 1, bounds=[low * 0.8]).satisfied(recs, 0.0, recs[-1].t_end)
    inside = bs.StopRule("per_request", 0.01, 4, 1, bounds=[high * 1.2, prec["estimate"]])
    assert not inside.satisfied(recs, 0.0, recs[-1].t_end)


def test_a_bound_with_its_own_error_needs_the_noise_of_the_difference_cleared():
    """The sweep's bound is the incumbent's figure raised by the margin: measured, so uncertain too. A
    figure just outside this level's own interval has not settled the comparison the decision makes."""
    rng = random.Random(3)
    recs = sequential([rng.gauss(280, 14) for _i in range(8)])
    prec = bs.StopRule("per_request", 0.01, 4, 1).precision(recs, 0.0, recs[-1].t_end)
    quantile = prec["half_width"] / prec["se"]
    bound = prec["estimate"] - 1.1 * prec["half_width"]     # just below this level's interval
    assert bs.StopRule("per_request", 0.01, 4, 1, bounds=[bound]).satisfied(recs, 0.0, recs[-1].t_end)
    # The same bound, known only to the level's own standard error: the difference's noise is sqrt(2) wider.
    assert not bs.StopRule("per_request", 0.01, 4, 1, bounds=[bound], bounds_se=prec["se"]).satisfied(recs, 0.0, recs[-1].t_end)
    far = prec["estimate"] - 1.5 * quantile * prec["se"]
    assert bs.StopRule("per_request", 0.01, 4, 1, bounds=[far], bounds_se=prec["se"]).satisfied(recs, 0.0, recs[-1].t_end)
    # The caller's z (a Bonferroni-corrected decision) widens it further.
    assert not bs.StopRule("per_request", 0.01, 4, 1, bounds=[far], bounds_se=prec["se"], z=3 * quantile).satisfied(
        recs, 0.0, recs[-1].t_end)


def test_early_looks_need_a_clearer_lead_with_a_cap():
    """Checked after every round, the bounds would decide close comparisons by chance (optional stopping).
    With the level's cap the early looks need the noise cleared sqrt(cap / n) times over: at a third of the
    cap 1.73 times; a lead beyond that still stops, and at the cap the rule is the uncorrected one."""
    rng = random.Random(3)
    recs = sequential([rng.gauss(280, 14) for _i in range(8)])
    prec = bs.StopRule("per_request", 0.01, 8, 1).precision(recs, 0.0, recs[-1].t_end)
    quantile = prec["half_width"] / prec["se"]
    close = prec["estimate"] - 1.2 * quantile * prec["se"]        # cleared once, not sqrt(3) times
    clear = prec["estimate"] - 1.9 * quantile * prec["se"]        # cleared more than sqrt(3) times
    assert bs.StopRule("per_request", 0.01, 8, 1, bounds=[close]).satisfied(recs, 0.0, recs[-1].t_end)
    assert not bs.StopRule("per_request", 0.01, 8, 1, bounds=[close], cap=24).satisfied(recs, 0.0, recs[-1].t_end)
    stopped = bs.StopRule("per_request", 0.01, 8, 1, bounds=[clear], cap=24)
    assert stopped.satisfied(recs, 0.0, recs[-1].t_end)
    assert stopped.reached["bounds_noise"] == pytest.approx(math.sqrt(3) * quantile * prec["se"])
    # At the cap nothing is added.
    assert bs.StopRule("per_request", 0.01, 8, 1, bounds=[close], cap=8).satisfied(recs, 0.0, recs[-1].t_end)


def test_the_module_gives_its_stop_rule_the_level_cap():
    count, rule, stop = sglang_bench.level_plan(1, {"stop": "adaptive", "stop_bounds": [300.0]}, max_running=16)
    assert rule.cap == count == stop["max_requests"]


def test_stop_rule_refuses_an_unknown_metric():
    with pytest.raises(ValueError, match="per_request, aggregate"):
        bs.StopRule("p99", 0.01, 4, 1)


def test_whole_rounds():
    assert bs.whole_rounds(4, 13) == 13
    assert bs.whole_rounds(26, 13) == 26
    assert bs.whole_rounds(27, 13) == 39


class TestLevelPlan:
    def test_fixed_is_todays_count(self):
        for conc in (1, 8, 32):
            count, rule, stop = sglang_bench.level_plan(conc, {"stop": "fixed"}, 13)
            assert count == sglang_bench.requests_for(conc, None, 13) and rule is None and stop == {"mode": "fixed"}

    def test_levels_outside_precision_levels_take_the_minimum_in_whole_rounds(self):
        params = {"stop": "adaptive", "precision_levels": [1]}
        assert sglang_bench.level_plan(2, params, 13)[:2] == (4, None)
        # at least the concurrency (32 workers), in whole rounds of the 13 the server runs at once
        count, rule, stop = sglang_bench.level_plan(32, params, 13)
        assert (count, rule, stop["mode"]) == (39, None, "minimum")

    def test_ranked_levels_get_the_rule_and_a_cap(self):
        params = {"stop": "adaptive", "precision_levels": [32], "stop_metric": "aggregate", "target_precision": 0.005,
                  "stop_bounds": [2500.0]}
        cap, rule, stop = sglang_bench.level_plan(32, params, 13)
        assert cap == 3 * sglang_bench.requests_for(32, None, 13)
        assert (rule.metric, rule.target, rule.min_requests, rule.running, rule.bounds) == ("aggregate", 0.005, 39, 13, [2500.0])
        assert stop["mode"] == "adaptive" and stop["max_requests"] == cap
        assert sglang_bench.level_plan(1, dict(params, precision_levels=[1], min_requests=10, max_requests=12), 13)[0] == 12
