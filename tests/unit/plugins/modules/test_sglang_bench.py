# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.sglang contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests of sglang_bench's option checks, request planning, workloads and HTTP/SSE parsing."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import asyncio
import json
import time

import pytest

from ansible_collections.llmops.sglang.plugins.modules import sglang_bench as mod
from ansible_collections.llmops.sglang.plugins.module_utils import bench_client as bc
from ansible_collections.llmops.sglang.plugins.module_utils import bench_workloads as bw


class TestValidateLevels:
    @pytest.mark.parametrize("value,expected", [([1, 8, 32], [1, 8, 32]), (["4", 2.0], [4, 2]), ([64], [64])])
    def test_good(self, value, expected):
        assert mod.validate_levels(value) == (expected, None)

    @pytest.mark.parametrize("value", [[], [0], [1, -3], ["abc"], [1.5], [True], None, "8"])
    def test_bad_names_the_option(self, value):
        levels, err = mod.validate_levels(value)
        assert levels is None
        assert err.startswith("concurrency_levels must be a non-empty list of integers >= 1")


class TestRequestsFor:
    def test_explicit_count_wins(self):
        assert mod.requests_for(64, 10, 17) == 10

    def test_default_is_whole_rounds_of_the_running_batch(self):
        # 64 workers, 17 running at once: at least 256 requests, rounded up to 17s.
        assert mod.requests_for(64, None, 17) == 17 * 16
        assert mod.requests_for(8, None, 48) == 32
        assert mod.requests_for(1, None, 48) == 8
        assert mod.requests_for(3, None, None) == 12


class TestServerSummary:
    def test_top_level_and_internal_states(self):
        info = {"version": "0.5.23", "max_running_requests": 48, "max_total_num_tokens": 1000,
                "speculative_num_steps": 4, "unrelated": 1,
                "internal_states": [{"max_running_requests": 21, "avg_spec_accept_length": 3.1}]}
        server, max_running, max_total = mod._server_summary(info)
        assert server == {"version": "0.5.23", "server_args": {"max_running_requests": 48, "speculative_num_steps": 4},
                          "max_running_requests": 21, "resolved_max_running_requests": 48}
        assert max_running == 21  # the value the scheduler applies
        assert max_total == 1000

    def test_0523_effective_limit_per_dp(self):
        # SGLang 0.5.23: resolved 48 at the top level and per rank; the applied limit per DP rank
        info = {"version": "0.5.23", "max_running_requests": 48, "max_total_num_tokens": 1000,
                "internal_states": [{"max_running_requests": 48, "effective_max_running_requests_per_dp": 13}]}
        server, max_running, _max_total = mod._server_summary(info)
        assert max_running == 13 and server["resolved_max_running_requests"] == 48


class TestParseBaseUrl:
    @pytest.mark.parametrize("url,expected", [
        ("http://127.0.0.1:30000", ("http", "127.0.0.1", 30000, "")),
        ("https://gpu.example.org/sglang/", ("https", "gpu.example.org", 443, "/sglang")),
        ("http://[::1]:30001", ("http", "::1", 30001, "")),
    ])
    def test_good(self, url, expected):
        assert bc.parse_base_url(url) == expected

    @pytest.mark.parametrize("url", ["", "127.0.0.1:30000", "ftp://x", "http://", "http://h:99999", "http://h/?q=1"])
    def test_bad(self, url):
        with pytest.raises(bc.BenchError, match="url"):
            bc.parse_base_url(url)


class TestWorkloads:
    def test_synthetic_is_seeded_greedy_and_fixed_length(self):
        make = bw.body_factory("native", "synthetic", None, 50, 128, 0.7, seed=3)
        a, b = make(1), make(2)
        assert a == bw.body_factory("native", "synthetic", None, 50, 128, 0.7, seed=3)(1)
        assert a["text"] != b["text"]  # no prefix-cache hits between requests
        assert len(a["text"].split()) == 50
        assert a["sampling_params"] == {"max_new_tokens": 128, "temperature": 0.0, "ignore_eos": True}
        assert a["stream"] is True

    def test_realistic_uses_the_shipped_prompts_sampled_with_natural_eos(self):
        assert len(bw.AGENTIC_CODING_PROMPTS) >= 40
        make = bw.body_factory("chat", "realistic", "m", 50, 256, 0.7, seed=0)
        body = make(0)
        assert body["messages"][0]["content"] in bw.AGENTIC_CODING_PROMPTS
        assert body["temperature"] == 0.7 and "ignore_eos" not in body
        assert body["max_tokens"] == 256 and body["model"] == "m"
        assert body["stream_options"] == {"include_usage": True, "continuous_usage_stats": True}
        assert body["return_spec_tokens_details"] is True

    def test_file_prompts(self, tmp_path):
        path = tmp_path / "p.jsonl"
        path.write_text(json.dumps({"prompt": "hi", "max_tokens": 9}) + "\n\n"
                        + json.dumps({"messages": [{"role": "user", "content": "yo"}]}) + "\n")
        prompts = bw.load_prompt_file(str(path))
        make = bw.body_factory("completions", "file", "m", 1, 64, 0.5, seed=0, prompts=prompts)
        assert make(0)["prompt"] == "hi" and make(0)["max_tokens"] == 9
        assert make(1)["prompt"] == "user: yo" and make(1)["max_tokens"] == 64

    def test_bad_prompt_file(self, tmp_path):
        path = tmp_path / "p.jsonl"
        path.write_text("{not json}\n")
        with pytest.raises(ValueError, match="line 1"):
            bw.load_prompt_file(str(path))
        with pytest.raises(ValueError, match="item 1"):
            bw.normalize_prompts([{"text": "x"}])

    @pytest.mark.parametrize("text,expected", [
        ('{"prompt": "a"}\n{"prompt": "b",}\n', "prompt_file F line 2 is not JSON: "),
        ('{"prompt": "a"}\n\n{"text": "b"}\n', "prompt_file F line 3 must be a string or an object with 'prompt'"),
        ("\n  \n", "prompt_file F holds no prompts"),
        ("", "prompt_file F holds no prompts"),
    ])
    def test_prompt_lines_name_the_line_and_the_fault(self, text, expected):
        with pytest.raises(ValueError) as exc:
            bw.parse_prompt_lines(text.splitlines(), "prompt_file F")
        assert str(exc.value).startswith(expected), str(exc.value)


def _sse(events, chunked=True, split_every=None):
    """An HTTP response body with the given SSE data payloads, optionally cut into odd pieces."""
    body = b"".join(b"data: " + (e if isinstance(e, bytes) else json.dumps(e).encode()) + b"\n\n" for e in events)
    if chunked:
        body = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in [body[i:i + 37] for i in range(0, len(body), 37)]) + b"0\r\n\r\n"
    head = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
    head += b"transfer-encoding: chunked\r\n\r\n" if chunked else b"\r\n"
    data = head + body
    step = split_every or len(data)
    return [data[i:i + step] for i in range(0, len(data), step)]


async def _serve_and_stream(pieces, api="native"):
    async def handle(reader, writer):
        await reader.readuntil(b"\r\n\r\n")
        for piece in pieces:
            writer.write(piece)
            await writer.drain()
            await asyncio.sleep(0)
        writer.close()

    srv = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = srv.sockets[0].getsockname()[1]
    ep = bc.Endpoint("http://127.0.0.1:%d" % port, request_timeout=5)
    rec = bc.RequestRecord()
    try:
        await bc.stream_request(ep, bc.API_PATHS[api], {"x": 1}, bc.make_parser(api), rec)
    finally:
        srv.close()
    return rec


def _native(n, final=False, verify=None):
    meta = {"completion_tokens": n, "prompt_tokens": 5, "finish_reason": {"type": "length"} if final else None}
    if verify is not None:
        meta["spec_verify_ct"] = verify
    return {"text": "w" * n, "meta_info": meta}


class TestStreamParsing:
    @pytest.mark.parametrize("chunked", [True, False])
    @pytest.mark.parametrize("split_every", [None, 1, 7, 50])
    def test_native_stream_any_framing(self, chunked, split_every):
        events = [_native(1), _native(4), _native(8, True, 2), b"[DONE]"]
        rec = asyncio.run(_serve_and_stream(_sse(events, chunked, split_every)))
        assert rec.counts == [1, 4, 8]
        assert rec.completion_tokens == 8 and rec.prompt_tokens == 5 and rec.spec_verify_ct == 2
        assert rec.t_end is not None

    def test_stream_cut_before_done_is_an_error(self):
        pieces = _sse([_native(1), _native(4)], chunked=False)
        with pytest.raises(ValueError, match="closed before the stream finished \\(4 tokens"):
            asyncio.run(_serve_and_stream(pieces))

    def test_error_status_is_reported_with_the_server_message(self):
        body = json.dumps({"object": "error", "message": "bad max_tokens", "code": 400}).encode()
        pieces = [b"HTTP/1.1 400 Bad Request\r\ncontent-length: %d\r\n\r\n%s" % (len(body), body)]
        with pytest.raises(ValueError, match="HTTP 400: bad max_tokens"):
            asyncio.run(_serve_and_stream(pieces))

    def test_openai_chat_with_per_chunk_usage(self):
        def chunk(content, n, finish=None):
            return {"choices": [{"delta": {"content": content}, "finish_reason": finish}],
                    "usage": {"prompt_tokens": 3, "completion_tokens": n}}
        events = [{"choices": [{"delta": {"role": "assistant", "content": ""}}], "usage": {"completion_tokens": 0}},
                  chunk("a", 1), chunk("bcd", 4), chunk("ef", 6, "length"),
                  {"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 6},
                   "sglext": {"spec_tokens_details": {"spec_verify_ct": 2, "spec_accept_length": 3.0}}}, b"[DONE]"]
        rec = asyncio.run(_serve_and_stream(_sse(events), api="chat"))
        assert rec.per_chunk_counts is True
        assert rec.counts == [1, 4, 6] and rec.completion_tokens == 6 and rec.finish_reason == "length"
        assert rec.spec_verify_ct == 2

    def test_openai_without_per_chunk_usage_keeps_exact_totals_and_drops_itl(self):
        events = [{"choices": [{"text": "a"}]}, {"choices": [{"text": "bc"}]}, {"choices": [{"text": "d"}]},
                  {"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 9}}, b"[DONE]"]
        rec = asyncio.run(_serve_and_stream(_sse(events), api="completions"))
        assert rec.per_chunk_counts is False
        assert rec.completion_tokens == 9
        assert rec.counts == [1, 1, 9]  # first and last content chunk times stay meaningful


def _rec(rate, tokens=128, ok=True, error=None):
    rec = bc.RequestRecord()
    rec.ok, rec.error = ok, error
    if ok:
        rec.completion_tokens = tokens
        span = (tokens - 1) / float(rate)
        rec.times = [1.0 + span * i / 7.0 for i in range(8)]
        rec.counts = [tokens * (i + 1) // 8 for i in range(8)]
    return rec


def test_a_burst_beyond_the_pace_measured_before_is_not_a_measurement():
    normal = [_rec(230.0) for _i in range(9)]
    assert mod.implausible(normal, 234.0) is None
    assert mod.implausible(normal, None) is None, 'no reference, no verdict'
    burst = normal + [_rec(39164.0), _rec(20000.0)]
    why = mod.implausible(burst, 234.0)
    assert why and 'not a measurement' in why


def test_the_loop_lag_counts_late_wake_ups_whole_and_ordinary_jitter_not_at_all():
    lag = bc.LoopLag()

    async def watch_through(blocks):
        watcher = asyncio.ensure_future(lag.watch())
        for seconds in blocks:
            await asyncio.sleep(0.12)
            time.sleep(seconds)  # the loop kept off the CPU, as a starved process is
        await asyncio.sleep(0.12)
        watcher.cancel()

    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(watch_through([0.005, 0.3]))
    finally:
        loop.close()
    # 0.3 s late once (less the tick's remainder); the 5 ms block is under the 20 ms grace.
    assert 0.2 < lag.late_s < 0.4 and 0.2 < lag.max_s < 0.4, (lag.late_s, lag.max_s)
    summary = lag.summary(2.0)
    assert summary["fraction"] == round(lag.late_s / 2.0, 4) and summary["late_s"] == round(lag.late_s, 3)


def test_a_starved_client_is_told_by_the_share_of_the_level_it_lost():
    lag = {"late_s": 1.5, "max_s": 1.5, "fraction": 0.3}
    why = mod.client_starved(lag, {"client_lag_limit": 0.05})
    assert why.startswith("the benchmark client was starved of CPU on its host: its event loop woke late for 1.5 s in all, 30%")
    assert mod.client_starved(dict(lag, fraction=0.05), {"client_lag_limit": 0.05}) is None, "at the limit is within it"
    assert mod.client_starved(lag, {"client_lag_limit": 1.0}) is None, "1 turns the check off"
    assert mod.client_starved(lag, {}) is None, "callers without the setting (tests, benchmarks) have it off"


def test_only_a_clean_try_is_measured_again_for_a_starved_client():
    starved = {"late_s": 1.5, "max_s": 1.5, "fraction": 0.3}
    params = {"client_lag_limit": 0.05}

    class Try:  # what starved_try reads of a LevelRun
        def __init__(self, records, stalled=None, aborted=None):
            self.records, self.stalled, self.aborted = records, stalled, aborted

    clean = [_rec(230.0) for _i in range(8)]
    assert mod.starved_try(Try(clean), starved, params).startswith("the benchmark client was starved of CPU")
    assert mod.starved_try(Try(clean), dict(starved, fraction=0.01), params) is None
    # Its server's own errors, a stall or an abort are what the level reports, not hidden behind another try.
    assert mod.starved_try(Try(clean + [_rec(1, ok=False, error="HTTP 500: CUDA error")]), starved, params) is None
    assert mod.starved_try(Try(clean, stalled="server stalled"), starved, params) is None
    assert mod.starved_try(Try(clean, aborted="cannot connect"), starved, params) is None


def test_failed_requests_are_told_apart():
    assert mod.classify_errors([_rec(1, ok=False, error='HTTP 500: CUDA error')]) == 'server_error'
    assert mod.classify_errors([_rec(1, ok=False, error='ValueError: server error in stream: boom')]) == 'server_error'
    assert mod.classify_errors([_rec(1, ok=False, error='connection closed mid-response')]) == 'connection'


def test_the_process_is_named_sglang_bench_only_while_it_holds_the_lock():
    """The process list counts load-driving benchmarks: the name goes back before the lock is released
    (the process still reports and exits after that, and a re-run may already hold the lock)."""
    with open("/proc/self/comm") as fh:
        before = fh.read().strip()
    try:
        assert mod.name_this_process() == before
        with open("/proc/self/comm") as fh:
            assert fh.read().strip() == "sglang_bench"
        assert mod.name_this_process(before) == "sglang_bench"
        with open("/proc/self/comm") as fh:
            assert fh.read().strip() == before
    finally:
        with open("/proc/self/comm", "w") as fh:
            fh.write(before)
