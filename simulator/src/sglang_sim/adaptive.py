"""Adaptive speculative decoding (``--speculative-adaptive``) as SGLang 0.5.23 does it.

Mirrors, in SGLang 0.5.23:

- ``srt/speculative/adaptive_spec_params.py``: ``DEFAULT_ADAPTIVE_CONFIG``,
  ``adaptive_unsupported_reason``, ``_load_adaptive_config`` (its errors),
  ``resolve_candidate_steps_from_config``, ``AdaptiveStepSlot`` (the EMA policy) and
  ``AdaptiveSpeculativeParams`` (routing a batch to a slot);
- ``srt/arg_groups/speculative_hook.py``: ``_maybe_disable_adaptive`` (the
  ``speculative_adaptive disabled: ...`` warning) and ``_init_adaptive_speculative_params``
  (topk 1, the default step count, the candidate check, draft tokens = steps + 1);
- ``srt/speculative/adaptive_runtime_state.py``: ``AdaptiveController.init_states`` (one runtime
  state with its CUDA graphs per candidate step count, each captured only for the batch sizes
  that can reach it, ``cuda_graph_bs_for_step``).

Nothing here imports the server: the models (memory, predict) and the engine use it.
"""

import bisect
import json
import math

# SGLang 0.5.23 adaptive_spec_params.DEFAULT_ADAPTIVE_CONFIG (used without --speculative-adaptive-config)
DEFAULT_ADAPTIVE_CONFIG = {
    "1": {"candidate_steps": [1, 3, 5, 7], "up_hysteresis": 0.0, "down_hysteresis": -0.25, "ceiling_coeff": 0},
    "8": {"candidate_steps": [0, 1, 3], "up_hysteresis": 0.0, "down_hysteresis": 0.0, "ceiling_coeff": 0},
    "32": {"candidate_steps": [0, 1], "up_hysteresis": 0.0, "down_hysteresis": 0.0, "ceiling_coeff": 0},
    "64": {"candidate_steps": [0], "up_hysteresis": 0.0, "down_hysteresis": 0.0, "ceiling_coeff": 0},
}

# AdaptiveStepSlot.__init__'s knobs and their defaults (0.5.23)
KNOB_DEFAULTS = {
    "ema_alpha": 0.2,
    "update_interval": 5,
    "warmup_batches": 10,
    "down_hysteresis": -0.25,
    "up_hysteresis": 0.0,
    "ceiling_coeff": 0,
}


def _attn_dp_enabled(args):
    """0.5.23 runtime_context.attn_dp_enabled_of: attn_dp_size > 1; the deprecated
    ``--dp-size N --enable-dp-attention`` becomes attn_dp_size N (parallel_hook)."""
    attn_dp = getattr(args, "attn_dp_size", 1) or 1
    if getattr(args, "enable_dp_attention", False) and attn_dp == 1:
        attn_dp = getattr(args, "dp_size", 1) or 1
    return attn_dp > 1


def unsupported_reason(args):
    """0.5.23 adaptive_unsupported_reason: why adaptive cannot run, or None (same words).

    The platform-worker check (out-of-tree platforms) never applies to the simulated CUDA host.
    """
    algorithm = args.speculative_algorithm
    if algorithm not in ("EAGLE", "EAGLE3"):
        return "speculative_algorithm=%s (only EAGLE/EAGLE3 are supported)" % algorithm
    topk = args.speculative_eagle_topk
    if topk is not None and topk != 1:
        return "speculative_eagle_topk=%s (only topk=1 is supported)" % topk
    if _attn_dp_enabled(args):
        return "attention DP is not supported (adaptive tier decisions are not synchronized across DP ranks)"
    if getattr(args, "enable_multi_layer_eagle", False):
        return "enable_multi_layer_eagle=True is not supported (MultiLayerEagleWorkerV2 does not implement adaptive)"
    if getattr(args, "enable_two_batch_overlap", False):
        return "enable_two_batch_overlap=True is not supported (adaptive state swap would discard the TboAttnBackend wrapper)"
    if getattr(args, "enable_pdmux", False):
        return "enable_pdmux=True is not supported (adaptive state swap does not update decode_attn_backend_group)"
    return None


def disabled_warning(reason):
    """0.5.23 speculative_hook._maybe_disable_adaptive's logger.warning."""
    return "speculative_adaptive disabled: %s. Falling back to static speculative params." % reason


def load_config(path):
    """0.5.23 _load_adaptive_config: (cfg, {bs: entry}). Raises what it raises, unchanged:
    FileNotFoundError (missing file), json.JSONDecodeError (bad JSON), AttributeError (a JSON
    root or an entry that is not an object), ValueError (bad candidate_steps, no BS key).

    Keys that are not all digits (``str.isdigit``) are not batch sizes: they are skipped as
    entries but, as top-level knobs, apply to every entry (``{**cfg, **entry}``)."""
    if path is not None:
        with open(path) as handle:
            cfg = json.load(handle)
    else:
        cfg = DEFAULT_ADAPTIVE_CONFIG
    entries = {}
    for key, entry in cfg.items():
        if not key.isdigit():
            continue
        steps = entry.get("candidate_steps")
        # isinstance(s, int) holds for True/False too, as on 0.5.23
        if not isinstance(steps, list) or not steps or not all(isinstance(s, int) and s >= 0 for s in steps):
            raise ValueError("BS %s: candidate_steps must be a list of non-negative ints, got %r" % (key, steps))
        entries[int(key)] = entry
    if not entries:
        raise ValueError('speculative_adaptive_config must contain at least one integer-string BS key, '
                         'e.g. {"1": {"candidate_steps": [1,3,7]}}. Got keys: %r' % (list(cfg.keys()),))
    return cfg, entries


def candidate_steps(path):
    """0.5.23 resolve_candidate_steps_from_config: the union of every entry's candidates, sorted."""
    _cfg, entries = load_config(path)
    union = set()
    for entry in entries.values():
        union.update(entry["candidate_steps"])
    return sorted(union)


def init_server_args(args):
    """0.5.23 _init_adaptive_speculative_params on the parsed args (after the alias NEXTN -> EAGLE).

    Returns the candidate union. Raises ValueError when --speculative-num-steps is not a candidate."""
    candidates = candidate_steps(args.speculative_adaptive_config)
    if args.speculative_eagle_topk is None:
        args.speculative_eagle_topk = 1
    if args.speculative_num_steps is None:
        args.speculative_num_steps = candidates[len(candidates) // 2]
    if args.speculative_num_steps not in candidates:
        raise ValueError("--speculative-num-steps=%s is not in the adaptive config candidate_steps %s. "
                         "Pass one of those values." % (args.speculative_num_steps, candidates))
    args.speculative_num_draft_tokens = args.speculative_num_steps + 1
    return candidates


class Schedule(object):
    """The parsed adaptive config the models and the engine use: {bs: (candidates, knobs)}."""

    def __init__(self, entries, initial_steps):
        # entries: {bs: merged entry dict}
        self.initial_steps = initial_steps
        self.entries = {}
        for bs in sorted(entries):
            entry = entries[bs]
            knobs = dict((k, entry.get(k, v)) for k, v in KNOB_DEFAULTS.items())
            self.entries[bs] = (sorted(set(entry["candidate_steps"])), knobs)
        self.keys = sorted(self.entries)
        self.candidates = sorted({s for cands, _k in self.entries.values() for s in cands})

    @classmethod
    def from_path(cls, path, initial_steps):
        cfg, entries = load_config(path)
        return cls(dict((bs, dict(cfg, **entry)) for bs, entry in entries.items()), initial_steps)

    @classmethod
    def from_mapping(cls, mapping, initial_steps=None):
        """For predictions: {"1": [4], "16": {"candidate_steps": [3], ...}} (a list is candidate_steps)."""
        cfg = {}
        for key, value in mapping.items():
            cfg[str(key)] = {"candidate_steps": list(value)} if isinstance(value, (list, tuple)) else value
        top = dict((k, v) for k, v in cfg.items() if not k.isdigit())
        merged = dict((int(k), dict(top, **v)) for k, v in cfg.items() if k.isdigit())
        union = sorted({s for e in merged.values() for s in e["candidate_steps"]})
        if initial_steps is None:
            initial_steps = union[len(union) // 2]
        return cls(merged, initial_steps)

    @property
    def max_steps(self):
        return max(self.candidates)

    def key_for(self, padded):
        """0.5.23 AdaptiveSpeculativeParams._find_closest_bs: the largest key not above the
        padded batch size; below the smallest key, the smallest key."""
        idx = bisect.bisect_right(self.keys, padded) - 1
        return self.keys[max(0, idx)]

    def initial_for(self, bs):
        """The step count an entry starts with (0.5.23 AdaptiveStepSlot.__init__): the server's
        --speculative-num-steps when it is one of the entry's candidates, else its middle one."""
        cands = self.entries[bs][0]
        return self.initial_steps if self.initial_steps in cands else cands[len(cands) // 2]

    def graph_bs_for_step(self, step, graph_bs):
        """0.5.23 cuda_graph_bs_for_step: the captured batch sizes whose entry has ``step``."""
        return [v for v in graph_bs if step in self.entries[self.key_for(v)][0]]


def pad_to_graph_bs(batch, graph_bs):
    """0.5.23 AdaptiveSpeculativeParams._pad_to_cuda_graph_bs: the next captured batch size at or
    above ``batch`` (the batch itself above the largest; no graphs: the batch itself)."""
    if not graph_bs:
        return batch
    idx = bisect.bisect_left(graph_bs, batch)
    return graph_bs[idx] if idx < len(graph_bs) else batch


class Slot(object):
    """0.5.23 AdaptiveStepSlot: an EMA of accepted drafts per verify moves between candidates."""

    def __init__(self, candidates, knobs, initial, log=None):
        self.candidate_steps = list(candidates)
        self.ema_alpha = knobs["ema_alpha"]
        self.update_interval = knobs["update_interval"]
        self.warmup_batches = knobs["warmup_batches"]
        self.down_hysteresis = knobs["down_hysteresis"]
        self.up_hysteresis = knobs["up_hysteresis"]
        self.ceiling_coeff = knobs["ceiling_coeff"]
        self.current_steps = initial if initial in self.candidate_steps else self.candidate_steps[len(self.candidate_steps) // 2]
        self.ema_accept_len = float(self.current_steps - 1)
        self.batch_count = 0
        self.switches = 0
        self.log = log or (lambda msg: None)

    def update(self, correct_drafts):
        """Feed one verify's accepted drafts per request. True when the step count changed.
        (An update_interval of 0 raises ZeroDivisionError here, as on 0.5.23.)"""
        if not correct_drafts:
            return False
        if self.current_steps > 0:
            avg = sum(correct_drafts) / float(len(correct_drafts))
            self.ema_accept_len = (1 - self.ema_alpha) * self.ema_accept_len + self.ema_alpha * avg
        self.batch_count += 1
        if self.batch_count <= self.warmup_batches:
            return False
        if (self.batch_count - self.warmup_batches) % self.update_interval != 0:
            return False
        return self.recompute()

    def target(self):
        """The step count _recompute_params would pick now (without applying it)."""
        cands = self.candidate_steps
        old = self.current_steps
        idx = cands.index(old)
        old_idx = idx
        if old == 0:
            # after a zero-step interval, probe the smallest positive step
            idx = min(idx + 1, len(cands) - 1)
            return cands[idx], (float(cands[idx] - 1) if cands[idx] > 0 and self.ema_accept_len < 0 else None)
        ema = self.ema_accept_len
        while idx > 0:
            prev = cands[idx - 1]
            drop = (0.5 if prev == 0 else prev - 0.5) + self.down_hysteresis
            if ema <= drop:
                idx -= 1
            else:
                break
        if idx >= old_idx:
            while idx < len(cands) - 1:
                if ema > cands[idx] - 0.5 + self.up_hysteresis:
                    idx += 1
                else:
                    break
        target = cands[idx]
        if self.ceiling_coeff > 0:
            ceiling = max(1, math.ceil(ema * self.ceiling_coeff))
            if ceiling < target <= old:
                while idx > 0 and cands[idx] > ceiling:
                    idx -= 1
                target = cands[idx]
        return target, None

    def recompute(self):
        target, reset_ema = self.target()
        if reset_ema is not None:
            self.ema_accept_len = reset_ema
        if target != self.current_steps:
            old = self.current_steps
            self.current_steps = target
            self.switches += 1
            self.log("Adaptive spec params updated: steps %d -> %d (ema_accept_len=%.2f)" % (old, target, self.ema_accept_len))
            return True
        return False


class Policy(object):
    """0.5.23 AdaptiveSpeculativeParams: one Slot per batch-size key, a batch routed to its slot
    after padding to the decode CUDA-graph batch sizes."""

    def __init__(self, schedule, graph_bs, log=None):
        self.schedule = schedule
        self.graph_bs = sorted(graph_bs) if graph_bs else None
        self.slots = dict((bs, Slot(cands, knobs, schedule.initial_steps, log))
                          for bs, (cands, knobs) in schedule.entries.items())

    def first_slot(self):
        return self.slots[self.schedule.keys[0]]

    def route(self, batch):
        return self.schedule.key_for(pad_to_graph_bs(batch, self.graph_bs))

    def steps_for_batch(self, batch):
        return self.slots[self.route(batch)].current_steps

    def on_verify_complete(self, correct_drafts, batch):
        """The new step count of the batch's slot when it switched, else None."""
        slot = self.slots[self.route(batch)]
        if slot.update(correct_drafts):
            return slot.current_steps
        return None

    def state(self):
        """What the simulator reports (not an SGLang key): each entry's current step count."""
        return dict((str(bs), {"candidate_steps": slot.candidate_steps, "current_steps": slot.current_steps,
                               "ema_accept_len": round(slot.ema_accept_len, 4), "batches": slot.batch_count,
                               "switches": slot.switches})
                    for bs, slot in sorted(self.slots.items()))


def steady_steps(candidates, knobs, initial, accepted_drafts, max_rounds=64):
    """The step counts an entry settles on when each step count s always yields
    ``accepted_drafts(s)`` accepted drafts per verify (the EMA at its fixed point): a list of one
    step count, or the cycle it goes round (each held for update_interval batches; a zero-step
    entry probes its next candidate after every zero-step interval, 0.5.23 _recompute_params)."""
    slot = Slot(candidates, knobs, initial)
    seen = []
    for _round in range(max_rounds):
        cur = slot.current_steps
        if cur > 0:
            slot.ema_accept_len = float(accepted_drafts(cur))
        if seen and cur in seen:
            return seen[seen.index(cur):]
        seen.append(cur)
        target, reset = slot.target()
        if reset is not None:
            slot.ema_accept_len = reset
        if target == cur:
            return [cur]
        slot.current_steps = target
    return [slot.current_steps]
