# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.sglang contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Streaming HTTP load client for llmops.sglang.sglang_bench (private).

Stdlib only, Python 3.8+: it runs on the GPU host, next to SGLang, with
whatever Python is there (it must not need aiohttp/numpy even though SGLang's
own environment has them, because it may also run with the system python or
delegated to a controller).

Why raw asyncio streams rather than http.client + threads: at 64 streams and
~30,000 tok/s a speculative server sends ~10,000 SSE chunks a second. One
event loop reading sockets costs a few microseconds per chunk; 64 threads
contend for the GIL and wake per chunk, which costs several times more CPU and
adds scheduling jitter to the very timestamps we measure
(benchmarks/bench_client_overhead.py quantifies the client's cost).

One TCP connection per request (``Connection: close``), as SGLang 0.5.x
``bench_serving`` does (an aiohttp session per request), so TTFT includes the
connect, as a real client's does.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import asyncio
import errno
import json
import os
import re
import signal
import socket
import ssl
import tempfile
import time
from urllib.parse import urlsplit

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX
    fcntl = None

API_PATHS = {
    "native": "/generate",
    "completions": "/v1/completions",
    "chat": "/v1/chat/completions",
}

_now = time.perf_counter


class BenchError(Exception):
    """A problem that makes the whole benchmark fail (bad URL, server down)."""


class ServerUnreachable(BenchError):
    """The server did not accept a TCP connection within the connect timeout."""


class Endpoint:
    """Where the server is and how to talk to it."""

    def __init__(self, base_url, api_key=None, connect_timeout=10.0, request_timeout=600.0, validate_certs=True):
        self.base_url = base_url
        parts = parse_base_url(base_url)
        self.scheme, self.host, self.port, self.prefix = parts
        self.api_key = api_key
        self.connect_timeout = connect_timeout
        self.request_timeout = request_timeout
        self.ssl_context = None
        if self.scheme == "https":
            self.ssl_context = ssl.create_default_context()
            if not validate_certs:
                self.ssl_context.check_hostname = False
                self.ssl_context.verify_mode = ssl.CERT_NONE
        self.host_header = self.host if self.port in (80, 443) else "%s:%d" % (self.host, self.port)
        if ":" in self.host and not self.host.startswith("["):
            self.host_header = "[%s]:%d" % (self.host, self.port)

    def build_request(self, method, path, body=None, stream=False):
        """Serialised HTTP/1.1 request bytes (built once per request)."""
        payload = b"" if body is None else json.dumps(body, separators=(",", ":")).encode("utf-8")
        lines = [
            "%s %s%s HTTP/1.1" % (method, self.prefix, path),
            "Host: %s" % self.host_header,
            "User-Agent: llmops.sglang-bench",
            "Accept: %s" % ("text/event-stream" if stream else "application/json"),
            "Connection: close",
        ]
        if self.api_key:
            lines.append("Authorization: Bearer %s" % self.api_key)
        if body is not None:
            lines.append("Content-Type: application/json")
            lines.append("Content-Length: %d" % len(payload))
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + payload

    async def connect(self):
        try:
            return await asyncio.wait_for(
                asyncio.open_connection(self.host, self.port, ssl=self.ssl_context),
                self.connect_timeout,
            )
        except asyncio.TimeoutError:
            raise ServerUnreachable("no TCP connection to %s within connect_timeout=%ss" % (self.base_url, self.connect_timeout))
        except (OSError, socket.gaierror) as exc:
            raise ServerUnreachable("cannot connect to %s: %s" % (self.base_url, exc))


def parse_base_url(url):
    """(scheme, host, port, path prefix) of an http(s) base URL, or BenchError."""
    if not isinstance(url, str) or not url:
        raise BenchError("url must be an http:// or https:// URL, got %r" % (url,))
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise BenchError("url %r is malformed: %s" % (url, exc))
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise BenchError("url must be an http:// or https:// URL with a host, got %r" % (url,))
    if parts.query or parts.fragment:
        raise BenchError("url must be a base URL without query or fragment, got %r" % (url,))
    if port is None:
        port = 443 if parts.scheme == "https" else 80
    return parts.scheme, parts.hostname, port, parts.path.rstrip("/")


class _Response:
    __slots__ = ("status", "headers", "reader", "writer", "chunked", "buf")


async def _open(endpoint, raw_request):
    reader, writer = await endpoint.connect()
    writer.write(raw_request)
    resp = _Response()
    resp.reader = reader
    resp.writer = writer
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    try:
        resp.status = int(lines[0].split(" ", 2)[1])
    except (IndexError, ValueError):
        raise ValueError("not an HTTP response: %r" % (lines[0][:80],))
    headers = {}
    for line in lines[1:]:
        if ":" in line:
            name, value = line.split(":", 1)
            headers[name.strip().lower()] = value.strip()
    resp.headers = headers
    resp.chunked = "chunked" in headers.get("transfer-encoding", "").lower()
    return resp


def _close(resp):
    try:
        resp.writer.close()
    except Exception:  # pylint: disable=broad-except
        pass


async def _read_body(resp, limit=1 << 20):
    """Whole (non-streamed) body, de-chunked."""
    reader = resp.reader
    if resp.chunked:
        out = bytearray()
        while True:
            size = int((await reader.readline()).split(b";", 1)[0].strip() or b"0", 16)
            if size == 0:
                break
            out += await reader.readexactly(size + 2)
            del out[-2:]
            if len(out) > limit:
                break
        return bytes(out)
    length = resp.headers.get("content-length")
    if length is not None:
        return await reader.readexactly(min(int(length), limit))
    return await reader.read(limit)


async def get_json(endpoint, path):
    """GET a JSON document; returns (status, parsed or None, raw text)."""
    resp = await asyncio.wait_for(_open(endpoint, endpoint.build_request("GET", path)), endpoint.request_timeout)
    try:
        raw = await asyncio.wait_for(_read_body(resp), endpoint.request_timeout)
    finally:
        _close(resp)
    text = raw.decode("utf-8", "replace")
    try:
        return resp.status, json.loads(text), text
    except ValueError:
        return resp.status, None, text


async def post_json(endpoint, path, body):
    resp = await asyncio.wait_for(_open(endpoint, endpoint.build_request("POST", path, body)), endpoint.request_timeout)
    try:
        raw = await asyncio.wait_for(_read_body(resp), endpoint.request_timeout)
    finally:
        _close(resp)
    return resp.status, raw.decode("utf-8", "replace")


class RequestRecord:
    """What one measured request observed (times are perf_counter seconds)."""

    __slots__ = (
        "ok", "error", "t_send", "t_end", "times", "counts", "completion_tokens",
        "prompt_tokens", "spec_verify_ct", "finish_reason", "per_chunk_counts",
    )

    def __init__(self):
        self.ok = False
        self.error = None
        self.t_send = None
        self.t_end = None
        self.times = []
        self.counts = []
        self.completion_tokens = 0
        self.prompt_tokens = None
        self.spec_verify_ct = None
        self.finish_reason = None
        # False when the API only reports usage at the end (OpenAI flavours
        # without per-chunk usage): then ITL cannot be computed per token.
        self.per_chunk_counts = True


def _error_message(status, text):
    try:
        doc = json.loads(text)
    except ValueError:
        doc = None
    msg = None
    if isinstance(doc, dict):
        err = doc.get("error", doc)
        if isinstance(err, dict):
            msg = err.get("message") or err.get("detail")
        elif isinstance(err, str):
            msg = err
        msg = msg or doc.get("message") or doc.get("detail")
    return "HTTP %d: %s" % (status, (msg or text or "").strip()[:300])


class _NativeParser:
    """SGLang /generate stream: meta_info.completion_tokens is cumulative.

    SGLang 0.5.23 puts spec_verify_ct on the finished output only
    (managers/tokenizer_manager.py:_calculate_spec_decoding_metrics); older
    servers put it on every chunk. Either way the last value seen is the
    request's total.
    """

    @staticmethod
    def feed(rec, doc, now):
        if "error" in doc:
            raise ValueError("server error in stream: %s" % (doc["error"],))
        meta = doc["meta_info"]
        n = meta["completion_tokens"]
        rec.times.append(now)
        rec.counts.append(n)
        rec.completion_tokens = n
        rec.prompt_tokens = meta.get("prompt_tokens", rec.prompt_tokens)
        if meta.get("spec_verify_ct") is not None:
            rec.spec_verify_ct = meta["spec_verify_ct"]
        if meta.get("finish_reason") is not None:
            rec.finish_reason = meta["finish_reason"]


class _OpenAIParser:
    """OpenAI completions/chat streams.

    We ask for ``stream_options: {include_usage, continuous_usage_stats}``;
    a server that honours continuous_usage_stats (SGLang 0.5.23
    openai/utils.py:should_include_usage) puts cumulative usage on every
    content chunk (exact per-token ITL). Chat's role chunk (empty content) and
    its separate finish-reason chunk carry no text and are not counted. Otherwise usage arrives only on the
    final chunk: token counts stay exact, TTFT/decode rate use the content
    chunks' times, and ITL is reported as unavailable rather than guessed.
    """

    def __init__(self, chat):
        self.chat = chat

    def feed(self, rec, doc, now):
        if "error" in doc or doc.get("object") == "error":
            raise ValueError("server error in stream: %s" % (doc.get("error") or doc.get("message"),))
        choices = doc.get("choices") or []
        has_content = False
        for choice in choices:
            if self.chat:
                delta = choice.get("delta") or {}
                if delta.get("content") or delta.get("reasoning_content") or delta.get("tool_calls"):
                    has_content = True
            elif choice.get("text"):
                has_content = True
            if choice.get("finish_reason") is not None:
                rec.finish_reason = choice["finish_reason"]
        usage = doc.get("usage")
        if usage:
            rec.completion_tokens = usage.get("completion_tokens", rec.completion_tokens)
            rec.prompt_tokens = usage.get("prompt_tokens", rec.prompt_tokens)
        # SGLang 0.5.23 answers return_spec_tokens_details with a response-level chunk
        # (choices: []) carrying sglext.spec_tokens_details, a dict (a list when n > 1)
        # (entrypoints/openai/serving_completions.py:_generate_completion_stream,
        # serving_chat.py:_generate_chat_stream); older servers omit it.
        details = (doc.get("sglext") or {}).get("spec_tokens_details")
        if isinstance(details, list):
            details = details[0] if details else None
        if isinstance(details, dict) and details.get("spec_verify_ct"):
            rec.spec_verify_ct = details["spec_verify_ct"]
        if has_content:
            if usage:
                rec.times.append(now)
                rec.counts.append(rec.completion_tokens)
            else:
                rec.per_chunk_counts = False
                # Placeholder count: one more than before, fixed up at the end.
                rec.times.append(now)
                rec.counts.append(len(rec.counts) + 1)

    @staticmethod
    def finish(rec):
        if not rec.per_chunk_counts and rec.counts:
            # Only the first and last content chunks' times are used from
            # here on (TTFT, decode rate): the last one carries the total.
            rec.counts = [1] * (len(rec.counts) - 1) + [max(rec.completion_tokens, 1)]


def make_parser(api):
    if api == "native":
        return _NativeParser()
    return _OpenAIParser(chat=(api == "chat"))


async def stream_request(endpoint, path, body, parser, rec):
    """Send one streaming request and record chunk arrivals into ``rec``.

    Raises on any failure; the caller turns it into a failed record. The
    whole request is bounded by the caller's request timeout.
    """
    raw_request = endpoint.build_request("POST", path, body, stream=True)
    rec.t_send = _now()
    resp = await _open(endpoint, raw_request)
    try:
        if resp.status != 200:
            text = (await _read_body(resp)).decode("utf-8", "replace")
            raise ValueError(_error_message(resp.status, text))
        await _consume_sse(resp, parser, rec)
    finally:
        _close(resp)
    finish = getattr(parser, "finish", None)
    if finish is not None:
        finish(rec)


async def _consume_sse(resp, parser, rec):
    reader = resp.reader
    chunked = resp.chunked
    raw = b""       # undecoded transfer-encoding bytes
    pending = b""   # decoded SSE text not yet split into events
    ended = False
    feed = parser.feed
    loads = json.loads
    while True:
        data = await reader.read(65536)
        now = _now()
        if not data:
            raise ValueError("connection closed before the stream finished (%d tokens received)" % rec.completion_tokens)
        if chunked:
            raw += data
            pos = 0
            while True:
                eol = raw.find(b"\r\n", pos)
                if eol < 0:
                    break
                size = int(raw[pos:eol].split(b";", 1)[0], 16)
                if size == 0:
                    # Terminal chunk: the server ended the body.
                    ended = True
                    break
                end = eol + 2 + size
                if len(raw) < end + 2:
                    break
                pending += raw[eol + 2:end]
                pos = end + 2
            raw = raw[pos:]
        else:
            pending += data
        while True:
            cut = pending.find(b"\n\n")
            if cut < 0:
                break
            event = pending[:cut]
            pending = pending[cut + 2:]
            for line in event.split(b"\n"):
                if not line.startswith(b"data:"):
                    continue  # comments, event names, keep-alives
                payload = line[5:].strip()
                if payload == b"[DONE]":
                    rec.t_end = now
                    return
                feed(rec, loads(payload), now)
        if ended:
            raise ValueError("stream ended without [DONE] (%d tokens received)" % rec.completion_tokens)


def _describe(exc):
    if isinstance(exc, asyncio.TimeoutError):
        return "timeout"
    if isinstance(exc, asyncio.IncompleteReadError):
        return "connection closed mid-response"
    text = str(exc)
    return "%s: %s" % (type(exc).__name__, text) if text else type(exc).__name__


class LoopLag:
    """How late the client's event loop woke up while a level measured: the client's own health.

    A client that does not get the CPU when it needs it (other work on the benchmarking host, a CPU
    quota, a host swapping) reads the streams late and sends the next requests late, so the level
    measures the client, not the server: fewer requests in flight, and a burst of held-back tokens
    once it runs again. Load generators check themselves for the same reason (Locust warns when its
    CPU use passes 90%). A timer every TICK_S; a wake-up later than GRACE_S counts whole, so the
    ordinary jitter of a loaded host (a scheduler tick or two) counts nothing and a stall counts
    as long as it lasted.
    """

    TICK_S = 0.05
    GRACE_S = 0.02

    def __init__(self):
        self.late_s = 0.0  # the late wake-ups' lateness, summed
        self.max_s = 0.0   # the latest one

    async def watch(self):
        expected = _now() + self.TICK_S
        while True:
            await asyncio.sleep(self.TICK_S)
            now = _now()
            late = now - expected
            if late > self.GRACE_S:
                self.late_s += late
            self.max_s = max(self.max_s, late)
            expected = now + self.TICK_S

    def summary(self, duration_s):
        """late_s, max_s and fraction (late_s over the level's duration) for the result."""
        return {"late_s": round(self.late_s, 3), "max_s": round(max(0.0, self.max_s), 3),
                "fraction": round(self.late_s / duration_s, 4) if duration_s > 0 else 0.0}


# How much slower than the warm-up's pace a level may run before its overall deadline ends it.
# Per-request latency grows with the batch, but at most linearly in the concurrency (each
# request's decode step costs at most as much as the whole batch's); 4x on top covers noise
# and slower prefill without letting a dead server hold a level for long.
DEADLINE_SLACK = 4.0


class LevelRun:
    """A closed-loop load at one concurrency level.

    ``concurrency`` workers each send requests back to back. Warm-up
    requests run first, to completion, and are not measured; then all
    workers start the measured phase together and take requests from a
    shared counter until ``requests`` are done (or, with ``duration_s``,
    until that much time has passed: in-flight requests then finish and
    count). The level's duration is from the measured phase's start to its
    last response, so aggregate tok/s = measured tokens / that wall time.

    Two deadlines keep a stopped server from holding the level (a SIGSTOPped
    server still accepts connections into its backlog, so only
    ``request_timeout`` would end each request):

    * ``stall_timeout``: no token arrived on any stream in flight for that
      long. The level ends at once, ``stalled`` says why.
    * the overall deadline, derived from the expected work: the warm-up's
      (or ``reference``'s) per-request latency, scaled to this concurrency,
      times the rounds of requests, times DEADLINE_SLACK, plus the stall
      timeout. Exceeding it also ends the level with ``stalled`` set.

    With a ``stop_rule`` (bench_stopping.StopRule), ``requests`` is the cap:
    after each completion the rule may find the level precise enough; then
    no request is sent beyond the round in flight (the count is rounded up
    to whole rounds of the rule's batch, so the last round is as full as the
    others) and ``stopped_early`` is set.
    """

    def __init__(self, endpoint, path, parser, make_body, concurrency, requests, warmup, duration_s=None,
                 stall_timeout=None, reference=None, stop_rule=None):
        self.endpoint = endpoint
        self.path = path
        self.parser = parser
        self.make_body = make_body
        self.concurrency = concurrency
        self.requests = requests
        self.warmup = warmup
        self.duration_s = duration_s
        self.stall_timeout = stall_timeout
        # (per-request e2e seconds, at concurrency) measured before this level, or None.
        self.reference = reference
        self.stop_rule = stop_rule
        self.lag = LoopLag()  # watched over the measured phase
        self.stopped_early = False
        self.start = None
        self.records = []
        self.warmup_records = []
        self.warmup_s = 0.0  # wall time of the warm-up requests (load, but not measured)
        self.aborted = None
        self.stalled = None
        self.deadline_s = None
        self._next = 0
        self._index = 0
        self._in_flight = set()
        self._finished_tokens = 0
        self._tasks = []

    async def _one(self, index):
        rec = RequestRecord()
        body = self.make_body(index)
        self._in_flight.add(rec)
        try:
            await asyncio.wait_for(stream_request(self.endpoint, self.path, body, self.parser, rec), self.endpoint.request_timeout)
            if rec.t_end is None:
                rec.t_end = _now()
            rec.ok = True
        except ServerUnreachable as exc:
            rec.error = str(exc)
            # A down server would make every remaining request wait for
            # the connect timeout: stop the level instead.
            self.aborted = rec.error
        except asyncio.TimeoutError:
            rec.error = "request timed out after request_timeout=%ss (%d tokens received)" % (self.endpoint.request_timeout, rec.completion_tokens)
        except Exception as exc:  # pylint: disable=broad-except
            rec.error = _describe(exc)
        finally:
            self._in_flight.discard(rec)
            self._finished_tokens += len(rec.times) + 1
        if rec.t_end is None:
            rec.t_end = _now()
        return rec

    async def _warm_worker(self):
        while self._next < self.warmup and not self.aborted:
            self._next += 1
            self._index += 1
            self.warmup_records.append(await self._one(self._index))

    async def _worker(self, deadline):
        while not self.aborted:
            if deadline is not None:
                if _now() >= deadline:
                    return
            elif self._next >= self.requests:
                return
            self._next += 1
            self._index += 1
            rec = await self._one(self._index)
            self.records.append(rec)
            self._check_stop()

    def _check_stop(self):
        """Adaptive stopping: once precise enough, send nothing beyond the round in flight."""
        rule = self.stop_rule
        if rule is None or self.stopped_early or self.duration_s:
            return
        if rule.satisfied(self.records, self.start, _now(), self._in_flight):
            running = rule.running
            self.requests = min(self.requests, running * ((self._next + running - 1) // running))
            self.stopped_early = True

    def snapshot(self):
        """What the level has done so far, for a progress report (cheap: counts, no statistics).

        ``requests_target`` is the measured count asked for (with a stop rule its cap, lowered once the
        level is precise enough; None with ``duration_s``); ``output_tok_s`` the completion tokens of the
        measured phase so far (finished requests and those in flight) over its elapsed time.
        """
        measuring = self.start is not None
        records = self.records if measuring else self.warmup_records
        done = len(records)
        ok = sum(1 for rec in records if rec.ok)
        tokens = sum(rec.completion_tokens for rec in records if rec.ok) + sum(rec.completion_tokens for rec in self._in_flight)
        elapsed = _now() - self.start if measuring else None
        return {
            'phase': 'measure' if measuring else 'warmup',
            'requests_done': done,
            'requests_failed': done - ok,
            'requests_target': (None if self.duration_s else self.requests) if measuring else self.warmup,
            'adaptive': self.stop_rule is not None,
            'in_flight': len(self._in_flight),
            'output_tokens': tokens if measuring else None,
            'output_tok_s': round(tokens / elapsed, 1) if measuring and elapsed > 0 else None,
            'level_elapsed_s': round(elapsed, 1) if measuring else None,
            'duration_s': self.duration_s,
        }

    def _progress(self):
        """Chunks received so far (finished requests count whole): grows while any stream moves."""
        return self._finished_tokens + sum(len(rec.times) for rec in self._in_flight)

    def _stop(self, why):
        self.stalled = why
        self.aborted = why
        for task in self._tasks:
            task.cancel()

    async def _watch(self):
        """Ends the level when no stream moves for stall_timeout or the overall deadline passes."""
        tick = min(1.0, self.stall_timeout / 10.0)
        last, last_change = self._progress(), _now()
        while True:
            await asyncio.sleep(tick)
            now, progress = _now(), self._progress()
            if progress != last or not self._in_flight:
                last, last_change = progress, now
            elif now - last_change > self.stall_timeout:
                self._stop("server stalled: no token on any of the %d streams in flight for %.0fs (stall_timeout)"
                           % (len(self._in_flight), now - last_change))
                return
            if self._deadline_at is not None and now > self._deadline_at:
                self._stop("server stalled: the level at concurrency %d did not finish within its overall deadline of %.0fs "
                           "(expected work: %s)" % (self.concurrency, self.deadline_s, self._deadline_why))
                return

    def _set_deadline(self):
        """The overall deadline of the measured phase, from the warm-up's pace (or the reference)."""
        ref = None
        warm = sorted(r.t_end - r.t_send for r in self.warmup_records if r.ok)
        if warm:
            ref = (warm[len(warm) // 2], min(self.concurrency, self.warmup))
        elif self.reference:
            ref = self.reference
        if ref is None or not self.stall_timeout:
            return
        e2e, at = ref
        per_request = e2e * max(1.0, float(self.concurrency) / max(1, at))
        if self.duration_s:
            work = self.duration_s + per_request
            why = "%.0fs of load plus one request of about %.1fs" % (self.duration_s, per_request)
        else:
            rounds = -(-self.requests // self.concurrency)
            work = rounds * per_request
            why = "%d rounds of requests of about %.1fs each" % (rounds, per_request)
        self.deadline_s = self.stall_timeout + DEADLINE_SLACK * work
        self._deadline_why = why
        self._deadline_at = _now() + self.deadline_s

    async def _gather(self, coros):
        self._tasks = [asyncio.ensure_future(c) for c in coros]
        try:
            await asyncio.gather(*self._tasks)
        except asyncio.CancelledError:
            if not self.stalled:
                raise

    async def run(self):
        self._deadline_at = None
        self._deadline_why = None
        watchdog = asyncio.ensure_future(self._watch()) if self.stall_timeout else None
        try:
            warm_start = _now()
            if self.warmup:
                await self._gather([self._warm_worker() for _worker in range(min(self.concurrency, self.warmup))])
            self._next = 0
            start = self.start = _now()
            self.warmup_s = start - warm_start
            if not self.stalled:
                self._set_deadline()
                deadline = start + self.duration_s if self.duration_s else None
                lag = asyncio.ensure_future(self.lag.watch())
                try:
                    await self._gather([self._worker(deadline) for _worker in range(self.concurrency)])
                finally:
                    lag.cancel()
        finally:
            if watchdog is not None:
                watchdog.cancel()
        end = max([r.t_end for r in self.records] or [_now()])
        return end - start


class BenchmarkBusy(BenchError):
    """Another benchmark of the same server holds the lock."""


class ServerLock:
    """One benchmark per server at a time, on the host that runs the benchmark.

    An flock on ``<lock dir>/llmops-sglang-bench-<host>_<port>.lock``: the kernel releases it
    when its holder exits, however it exits (a benchmark left running by a SIGKILLed
    ansible-playbook keeps it until it ends). The file holds the holder's PID, so that a
    caller may stop a leftover (``leftover="stop"``) instead of waiting for it.
    """

    def __init__(self, base_url, lock_dir=None):
        _scheme, host, port, _prefix = parse_base_url(base_url)
        name = "llmops-sglang-bench-%s_%d.lock" % (re.sub(r"[^A-Za-z0-9_.-]", "_", host), port)
        if lock_dir is None:
            lock_dir = "/run/lock" if os.access("/run/lock", os.W_OK) else tempfile.gettempdir()
        self.path = os.path.join(lock_dir, name)
        self.fd = None

    def _try(self):
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except (IOError, OSError) as exc:
            if exc.errno in (errno.EAGAIN, errno.EACCES):
                return False
            raise

    def holder(self):
        try:
            with open(self.path) as fh:
                return int(fh.read().strip() or 0) or None
        except (IOError, OSError, ValueError):
            return None

    def acquire(self, timeout, leftover="wait", log=None):
        """Take the lock within ``timeout`` seconds; with leftover=stop, SIGTERM the holder first.

        Returns the PID that was stopped or waited for (None if the lock was free).
        """
        if fcntl is None:
            return None
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        other = None
        if not self._try():
            other = self.holder()
            if log:
                log("another benchmark of this server (pid %s) is running: %s it" % (other, "stopping" if leftover == "stop" else "waiting for"))
            if leftover == "stop" and other and other != os.getpid():
                try:
                    os.kill(other, signal.SIGTERM)
                except OSError:
                    pass
            deadline = time.time() + timeout
            while not self._try():
                if time.time() > deadline:
                    os.close(self.fd)
                    self.fd = None
                    raise BenchmarkBusy("another benchmark of this server (pid %s, lock %s) still runs after %ss; "
                                        "two at once would measure each other" % (other, self.path, timeout))
                time.sleep(0.2)
        os.ftruncate(self.fd, 0)
        os.write(self.fd, ("%d\n" % os.getpid()).encode("ascii"))
        return other

    def release(self):
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
