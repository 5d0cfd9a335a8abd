# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.sglang contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The shared server-info reader: which value is the batch capacity, on 0.5.23 and older layouts."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.llmops.sglang.plugins.module_utils import server_info as sinfo

# SGLang 0.5.23 /server_info, trimmed to the keys read: the top level is the resolved argument
# (48: speculative decoding, no --max-running-requests), each DP rank's state repeats the
# resolved args and adds what the scheduler applies.
V0523 = {
    "max_running_requests": 48, "max_total_num_tokens": 412000, "version": "0.5.23",
    "internal_states": [{"max_running_requests": 48, "effective_max_running_requests_per_dp": 13,
                         "memory_usage": {"token_capacity": 412000}, "avg_spec_accept_length": 3.1}],
}


def test_0523_reports_the_effective_limit_not_the_resolved_48():
    facts = sinfo.summary(V0523)
    assert facts == {"version": "0.5.23", "max_running_requests": 13, "resolved_max_running_requests": 48,
                     "max_total_num_tokens": 412000}


def test_0523_dp_ranks_add_up():
    info = dict(V0523, internal_states=[{"effective_max_running_requests_per_dp": 13},
                                        {"effective_max_running_requests_per_dp": 12}])
    assert sinfo.effective_max_running_requests(info) == 25


def test_0523_layout_with_a_missing_value_does_not_fall_back_to_48():
    info = dict(V0523, internal_states=[{"effective_max_running_requests_per_dp": None, "max_running_requests": 48}])
    assert sinfo.effective_max_running_requests(info) is None


def test_older_layouts():
    # 0.5.x before the split: the top level is the scheduler's value
    assert sinfo.effective_max_running_requests({"max_running_requests": 21, "internal_states": [{}]}) == 21
    # builds that repeat it in internal_states
    assert sinfo.effective_max_running_requests({"max_running_requests": None,
                                                 "internal_states": [{"max_running_requests": 21}]}) == 21
    assert sinfo.max_total_num_tokens({"internal_states": [{"memory_usage": {"token_capacity": 9000}}]}) == 9000
    assert sinfo.summary({}) == {"version": None, "max_running_requests": None, "resolved_max_running_requests": None,
                                 "max_total_num_tokens": None}
    assert sinfo.summary(None)["max_running_requests"] is None


def test_current_path_first_and_fall_back_only_when_it_does_not_exist():
    assert sinfo.PATHS == ("/server_info", "/get_server_info")
    assert 404 in sinfo.FALL_BACK_ON and 401 not in sinfo.FALL_BACK_ON
