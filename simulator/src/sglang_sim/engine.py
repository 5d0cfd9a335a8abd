"""The simulated scheduler: continuous batching on one asyncio event loop.

At most ``max_running_requests`` requests decode together; the rest wait. A loop iteration
is either a prefill batch (new requests, limited by --chunked-prefill-size tokens; each gets
its first token) or one decode step that advances every running request by its accepted
tokens (1 .. steps + 1, drawn from the acceptance model) and hands each request one chunk.
Steps are scheduled on an absolute clock (step k is due at t0 + the sum of the step times
before it), so event-loop lag delays a step but never accumulates into the rate.
"""

import asyncio
import hashlib
import math
import random
import time

from sglang_sim import adaptive, models
from sglang_sim.vocab import FALLBACK_WORDS

# Token text: one word per token (see vocab.py: the tokenizer's single-token words, or a
# fallback list of common words), plain lowercase ASCII so chunks need no JSON escaping.
FALLBACK_SPACED = [" " + w for w in FALLBACK_WORDS]
EOS_TOKEN_ID = 248046  # reported in finish_reason.matched for a natural stop


class Request(object):
    """One generation request as the scheduler sees it."""

    __slots__ = (
        "rid", "prompt_tokens", "cached_tokens", "max_new_tokens", "target_len", "greedy", "ignore_eos",
        "sink", "completion_tokens", "verify_ct", "accepted_drafts", "proposed_drafts", "acc_state", "word_pos", "text",
        "t_arrival", "t_first", "t_last", "finished", "finish_reason", "aborted", "done", "stream_offset", "words",
    )

    def __init__(self, rid, prompt_tokens, max_new_tokens, greedy, ignore_eos, sink, target_len, word_pos,
                 words=FALLBACK_SPACED):
        self.rid = rid
        self.prompt_tokens = prompt_tokens
        self.cached_tokens = 0
        self.max_new_tokens = max_new_tokens
        self.target_len = target_len
        self.greedy = greedy
        self.ignore_eos = ignore_eos
        self.sink = sink  # callable(request, new_text, finished) -> None
        self.completion_tokens = 0
        self.verify_ct = 0
        self.accepted_drafts = 0
        self.proposed_drafts = 0  # verify passes x (draft tokens - 1) of the step counts it ran with
        self.acc_state = 0.0
        self.word_pos = word_pos
        self.text = ""
        self.t_arrival = time.time()
        self.t_first = None
        self.t_last = None
        self.finished = False
        self.finish_reason = None
        self.aborted = False
        self.done = None
        self.stream_offset = 0
        self.words = words  # " word" strings, one token each

    def emit(self, ntokens, now):
        """Append ``ntokens`` tokens; returns the new text."""
        pos = self.word_pos
        vocab = self.words
        size = len(vocab)
        if ntokens == 1:
            piece = vocab[pos % size]
        else:
            piece = "".join([vocab[(pos + i) % size] for i in range(ntokens)])
        self.word_pos = pos + ntokens
        self.completion_tokens += ntokens
        self.text += piece
        if self.t_first is None:
            self.t_first = now
        self.t_last = now
        if self.completion_tokens >= self.target_len:
            self.finished = True
            if self.completion_tokens >= self.max_new_tokens:
                self.finish_reason = {"type": "length", "length": self.max_new_tokens}
            else:
                self.finish_reason = {"type": "stop", "matched": EOS_TOKEN_ID}
        return piece


class Stats(object):
    """Counters for /metrics and internal_states."""

    TTFT_BUCKETS = (0.1, 0.25, 0.5, 0.75, 1.0, 2.0, 4.0, 6.0, 8.0, 10.0, 20.0, 40.0, 60.0, 80.0, 120.0, 160.0)
    ITL_BUCKETS = (0.002, 0.004, 0.006, 0.008, 0.01, 0.015, 0.02, 0.025, 0.03, 0.035, 0.04, 0.06, 0.08,
                   0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 2.0, 4.0, 6.0, 8.0)
    E2E_BUCKETS = (0.1, 0.25, 0.5, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100, 150, 200, 300, 400, 600, 800, 1200)

    def __init__(self):
        self.prompt_tokens_total = 0
        self.generation_tokens_total = 0
        self.requests_total = 0
        self.verify_ct_total = 0
        self.accepted_total = 0  # tokens emitted by decode steps (accept length numerator)
        self.cached_tokens_total = 0
        self.avg_spec_accept_length = None
        self.last_gen_throughput = 0.0
        self.spec_accept_rate = 0.0
        self.hist = {
            "time_to_first_token_seconds": (self.TTFT_BUCKETS, [0] * (len(self.TTFT_BUCKETS) + 1), [0.0]),
            "inter_token_latency_seconds": (self.ITL_BUCKETS, [0] * (len(self.ITL_BUCKETS) + 1), [0.0]),
            "e2e_request_latency_seconds": (self.E2E_BUCKETS, [0] * (len(self.E2E_BUCKETS) + 1), [0.0]),
        }

    def observe(self, name, value, count=1):
        buckets, counts, total = self.hist[name]
        idx = 0
        while idx < len(buckets) and value > buckets[idx]:
            idx += 1
        counts[idx] += count
        total[0] += value * count


class Engine(object):
    """Continuous-batching scheduler driven by the profile's models."""

    def __init__(self, profile, cfg, plan, seed=None, log=None, words=None):
        self.words = [" " + w for w in words] if words else FALLBACK_SPACED
        self.profile = profile
        self.cfg = cfg
        self.plan = plan
        self.mrr = plan["max_running_requests"]
        self.max_total_num_tokens = plan["max_total_num_tokens"]
        self.rng = random.Random(seed)
        self.log = log or (lambda msg: None)
        self.waiting = []
        self.running = []
        self.wake = asyncio.Event()
        self.stats = Stats()
        self.samplers = {
            True: models.AcceptSampler(profile, cfg, True, self.rng),
            False: models.AcceptSampler(profile, cfg, False, self.rng),
        }
        # --speculative-adaptive (SGLang 0.5.23 AdaptiveController): the step count of each decode
        # batch is its entry's current one; every candidate has its runtime state (sampler, step time).
        self.policy = None
        self.active_steps = cfg.steps
        self.adaptive_switches = 0
        self._state_cfgs = {}
        self._state_samplers = {}
        if cfg.adaptive is not None and cfg.spec:
            self.policy = adaptive.Policy(cfg.adaptive, plan.get("graph_bs"), log=self.log)
            for steps in cfg.adaptive.candidates:
                state_cfg = self._state_cfgs[steps] = cfg.with_steps(steps)
                self._state_samplers[steps] = {
                    True: models.AcceptSampler(profile, state_cfg, True, self.rng),
                    False: models.AcceptSampler(profile, state_cfg, False, self.rng),
                }
            self.samplers = self._state_samplers[self.active_steps]
        self.jitter = profile["timing"]["jitter"]
        self.prefix_cache = {}
        self.radix = True
        self.decode_steps = 0
        self.stopping = False
        self.next_rid = 0
        self._interval_tokens = 0
        self._interval_start = time.monotonic()
        self._interval_verify = 0
        self._interval_accepted = 0
        self._step_table = {}
        # The profile's crash under load (faults): the decode batch size at which this configuration's
        # scheduler fails, or None. on_crash(running) is startup's: SGLang's crash lines, then SIGQUIT.
        faults = profile.get("faults") or {}
        crash_at = faults.get("crash_at_running_requests") or 0
        self.crash_at = (crash_at if crash_at > 0 and cfg.spec and cfg.steps >= faults.get("crash_min_steps", 0)
                         else None)
        self.on_crash = None

    # -- requests -------------------------------------------------------------------------
    def new_rid(self):
        self.next_rid += 1
        return "%032x" % self.rng.getrandbits(128)

    def natural_length(self):
        model = self.profile["model"]
        if model["natural_output_sigma"] == 0:
            return max(1, int(round(model["natural_output_median"])))
        draw = self.rng.lognormvariate(math.log(model["natural_output_median"]), model["natural_output_sigma"])
        return max(1, int(round(draw)))

    def submit(self, prompt_key, prompt_tokens, max_new_tokens, temperature, ignore_eos, sink):
        target = max_new_tokens if ignore_eos else min(max_new_tokens, self.natural_length())
        req = Request(self.new_rid(), prompt_tokens, max_new_tokens, temperature < 1e-5, ignore_eos, sink,
                      target, self.rng.randrange(len(self.words)), self.words)
        req.done = asyncio.get_running_loop().create_future()
        if self.radix and prompt_key is not None:
            key = hashlib.blake2b(prompt_key.encode("utf-8", "replace"), digest_size=12).digest()
            if key in self.prefix_cache:
                # SGLang keeps at least one token to compute: cached = prompt - 1
                req.cached_tokens = max(0, prompt_tokens - 1)
            elif len(self.prefix_cache) < 100000:
                self.prefix_cache[key] = prompt_tokens
        self.stats.requests_total += 1
        self.stats.prompt_tokens_total += prompt_tokens
        self.stats.cached_tokens_total += req.cached_tokens
        if max_new_tokens == 0:
            req.finished = True
            req.finish_reason = {"type": "length", "length": 0}
            req.t_first = req.t_last = time.time()
            self._finish(req)
            return req
        self.waiting.append(req)
        self.wake.set()
        return req

    def abort(self, req):
        req.aborted = True

    def flush_cache(self):
        if self.running or self.waiting:
            return False
        self.prefix_cache.clear()
        return True

    def _finish(self, req):
        st = self.stats
        if req.t_first is not None:
            st.observe("time_to_first_token_seconds", req.t_first - req.t_arrival)
            st.observe("e2e_request_latency_seconds", req.t_last - req.t_arrival)
            if req.completion_tokens > 1:
                st.observe("inter_token_latency_seconds", (req.t_last - req.t_first) / (req.completion_tokens - 1),
                           req.completion_tokens - 1)
        if not req.done.done():
            req.done.set_result(req)

    # -- the loop -------------------------------------------------------------------------
    def _step_time(self, batch):
        key = (self.active_steps, batch)
        base = self._step_table.get(key)
        if base is None:
            cfg = self._state_cfgs.get(self.active_steps, self.cfg)
            base = self._step_table[key] = models.step_time_s(self.profile, cfg, batch)
        if self.jitter:
            return base * max(0.5, self.rng.gauss(1.0, self.jitter))
        return base

    async def run(self):
        loop = asyncio.get_running_loop()
        due = None
        while not self.stopping:
            if not self.running and not self.waiting:
                self.wake.clear()
                await self.wake.wait()
                due = None
                continue
            now = loop.time()
            if due is None:
                due = now
            if self.waiting and len(self.running) < self.mrr:
                due += self._prefill(loop)
                await asyncio.sleep(max(0.0, due - loop.time()))
                self._prefill_done(time.time())
                continue
            batch = len(self.running)
            if self.crash_at is not None and batch >= self.crash_at and self.on_crash is not None:
                self.stopping = True
                self.on_crash(batch)
                return
            if self.policy is not None:
                # 0.5.23 EAGLEWorkerV2.forward_batch_generation: activate_step_by_batch before drafting
                self._activate(self.policy.steps_for_batch(batch))
            due += self._step_time(batch)
            await asyncio.sleep(max(0.0, due - loop.time()))
            self._decode_step(time.time())

    def _prefill(self, loop):
        free = self.mrr - len(self.running)
        budget = self.cfg.chunked_prefill_size if self.cfg.chunked_prefill_size and self.cfg.chunked_prefill_size > 0 else 1 << 62
        batch = []
        tokens = 0
        while self.waiting and len(batch) < free:
            req = self.waiting[0]
            new = req.prompt_tokens - req.cached_tokens
            if batch and tokens + new > budget:
                break
            self.waiting.pop(0)
            if req.aborted:
                continue
            batch.append(req)
            tokens += new
        self._admitting = batch
        cached = sum(r.cached_tokens for r in batch)
        values = (len(batch), tokens, cached, self.token_usage(), len(self.running), len(self.waiting))
        self.log("Prefill batch. #new-seq: %d, #new-token: %d, #cached-token: %d, token usage: %.2f, "
                 "#running-req: %d, #queue-req: %d, " % values)
        return models.prefill_time_s(self.profile, tokens) if batch else 0.0

    def _prefill_done(self, now):
        for req in self._admitting:
            if req.aborted:
                continue
            piece = req.emit(1, now)
            self.stats.generation_tokens_total += 1
            if req.finished:
                req.sink(req, piece, True)
                self._finish(req)
            else:
                req.sink(req, piece, False)
                self.running.append(req)
        self._admitting = []

    def token_usage(self):
        used = sum(r.prompt_tokens + r.completion_tokens for r in self.running)
        return used / float(self.max_total_num_tokens) if self.max_total_num_tokens else 0.0

    def _activate(self, steps):
        """0.5.23 AdaptiveController._activate -> EAGLEWorkerV2.apply_runtime_state (its log line)."""
        if steps == self.active_steps:
            return
        self.log("Switch adaptive runtime state: steps %d -> %d, draft_tokens %d -> %d"
                 % (self.active_steps, steps, self.active_steps + 1, steps + 1))
        self.active_steps = steps
        self.adaptive_switches += 1
        self.samplers = self._state_samplers[steps]

    def _decode_step(self, now):
        spec = self.cfg.spec
        keep = []
        emitted = 0
        samplers = self.samplers
        steps = self.active_steps
        correct = [] if self.policy is not None else None
        for req in self.running:
            if req.aborted:
                continue
            if spec:
                # steps 0 (adaptive): a one-token verify pass, no drafts (0.5.23 _build_trivial_verify_input)
                n, req.acc_state = samplers[req.greedy].draw(req.acc_state)
                req.verify_ct += 1
                req.accepted_drafts += n - 1
                req.proposed_drafts += steps
                if correct is not None:
                    correct.append(n - 1)
                self._interval_verify += 1
                self._interval_accepted += n
            else:
                n = 1
            left = req.target_len - req.completion_tokens
            if n > left:
                n = left
            piece = req.emit(n, now)
            emitted += n
            if req.finished:
                req.sink(req, piece, True)
                self._finish(req)
            else:
                req.sink(req, piece, False)
                keep.append(req)
        if correct:
            # 0.5.23 batch_result_processor -> on_verify_complete_cpu(num_correct_drafts_per_req, len(batch.reqs))
            new_steps = self.policy.on_verify_complete(correct, len(correct))
            if new_steps is not None:
                self._activate(new_steps)
        self.running = keep
        self.stats.generation_tokens_total += emitted
        self._interval_tokens += emitted
        self.decode_steps += 1
        if self.decode_steps % 40 == 0:
            self._log_decode()

    def _log_decode(self):
        # SGLang updates these every decode_log_interval (40) decode steps
        now = time.monotonic()
        elapsed = max(1e-9, now - self._interval_start)
        self.stats.last_gen_throughput = self._interval_tokens / elapsed
        self._interval_tokens = 0
        self._interval_start = now
        msg = "Decode batch. #running-req: %d, #token: %d, token usage: %.2f, " % (
            len(self.running), sum(r.prompt_tokens + r.completion_tokens for r in self.running), self.token_usage())
        if self.cfg.spec:
            self.stats.verify_ct_total += self._interval_verify
            self.stats.accepted_total += self._interval_accepted
            interval_accept = self._interval_accepted / float(self._interval_verify) if self._interval_verify else 0.0
            self._interval_verify = 0
            self._interval_accepted = 0
            if self.stats.verify_ct_total:
                self.stats.avg_spec_accept_length = self.stats.accepted_total / float(self.stats.verify_ct_total)
                self.stats.spec_accept_rate = (self.stats.avg_spec_accept_length - 1) / float(max(1, self.active_steps))
            msg += "accept len: %.2f, accept rate: %.2f, " % (interval_accept, self.stats.spec_accept_rate)
        msg += "cuda graph: %s, gen throughput (token/s): %.2f, #queue-req: %d, " % (
            len(self.running) <= max(self.plan.get("capture_bs") or [0]), self.stats.last_gen_throughput, len(self.waiting))
        self.log(msg)
