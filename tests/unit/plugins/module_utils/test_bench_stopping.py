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


def test_window_rates_count_tokens_when_they_arrived():
    # Two streams of 100 tokens at 100 tok/s each from t=0: 200 tok/s in every whole window.
    recs = [record(0.0, 100.0, tokens=100, t_first=0.0), record(0.0, 100.0, tokens=100, t_first=0.0)]
    rates = bs.window_rates(recs, 0.0, 0.999, 0.25)
    assert len(rates) == 3
    assert rates == pytest.approx([200.0, 200.0, 200.0])


def test_aggregate_precision_of_a_steady_and_of_an_uneven_server():
    steady = sequential([250.0] * 12)
    prec = bs.aggregate_precision(steady, 0.0, steady[-1].t_end)
    assert prec["relative"] < 0.01
    assert prec["estimate"] == pytest.approx(sum(r.completion_tokens for r in steady) / steady[-1].t_end)
    uneven = sequential([150.0, 350.0] * 6)
    assert bs.aggregate_precision(uneven, 0.0, uneven[-1].t_end)["relative"] > 0.05
    # Fewer than three windows of one request's time: no precision yet.
    assert bs.aggregate_precision(steady[:2], 0.0, steady[1].t_end) is None


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
