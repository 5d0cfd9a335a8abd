"""A minimal closed-loop streaming client for measuring the simulator against its models.

Used by the simulator's tests and benchmarks/sim_fidelity.py; it is not the collection's
benchmark module (plugins/modules/sglang_bench.py). Each of ``concurrency`` workers sends
``/generate`` streaming requests back to back; per request it records TTFT (first chunk),
the decode rate (completion tokens after the first chunk / time from first to last chunk,
i.e. 1 / TPOT as SGLang's bench_serving reports it) and the server's spec_verify_ct.
"""

import asyncio
import json
import random
import statistics
import time

import aiohttp

_CT = b'"completion_tokens": '


def _completion_tokens(line):
    # cheap parse of the cumulative count without decoding the whole chunk
    idx = line.find(_CT)
    if idx < 0:
        return None
    start = idx + len(_CT)
    end = start
    while line[end:end + 1].isdigit():
        end += 1
    return int(line[start:end])


async def _one(session, url, body, headers, arrivals):
    t0 = time.perf_counter()
    first = last = None
    first_tokens = tokens = 0
    final = None
    async with session.post(url + "/generate", json=body, headers=headers) as resp:
        if resp.status != 200:
            return {"error": "HTTP %d: %s" % (resp.status, (await resp.text())[:200])}
        async for raw in resp.content:
            if not raw.startswith(b"data: "):
                continue
            if raw.startswith(b"data: [DONE]"):
                break
            now = time.perf_counter()
            count = _completion_tokens(raw)
            if count is None:
                continue
            if first is None:
                first, first_tokens = now, count
            arrivals.append((now, count - tokens))
            last, tokens = now, count
            if b'"finish_reason": {' in raw:
                final = json.loads(raw[6:])["meta_info"]
    if first is None:
        return {"error": "no chunks"}
    decode_s = last - first
    return {
        "ttft_s": first - t0,
        "e2e_s": last - t0,
        "completion_tokens": tokens,
        "decode_tok_s": (tokens - first_tokens) / decode_s if decode_s > 0 else None,
        "spec_verify_ct": (final or {}).get("spec_verify_ct"),
        "start": t0,
        "end": last,
    }


async def run_level(url, concurrency, requests, input_len=128, output_len=256, temperature=0.0, ignore_eos=True,
                    api_key=None, warmup=0):
    """Closed loop at ``concurrency`` until ``requests`` requests completed (after ``warmup``)."""
    headers = {"Authorization": "Bearer " + api_key} if api_key else {}
    prompt = " ".join(["word"] * max(1, input_len - 1))
    nonce = "%08x" % random.getrandbits(32)  # unique prompts per run: no radix-cache hits from earlier runs
    results = []
    arrivals = []
    counter = {"sent": 0, "stop": None}
    total = requests + warmup
    connector = aiohttp.TCPConnector(limit=0)
    timeout = aiohttp.ClientTimeout(total=None, sock_read=600)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        async def worker(wid):
            while counter["sent"] < total:
                idx = counter["sent"]
                counter["sent"] += 1
                if counter["sent"] == total:
                    counter["stop"] = time.perf_counter()
                body = {"text": "%s-%d %s" % (nonce, idx, prompt), "stream": True,
                        "sampling_params": {"max_new_tokens": output_len, "temperature": temperature,
                                            "ignore_eos": ignore_eos}}
                res = await _one(session, url, body, headers, arrivals)
                res["index"] = idx
                results.append(res)

        t0 = time.perf_counter()
        await asyncio.gather(*[worker(i) for i in range(concurrency)])
        wall = time.perf_counter() - t0
    measured = sorted([r for r in results if "error" not in r], key=lambda r: r["index"])[warmup:]
    errors = [r["error"] for r in results if "error" in r]
    if not measured:
        return {"concurrency": concurrency, "errors": errors, "completed": 0}
    # aggregate rate: tokens that arrived while every worker was busy, from the first measured
    # request's send to the moment the last request was sent (the drain tail excluded). The
    # window starts at a send, not at the first chunk: it then holds whole rounds (prefill and
    # decode), as predict() counts them; starting at the first chunk dropped one prefill from
    # the span and read high by prefill / window (+0.8% at c=1 over two rounds).
    w_start = min(r["start"] for r in measured)
    w_end = counter["stop"] or max(r["end"] for r in measured)
    window = [d for t, d in arrivals if w_start <= t <= w_end]
    span = w_end - w_start
    rates = [r["decode_tok_s"] for r in measured if r["decode_tok_s"]]
    tokens = sum(r["completion_tokens"] for r in measured)
    verify = [r["spec_verify_ct"] for r in measured if r.get("spec_verify_ct")]
    return {
        "concurrency": concurrency,
        "completed": len(measured),
        "errors": errors,
        "wall_s": wall,
        "output_tokens": tokens,
        "aggregate_output_tok_s": (sum(window) / span) if span > 0 and window else
        tokens / max(1e-9, max(r["end"] for r in measured) - w_start),
        "per_request_tok_s": statistics.median(rates) if rates else 0.0,
        "per_request_tok_s_mean": statistics.mean(rates) if rates else 0.0,
        "ttft_s": statistics.median([r["ttft_s"] for r in measured]),
        "accept_length": (sum(r["completion_tokens"] for r in measured if r.get("spec_verify_ct")) / float(sum(verify)))
        if verify else None,
    }


def measure(url, concurrency, requests, **kwargs):
    return asyncio.run(run_level(url, concurrency, requests, **kwargs))
