# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.sglang contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""SGLang's speculative-decoding rules the collection relies on (private), in one place.

Hand-written (``sglang_contract.py`` next to it is generated). Used by the modules and, through
the ``llmops.sglang.spec_*`` filters (``plugins/filter/speculative.py``), by the roles and the
playbooks.

SGLang 0.5.23:

- The EAGLE family, the algorithms that draft a tree shaped by ``--speculative-eagle-topk`` and
  ``--speculative-num-draft-tokens``: EAGLE, EAGLE3, NEXTN (an alias of EAGLE) and STANDALONE
  (``srt/speculative/spec_info.py``: ``is_eagle()`` / ``is_standalone()``;
  ``srt/arg_groups/speculative_hook.py`` resolves NEXTN to EAGLE).
- With ``--speculative-eagle-topk 1`` the draft-token count is forced to steps + 1
  (``speculative_hook.py``: "speculative_num_draft_tokens is adjusted to
  speculative_num_steps + 1 when speculative_eagle_topk == 1").
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

EAGLE_FAMILY = ('EAGLE', 'EAGLE3', 'NEXTN', 'STANDALONE')

# Names SGLang rewrites while resolving its arguments (what /server_info reports back).
ALGORITHM_ALIASES = {'NEXTN': 'EAGLE'}


def is_eagle_family(algorithm):
    """Whether ``algorithm`` (any case; None or '' for off) is of the EAGLE family."""
    return str(algorithm or '').upper() in EAGLE_FAMILY


def resolved_algorithm(algorithm):
    """The algorithm's name as SGLang reports it after resolving aliases (upper case)."""
    value = str(algorithm).upper()
    return ALGORITHM_ALIASES.get(value, value)


def draft_tokens(steps, topk, algorithm='EAGLE', num_draft_tokens=None):
    """The draft-token count SGLang runs with.

    steps + 1 for the EAGLE family with topk 1 (SGLang forces it, whatever was asked for);
    otherwise ``num_draft_tokens`` as an integer, or None when it is not set (SGLang's default).
    """
    if is_eagle_family(algorithm) and int(topk) == 1:
        return int(steps) + 1
    if num_draft_tokens in (None, ''):
        return None
    return int(num_draft_tokens)


# --- Adaptive speculative decoding (--speculative-adaptive), SGLang 0.5.23 ---------------------
# srt/speculative/adaptive_spec_params.py and srt/arg_groups/speculative_hook.py
# (_maybe_disable_adaptive, _init_adaptive_speculative_params).

# The algorithms adaptive runs with (after NEXTN -> EAGLE); any other is disabled with a warning.
ADAPTIVE_ALGORITHMS = ('EAGLE', 'EAGLE3', 'NEXTN')

# DEFAULT_ADAPTIVE_CONFIG's candidate lists, used when no --speculative-adaptive-config is given.
ADAPTIVE_DEFAULT_CANDIDATES = {'1': [1, 3, 5, 7], '8': [0, 1, 3], '32': [0, 1], '64': [0]}

# AdaptiveStepSlot's knobs with their 0.5.23 defaults and what the collection accepts for them
# (SGLang checks none of them: update_interval 0 divides by zero at the first decision, a non-number
# fails at the first batch, long after the start).
ADAPTIVE_KNOBS = {
    'ema_alpha': (0.2, 'a number above 0 and at most 1'),
    'update_interval': (5, 'an integer >= 1'),
    'warmup_batches': (10, 'an integer >= 0'),
    'up_hysteresis': (0.0, 'a number'),
    'down_hysteresis': (-0.25, 'a number'),
    'ceiling_coeff': (0, 'a number >= 0'),
}


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _knob_ok(name, value):
    if name == 'ema_alpha':
        return _is_number(value) and 0 < value <= 1
    if name == 'update_interval':
        return _is_int(value) and value >= 1
    if name == 'warmup_batches':
        return _is_int(value) and value >= 0
    if name == 'ceiling_coeff':
        return _is_number(value) and value >= 0
    return _is_number(value)


def _key_ok(key):
    text = str(key) if _is_int(key) else key
    return isinstance(text, str) and text.isdigit() and int(text) >= 1


def adaptive_config_problems(config, var='sglang_service_speculative_adaptive_config'):
    """What is wrong with an adaptive config mapping (a list of messages naming ``var``).

    Entries are keyed by a batch size >= 1 (an integer or its string; SGLang 0.5.23 reads the keys
    that are all digits, and a batch is never 0) and hold ``candidate_steps``, a non-empty list of
    integers >= 0, plus any of the knobs; the knobs may also stand at the top level, where SGLang
    applies them to every entry. Anything else would be ignored by SGLang or fail it, so it is refused.
    """
    knobs = ', '.join('%s (%s, default %r)' % (k, ADAPTIVE_KNOBS[k][1], ADAPTIVE_KNOBS[k][0]) for k in sorted(ADAPTIVE_KNOBS))
    if not isinstance(config, dict):
        return ['%s must be a mapping of batch sizes to {candidate_steps: [...]} (or null for SGLang\'s built-in); got %r.'
                % (var, config)]
    problems = []
    entries = 0
    for key in config:
        value = config[key]
        if _key_ok(key):
            entries += 1
            where = '%s[%s]' % (var, key)
            if not isinstance(value, dict):
                problems.append('%s must be a mapping with candidate_steps; got %r.' % (where, value))
                continue
            steps = value.get('candidate_steps')
            if not isinstance(steps, list) or not steps or not all(_is_int(s) and s >= 0 for s in steps):
                problems.append('%s.candidate_steps must be a non-empty list of integers >= 0 (0: no drafting at that '
                                'batch size); got %r.' % (where, steps))
            for name in value:
                if name == 'candidate_steps':
                    continue
                if name not in ADAPTIVE_KNOBS:
                    problems.append('%s.%s is not a knob of SGLang 0.5.23\'s adaptive config; allowed: candidate_steps, %s.'
                                    % (where, name, knobs))
                elif not _knob_ok(name, value[name]):
                    problems.append('%s.%s must be %s; got %r.' % (where, name, ADAPTIVE_KNOBS[name][1], value[name]))
        elif key in ADAPTIVE_KNOBS:
            if not _knob_ok(key, value):
                problems.append('%s.%s must be %s; got %r.' % (var, key, ADAPTIVE_KNOBS[key][1], value))
        else:
            problems.append('%s: %r is neither a batch size (an integer >= 1) nor a knob (%s).' % (var, key, knobs))
    if not entries and not problems:
        problems.append('%s needs at least one batch-size entry, e.g. {1: {candidate_steps: [3, 4]}}; got %r.' % (var, config))
    return problems


def adaptive_candidates(config):
    """The union of every entry's candidate_steps, sorted: what --speculative-num-steps must be one
    of (0.5.23 resolve_candidate_steps_from_config; the built-in lists when ``config`` is None)."""
    if config is None:
        entries = ADAPTIVE_DEFAULT_CANDIDATES
    else:
        entries = dict((k, v.get('candidate_steps') or []) for k, v in config.items()
                       if _key_ok(k) and isinstance(v, dict))
    union = set()
    for steps in entries.values():
        union.update(s for s in steps if _is_int(s))
    return sorted(union)


def adaptive_config_plain(config):
    """An adaptive config as SGLang reads its file: string keys, lists (to write it or compare two)."""
    if isinstance(config, dict):
        return dict((str(k), adaptive_config_plain(v)) for k, v in config.items())
    if isinstance(config, (list, tuple)):
        return [adaptive_config_plain(v) for v in config]
    return config


def adaptive_config_json(config):
    """The file SGLang reads (--speculative-adaptive-config): the mapping with string keys."""
    import json
    return json.dumps(adaptive_config_plain(config), indent=2, sort_keys=True) + '\n'


def adaptive_unsupported_reason(algorithm, topk, extra_args=(), dp_size=1):
    """Why SGLang 0.5.23 would not run ``--speculative-adaptive`` with these settings, in its own words
    (adaptive_spec_params.adaptive_unsupported_reason, after NEXTN -> EAGLE), or None.

    0.5.23 does not refuse such a server: it starts it with static steps and logs
    ``speculative_adaptive disabled: <reason>`` (speculative_hook._maybe_disable_adaptive). The sweep
    uses this to record a schedule that could not run instead of deploying it.
    """
    algo = resolved_algorithm(algorithm) if algorithm not in (None, '') else None
    if algo not in ('EAGLE', 'EAGLE3'):
        return 'speculative_algorithm=%s (only EAGLE/EAGLE3 are supported)' % algo
    if topk is not None and int(topk) != 1:
        return 'speculative_eagle_topk=%s (only topk=1 is supported)' % int(topk)
    args = [str(a) for a in extra_args or ()]
    for flag in ('--attn-dp-size', '--attention-data-parallel-size'):
        if flag in args[:-1]:
            try:
                size = int(args[args.index(flag) + 1])
            except ValueError:
                size = 1
            if size > 1:
                return 'attention DP is not supported (adaptive tier decisions are not synchronized across DP ranks)'
    if '--enable-dp-attention' in args and int(dp_size or 1) > 1:
        return 'attention DP is not supported (adaptive tier decisions are not synchronized across DP ranks)'
    words = {
        '--enable-multi-layer-eagle': 'enable_multi_layer_eagle=True is not supported (MultiLayerEagleWorkerV2 does not implement adaptive)',
        '--enable-two-batch-overlap': 'enable_two_batch_overlap=True is not supported (adaptive state swap would discard the TboAttnBackend '
                                      'wrapper)',
        '--enable-pdmux': 'enable_pdmux=True is not supported (adaptive state swap does not update decode_attn_backend_group)',
    }
    for flag in ('--enable-multi-layer-eagle', '--enable-two-batch-overlap', '--enable-pdmux'):
        if flag in args:
            return words[flag]
    return None
