"""The simulator's three models: GPU memory, decode-step time and draft acceptance.

Everything the simulator does with numbers comes from here, and ``predict`` computes what
these models say a benchmark should measure, so tests and benchmarks/sim_fidelity.py compare
the running server against the same formulas. Nothing here knows any particular machine:
all constants come from the profile.

Memory model (per GPU, GiB), after SGLang 0.5.x ``ModelRunner.profile_max_num_token`` and
``handle_max_mamba_cache`` (hybrid GDN / mamba models):

1. ``avail0 = gpu_memory - runtime_overhead``              ("Load weight begin. avail mem=")
2. ``avail1 = avail0 - (weights + draft_weights) / tp``     ("Load weight end.")
   (negative: ``torch.OutOfMemoryError`` while loading weights)
3. ``rest = avail1 - gpu_memory * (1 - mem_fraction_static)``   -- SGLang's formula
4. speculative buffers sized for the largest captured batch come off ``rest`` first:
   ``spec_buffer_mib_per_graph_token * cuda_graph_max_bs * draft_tokens``  (simulator model)
5. the recurrent-state ("mamba") pool takes ``ratio / (1 + ratio)`` of the rest (SGLang's
   ``mamba_full_memory_ratio``); one request needs ``state_mib_per_request +
   state_mib_per_draft_token * draft_tokens`` (SGLang keeps per-draft-token intermediate
   states for speculative verification); the pool's slot count caps max_running_requests.
6. the KV pool gets the remainder: ``#tokens = rest / (kv_bytes_per_token * dtype / tp)``;
   ``#tokens <= 0`` is SGLang's ``RuntimeError: Not enough memory``.
7. CUDA graphs are captured for batch sizes up to ``min(cuda_graph_max_bs, max_running_requests)``
   and need ``cuda_graph_base_mib + cuda_graph_mib_per_graph_token * bs * draft_tokens`` out of
   the memory left outside the static pool minus ``activation_reserve``; otherwise
   SGLang's ``Capture cuda graph failed``.

Step-time model (ms): ``decode_base + draft_step * steps + verify_token * batch * draft_tokens
+ request * batch``: the draft head runs ``steps`` sequential passes, the target verifies
``draft_tokens`` per request in one pass whose cost grows with the tokens in the batch.

Acceptance model: the profile lists the conditional probability that draft position i is
accepted given that positions < i were (greedy = temperature 0, sampled = otherwise); past the
list each further position multiplies the last value by ``tail_decay``. A decode step emits
1 (the verified token) + the accepted prefix, so 1 .. steps + 1 tokens.
"""

import bisect
import math

from sglang_sim import adaptive as adaptive_mod

GIB = float(1 << 30)

# bytes of one KV element relative to 16-bit, for SGLang 0.5.23's --kv-cache-dtype choices (the
# parser takes them from the recorded contract). The block-scaled formats carry one 8-bit scale per
# block (mxfp8: 32 elements, nvfp4 and fp4_mx_block16: 16): a simulator model, not a measurement.
KV_DTYPE_FACTOR = {
    "auto": 1.0,
    "bf16": 1.0,
    "bfloat16": 1.0,
    "fp8_e5m2": 0.5,
    "fp8_e4m3": 0.5,
    "mxfp8": (8 + 8 / 32.0) / 16,
    "nvfp4": (4 + 8 / 16.0) / 16,
    "fp4_mx_block16": (4 + 8 / 16.0) / 16,
}
KV_CACHE_DTYPES = tuple(KV_DTYPE_FACTOR)
# The torch dtype 0.5.23 logs for the KV pool of each (mem_cache/kv_cache_dtype.py; auto: the model's
# dtype, bf16 for the profiles' models).
TORCH_KV_DTYPE = {
    "auto": "torch.bfloat16", "bf16": "torch.bfloat16", "bfloat16": "torch.bfloat16",
    "fp8_e4m3": "torch.float8_e4m3fn", "fp8_e5m2": "torch.float8_e5m2", "mxfp8": "torch.float8_e4m3fn",
    "nvfp4": "torch.float4_e2m1fn_x2", "fp4_mx_block16": "torch.float4_e2m1fn_x2",
}


class SimConfig(object):
    """The resolved server arguments the models need (after SGLang's defaulting rules)."""

    def __init__(self, tp_size=1, dp_size=1, kv_cache_dtype="auto", mem_fraction_static=None,
                 max_running_requests=None, cuda_graph_max_bs=None, context_length=None,
                 chunked_prefill_size=None, speculative_algorithm=None, speculative_num_steps=None,
                 speculative_eagle_topk=None, speculative_num_draft_tokens=None, adaptive=None):
        self.tp_size = tp_size
        self.dp_size = dp_size
        self.kv_cache_dtype = kv_cache_dtype
        self.mem_fraction_static = mem_fraction_static
        self.max_running_requests = max_running_requests
        self.cuda_graph_max_bs = cuda_graph_max_bs
        self.context_length = context_length
        self.chunked_prefill_size = chunked_prefill_size
        self.speculative_algorithm = speculative_algorithm
        self.speculative_num_steps = speculative_num_steps
        self.speculative_eagle_topk = speculative_eagle_topk
        self.speculative_num_draft_tokens = speculative_num_draft_tokens
        # an adaptive.Schedule with --speculative-adaptive (SGLang 0.5.23), else None
        self.adaptive = adaptive

    @property
    def spec(self):
        if self.adaptive is not None:
            return bool(self.speculative_algorithm)
        return bool(self.speculative_algorithm) and bool(self.speculative_num_steps)

    @property
    def steps(self):
        return (self.speculative_num_steps or 0) if self.spec else 0

    @property
    def topk(self):
        return (self.speculative_eagle_topk or 1) if self.spec else 1

    @property
    def draft_tokens(self):
        """Tokens verified per request per decode step (1 without speculative decoding)."""
        if not self.spec:
            return 1
        return self.speculative_num_draft_tokens or (self.speculative_num_steps + 1)

    @property
    def max_draft_tokens(self):
        """The draft tokens the buffers are sized for: with adaptive, the largest candidate's + 1
        (0.5.23 spec_info.resolve_max_speculative_num_draft_tokens)."""
        if self.adaptive is not None and self.spec:
            return max(self.adaptive.candidates) + 1
        return self.draft_tokens

    def with_steps(self, steps):
        """A static copy running ``steps`` draft steps (topk 1; 0 = no drafting, one token per
        step and no draft pass), for the step-time and acceptance models of an adaptive state."""
        cfg = SimConfig(tp_size=self.tp_size, dp_size=self.dp_size, kv_cache_dtype=self.kv_cache_dtype,
                        mem_fraction_static=self.mem_fraction_static, max_running_requests=self.max_running_requests,
                        cuda_graph_max_bs=self.cuda_graph_max_bs, context_length=self.context_length,
                        chunked_prefill_size=self.chunked_prefill_size, speculative_algorithm=self.speculative_algorithm,
                        speculative_num_steps=steps, speculative_eagle_topk=self.speculative_eagle_topk,
                        speculative_num_draft_tokens=steps + 1 if steps else None)
        return cfg

    @classmethod
    def for_steps(cls, profile, steps, **kwargs):
        """The seed's launch line with ``steps`` draft steps (topk 1, MTP), for predictions."""
        cfg = cls(tp_size=profile["hardware"]["gpu_count"], **kwargs)
        if steps:
            cfg._seed_speculative(steps)
        return cfg

    def _seed_speculative(self, steps):
        """The seed's MTP flags (EAGLE, topk 1, draft tokens steps + 1; max running 48 unless set)."""
        self.speculative_algorithm = "EAGLE"
        self.speculative_num_steps = steps
        self.speculative_eagle_topk = 1
        self.speculative_num_draft_tokens = steps + 1
        if self.max_running_requests is None:
            self.max_running_requests = 48

    @classmethod
    def for_schedule(cls, profile, schedule, **kwargs):
        """The seed's launch line with --speculative-adaptive and ``schedule`` (an adaptive.Schedule
        or a mapping such as {"1": [4], "16": [3]}), for predictions."""
        if not isinstance(schedule, adaptive_mod.Schedule):
            schedule = adaptive_mod.Schedule.from_mapping(schedule)
        steps = schedule.initial_steps
        cfg = cls(tp_size=profile["hardware"]["gpu_count"], adaptive=schedule, **kwargs)
        cfg._seed_speculative(steps)
        return cfg


def capture_batch_sizes(max_bs):
    """Batch sizes captured as CUDA graphs (SGLang 0.5.x: 1, 2, 4, 8, then every 8)."""
    sizes = [bs for bs in (1, 2, 4, 8) if bs <= max_bs]
    sizes += list(range(16, max_bs + 1, 8))
    if not sizes or sizes[-1] != max_bs:
        sizes.append(max_bs)
    return sizes


def memory_plan(profile, cfg):
    """Run the memory model. Returns a dict; ``error`` is None or a failure key.

    Failure keys match SGLang's startup failures: ``cuda_out_of_memory`` (weights do not fit),
    ``not_enough_memory`` (no KV room), ``cuda_graph_capture_failed``.
    """
    hw, model, mem = profile["hardware"], profile["model"], profile["memory"]
    tp = max(1, cfg.tp_size)
    total = hw["gpu_memory_gib"]
    frac = cfg.mem_fraction_static if cfg.mem_fraction_static is not None else mem["default_mem_fraction_static"]
    graph_max_bs = cfg.cuda_graph_max_bs if cfg.cuda_graph_max_bs is not None else mem["default_cuda_graph_max_bs"]
    dt = cfg.draft_tokens
    # buffers and per-request state are sized for the largest draft-token count (adaptive: the
    # largest candidate's, SGLang 0.5.23 resolve_max_speculative_num_draft_tokens)
    dt_max = cfg.max_draft_tokens
    plan = {
        "error": None,
        "total_gib": total,
        "mem_fraction_static": frac,
        "cuda_graph_max_bs": graph_max_bs,
        "draft_tokens": dt,
        "max_draft_tokens": dt_max,
    }
    avail0 = total - hw["runtime_overhead_gib"]
    weights = (model["weights_gib"] + (model["draft_weights_gib"] if cfg.spec else 0.0)) / tp
    plan["avail_before_weights_gib"] = avail0
    plan["weights_gib"] = weights
    plan["avail_after_weights_gib"] = avail0 - weights
    if avail0 - weights <= 0:
        plan["error"] = "cuda_out_of_memory"
        plan["oom_tried_gib"] = min(weights, 2.0)
        return plan
    rest = (avail0 - weights) - total * (1.0 - frac)
    spec_buffers = 0.0
    if cfg.spec:
        spec_buffers = mem["spec_buffer_mib_per_graph_token"] * graph_max_bs * dt_max / 1024.0
    plan["spec_buffers_gib"] = spec_buffers
    rest -= spec_buffers
    plan["pool_gib"] = rest

    # recurrent-state pool (hybrid models); 0 MiB per request means a pure attention model
    state_per_req_mib = (model["state_mib_per_request"] + (model["state_mib_per_draft_token"] * dt_max if cfg.spec else 0.0)) / tp
    mamba_slots = None
    mamba_gib = 0.0
    if state_per_req_mib > 0 and rest > 0:
        ratio = model["mamba_full_memory_ratio"]
        mamba_budget = rest * ratio / (1.0 + ratio)
        mamba_slots = int(mamba_budget * 1024.0 // state_per_req_mib)
        mamba_gib = mamba_slots * state_per_req_mib / 1024.0
    elif state_per_req_mib > 0:
        mamba_slots = 0
    rest -= mamba_gib
    plan["mamba_slots"] = mamba_slots
    plan["mamba_gib"] = mamba_gib
    plan["state_mib_per_request"] = state_per_req_mib

    cell = model["kv_bytes_per_token"] * KV_DTYPE_FACTOR.get(cfg.kv_cache_dtype, 1.0) / tp
    kv_tokens = int(rest * GIB // cell) if rest > 0 else 0
    plan["kv_bytes_per_token_per_gpu"] = cell
    plan["max_total_num_tokens"] = kv_tokens
    plan["kv_gib"] = kv_tokens * cell / GIB
    if kv_tokens <= 0 or (mamba_slots is not None and mamba_slots <= 0):
        plan["error"] = "not_enough_memory"
        return plan

    context_len = cfg.context_length or model["context_length"]
    if cfg.max_running_requests is not None:
        requested = cfg.max_running_requests
    else:
        # SGLang 0.5.x ModelRunner.init_memory_pool default for max_num_reqs
        requested = min(max(int(kv_tokens / context_len * 512), 2048), 4096)
    limits = [requested, max(1, kv_tokens // 2)]
    if mamba_slots is not None:
        limits.append(mamba_slots)
    mrr = max(1, min(limits))
    plan["max_running_requests"] = mrr

    capture_max = max(1, min(graph_max_bs, mrr))
    plan["capture_bs"] = capture_batch_sizes(capture_max)
    graph_gib = (mem["cuda_graph_base_mib"] + mem["cuda_graph_mib_per_graph_token"] * capture_max * dt) / 1024.0
    plan["initial_graph_gib"] = graph_gib
    plan["adaptive_states"] = []
    if cfg.adaptive is not None and cfg.spec:
        # SGLang 0.5.23 AdaptiveController.init_states: one runtime state (draft and target-verify
        # CUDA graphs) per further candidate, captured only for the batch sizes whose entry can
        # reach it (cuda_graph_bs_for_step over the configured decode batch sizes, then capped at
        # max_running_requests as every capture is); a step count no batch size reaches gets none.
        routing_bs = capture_batch_sizes(graph_max_bs)
        plan["graph_bs"] = routing_bs
        for steps in cfg.adaptive.candidates:
            if steps == cfg.steps:
                continue
            reach = cfg.adaptive.graph_bs_for_step(steps, routing_bs)
            captured = sorted(set(min(bs, capture_max) for bs in reach))
            gib = ((mem["cuda_graph_base_mib"] + mem["cuda_graph_mib_per_graph_token"] * max(captured) * (steps + 1)) / 1024.0
                   if captured else 0.0)
            plan["adaptive_states"].append({"steps": steps, "draft_tokens": steps + 1, "capture_bs": captured, "graph_gib": gib,
                                            "capture_share": len(captured) / float(len(plan["capture_bs"]))})
            graph_gib += gib
    free_outside = total * (1.0 - frac) - hw["runtime_overhead_gib"] - mem["activation_reserve_gib"]
    plan["cuda_graph_gib"] = graph_gib
    plan["graph_room_gib"] = free_outside
    plan["avail_after_pools_gib"] = total * (1.0 - frac) - hw["runtime_overhead_gib"]
    plan["avail_after_graph_gib"] = plan["avail_after_pools_gib"] - graph_gib
    if graph_gib > free_outside:
        plan["error"] = "cuda_graph_capture_failed"
        # which capture ran out: None = the startup graphs, i = adaptive_states[i]
        plan["graph_failed_state"] = None
        used = plan["initial_graph_gib"]
        if used <= free_outside:
            for i, state in enumerate(plan["adaptive_states"]):
                used += state["graph_gib"]
                if used > free_outside:
                    plan["graph_failed_state"] = i
                    break
    return plan


def position_probs(profile, cfg, greedy):
    """Conditional acceptance probability of each draft position 1..steps."""
    acc = profile["acceptance"]
    table = acc["greedy"] if greedy else acc["sampled"]
    probs = []
    for i in range(cfg.steps):
        if i < len(table):
            p = table[i]
        else:
            p = table[-1] * acc["tail_decay"] ** (i - len(table) + 1)
        if cfg.topk > 1:
            # a tree with topk candidates per position misses only if all candidates miss
            # (simulator approximation, independent candidates)
            p = 1.0 - (1.0 - p) ** cfg.topk
        probs.append(p)
    return probs


def accept_distribution(profile, cfg, greedy):
    """P(step emits n tokens) for n = 1 .. min(steps, draft_tokens - 1) + 1."""
    probs = position_probs(profile, cfg, greedy)
    max_extra = min(len(probs), max(0, cfg.draft_tokens - 1))
    dist = []
    reach = 1.0
    for i in range(max_extra):
        dist.append(reach * (1.0 - probs[i]))
        reach *= probs[i]
    dist.append(reach)
    return dist


def expected_accept_length(profile, cfg, greedy=True):
    dist = accept_distribution(profile, cfg, greedy)
    return sum((n + 1) * p for n, p in enumerate(dist))


class AcceptSampler(object):
    """Draws tokens per decode step from the acceptance distribution (one RNG call)."""

    def __init__(self, profile, cfg, greedy, rng):
        dist = accept_distribution(profile, cfg, greedy)
        self.cdf = []
        total = 0.0
        for p in dist:
            total += p
            self.cdf.append(total)
        self.cdf[-1] = 1.0 + 1e-12
        self.mean = sum((n + 1) * p for n, p in enumerate(dist))
        self.rng = rng
        self.deterministic = profile["acceptance"]["deterministic"]

    def draw(self, state):
        """Tokens for one step. ``state`` is the request's running accumulator (deterministic mode)."""
        if self.deterministic:
            # exact long-run mean with no randomness: emit floor(acc + mean) - floor(acc)
            new = state + self.mean
            return int(new) - int(state), new
        return bisect.bisect_right(self.cdf, self.rng.random()) + 1, state


def step_time_s(profile, cfg, batch):
    """Decode step time (seconds) for ``batch`` running requests, without jitter."""
    t = profile["timing"]
    ms = (t["decode_base_ms"] + t["draft_step_ms"] * cfg.steps
          + t["verify_token_ms"] * batch * cfg.draft_tokens + t["request_ms"] * batch)
    return ms / 1000.0


def prefill_time_s(profile, tokens):
    t = profile["timing"]
    return (t["prefill_base_ms"] + t["prefill_token_ms"] * tokens) / 1000.0


def predict(profile, cfg, concurrency, input_len=128, output_len=512, greedy=True, ignore_eos=True):
    """What the models predict a closed-loop benchmark at ``concurrency`` measures.

    Per-request tok/s is the decode rate as SGLang's bench_serving reports it, 1 / TPOT =
    (output tokens - 1) / (e2e latency - TTFT). Aggregate tok/s is all output tokens over the
    wall time, with requests in lock-step (fixed lengths): each round is one prefill batch of
    the running requests, then the decode steps of the longest. The ``*_staggered`` values are
    the other bound, requests completely out of step (each prefill stalls the batch alone);
    with random acceptance a benchmark lands between the two, with the deterministic profile on
    the lock-step values.
    """
    plan = memory_plan(profile, cfg)
    if plan["error"]:
        return {"error": plan["error"], "concurrency": concurrency, "memory": plan}
    running = max(1, min(concurrency, plan["max_running_requests"]))
    adaptive_info = None
    if cfg.adaptive is not None and cfg.spec:
        accept, step, adaptive_info = adaptive_rates(profile, cfg, plan, running, greedy)
    else:
        accept = expected_accept_length(profile, cfg, greedy)
        step = step_time_s(profile, cfg, running)
    # decode steps after the prefill token; the last step is cut at max_new_tokens
    decode_tokens = max(0, output_len - 1)
    steps_needed = decode_tokens / accept + (0.5 * (1.0 - 1.0 / accept) if decode_tokens else 0.0)
    if profile["acceptance"]["deterministic"]:
        steps_needed = math.ceil(decode_tokens / accept) if decode_tokens else 0
    decode_s = steps_needed * step
    per_request = decode_tokens / decode_s if decode_s > 0 else 0.0
    prefill = prefill_time_s(profile, running * input_len)
    round_s = prefill + decode_s
    aggregate = running * output_len / round_s if round_s > 0 else 0.0
    # The other bound: requests fully out of step (random acceptance drifts them apart), so
    # each replacement request is prefilled on its own and stalls the other running requests.
    single = prefill_time_s(profile, input_len)
    decode_staggered = decode_s + (running - 1) * single
    per_request_staggered = decode_tokens / decode_staggered if decode_staggered > 0 else 0.0
    aggregate_staggered = running * output_len / (decode_staggered + single) if decode_staggered + single > 0 else 0.0
    return {
        "error": None,
        "concurrency": concurrency,
        "running": running,
        "max_running_requests": plan["max_running_requests"],
        "max_total_num_tokens": plan["max_total_num_tokens"],
        "accept_length": accept,
        "step_time_s": step,
        "ttft_s": prefill,
        "per_request_tok_s": per_request,
        "aggregate_output_tok_s": aggregate,
        "per_request_tok_s_staggered": per_request_staggered,
        "aggregate_output_tok_s_staggered": aggregate_staggered,
        "adaptive": adaptive_info,
        "memory": plan,
    }


def adaptive_rates(profile, cfg, plan, running, greedy=True):
    """(accept length, step time, details) of an adaptive server with ``running`` requests: the
    batch is padded to the decode CUDA-graph batch sizes and routed to its entry (0.5.23
    AdaptiveSpeculativeParams._route); the entry's EMA settles where each step count's expected
    accepted drafts put it (adaptive.steady_steps; a cycle is averaged over its step counts, each
    held for update_interval batches)."""
    schedule = cfg.adaptive
    padded = adaptive_mod.pad_to_graph_bs(running, plan.get("graph_bs"))
    key = schedule.key_for(padded)
    cands, knobs = schedule.entries[key]

    def drafts(steps):
        return expected_accept_length(profile, cfg.with_steps(steps), greedy) - 1.0

    settled = adaptive_mod.steady_steps(cands, knobs, schedule.initial_for(key), drafts)
    accepts = [expected_accept_length(profile, cfg.with_steps(s), greedy) for s in settled]
    steps_t = [step_time_s(profile, cfg.with_steps(s), running) for s in settled]
    details = {"padded_batch": padded, "entry": str(key), "steps": settled}
    return sum(accepts) / len(accepts), sum(steps_t) / len(steps_t), details
