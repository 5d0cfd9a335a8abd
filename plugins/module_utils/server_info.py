# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.sglang contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Reading SGLang's server info (private): one reader for sglang_service_wait and sglang_bench.

Where the facts are, by SGLang version:

- 0.5.23 (``srt/entrypoints/http_server.py:server_info``, ``utils/common.py:build_server_info``):
  ``GET /server_info``; ``/get_server_info`` still answers but logs a deprecation warning on
  every call. The top level holds the *resolved* server arguments: with speculative decoding
  and no ``--max-running-requests`` that is 48 (``arg_groups/speculative_hook.py``), whatever
  the KV pool holds. The limit the scheduler applies is per DP rank in
  ``internal_states[i].effective_max_running_requests_per_dp``
  (``managers/scheduler_components/internal_state.py:_add_topology``). ``max_total_num_tokens``
  is at the top level (the scheduler's init info) and in
  ``internal_states[i].memory_usage.token_capacity``.
- Older 0.5.x: only ``/get_server_info``; the top-level ``max_running_requests`` is the
  scheduler's value; some builds repeat it in ``internal_states[i].max_running_requests``.

Stdlib only, no I/O: callers fetch with their own HTTP client, in the order ``PATHS`` gives.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

# Current name first; the deprecated one for servers older than 0.5.23 (they answer 404 to /server_info).
PATHS = ("/server_info", "/get_server_info")

# Statuses after which the next path is worth trying (the path does not exist on that version).
FALL_BACK_ON = (404, 405)


def _states(info):
    states = info.get("internal_states") if isinstance(info, dict) else None
    if not isinstance(states, list):
        return []
    return [s for s in states if isinstance(s, dict)]


def _int_or_none(value):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return int(value)


def effective_max_running_requests(info):
    """Requests the server runs at once, as the scheduler applies it; None if not reported.

    0.5.23: the sum over DP ranks of internal_states[i].effective_max_running_requests_per_dp
    (one rank without DP attention). Older servers: internal_states[i].max_running_requests,
    else the top-level max_running_requests (then the scheduler's value).
    """
    states = _states(info)
    per_dp = [_int_or_none(s.get("effective_max_running_requests_per_dp")) for s in states]
    if per_dp and all(v is not None for v in per_dp):
        return sum(per_dp)
    if "effective_max_running_requests_per_dp" in (states[0] if states else {}):
        return None  # 0.5.23 layout with a value missing: do not guess from the resolved 48
    for state in states:
        value = _int_or_none(state.get("max_running_requests"))
        if value is not None:
            return value
    return _int_or_none(info.get("max_running_requests")) if isinstance(info, dict) else None


def resolved_max_running_requests(info):
    """The top-level (resolved, on 0.5.23) max_running_requests: what was asked, not what applies."""
    return _int_or_none(info.get("max_running_requests")) if isinstance(info, dict) else None


def max_total_num_tokens(info):
    """KV pool size in tokens (top level, else internal_states[0].memory_usage.token_capacity)."""
    if not isinstance(info, dict):
        return None
    value = _int_or_none(info.get("max_total_num_tokens"))
    if value is not None:
        return value
    for state in _states(info):
        value = _int_or_none(state.get("max_total_num_tokens"))
        if value is None:
            value = _int_or_none((state.get("memory_usage") or {}).get("token_capacity"))
        if value is not None:
            return value
    return None


def version(info):
    value = info.get("version") if isinstance(info, dict) else None
    return None if value is None else str(value)


def summary(info):
    """The facts the collection reports, in one place."""
    return {
        "version": version(info),
        "max_running_requests": effective_max_running_requests(info),
        "resolved_max_running_requests": resolved_max_running_requests(info),
        "max_total_num_tokens": max_total_num_tokens(info),
    }
