# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.sglang contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""How precisely a level measured its figures, and when adaptive stopping may end it
(private module_utils of llmops.sglang.sglang_bench).

Stdlib only and Python 3.8 compatible: it runs on the GPU host.

Two figures are ranked by the sweep (module_utils/sweep_decide.py):

- ``per_request``: the median per-request decode tok/s (agentic objective, concurrency 1).
  Its standard error is the normal approximation the sweep's decision has always used:
  sigma ~ (p90 - p10) / 2.563 and SE(median) ~ 1.2533 sigma / sqrt(n). The 95% half-width
  uses Student's t with n - 1 degrees of freedom, so that a handful of requests does not
  look precise.
- ``aggregate``: output tok/s of the level (throughput objective). Requests of a closed loop
  are not independent (a batch shares its steps), so the precision comes from batch means over
  the steady state: the measured phase is cut into rounds of ``running`` completions (the
  requests the server runs at once), the ramp-up round and (once the level is over) the drain
  round are left out, and a ratio estimator gives the noise per second of load, scaled to the
  level's measured time (see ``aggregate_precision``).

Adaptive stopping checks after each whole round, from ``min_requests`` on, whether the
half-width relative to the figure is at most the target; the caller then stops issuing new
requests once the round in flight is complete (requests already sent finish and count).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import bisect
import math

from ansible_collections.llmops.sglang.plugins.module_utils.bench_metrics import (
    decode_rate,
    first_last_token_times,
    percentile,
)

METRICS = ("per_request", "aggregate")
CONFIDENCE = 0.95
# Fewer samples than this give no usable spread (p10/p90 of 7 requests are its extremes).
MIN_SAMPLES = {"per_request": 8, "aggregate": 3}

# Student's t, two-sided 95%, for 1..30 degrees of freedom; beyond that the normal 1.96.
_T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145,
         2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048,
         2.045, 2.042)


def t975(dof):
    """Two-sided 95% quantile of Student's t with ``dof`` degrees of freedom (>= 1)."""
    if dof < 1:
        raise ValueError("degrees of freedom must be >= 1, got %r" % (dof,))
    return _T975[dof - 1] if dof <= len(_T975) else 1.96


def _result(metric, estimate, se, n, quantile):
    half = quantile * se
    return {
        "metric": metric,
        "estimate": estimate,
        "se": se,
        "half_width": half,
        "relative": (half / estimate) if estimate else None,
        "confidence": CONFIDENCE,
        "samples": n,
    }


def median_precision(rates):
    """Precision of the median of per-request rates, or None with fewer than MIN_SAMPLES."""
    rates = [r for r in rates if r is not None]
    n = len(rates)
    if n < MIN_SAMPLES["per_request"]:
        return None
    sigma = (percentile(rates, 90) - percentile(rates, 10)) / 2.563
    se = 1.2533 * sigma / math.sqrt(n)
    return _result("per_request", percentile(rates, 50), se, n, t975(n - 1))


def request_rates(records):
    """Per-request decode tok/s of the completed records (as bench_metrics defines it)."""
    rates = []
    for rec in records:
        if not rec.ok:
            continue
        t_first, t_last = first_last_token_times(rec.times, rec.counts)
        rate = decode_rate(rec.completion_tokens, t_first, t_last)
        if rate is not None:
            rates.append(rate)
    return rates


def round_batches(records, start, running, in_flight=()):
    """(tokens, seconds) of the measured phase's rounds: batches of ``running`` completions.

    A round ends at the mean completion time of its ``running`` requests (the first round starts at
    ``start``); completions after the last whole round are left out. Tokens count when their chunk
    arrived, from every record given (requests still in flight too), so that a round holds exactly
    what the server delivered in it.
    """
    running = max(1, int(running or 1))
    ends = sorted(rec.t_end for rec in records if rec.ok and rec.t_end is not None)
    k = len(ends) // running
    bounds = [start] + [math.fsum(ends[running * (m - 1):running * m]) / running for m in range(1, k + 1)]
    tokens = [0] * k
    for rec in list(records) + list(in_flight):
        prev_n = 0
        for t, n in zip(rec.times, rec.counts):
            if n <= prev_n:
                continue
            i = bisect.bisect_left(bounds, t, 1)
            if i <= k and t > start:
                tokens[i - 1] += n - prev_n
            prev_n = n
    return tokens, [bounds[m] - bounds[m - 1] for m in range(1, k + 1)]


def aggregate_precision(records, start, end, in_flight=(), running=1):
    """Precision of the aggregate output tok/s by batch means over the steady state, or None with
    fewer than 3 steady rounds.

    The estimate is the level's own figure: completed tokens over the time from ``start`` to the last
    completion (``end``, the level's end or now, is not needed: completions bound the rounds). Its
    noise is that of a rate measured for that long, from batch means with random batch lengths (a
    ratio estimator, as the regenerative method uses):

    - a batch is a round of ``running`` completions (``round_batches``), not a fixed time window. A
      closed loop's requests run in rounds that share their steps (a server running fewer requests
      than the concurrency even runs them in waves), so a window of one request's time cuts through a
      varying number of rounds and prefill pauses: its rate swings with the phase, the swings of
      neighbouring windows cancel in the level's total, and the windows' spread overstated the
      figure's noise (up to 15x on the simulator, steps 2 at concurrency 32). A round ends at its
      requests' mean completion time, not its last one: the last completion of a round is an extreme
      value whose jitter also cancels between neighbours.
    - the first round (all workers start at once: ramp-up) and, once nothing is in flight, the last
      (no requests wait any more: drain) are no steady state. They move the figure the same way on
      every run, so they are left out of the noise, not out of the figure.
    - with steady rounds of ``tokens_i`` in ``seconds_i``, R = sum(tokens) / sum(seconds) and
      s**2 = sum((tokens_i - R seconds_i)**2) / (k - 1): the variance of a round's tokens about the
      rate. Per second of load that is s**2 / mean(seconds), so the figure over T seconds has
      SE = sqrt(s**2 / (mean(seconds) T)). The half-width uses Student's t with k - 1 degrees of freedom.
    """
    done = [rec for rec in records if rec.ok and rec.t_end is not None]
    if not done:
        return None
    tokens, seconds = round_batches(records, start, running, in_flight)
    steady = slice(1, len(tokens) if in_flight else len(tokens) - 1)
    tokens, seconds = tokens[steady], seconds[steady]
    k = len(tokens)
    if k < MIN_SAMPLES["aggregate"] or min(seconds) <= 0:
        return None
    rate = math.fsum(tokens) / math.fsum(seconds)
    s2 = math.fsum((x - rate * d) ** 2 for x, d in zip(tokens, seconds)) / (k - 1)
    wall = max(rec.t_end for rec in done) - start
    if wall <= 0:
        return None
    estimate = sum(rec.completion_tokens for rec in done) / wall
    se = math.sqrt(s2 / (math.fsum(seconds) / k) / wall)
    return _result("aggregate", estimate, se, k, t975(k - 1))


def level_precision(records, start, end, running=1):
    """Both figures' precision for a level's measured records ({metric: result or None});
    ``running``: the requests the server ran at once (min(concurrency, max_running_requests))."""
    return {
        "per_request": median_precision(request_rates(records)),
        "aggregate": aggregate_precision(records, start, end, running=running),
    }


def whole_rounds(count, running):
    """``count`` rounded up to whole rounds of ``running`` requests (a partial last round runs a smaller batch)."""
    running = max(1, running)
    return running * ((count + running - 1) // running)


class StopRule:
    """When an adaptive level may stop: ``metric``'s relative 95% half-width <= ``target``, or the
    figure lies on one side of every one of ``bounds`` by more than the comparison's noise (a
    comparison that more requests cannot change), checked on whole rounds of ``running`` requests
    from ``min_requests`` on.

    A bound is another measurement raised by a margin (the sweep: the incumbent's figure), with its
    own standard error ``bounds_se``; the comparison the caller makes afterwards is settled only
    when the difference clears ``z`` (at least this level's own interval quantile) times the
    standard error of the difference, sqrt(se**2 + bounds_se**2). Without ``bounds_se`` the bounds
    are taken as exact and this level's own interval decides.

    The bounds are looked at after every round, and a figure that crosses one at some look is a
    figure that happened to be high (or low) then: stopping there decides more comparisons by
    chance than one look would. With ``cap`` (the most requests the level may take) the quantile
    grows at early looks as an O'Brien-Fleming boundary does, by sqrt(cap / requests so far): at
    the cap it is the decision's own, at a third of it 1.73 times that. A clear lead still stops at
    the minimum; a close call measures on (benchmarks/decision_false_wins.py has the figures).
    """

    def __init__(self, metric, target, min_requests, running, bounds=(), bounds_se=None, z=None, cap=None):
        if metric not in METRICS:
            raise ValueError("stop metric must be one of %s, got %r" % (", ".join(METRICS), metric))
        self.metric = metric
        self.target = target
        self.min_requests = min_requests
        self.running = max(1, running)
        # Values the figure is compared with (the sweep: what the incumbent's figure must be beaten by).
        self.bounds = [float(b) for b in bounds or () if b is not None]
        self.bounds_se = float(bounds_se or 0.0)
        self.z = float(z or 0.0)
        self.cap = int(cap) if cap else None
        self.reached = None     # the precision that ended the level, when it did

    def precision(self, records, start, now, in_flight=()):
        if self.metric == "per_request":
            return median_precision(request_rates(records))
        return aggregate_precision(records, start, now, in_flight, self.running)

    def satisfied(self, records, start, now, in_flight=()):
        """Whether the level may stop now: ``records`` completed, ``in_flight`` still streaming."""
        n = len(records)
        if n < self.min_requests or n % self.running:
            return False
        prec = self.precision(records, start, now, in_flight)
        if prec is None or prec["relative"] is None:
            return False
        if prec["relative"] <= self.target:
            self.reached = dict(prec, why="precision")
            return True
        # The comparison is already decided: the figure clears every bound by more than the noise of
        # the difference (this level's and the bound's own), at the caller's z or this interval's quantile.
        quantile = max(self.z, prec["half_width"] / prec["se"] if prec["se"] else 0.0)
        if self.cap and n < self.cap:
            quantile *= math.sqrt(self.cap / float(n))
        noise = quantile * math.sqrt(prec["se"] ** 2 + self.bounds_se ** 2)
        if self.bounds and all(abs(prec["estimate"] - b) > noise for b in self.bounds):
            self.reached = dict(prec, why="bounds", bounds_noise=noise)
            return True
        return False
