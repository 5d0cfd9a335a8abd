# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.sglang contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The SGLang server arguments the collection sets or reads (private): their one home.

One row per argument says what the rest of the collection derives from it:

- ``var``: the sglang_service role variable (None for an argument the role does not set, which
  a user may still pass through ``sglang_service_extra_args``);
- ``flag``: its SGLang 0.5.23 long option without the dashes, the key of the ``--config`` file
  (0.5.23 turns each key into ``--KEY VALUE`` and refuses underscore spellings);
- ``kind``: how the variable's value is written (see ``KINDS``);
- ``info``: the key ``/server_info`` reports it under (0.5.23 reports every ServerArgs field by its
  name, ``utils/common.py:build_server_info``); None where it must not be read back (the API key);
- ``verify``: ``'match'`` the running server must report the deployed value back
  (sglang_service_wait's ``expect``), ``'report'`` it is only shown with the deployment, None neither;
- ``summary``: kept next to the benchmark figures (sglang_bench's ``server.server_args``);
- ``fingerprint``: a change of it makes stored sweep results of another setup (the sweep's
  fingerprint). False for what does not change what is measured (address, key) and for the
  speculative settings the sweep varies and fingerprints itself.

The rows are in the order the ``--config`` file lists them (and the unit used to). The flags and
keys are checked against the recorded 0.5.23 contract by tests/unit/test_server_args.py.
Stdlib only: sglang_bench imports it on the GPU host.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from collections import namedtuple

from ansible_collections.llmops.sglang.plugins.module_utils.sglang_contract import ALLOW_ABBREV, FLAG_DESTS

ServerArg = namedtuple('ServerArg', ['var', 'flag', 'kind', 'info', 'verify', 'summary', 'fingerprint'])

# How a variable's value becomes an option, and when the option is left out (SGLang then picks):
KINDS = {
    'str': 'the value as set',
    'int': 'an integer',
    'count': 'an integer, left out at 1 (the default SGLang 0.5.23 has for it)',
    'opt_str': "the value, left out when null or ''",
    'opt_int': "an integer, left out when null or ''",
    'opt_float': "a number, left out when null or ''",
    'switch': 'the bare flag when true, left out when false',
    'secret': "the value, left out when null or ''; never shown or read back",
    'speculative': "the resolved speculative setting (null while speculative decoding is off), left out when null or ''",
    'json_file': 'a mapping the role renders to a JSON file; the option is that file\'s path (``files``), left out '
                 'when the role renders none',
}


def _arg(var, flag, kind, info=None, verify=None, summary=False, fingerprint=True):
    return ServerArg(var, flag, kind, info, verify, summary, fingerprint)


SERVER_ARGS = (
    _arg('sglang_service_model_path', 'model-path', 'str', 'model_path', 'report', True),
    _arg('sglang_service_served_model_name', 'served-model-name', 'opt_str', 'served_model_name', 'report', True),
    _arg('sglang_service_tp_size', 'tp-size', 'int', 'tp_size', 'match', True),
    _arg('sglang_service_dp_size', 'dp-size', 'count', 'dp_size', 'match', True),
    _arg('sglang_service_kv_cache_dtype', 'kv-cache-dtype', 'str', 'kv_cache_dtype', 'match', True),
    _arg('sglang_service_mem_fraction_static', 'mem-fraction-static', 'opt_float', 'mem_fraction_static', None, True),
    _arg('sglang_service_max_running_requests', 'max-running-requests', 'opt_int', 'max_running_requests', None, True),
    _arg('sglang_service_cuda_graph_max_bs_decode', 'cuda-graph-max-bs-decode', 'opt_int', 'cuda_graph_max_bs_decode', None, True),
    _arg('sglang_service_cuda_graph_max_bs_prefill', 'cuda-graph-max-bs-prefill', 'opt_int', 'cuda_graph_max_bs_prefill', None, True),
    _arg('sglang_service_context_length', 'context-length', 'opt_int', 'context_length', None, True),
    _arg('sglang_service_chunked_prefill_size', 'chunked-prefill-size', 'opt_int', 'chunked_prefill_size', None, True),
    _arg('sglang_service_attention_backend', 'attention-backend', 'opt_str', 'attention_backend', None, True),
    _arg('sglang_service_trust_remote_code', 'trust-remote-code', 'switch', 'trust_remote_code'),
    _arg('sglang_service_enable_metrics', 'enable-metrics', 'switch', 'enable_metrics'),
    _arg('sglang_service_speculative_algorithm', 'speculative-algorithm', 'speculative', 'speculative_algorithm', 'match', True, False),
    _arg('sglang_service_speculative_num_steps', 'speculative-num-steps', 'speculative', 'speculative_num_steps', 'match', True, False),
    _arg('sglang_service_speculative_eagle_topk', 'speculative-eagle-topk', 'speculative', 'speculative_eagle_topk', 'match', True, False),
    _arg('sglang_service_speculative_num_draft_tokens', 'speculative-num-draft-tokens', 'speculative', 'speculative_num_draft_tokens',
         'match', True, False),
    _arg('sglang_service_speculative_draft_model_path', 'speculative-draft-model-path', 'speculative', 'speculative_draft_model_path',
         None, True),
    # SGLang 0.5.23 reports speculative_adaptive false when it disabled adaptive at start
    # (speculative_hook._maybe_disable_adaptive): a deployment that asked for it must see it true.
    # Out of the sweep's fingerprint like the other speculative settings: the sweep deploys them itself
    # (off for the statics, its derived schedule for the schedule) and pins them, so a pinned schedule
    # must not make every stored result another setup's.
    _arg('sglang_service_speculative_adaptive', 'speculative-adaptive', 'switch', 'speculative_adaptive', 'match', True, False),
    _arg('sglang_service_speculative_adaptive_config', 'speculative-adaptive-config', 'json_file', 'speculative_adaptive_config',
         'report', True, False),
    # SGLang 0.5.23 reports the key back in /server_info; the collection never reads it there.
    _arg('sglang_service_api_key', 'api-key', 'secret', fingerprint=False),
    _arg('sglang_service_host', 'host', 'str', 'host', fingerprint=False),
    _arg('sglang_service_port', 'port', 'int', 'port', fingerprint=False),
    # Not a role variable (pass it with sglang_service_extra_args), but it changes the figures.
    _arg(None, 'disable-radix-cache', 'switch', 'disable_radix_cache', summary=True),
)

# What sglang_service_wait shows of the running server, and sglang_bench keeps with the figures.
REPORTED_INFO_KEYS = tuple(a.info for a in SERVER_ARGS if a.verify)
SUMMARY_INFO_KEYS = tuple(a.info for a in SERVER_ARGS if a.summary)


def role_vars(fingerprint=None):
    """The role variables behind the arguments, in table order; with ``fingerprint`` only
    those that are (True) or are not (False) part of the sweep's fingerprint."""
    return [a.var for a in SERVER_ARGS if a.var and (fingerprint is None or a.fingerprint == fingerprint)]


def _unset(value):
    return value is None or value == ''


def _int(var, value):
    """An integer as Jinja's ``int`` makes one ('42', 42.0 and '42.0' are 42), but an error
    naming the variable where Jinja would silently give 0."""
    try:
        return int(value)
    except (TypeError, ValueError):
        try:
            return int(float(value))
        except (TypeError, ValueError, OverflowError):
            raise ValueError('%s must be an integer; got %r' % (var, value))


def _float(var, value):
    try:
        return float(value)
    except (TypeError, ValueError):
        raise ValueError('%s must be a number; got %r' % (var, value))


def _bool(var, value):
    """True or False as Ansible's ``bool`` filter reads the well-known spellings."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ('yes', 'on', '1', 'true', 'y', 't'):
        return True
    if text in ('no', 'off', '0', 'false', 'n', 'f', ''):
        return False
    raise ValueError('%s must be a boolean; got %r' % (var, value))


def _value(arg, raw, speculative, files):
    """The argument's value before the rule that leaves it out (None: unset)."""
    if arg.kind == 'json_file':
        return files.get(arg.var) or None
    if arg.kind == 'speculative':
        # The role's resolved speculative settings: algorithm in upper case, the draft tokens
        # SGLang forces, nothing at all while speculative decoding is off.
        return speculative.get(arg.var[len('sglang_service_speculative_'):])
    if arg.kind in ('int', 'count'):
        return _int(arg.var, raw)
    if arg.kind == 'switch':
        return _bool(arg.var, raw)
    if arg.kind in ('opt_str', 'opt_int', 'opt_float', 'secret') and _unset(raw):
        return None
    if arg.kind == 'opt_int':
        return _int(arg.var, raw)
    if arg.kind == 'opt_float':
        return _float(arg.var, raw)
    return raw


def _option(arg, value):
    """The --config value, or None to leave the option out."""
    if arg.kind == 'count':
        return value if value > 1 else None
    if arg.kind == 'switch':
        return True if value else None
    if arg.kind == 'speculative' and value == '':
        return None
    return value


def _setting(arg, raw, value):
    """What the last good configuration keeps of it (config.json ``settings``): optional knobs and
    rendered mappings as they were set, the key only as set or not, everything else as deployed."""
    if arg.kind == 'secret':
        return 'set' if not _unset(raw) else 'not set'
    if arg.kind in ('opt_str', 'opt_int', 'opt_float', 'json_file'):
        return raw
    return value


def resolve(values, speculative, files=None):
    """The arguments of one deployment.

    ``values``: {role variable: value} for every ``role_vars()``; ``speculative``: the role's
    resolved speculative settings (``_sglang_service_speculative``: algorithm, num_steps,
    eagle_topk, num_draft_tokens, draft_model_path; only ``algorithm`` while it is off);
    ``files``: {role variable: path} of the ``json_file`` mappings the role renders (a variable
    missing or null there renders no file and its option is left out).

    Returns ``options`` (the --config mapping, by flag, unset ones left out), ``expect`` (what
    /server_info must report, by key; null values are not compared) and ``settings`` (by variable).
    Raises ValueError naming the variable when a value cannot be converted.
    """
    options, expect, settings = {}, {}, {}
    for arg in SERVER_ARGS:
        if not arg.var:
            continue
        raw = values[arg.var]
        value = _value(arg, raw, speculative or {}, files or {})
        option = _option(arg, value)
        if option is not None:
            options[arg.flag] = option
        # a switch is compared only when on: off is what older servers (no such key) also mean
        if arg.verify == 'match' and not (arg.kind == 'switch' and not value):
            expect[arg.info] = value
        settings[arg.var] = _setting(arg, raw, value)
    return {'options': options, 'expect': expect, 'settings': settings}


# What sglang_service_extra_args may not set besides the role's own arguments, and why: they change
# how the role (its readiness check, the benchmark, the sweep) reaches the server.
NOT_EXTRA = {
    'config': 'the role writes the --config file itself',
    'ssl_certfile': 'the role reaches the server over plain HTTP (terminate TLS in front of it)',
    'ssl_keyfile': 'the role reaches the server over plain HTTP (terminate TLS in front of it)',
}

# The setting (argparse dest) of each argument the role sets -> its variable.
ROLE_DESTS = dict((FLAG_DESTS['--' + arg.flag], arg.var) for arg in SERVER_ARGS if arg.var)


def flag_dest(token):
    """The setting an argv word sets, as SGLang 0.5.23's argparse reads it: ``--flag``,
    ``--flag=value``, or (allow_abbrev) an unambiguous prefix of a long option. None for a value, an
    unknown option or an ambiguous prefix (the parser refuses those itself)."""
    if not isinstance(token, str) or not token.startswith('--') or token == '--':
        return None
    name = token.split('=', 1)[0]
    if name in FLAG_DESTS:
        return FLAG_DESTS[name]
    if not ALLOW_ABBREV:
        return None
    matches = [flag for flag in FLAG_DESTS if flag.startswith(name)]
    return FLAG_DESTS[matches[0]] if len(matches) == 1 else None


def extra_args_conflicts(extra_args):
    """Why each word of ``extra_args`` that sets one of the role's own arguments (or a NOT_EXTRA one) may
    not be there. SGLang takes the command line over the --config file and the last of a repeated flag,
    so such a word would quietly replace the role's value: the server would run another configuration
    than the one the role verifies, reports and the sweep fingerprints."""
    problems = []
    for token in extra_args or []:
        dest = flag_dest(str(token))
        if dest in ROLE_DESTS:
            problems.append('%s (set %s instead)' % (token, ROLE_DESTS[dest]))
        elif dest in NOT_EXTRA:
            problems.append('%s (%s)' % (token, NOT_EXTRA[dest]))
    return problems
