# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.sglang contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Metric arithmetic for llmops.sglang.sglang_bench (private module_utils).

Stdlib only and Python 3.8 compatible: it runs on the GPU host with whatever
Python that host has. Everything here is a pure function of recorded
timestamps and the server's own token counts, so it can be unit-tested
without a server.

Definitions (the module's DOCUMENTATION repeats them):

- TTFT: first token's arrival - request sent.
- e2e latency: end of the response stream - request sent.
- TPOT: (e2e - TTFT) / (completion_tokens - 1), as SGLang 0.5.x
  ``python -m sglang.bench_serving`` defines it.
- per-request decode tok/s: (completion_tokens - 1) / (t_last_token -
  t_first_token): the decode phase only, the ``decode_throughputs`` of
  SGLang's bench_serving and the figure people call "single-request
  throughput".
- ITL is per token: a stream chunk that arrives ``gap`` seconds after the
  previous token-bearing chunk and carries ``k`` new tokens (speculative
  decoding emits several per step) contributes ``k`` samples of ``gap / k``.
  Extra tokens of the very first chunk count as gaps of 0, so that the mean
  ITL is exactly (t_last_token - t_first_token) / (completion_tokens - 1).
  SGLang 0.5.23's bench_serving splits a chunk's gap the same way; older
  versions (like vLLM's benchmark) recorded one ITL per chunk, which
  overstates ITL by the accept length.
- accept length of a level: sum of completion_tokens / sum of spec_verify_ct
  over that level's measured requests (not the server's cumulative
  ``avg_spec_accept_length``, which includes warm-up and earlier runs and is
  what SGLang 0.5.23's bench_serving still prints as "Accept length").
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import math


def percentile(values, pct):
    """Percentile with linear interpolation between closest ranks.

    Same result as numpy.percentile's default ("linear") method, which is
    what SGLang's bench_serving reports. ``values`` need not be sorted.
    Returns None for an empty input.
    """
    if not values:
        return None
    if pct < 0 or pct > 100:
        raise ValueError("percentile must be within 0..100, got %r" % (pct,))
    ordered = sorted(values)
    rank = (len(ordered) - 1) * pct / 100.0
    low = int(math.floor(rank))
    high = min(low + 1, len(ordered) - 1)
    frac = rank - low
    return ordered[low] + (ordered[high] - ordered[low]) * frac


def mean(values):
    if not values:
        return None
    return math.fsum(values) / len(values)


def latency_summary(values):
    """mean/p50/p90/p99 of a list of seconds (None when empty)."""
    return {
        "mean": mean(values),
        "p50": percentile(values, 50),
        "p90": percentile(values, 90),
        "p99": percentile(values, 99),
    }


def rate_summary(values):
    """median/p10/p90/mean of per-request rates (None when empty)."""
    return {
        "median": percentile(values, 50),
        "p10": percentile(values, 10),
        "p90": percentile(values, 90),
        "mean": mean(values),
    }


def per_token_itl(times, counts):
    """Per-token inter-token latencies of one streamed request.

    ``times[i]`` is when chunk ``i`` arrived and ``counts[i]`` the server's
    cumulative completion_tokens after it. Chunks that carry no new token
    (a usage-only chunk, a finish marker) are skipped: the next token's gap
    is measured from the last chunk that did carry tokens.
    """
    itl = []
    prev_t = None
    prev_n = 0
    for t, n in zip(times, counts):
        new = n - prev_n
        if new <= 0:
            continue
        if prev_t is None:
            # The first token defines TTFT; tokens bundled with it
            # arrived with it.
            itl.extend([0.0] * (new - 1))
        else:
            share = (t - prev_t) / new
            itl.extend([share] * new)
        prev_t = t
        prev_n = n
    return itl


def first_last_token_times(times, counts):
    """(t_first_token, t_last_token) from a request's chunk record."""
    first = None
    last = None
    prev_n = 0
    for t, n in zip(times, counts):
        if n > prev_n:
            if first is None:
                first = t
            last = t
            prev_n = n
    return first, last


def decode_rate(completion_tokens, t_first, t_last):
    """(completion_tokens - 1) / decode time, or None when undefined."""
    if completion_tokens is None or completion_tokens < 2 or t_first is None or t_last is None:
        return None
    span = t_last - t_first
    if span <= 0:
        return None
    return (completion_tokens - 1) / span


def accept_length(completion_tokens, verify_counts):
    """Sum of completion tokens over sum of spec_verify_ct.

    Both lists cover the same requests: the ones that reported
    spec_verify_ct. None when no request did (speculative decoding off, or
    an API flavour that does not report it).
    """
    total_verify = sum(verify_counts)
    if not verify_counts or total_verify <= 0:
        return None
    return sum(completion_tokens) / total_verify


def summarize_level(concurrency, records, duration_s, errors_sample_size=5):
    """Figures of one concurrency level from its measured request records.

    ``records`` are objects with the attributes of
    bench_client.RequestRecord. Failed requests count in requests_failed
    and in the error samples only; every figure is computed from the
    completed ones.
    """
    done = [r for r in records if r.ok]
    failed = [r for r in records if not r.ok]
    output_tokens = sum(r.completion_tokens for r in done)
    ttft = []
    e2e = []
    tpot = []
    itl = []
    rates = []
    itl_requests = 0
    for r in done:
        e2e.append(r.t_end - r.t_send)
        t_first, t_last = first_last_token_times(r.times, r.counts)
        if t_first is not None:
            ttft.append(t_first - r.t_send)
        rate = decode_rate(r.completion_tokens, t_first, t_last)
        if rate is not None:
            rates.append(rate)
        if r.completion_tokens > 1 and t_first is not None:
            tpot.append((r.t_end - t_first) / (r.completion_tokens - 1))
        if r.per_chunk_counts:
            itl.extend(per_token_itl(r.times, r.counts))
            itl_requests += 1
    spec = [r for r in done if r.spec_verify_ct]
    errors = []
    for r in failed:
        if r.error not in errors:
            errors.append(r.error)
        if len(errors) >= errors_sample_size:
            break
    return {
        "concurrency": concurrency,
        "requests_completed": len(done),
        "requests_failed": len(failed),
        "errors": errors,
        "duration_s": duration_s,
        "output_tokens": output_tokens,
        "prompt_tokens": sum(r.prompt_tokens or 0 for r in done),
        "aggregate_output_tok_s": (output_tokens / duration_s) if duration_s and duration_s > 0 else None,
        "per_request_tok_s": rate_summary(rates),
        "ttft_s": latency_summary(ttft),
        "itl_s": latency_summary(itl),
        "tpot_s": latency_summary(tpot),
        "e2e_latency_s": latency_summary(e2e),
        "accept_length": accept_length([r.completion_tokens for r in spec], [r.spec_verify_ct for r in spec]),
        "spec_verify_ct": sum(r.spec_verify_ct for r in spec) if spec else None,
        "itl_requests": itl_requests,
    }
