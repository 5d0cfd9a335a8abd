# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.sglang contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests of sglang_bench's metric arithmetic (percentiles, multi-token chunks, accept length)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import random

import pytest

from ansible_collections.llmops.sglang.plugins.module_utils import bench_metrics as bm
from ansible_collections.llmops.sglang.plugins.module_utils.bench_client import RequestRecord


def _numpy_linear(values, pct):
    """Reference: the 'linear' definition numpy.percentile uses, written out independently."""
    xs = sorted(values)
    h = (len(xs) - 1) * pct / 100.0
    lo = int(h)
    return xs[lo] + (h - lo) * (xs[min(lo + 1, len(xs) - 1)] - xs[lo])


class TestPercentile:
    def test_known_values(self):
        data = [15, 20, 35, 40, 50]
        assert bm.percentile(data, 0) == 15
        assert bm.percentile(data, 100) == 50
        assert bm.percentile(data, 50) == 35
        # rank 0.4 * 4 = 1.6 -> 20 + 0.6 * 15
        assert bm.percentile(data, 40) == pytest.approx(29.0)

    def test_unsorted_input_and_single_value(self):
        assert bm.percentile([3, 1, 2], 50) == 2
        assert bm.percentile([7.5], 99) == 7.5

    def test_empty_is_none(self):
        assert bm.percentile([], 50) is None
        assert bm.latency_summary([]) == {"mean": None, "p50": None, "p90": None, "p99": None}

    def test_out_of_range(self):
        with pytest.raises(ValueError):
            bm.percentile([1, 2], 101)

    @pytest.mark.parametrize("pct", [1, 10, 33.3, 50, 90, 99])
    def test_matches_linear_definition_on_random_data(self, pct):
        rng = random.Random(pct)
        data = [rng.expovariate(3.0) for _i in range(1001)]
        assert bm.percentile(data, pct) == pytest.approx(_numpy_linear(data, pct))

    def test_matches_numpy(self):
        import numpy as np  # comes with the pinned matplotlib (requirements-dev.txt): missing fails, not skips
        rng = random.Random(7)
        data = [rng.random() for _i in range(257)]
        for pct in (10, 50, 90, 99):
            assert bm.percentile(data, pct) == pytest.approx(float(np.percentile(data, pct)))


class TestPerTokenITL:
    def test_multi_token_chunks_split_per_token(self):
        # First token at t=1.0; then a 3-token chunk after 0.3 s and a 2-token chunk after 0.1 s.
        itl = bm.per_token_itl([1.0, 1.3, 1.4], [1, 4, 6])
        assert itl == pytest.approx([0.1, 0.1, 0.1, 0.05, 0.05])
        assert len(itl) == 6 - 1  # one sample per token after the first

    def test_chunk_without_new_tokens_does_not_reset_the_gap(self):
        # A usage/finish chunk at 1.2 carries no token: the next token's gap runs from 1.0.
        itl = bm.per_token_itl([1.0, 1.2, 1.4], [1, 1, 3])
        assert itl == pytest.approx([0.2, 0.2])

    def test_first_chunk_with_several_tokens(self):
        itl = bm.per_token_itl([2.0, 2.5], [3, 4])
        assert itl == pytest.approx([0.0, 0.0, 0.5])

    def test_mean_itl_equals_decode_time_per_token(self):
        rng = random.Random(1)
        times, counts, t, n = [], [], 0.0, 0
        for _i in range(200):
            t += rng.uniform(0.01, 0.05)
            n += rng.randint(1, 5)
            times.append(t)
            counts.append(n)
        itl = bm.per_token_itl(times, counts)
        assert len(itl) == n - 1
        assert sum(itl) / len(itl) == pytest.approx((times[-1] - times[0]) / (n - 1))

    def test_one_sample_per_chunk_would_overstate(self):
        # Guard against the per-chunk definition: 4 tokens per 40 ms step is 10 ms per token.
        times = [0.04 * i for i in range(11)]
        counts = [1] + [1 + 4 * i for i in range(1, 11)]
        assert bm.percentile(bm.per_token_itl(times, counts), 50) == pytest.approx(0.01)


class TestDecodeRate:
    def test_rate(self):
        assert bm.decode_rate(101, 1.0, 2.0) == pytest.approx(100.0)

    def test_undefined(self):
        assert bm.decode_rate(1, 1.0, 1.0) is None
        assert bm.decode_rate(5, 1.0, 1.0) is None
        assert bm.decode_rate(5, None, None) is None

    def test_first_last_token_times_skip_empty_chunks(self):
        assert bm.first_last_token_times([0.5, 1.0, 2.0, 2.5], [0, 1, 5, 5]) == (1.0, 2.0)


class TestAcceptLength:
    def test_sum_over_sum_not_mean_of_ratios(self):
        # 100/25 = 4 and 10/10 = 1: mean of ratios 2.5, token-weighted 110/35.
        assert bm.accept_length([100, 10], [25, 10]) == pytest.approx(110 / 35.0)

    def test_none_without_spec(self):
        assert bm.accept_length([], []) is None
        assert bm.accept_length([10], [0]) is None


def _record(t_send, chunk_times, chunk_counts, spec=None, t_end=None):
    rec = RequestRecord()
    rec.ok = True
    rec.t_send = t_send
    rec.times = list(chunk_times)
    rec.counts = list(chunk_counts)
    rec.completion_tokens = chunk_counts[-1]
    rec.prompt_tokens = 10
    rec.spec_verify_ct = spec
    rec.t_end = chunk_times[-1] if t_end is None else t_end
    return rec


class TestSummarizeLevel:
    def test_figures_of_a_level(self):
        # Two requests, 1 prefill token then 3 tokens per 30 ms step (100 tok/s decode).
        a = _record(0.0, [0.2 + 0.03 * i for i in range(11)], [1 + 3 * i for i in range(11)], spec=11)
        b = _record(0.1, [0.4 + 0.03 * i for i in range(11)], [1 + 3 * i for i in range(11)], spec=11)
        failed = RequestRecord()
        failed.error = "timeout"
        failed.t_send, failed.t_end = 0.0, 1.0
        level = bm.summarize_level(2, [a, b, failed], duration_s=0.8)
        assert level["requests_completed"] == 2
        assert level["requests_failed"] == 1
        assert level["errors"] == ["timeout"]
        assert level["output_tokens"] == 62
        assert level["aggregate_output_tok_s"] == pytest.approx(62 / 0.8)
        assert level["per_request_tok_s"]["median"] == pytest.approx(100.0)
        assert level["ttft_s"]["p50"] == pytest.approx(0.25)
        assert level["itl_s"]["p50"] == pytest.approx(0.01)
        assert level["tpot_s"]["mean"] == pytest.approx(0.01)
        assert level["e2e_latency_s"]["mean"] == pytest.approx((0.5 + 0.6) / 2)
        assert level["accept_length"] == pytest.approx(31 / 11.0)

    def test_all_failed_level_has_no_figures(self):
        failed = RequestRecord()
        failed.error = "HTTP 500: boom"
        failed.t_send, failed.t_end = 0.0, 0.1
        level = bm.summarize_level(4, [failed, failed], duration_s=0.1)
        assert level["requests_completed"] == 0
        assert level["requests_failed"] == 2
        assert level["errors"] == ["HTTP 500: boom"]
        assert level["aggregate_output_tok_s"] == 0
        assert level["per_request_tok_s"]["median"] is None
        assert level["accept_length"] is None
