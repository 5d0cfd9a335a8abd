#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.sglang contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: sglang_bench
short_description: Drive streaming load against an SGLang server and measure it
version_added: "0.1.0"
description:
  - Sends a closed-loop streaming load to a running SGLang server at each of a list of
    concurrency levels and returns, per level, the figures a speculative-decoding tuning
    decision rests on, computed from the server's own token counts.
  - At concurrency C, C workers send requests back to back. Warm-up requests run first and
    finish before the measured phase starts; they are not counted.
  - "Definitions. TTFT: first token's arrival minus request sent. E2E latency: end of the
    stream minus request sent. TPOT: (e2e - TTFT) / (completion_tokens - 1), as SGLang's
    C(sglang.bench_serving) defines it. Per-request decode tok/s: (completion_tokens - 1) /
    (last token's arrival - first token's arrival), the decode phase only (bench_serving's
    decode throughput, often called single-request throughput). ITL is per token: a chunk
    that carries k tokens (speculative decoding sends several per step) after a gap g counts
    as k samples of g/k. Aggregate output tok/s: completion tokens of the measured requests
    divided by the wall time of the measured phase. Accept length: sum of completion_tokens
    over sum of spec_verify_ct of this level's measured requests, not the server's cumulative
    counter."
  - Runs on the GPU host against loopback or delegated to the controller. It uses only the
    Python standard library (Python 3.8 or later); nothing from SGLang's environment.
  - Sends no load in check mode.
author:
  - llmops.sglang contributors (@llmops)
options:
  url:
    description:
      - Base URL of the SGLang server, C(http://) or C(https://), without a path to an endpoint.
    type: str
    default: http://127.0.0.1:30000
  api:
    description:
      - API flavour to drive. C(native) is SGLang's C(/generate), which reports C(spec_verify_ct) on
        every version, so it always yields the accept length; C(completions) is C(/v1/completions);
        C(chat) is C(/v1/chat/completions) (the server applies the chat template). The OpenAI flavours
        yield the accept length only from servers that answer C(return_spec_tokens_details)
        (SGLang 0.5.23 and later).
      - With the OpenAI flavours the module asks for per-chunk usage (C(continuous_usage_stats));
        a server that does not send it still gives exact token counts, TTFT and decode rate, but no ITL.
    type: str
    choices: [native, completions, chat]
    default: native
  api_key:
    description:
      - "The server's C(--api-key), sent as an C(Authorization: Bearer) header."
    type: str
  model:
    description:
      - Model name for the OpenAI flavours. Default is the first model C(/v1/models) lists.
    type: str
  connect_timeout:
    description:
      - Seconds to wait for a TCP connection before giving up on the server.
    type: float
    default: 10
  request_timeout:
    description:
      - Seconds one request (connect to last byte) may take before it counts as failed.
    type: float
    default: 600
  validate_certs:
    description:
      - Verify the server's TLS certificate for C(https://) URLs.
    type: bool
    default: true
  concurrency_levels:
    description:
      - Concurrency levels to measure, in order. Each must be an integer of at least 1.
    type: list
    elements: raw
    default: [1, 2, 4, 8, 16, 32, 64]
  requests_per_level:
    description:
      - Measured requests per level. Default is four per concurrent worker (at least 8), rounded up
        to whole rounds of min(concurrency, the server's max_running_requests) so that the last round
        is as full as the others.
      - Mutually exclusive with O(duration_s). Applies to O(stop=fixed) only.
    type: int
  stop:
    description:
      - How many requests a level measures.
      - V(fixed) sends O(requests_per_level) (or its default) per level, or keeps sending for O(duration_s).
      - V(adaptive) measures each level of O(precision_levels) only as long as it takes to know the
        O(stop_metric) figure to a relative 95% confidence half-width of O(target_precision). After
        O(min_requests), it checks after each whole round of min(concurrency, max_running_requests)
        requests and stops sending once the rule holds (the requests in flight finish and count), or at
        O(max_requests). Levels not in O(precision_levels) measure O(min_requests) only.
      - The result says per level how many requests it took, whether the target was reached
        (RV(levels[].stop)) and the precision of both figures (RV(levels[].precision)).
    type: str
    choices: [fixed, adaptive]
    default: fixed
  stop_metric:
    description:
      - The figure whose precision ends an adaptive level. V(per_request) is the median per-request
        decode tok/s (what an agentic objective ranks); V(aggregate) is the aggregate output tok/s
        (what a throughput objective ranks).
      - "Precision of V(per_request): the normal approximation of the median's standard error from the
        p10-p90 spread, 1.2533 x ((p90 - p10) / 2.563) / sqrt(n), times Student's t (n - 1 degrees of
        freedom); it needs at least 8 completed requests. Of V(aggregate): batch means over the steady state,
        a batch being a round of min(concurrency, max_running_requests) completions (the tokens that arrived
        in it) without the ramp-up round and, once the level is over, the drain round; a ratio estimator
        gives the noise per second of load, scaled to the level's time, times Student's t (rounds - 1
        degrees of freedom); it needs at least 3 steady rounds."
    type: str
    choices: [per_request, aggregate]
    default: per_request
  target_precision:
    description:
      - With O(stop=adaptive), the relative 95% confidence half-width of the O(stop_metric) figure at which
        a level stops (0.01 = the figure is known within +-1%).
    type: float
    default: 0.01
  min_requests:
    description:
      - With O(stop=adaptive), measured requests a level takes at least, raised to the concurrency (a level
        with fewer requests than workers never runs at its concurrency) and rounded up to whole rounds.
      - Default 4.
    type: int
  max_requests:
    description:
      - With O(stop=adaptive), the cap of an adaptive level's measured requests (rounded up to whole rounds).
      - Default three times the O(stop=fixed) default count of the level.
    type: int
  stop_bounds:
    description:
      - With O(stop=adaptive), values in tok/s that the O(stop_metric) figure will be compared with (a sweep
        passes the figure a step count has to reach to beat the best one so far). A level also stops once its
        figure lies on one side of every bound by more than the noise of the comparison (more requests would
        not change it), measured by its own 95% interval, or with O(stop_bounds_se) by the standard error of the difference,
        times O(stop_bounds_z) where that is larger.
      - The bounds are looked at after every round. So that a figure that happens to be high (or low) at one look does
        not decide a close comparison, an early look needs that noise cleared sqrt(cap / requests so far) times over
        (an O'Brien-Fleming boundary, the cap being O(max_requests)), so 1.73 times at a third of the cap and once at the cap.
    type: list
    elements: float
  stop_bounds_se:
    description:
      - The standard error of the measurement the O(stop_bounds) come from (for a sweep, its best figure so far),
        so that a level stops on the bounds only when the comparison clears both figures' noise.
    type: float
  stop_bounds_z:
    description:
      - The quantile the comparison with O(stop_bounds) uses (for a sweep, that of its decision, corrected for the
        tie-breakers it looks at); the level's own interval quantile when larger.
    type: float
  precision_levels:
    description:
      - With O(stop=adaptive), the concurrency levels whose O(stop_metric) figure must reach
        O(target_precision) (the levels a decision ranks on). The other levels measure O(min_requests).
      - Default every level of O(concurrency_levels).
    type: list
    elements: int
  duration_s:
    description:
      - Instead of a request count, keep sending for this many seconds per level; requests in
        flight then finish and count.
    type: float
  warmup_requests:
    description:
      - Requests sent before a level's measured phase and not counted; O(warmup_levels) says which levels.
    type: int
    default: 2
  warmup_levels:
    description:
      - Which levels begin with the O(warmup_requests).
      - V(all) warms up before every level.
      - V(first) warms up only before the first level, as C(sglang.bench_serving) warms up once per run.
        A later level's warm-up changes nothing it measures, since warm-up requests finish before
        measuring begins and every measured phase starts from an idle server. Such a level takes its
        overall deadline from the previous level's latency, and the burst check from the pace of the
        levels before it.
    type: str
    choices: [all, first]
    default: all
  seed:
    description:
      - Seed of the synthetic prompts and of the prompt order. The same seed gives the same load.
    type: int
    default: 0
  workload:
    description:
      - C(synthetic) is the seed campaign's benchmark (temperature 0, C(ignore_eos), exactly
        O(output_len) tokens, prompts of O(input_len) random common words).
      - C(realistic) uses the agentic-coding prompt set shipped in the collection, sampled at
        O(temperature) with natural EOS (O(output_len) caps it).
      - C(file) uses O(prompts) or O(prompt_file).
    type: str
    choices: [synthetic, realistic, file]
    default: synthetic
  input_len:
    description:
      - Words in each synthetic prompt (about one token each). The server's prompt token count is
        what the results report.
    type: int
    default: 1024
  output_len:
    description:
      - New tokens per synthetic request; the cap for the other workloads.
    type: int
    default: 512
  temperature:
    description:
      - Sampling temperature of the C(realistic) and C(file) workloads (C(synthetic) is greedy).
    type: float
    default: 0.7
  prompts:
    description:
      - Prompts of the C(file) workload given inline, each a string or a dict with C(prompt) (text)
        or C(messages) (chat messages) and optionally C(max_tokens).
    type: list
    elements: raw
  prompt_file:
    description:
      - JSONL file on the host that runs the module, one such dict per line (C(file) workload).
    type: path
  flush_cache:
    description:
      - POST C(/flush_cache) before each level so that no level reuses the previous one's prefix cache.
    type: bool
    default: true
  fail_on_error:
    description:
      - Fail the task when any request fails. With V(false) the figures of the completed
        requests come back with the failure counts and a message.
    type: bool
    default: true
  stall_timeout:
    description:
      - Seconds without a token on any stream in flight after which the level ends as a stalled
        server (a stopped server still accepts connections, so only O(request_timeout) would end
        each request). Control requests (C(/get_server_info), C(/flush_cache)) are bounded by it too.
      - Each level also has an overall deadline derived from the expected work (the warm-up's or
        the previous level's per-request latency, scaled to the concurrency, times the rounds of
        requests, times 4, plus O(stall_timeout)); overrunning it is reported as a stalled server too.
    type: float
    default: 30
  client_lag_limit:
    description:
      - The share of a level's measured time the client's event loop may spend waking up late (by more than
        20 ms at a time) before the level counts as a measurement of a starved client, not of the server.
        A benchmarking host that does not give the client the CPU when it needs it (other work on it, a CPU
        quota) reads the streams and sends the next requests late, which lowers the figures.
      - Such a level is measured again, up to O(client_lag_retries) times; if it is still starved the benchmark
        ends with RV(fault=starved). Each level reports RV(levels[].client_lag) and the tries it discarded.
      - V(1) turns the check off.
    type: float
    default: 0.05
  client_lag_retries:
    description:
      - How many more times a level whose client was starved (O(client_lag_limit)) is measured before the
        benchmark gives up with RV(fault=starved).
    type: int
    default: 2
  leftover:
    description:
      - What to do when another benchmark of the same server (same host and port) is running on
        this host, for example one left behind by an interrupted C(ansible-playbook).
      - V(wait) waits up to O(lock_timeout) for it to end; V(stop) sends it SIGTERM first. Two
        benchmarks at once would measure each other.
    type: str
    choices: [wait, stop]
    default: wait
  lock_timeout:
    description:
      - Seconds to wait for another benchmark of the same server to end before failing with C(fault=busy).
    type: float
    default: 900
  progress_file:
    description:
      - Path, on the host that runs the module, of a small JSON status the module keeps while it runs (replaced
        atomically every 2 seconds and at each change of level or state, mode 0644). Its directory is created
        with mode 0700 when missing; an existing one must belong to the user that runs the module and be
        writable by nobody else. For a caller that runs the module asynchronously (C(async) and C(poll=0), as the
        C(llmops.sglang.spec_bench) role does) and shows the progress while it waits.
      - "Keys: C(state) (V(waiting) for another benchmark of the server, V(running), V(done), V(failed)), C(level)
        (1-based) of C(levels), C(concurrency), C(phase) (V(warmup) or V(measure)), C(requests_done),
        C(requests_failed), C(requests_target) (the level's count; with O(stop=adaptive) its cap, lowered once the
        level is precise enough; with the warm-up its requests; null with O(duration_s)), C(adaptive),
        C(in_flight), C(output_tokens) and C(output_tok_s) (the measured phase so far, requests in flight
        included), C(level_elapsed_s), C(duration_s), C(levels_done), C(level_try) (1, or more when the level is
        measured again after a discarded try, see O(client_lag_retries); its requests count from 0 again),
        C(retry_reason) (why the last try was discarded; null on a first try), C(elapsed_s) (since the module
        started), C(message), C(updated_at) (UTC) and C(pid)."
      - The module never removes it (the caller does). Failing to write it does not fail the benchmark (a warning
        says why). Not written in check mode.
    type: path
notes:
  - Runs with the Python standard library only (asyncio streams), on Python 3.8 or later.
  - One TCP connection per request, as SGLang's C(bench_serving) does, so TTFT includes the connect.
  - "Check mode: validates the options and returns without contacting the server."
seealso:
  - name: SGLang bench_serving
    description: SGLang's own serving benchmark, whose TTFT/TPOT definitions this module follows.
    link: https://docs.sglang.ai/developer_guide/bench_serving.html
attributes:
  check_mode:
    support: full
    description: Sends no request in check mode.
  diff_mode:
    support: none
    description: Nothing on the host changes, so there is no diff.
extends_documentation_fragment:
  - llmops.sglang.attributes
"""

EXAMPLES = r"""
- name: Measure the seed's synthetic benchmark on the GPU host itself
  llmops.sglang.sglang_bench:
    url: http://127.0.0.1:30000
    concurrency_levels: [1, 8, 32, 64]
    input_len: 1024
    output_len: 512
  register: bench

- name: Realistic agentic-coding load through the chat API, from the controller
  llmops.sglang.sglang_bench:
    url: "http://{{ inventory_hostname }}:30000"
    api: chat
    api_key: "{{ sglang_service_api_key }}"
    workload: realistic
    concurrency_levels: [1, 4]
    duration_s: 60
  delegate_to: localhost

- name: Measure concurrency 1 until its median per-request tok/s is known within +-1%, the rest briefly
  llmops.sglang.sglang_bench:
    concurrency_levels: [1, 2, 4, 8, 16, 32]
    stop: adaptive
    stop_metric: per_request
    precision_levels: [1]
    target_precision: 0.01
  register: quick

- name: Keep partial figures when the server may die mid-run
  llmops.sglang.sglang_bench:
    concurrency_levels: [64]
    request_timeout: 120
    fail_on_error: false
  register: soak

- name: Print per-request decode rate at each level
  ansible.builtin.debug:
    msg: "c={{ item.concurrency }}: {{ item.per_request_tok_s.median | round(1) }} tok/s"
  loop: "{{ ansible_facts.sglang_bench.levels }}"
"""

RETURN = r"""
levels:
  description: One entry per concurrency level, in the order measured.
  returned: success, and on failure when at least one level ran
  type: list
  elements: dict
  contains:
    concurrency:
      description: Concurrent workers.
      type: int
      sample: 8
    requests_completed:
      description: Measured requests that finished.
      type: int
      sample: 32
    requests_failed:
      description: Measured requests that failed or timed out.
      type: int
      sample: 0
    errors:
      description: Up to five distinct error messages of failed requests.
      type: list
      elements: str
      sample: ["request timed out after request_timeout=30.0s (17 tokens received)"]
    duration_s:
      description: Wall time of the measured phase.
      type: float
      sample: 12.5
    warmup_s:
      description: Wall time of the level's warm-up requests before the measured phase (load, not measured).
      type: float
      sample: 1.9
    output_tokens:
      description: Completion tokens of the completed requests (server's counts).
      type: int
      sample: 16384
    prompt_tokens:
      description: Prompt tokens of the completed requests (server's counts).
      type: int
      sample: 32768
    aggregate_output_tok_s:
      description: output_tokens / duration_s.
      type: float
      sample: 1979.3
    per_request_tok_s:
      description: Per-request decode tok/s, keys median, p10, p90, mean.
      type: dict
      sample: {"median": 234.1, "p10": 230.0, "p90": 236.2, "mean": 233.8}
    ttft_s:
      description: Time to first token in seconds, keys mean, p50, p90, p99.
      type: dict
      sample: {"mean": 0.12, "p50": 0.11, "p90": 0.15, "p99": 0.2}
    itl_s:
      description: Per-token inter-token latency in seconds (mean, p50, p90, p99); null values when the API gave no per-chunk counts.
      type: dict
    tpot_s:
      description: Time per output token after the first, seconds (mean, p50, p90, p99).
      type: dict
    e2e_latency_s:
      description: End-to-end latency in seconds (mean, p50, p90, p99).
      type: dict
    accept_length:
      description:
        - Sum of completion_tokens over sum of spec_verify_ct of this level's requests.
        - Null without speculative decoding, or with an OpenAI flavour on servers older than SGLang 0.5.23.
      type: float
      sample: 3.42
    spec_verify_ct:
      description: Sum of spec_verify_ct of this level's requests.
      type: int
    max_running_requests:
      description:
        - The limit the server's scheduler applies (requests at once over all DP ranks), from SGLang 0.5.23's
          C(internal_states[].effective_max_running_requests_per_dp), or older servers' top-level value.
        - Not SGLang 0.5.23's top-level C(max_running_requests), the resolved argument (48 with
          speculative decoding when unset); that one is in RV(server.resolved_max_running_requests).
      type: int
      sample: 21
    max_total_num_tokens:
      description: The server's KV pool size in tokens.
      type: int
    invalid:
      description: Why the level's figures are not a measurement (stalled server, implausible burst, starved client); absent when valid.
      type: str
    client_lag:
      description:
        - How late the client's event loop woke up during the level's measured phase, the client's own health
          (O(client_lag_limit)). C(late_s) the late wake-ups' lateness summed, C(max_s) the latest one,
          C(fraction) late_s over the level's duration.
      type: dict
      sample: {"late_s": 0.0, "max_s": 0.004, "fraction": 0.0}
    discarded:
      description:
        - The tries of this level that were measured again because the client was starved, oldest first, each
          with C(why), C(duration_s), C(warmup_s), C(requests) and C(client_lag). Empty when the first try counted.
      type: list
      elements: dict
    precision:
      description:
        - How precisely the level measured its two ranked figures, C(per_request) (median per-request tok/s)
          and C(aggregate) (aggregate output tok/s); each null when too few requests (8) or steady rounds (3) completed.
        - Each has C(estimate), C(se) (standard error), C(half_width) (95% confidence, in tok/s),
          C(relative) (half_width / estimate), C(confidence) (0.95) and C(samples) (requests, or steady rounds of
          min(concurrency, max_running_requests) completions, ramp-up and drain left out).
      type: dict
      sample: {"per_request": {"estimate": 279.5, "se": 1.2, "half_width": 2.6, "relative": 0.0093,
               "confidence": 0.95, "samples": 13}, "aggregate": null}
    stop:
      description:
        - How the level's request count came about. C(mode) V(fixed) (a set count or duration), V(adaptive)
          (stopped by the precision rule or the cap) or V(minimum) (a level outside O(precision_levels));
          C(requests) the measured requests sent.
        - Adaptive levels also have C(metric), C(target), C(bounds), C(min_requests), C(max_requests),
          C(reached) (whether the level stopped before the cap) and C(why) (V(precision) the target precision
          was reached, V(bounds) the interval excluded every bound, V(cap) O(max_requests) ended it).
      type: dict
      sample: {"mode": "adaptive", "metric": "per_request", "target": 0.01, "min_requests": 4,
               "max_requests": 24, "requests": 13, "reached": true, "why": "precision", "bounds": []}
server:
  description: What the server reported from C(/server_info) (C(/get_server_info) on servers older than SGLang 0.5.23).
  returned: success
  type: dict
  contains:
    version:
      description: SGLang version.
      type: str
    max_running_requests:
      description: The effective limit, as in each level's RV(levels[].max_running_requests).
      type: int
    resolved_max_running_requests:
      description: The top-level C(max_running_requests) the server reports (on SGLang 0.5.23 the resolved argument).
      type: int
    server_args:
      description: The server arguments a tuning decision depends on (model, tp/dp, speculative settings, memory settings).
      type: dict
workload:
  description: The load that was sent (workload, api, lengths, temperature, seed, requests or the adaptive stopping settings, warm-up, model).
  returned: always
  type: dict
msg:
  description: Summary, or what went wrong.
  returned: always
  type: str
fault:
  description:
    - What ended a failed benchmark. V(unreachable) no connection to the server; V(connection) requests
      lost their connection or timed out; V(server_error) the server answered with errors;
      V(stalled) no token for O(stall_timeout) or a level overran its overall deadline;
      V(implausible) figures the server cannot produce (a burst after a stall; the level carries
      C(invalid)); V(starved) the client did not get the CPU it needed on its host, after
      O(client_lag_retries) more tries (the level carries C(invalid)); V(busy) another benchmark of the server did not end within O(lock_timeout).
    - Null when every request completed.
  returned: always
  type: str
  sample: stalled
started_at:
  description:
    - When the benchmark began sending load (warm-up included), UTC, ISO 8601 with microseconds, on the
      clock of the host the module ran on.
    - With RV(finished_at), the window the server was under this benchmark's load (two hosts benchmarked
      in one play overlap in time).
  returned: success
  type: str
  sample: "2026-12-01T20:41:02.123456Z"
finished_at:
  description: When the last level ended, UTC, ISO 8601 with microseconds (see RV(started_at)).
  returned: success
  type: str
  sample: "2026-12-01T20:41:30.654321Z"
leftover_pid:
  description: PID of another benchmark of the same server that was waited for or stopped, or null.
  returned: success
  type: int
ansible_facts:
  description: The same content as namespaced facts.
  returned: success
  type: dict
  contains:
    sglang_bench:
      description: levels, server and workload.
      type: dict
"""

import asyncio
import datetime
import os
import traceback

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_native

from ansible_collections.llmops.sglang.plugins.module_utils.bench_client import (
    API_PATHS,
    BenchError,
    BenchmarkBusy,
    ServerLock,
    Endpoint,
    LevelRun,
    ServerUnreachable,
    get_json,
    make_parser,
    parse_base_url,
    post_json,
)
from ansible_collections.llmops.sglang.plugins.module_utils.bench_metrics import summarize_level
from ansible_collections.llmops.sglang.plugins.module_utils.bench_progress import ProgressFile, private_directory
from ansible_collections.llmops.sglang.plugins.module_utils.bench_stopping import (
    StopRule,
    level_precision,
    whole_rounds,
)
from ansible_collections.llmops.sglang.plugins.module_utils import server_info as sinfo
from ansible_collections.llmops.sglang.plugins.module_utils import server_args
from ansible_collections.llmops.sglang.plugins.module_utils.bench_workloads import (
    AGENTIC_CODING_PROMPTS,
    body_factory,
    load_prompt_file,
    normalize_prompts,
)


def validate_levels(value):
    """Concurrency levels as ints, or a message naming the option."""
    allowed = "concurrency_levels must be a non-empty list of integers >= 1 (e.g. [1, 8, 32])"
    if not isinstance(value, list) or not value:
        return None, "%s; got %r" % (allowed, value)
    levels = []
    for item in value:
        if isinstance(item, bool):
            return None, "%s; %r is not an integer" % (allowed, item)
        if isinstance(item, str) and item.strip().lstrip("-").isdigit():
            item = int(item.strip())
        if isinstance(item, float) and item.is_integer():
            item = int(item)
        if not isinstance(item, int):
            return None, "%s; %r is not an integer" % (allowed, item)
        if item < 1:
            return None, "%s; got %d" % (allowed, item)
        levels.append(item)
    return levels, None


def validate(module):
    """Check every option before touching the server; returns a dict of clean values."""
    p = module.params
    levels, err = validate_levels(p["concurrency_levels"])
    if err:
        module.fail_json(msg=err)
    for name in ("output_len", "input_len"):
        if p[name] < 1:
            module.fail_json(msg="%s must be an integer >= 1; got %d" % (name, p[name]))
    if p["stop"] == "adaptive":
        if p["requests_per_level"] is not None or p["duration_s"] is not None:
            module.fail_json(msg="requests_per_level and duration_s apply to stop=fixed; stop is adaptive "
                                 "(set min_requests, max_requests and target_precision instead)")
        if not 0 < p["target_precision"] < 1:
            module.fail_json(msg="target_precision must be a fraction in (0, 1) (0.01 = +-1%%); got %s" % p["target_precision"])
        for name in ("min_requests", "max_requests"):
            if p[name] is not None and p[name] < 1:
                module.fail_json(msg="%s must be an integer >= 1; got %d" % (name, p[name]))
        if p["min_requests"] is not None and p["max_requests"] is not None and p["max_requests"] < p["min_requests"]:
            module.fail_json(msg="max_requests (%d) must be >= min_requests (%d)" % (p["max_requests"], p["min_requests"]))
        for name in ("stop_bounds_se", "stop_bounds_z"):
            if p[name] is not None and p[name] < 0:
                module.fail_json(msg="%s must be a number >= 0; got %s" % (name, p[name]))
        if p["precision_levels"] is not None and any(c not in levels for c in p["precision_levels"]):
            module.fail_json(msg="precision_levels must be levels of concurrency_levels %s; got %s" % (levels, p["precision_levels"]))
    if p["requests_per_level"] is not None and p["requests_per_level"] < 1:
        module.fail_json(msg="requests_per_level must be an integer >= 1; got %d" % p["requests_per_level"])
    if p["duration_s"] is not None and p["duration_s"] <= 0:
        module.fail_json(msg="duration_s must be > 0 seconds; got %s" % p["duration_s"])
    if p["warmup_requests"] < 0:
        module.fail_json(msg="warmup_requests must be an integer >= 0; got %d" % p["warmup_requests"])
    for name in ("connect_timeout", "request_timeout", "stall_timeout", "lock_timeout"):
        if p[name] <= 0:
            module.fail_json(msg="%s must be > 0 seconds; got %s" % (name, p[name]))
    if p["temperature"] < 0:
        module.fail_json(msg="temperature must be >= 0; got %s" % p["temperature"])
    if not 0 < p["client_lag_limit"] <= 1:
        module.fail_json(msg="client_lag_limit must be a fraction in (0, 1] (0.05 = 5%% of a level; 1 turns the check off); got %s"
                         % p["client_lag_limit"])
    if p["client_lag_retries"] < 0:
        module.fail_json(msg="client_lag_retries must be an integer >= 0; got %d" % p["client_lag_retries"])
    try:
        parse_base_url(p["url"])
    except BenchError as exc:
        module.fail_json(msg=to_native(exc))
    prompts = None
    if p["workload"] == "file":
        if bool(p["prompts"]) == bool(p["prompt_file"]):
            module.fail_json(msg="workload=file needs exactly one of prompts (a list) or prompt_file (a JSONL path)")
        try:
            if p["prompt_file"]:
                if not os.path.isfile(p["prompt_file"]):
                    module.fail_json(msg="prompt_file %s does not exist on this host" % p["prompt_file"])
                prompts = load_prompt_file(p["prompt_file"])
            else:
                prompts = normalize_prompts(p["prompts"])
        except ValueError as exc:
            module.fail_json(msg=to_native(exc))
    elif p["prompts"] or p["prompt_file"]:
        module.fail_json(msg="prompts and prompt_file only apply to workload=file; workload is %s" % p["workload"])
    return levels, prompts


def requests_for(concurrency, requests_per_level, max_running=None):
    """Measured requests of a level.

    Default: at least four per worker (and 8), rounded up to whole rounds of
    the requests the server runs at once, min(concurrency,
    max_running_requests). A last round with fewer requests than the others
    would run a smaller batch and pull the aggregate down.
    """
    if requests_per_level:
        return requests_per_level
    running = min(concurrency, max_running) if max_running else concurrency
    running = max(running, 1)
    wanted = max(8, 4 * concurrency)
    return running * ((wanted + running - 1) // running)


ADAPTIVE_MIN_REQUESTS = 4
ADAPTIVE_OPTIONS = ("stop_metric", "target_precision", "min_requests", "max_requests", "stop_bounds", "stop_bounds_se",
                    "stop_bounds_z", "precision_levels")
ADAPTIVE_CAP_FACTOR = 3


def level_plan(concurrency, params, max_running=None):
    """(requests or None for duration_s, StopRule or None, stop description) of one level."""
    if params.get("stop", "fixed") != "adaptive":
        if params.get("duration_s"):
            return None, None, {"mode": "fixed"}
        count = requests_for(concurrency, params.get("requests_per_level"), max_running)
        return count, None, {"mode": "fixed"}
    running = max(1, min(concurrency, max_running) if max_running else concurrency)
    minimum = whole_rounds(max(params.get("min_requests") or ADAPTIVE_MIN_REQUESTS, concurrency), running)
    ranked = params.get("precision_levels")
    if ranked is not None and concurrency not in ranked:
        return minimum, None, {"mode": "minimum"}
    cap = params.get("max_requests") or ADAPTIVE_CAP_FACTOR * requests_for(concurrency, None, max_running)
    cap = max(whole_rounds(cap, running), minimum)
    metric, target = params.get("stop_metric") or "per_request", params.get("target_precision") or 0.01
    rule = StopRule(metric, target, minimum, running, params.get("stop_bounds"), params.get("stop_bounds_se"), params.get("stop_bounds_z"),
                    cap=cap)
    return cap, rule, {
        "mode": "adaptive", "metric": metric, "target": target, "bounds": params.get("stop_bounds") or [],
        "bounds_se": params.get("stop_bounds_se"), "bounds_z": params.get("stop_bounds_z"),
        "min_requests": minimum, "max_requests": cap}


def _server_summary(info):
    """(server dict, effective max_running_requests, max_total_num_tokens) through the shared reader."""
    facts = sinfo.summary(info)
    args = dict((k, info[k]) for k in server_args.SUMMARY_INFO_KEYS if k in info) if isinstance(info, dict) else {}
    server = {"version": facts["version"], "server_args": args,
              "max_running_requests": facts["max_running_requests"],
              "resolved_max_running_requests": facts["resolved_max_running_requests"]}
    return server, facts["max_running_requests"], facts["max_total_num_tokens"]


async def fetch_server_info(endpoint):
    """/server_info (SGLang 0.5.23), falling back to /get_server_info (older servers)."""
    for path in sinfo.PATHS:
        status, doc, text = await get_json(endpoint, path)
        if status not in sinfo.FALL_BACK_ON:
            break
    if status == 401:
        raise BenchError("the server refused api_key (HTTP 401) on %s" % path)
    if status != 200 or not isinstance(doc, dict):
        raise BenchError("GET %s answered HTTP %d: %s" % (path, status, text[:200]))
    return doc


async def resolve_model(endpoint, model, api):
    if model:
        return model
    try:
        status, doc, _text = await get_json(endpoint, "/v1/models")
    except ServerUnreachable:
        raise
    except Exception:  # pylint: disable=broad-except
        status, doc = None, None
    if status == 200 and isinstance(doc, dict) and doc.get("data"):
        return doc["data"][0].get("id")
    if api == "native":
        return None  # /generate does not need it
    raise BenchError("model is not set and GET /v1/models did not name one (HTTP %s)" % status)


# A level whose per-request decode rate beats the fastest pace measured before it (warm-up,
# earlier levels) by this factor is physically impossible for the server: more concurrency never
# makes one request faster. It is a burst of tokens that piled up while the server was stopped.
IMPLAUSIBLE_FACTOR = 2.0

# Faults: what ended a benchmark, so that a caller (the sweep) can tell the configuration's own
# verdict from trouble around it.
#   unreachable  no TCP connection to the server (down, restarting, host going away)
#   connection   requests lost their connection or timed out while the server accepted them
#   server_error the server answered requests with an error (HTTP error, error in the stream)
#   stalled      no token for stall_timeout, or the level overran its overall deadline
#   implausible  figures beyond what the server can do (a burst after a stall)
#   starved      the client did not get the CPU it needed, after client_lag_retries more tries
FAULTS = ("unreachable", "connection", "server_error", "stalled", "implausible", "starved")


def _decode_rate(rec):
    """Decode tok/s of one finished request (as bench_metrics defines it), or None."""
    # Short streams (a few chunks) give no stable rate; they are neither reference nor evidence.
    if not rec.ok or len(rec.times) < 4 or rec.completion_tokens < 16:
        return None
    span = rec.times[-1] - rec.times[0]
    return (rec.completion_tokens - 1) / span if span > 0 else float("inf")


def _fastest_pace(records):
    rates = sorted(r for r in (_decode_rate(rec) for rec in records) if r is not None)
    return rates[len(rates) // 2] if rates else None


def implausible(records, reference):
    """Why this level's figures cannot be real (or None): its p90 request decodes faster than
    IMPLAUSIBLE_FACTOR x the fastest median pace measured before it."""
    if not reference:
        return None
    rates = sorted(r for r in (_decode_rate(rec) for rec in records) if r is not None)
    if not rates:
        return None
    p90 = rates[min(len(rates) - 1, int(0.9 * len(rates)))]
    if p90 > IMPLAUSIBLE_FACTOR * reference:
        return ("per-request decode rate p90 %.0f tok/s is more than %gx the fastest pace measured before at "
                "lower or equal load (%.0f tok/s), which no server does: it was stopped or disturbed (a burst of "
                "held-back tokens, or a stalled reference); not a measurement"
                % (p90, IMPLAUSIBLE_FACTOR, reference))
    return None


def classify_errors(records):
    """server_error when the server itself answered with an error, else connection."""
    errors = [rec.error or "" for rec in records if not rec.ok]
    if any(e.startswith("HTTP ") or "server error in stream" in e for e in errors):
        return "server_error"
    return "connection"


async def _bounded(coro, seconds, what):
    """Await a control request; a stopped server must not hold it for request_timeout."""
    if not seconds:
        return await coro
    try:
        return await asyncio.wait_for(coro, seconds)
    except asyncio.TimeoutError:
        raise StalledServer("server stalled: %s got no answer within stall_timeout=%ss" % (what, seconds))


class StalledServer(BenchError):
    """The server accepted connections but stopped answering."""


async def _flush_cache(endpoint, params, stall, log):
    """POST /flush_cache before a level (flush_cache); a stall message when the server did not answer."""
    if not params.get("flush_cache", True):
        return None
    try:
        status, text = await _bounded(post_json(endpoint, "/flush_cache", None), stall, "POST /flush_cache")
        if status != 200 and log:
            log("flush_cache answered HTTP %d: %s" % (status, text[:100]))
    except StalledServer as exc:
        return str(exc)
    except Exception as exc:  # pylint: disable=broad-except
        if log:
            log("flush_cache failed: %s" % exc)
    return None


CLIENT_STARVED = "the benchmark client was starved of CPU on its host"


def starved_try(run, lag, params):
    """Why this try of a level measured a starved client and is to be measured again (client_starved), or None.

    A try that stalled, was aborted or had failed requests is reported as what it is: measuring it again
    could hide the server's own errors behind a clean try.
    """
    if run.stalled or run.aborted or any(not rec.ok for rec in run.records):
        return None
    return client_starved(lag, params)


def client_starved(lag, params):
    """Why the level measured the client rather than the server (LoopLag.summary over client_lag_limit), or None."""
    limit = params.get("client_lag_limit", 1.0)
    if limit >= 1.0 or lag["fraction"] <= limit:
        return None
    return ("%s: its event loop woke late for %.1f s in all, %.0f%% of the level (client_lag_limit %g; the latest "
            "wake-up %.2f s late), so requests were read and sent late and the figures are the client's, not the "
            "server's" % (CLIENT_STARVED, lag["late_s"], 100 * lag["fraction"], limit, lag["max_s"]))


async def run_benchmark(params, levels, prompts, log=None, report=None):
    """The module's work, callable without Ansible (tests, benchmarks).

    Returns (result dict, failure message or None). ``result["fault"]`` names what
    ended a failed run (see FAULTS), None when every request completed. ``report``, a
    bench_progress.ProgressFile or None, is told each level and kept writing while the load runs.
    """
    writer = asyncio.ensure_future(report.keep_writing()) if report is not None else None
    try:
        return await _run_benchmark(params, levels, prompts, log, report)
    finally:
        if writer is not None:
            writer.cancel()


async def _run_benchmark(params, levels, prompts, log, report):
    endpoint = Endpoint(
        params["url"], api_key=params.get("api_key"), connect_timeout=params["connect_timeout"],
        request_timeout=params["request_timeout"], validate_certs=params.get("validate_certs", True),
    )
    stall = params.get("stall_timeout")
    try:
        info = await _bounded(fetch_server_info(endpoint), stall, "GET /server_info")
    except ServerUnreachable as exc:
        raise ServerUnreachable("url %s: server not reachable: %s" % (params["url"], exc))
    except asyncio.TimeoutError:
        raise StalledServer("server at %s accepted the connection but did not answer /server_info within request_timeout=%ss"
                            % (params["url"], params["request_timeout"]))
    server, max_running, max_total = _server_summary(info)
    model = await resolve_model(endpoint, params.get("model"), params["api"])
    make_body = body_factory(
        params["api"], params["workload"], model, params["input_len"], params["output_len"],
        params["temperature"], params["seed"], prompts,
    )
    parser = make_parser(params["api"])
    path = API_PATHS[params["api"]]
    results = []
    problems = []
    fault = None
    reference = None      # (median e2e s, concurrency) of the last valid level, for the overall deadline
    fastest = None        # fastest median decode tok/s seen before the current level
    for index, concurrency in enumerate(levels, 1):
        # A level the client was starved in is measured again (client_lag_retries), from its cache flush on.
        discarded = []
        while True:
            flush_stalled = await _flush_cache(endpoint, params, stall, log)
            if flush_stalled:
                break
            n_requests, rule, stop = level_plan(concurrency, params, max_running)
            warmup = params["warmup_requests"] if index == 1 or params.get("warmup_levels", "all") == "all" else 0
            run = LevelRun(endpoint, path, parser, make_body, concurrency, n_requests, warmup, params.get("duration_s"),
                           stall_timeout=stall, reference=reference, stop_rule=rule)
            if report is not None:
                # A starved client is the one reason a try is discarded (starved_try).
                report.level(index, concurrency, run, level_try=len(discarded) + 1,
                             retry_reason=CLIENT_STARVED if discarded else None)
            duration = await run.run()
            if report is not None:
                report.level_done(index)
            lag = run.lag.summary(duration)
            starved = starved_try(run, lag, params)
            if starved and len(discarded) < params.get("client_lag_retries", 0):
                discarded.append({"why": starved, "duration_s": round(duration, 3), "warmup_s": round(run.warmup_s, 3),
                                  "requests": len(run.records), "client_lag": lag})
                if log:
                    log("concurrency %d is measured again: %s" % (concurrency, starved))
                continue
            break
        if flush_stalled:
            problems.append(flush_stalled)
            fault = "stalled"
            break
        level = summarize_level(concurrency, run.records, duration)
        level["max_running_requests"] = max_running
        level["max_total_num_tokens"] = max_total
        level["warmup_s"] = round(run.warmup_s, 3)
        level["client_lag"] = lag
        level["discarded"] = discarded
        running = max(1, min(concurrency, max_running) if max_running else concurrency)
        level["precision"] = (level_precision(run.records, run.start, run.start + duration, running)
                              if run.start is not None else None)
        stop["requests"] = len(run.records)
        if rule is not None:
            stop["reached"] = run.stopped_early
            stop["why"] = (rule.reached or {}).get("why") if run.stopped_early else "cap"
        level["stop"] = stop
        if run.stalled:
            # Nothing of a stalled level is a measurement; keep only what says why.
            level["invalid"] = run.stalled
            results.append(level)
            problems.append("concurrency %d: %s" % (concurrency, run.stalled))
            fault = "stalled"
            break
        if starved:
            level["invalid"] = starved
            results.append(level)
            problems.append("concurrency %d: %s (measured %d times)" % (concurrency, starved, len(discarded) + 1))
            fault = "starved"
            break
        warm_pace = _fastest_pace(run.warmup_records)
        if warm_pace is not None:
            fastest = max(fastest or 0.0, warm_pace)
        why = implausible(run.records, fastest)
        if why:
            level["invalid"] = why
            results.append(level)
            problems.append("concurrency %d: %s" % (concurrency, why))
            if log:
                log("concurrency %d is invalid: %s" % (concurrency, why))
            fault = "implausible"
            break
        results.append(level)
        if level["requests_failed"] or run.aborted:
            problems.append("concurrency %d: %d of %d requests failed (%s)" % (
                concurrency, level["requests_failed"], level["requests_failed"] + level["requests_completed"],
                "; ".join(level["errors"][:3]) or run.aborted))
            fault = fault or ("unreachable" if run.aborted else classify_errors(run.records))
        if run.aborted:
            problems.append("stopped: %s" % run.aborted)
            break
        pace = _fastest_pace(run.records)
        if pace is not None:
            fastest = max(fastest or 0.0, pace)
        e2e = sorted(r.t_end - r.t_send for r in run.records if r.ok)
        if e2e:
            reference = (e2e[len(e2e) // 2], concurrency)
    workload = describe_workload(params, levels, prompts, model, max_running)
    result = {"levels": results, "server": server, "workload": workload, "fault": fault if problems else None}
    return result, ("; ".join(problems) if problems else None)


def describe_workload(params, levels, prompts, model, max_running=None):
    synthetic = params["workload"] == "synthetic"
    if params["workload"] == "realistic":
        count = len(AGENTIC_CODING_PROMPTS)
    elif prompts:
        count = len(prompts)
    else:
        count = None
    return {
        "workload": params["workload"],
        "api": params["api"],
        "model": model,
        "input_len": params["input_len"] if synthetic else None,
        "output_len": params["output_len"],
        "temperature": 0.0 if synthetic else params["temperature"],
        "ignore_eos": synthetic,
        "seed": params["seed"],
        "concurrency_levels": levels,
        "requests_per_level": (dict((str(c), requests_for(c, params.get("requests_per_level"), max_running)) for c in levels)
                               if not params.get("duration_s") and params.get("stop", "fixed") == "fixed" else None),
        "stop": params.get("stop", "fixed"),
        "adaptive": (dict((k, params.get(k)) for k in ADAPTIVE_OPTIONS) if params.get("stop", "fixed") == "adaptive" else None),
        "duration_s": params.get("duration_s"),
        "warmup_requests": params["warmup_requests"],
        "warmup_levels": params.get("warmup_levels", "all"),
        "prompt_count": count,
        "flush_cache": params.get("flush_cache", True),
    }


def name_this_process(name="sglang_bench"):
    """Show a load-driving benchmark as "sglang_bench" in the host's process list (ps -e, pgrep -x).

    Set only while the per-server lock is held, so that the process list tells how many
    benchmarks drive load at once (with pipelining the command line is only "python3"): the
    caller gives the process its old name back before it releases the lock, since it still
    reports and exits after that (and its parent may reap it later). Returns the old name.
    Best effort: Linux only, nothing depends on it.
    """
    try:
        with open("/proc/self/comm", "r+") as fh:
            old = fh.read().strip()
            fh.seek(0)
            fh.write(name)
        return old
    except (IOError, OSError):
        return None


def _run_sync(coro):
    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(coro)
    finally:
        loop.close()


def utc_timestamp():
    """Now, UTC, ISO 8601 with microseconds (the started_at / finished_at format)."""
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def main():
    module = AnsibleModule(
        argument_spec=dict(
            url=dict(type="str", default="http://127.0.0.1:30000"),
            api=dict(type="str", default="native", choices=["native", "completions", "chat"]),
            api_key=dict(type="str", no_log=True),
            model=dict(type="str"),
            connect_timeout=dict(type="float", default=10.0),
            request_timeout=dict(type="float", default=600.0),
            validate_certs=dict(type="bool", default=True),
            concurrency_levels=dict(type="list", elements="raw", default=[1, 2, 4, 8, 16, 32, 64]),
            requests_per_level=dict(type="int"),
            stop=dict(type="str", default="fixed", choices=["fixed", "adaptive"]),
            stop_metric=dict(type="str", default="per_request", choices=["per_request", "aggregate"]),
            target_precision=dict(type="float", default=0.01),
            min_requests=dict(type="int"),
            max_requests=dict(type="int"),
            stop_bounds=dict(type="list", elements="float"),
            stop_bounds_se=dict(type="float"),
            stop_bounds_z=dict(type="float"),
            precision_levels=dict(type="list", elements="int"),
            duration_s=dict(type="float"),
            warmup_requests=dict(type="int", default=2),
            warmup_levels=dict(type="str", default="all", choices=["all", "first"]),
            seed=dict(type="int", default=0),
            workload=dict(type="str", default="synthetic", choices=["synthetic", "realistic", "file"]),
            input_len=dict(type="int", default=1024),
            output_len=dict(type="int", default=512),
            temperature=dict(type="float", default=0.7),
            prompts=dict(type="list", elements="raw"),
            prompt_file=dict(type="path"),
            flush_cache=dict(type="bool", default=True),
            fail_on_error=dict(type="bool", default=True),
            stall_timeout=dict(type="float", default=30.0),
            client_lag_limit=dict(type="float", default=0.05),
            client_lag_retries=dict(type="int", default=2),
            leftover=dict(type="str", default="wait", choices=["wait", "stop"]),
            lock_timeout=dict(type="float", default=900.0),
            progress_file=dict(type="path"),
        ),
        mutually_exclusive=[("requests_per_level", "duration_s")],
        supports_check_mode=True,
    )
    levels, prompts = validate(module)
    workload = describe_workload(module.params, levels, prompts, module.params["model"])
    if module.check_mode:
        module.exit_json(changed=False, levels=[], workload=workload,
                         msg="check mode: no load sent to %s (%d levels would run)" % (module.params["url"], len(levels)))
    if module.params["progress_file"]:
        try:
            private_directory(os.path.dirname(module.params["progress_file"]))
        except (OSError, ValueError) as exc:
            module.fail_json(msg="cannot use progress_file %s: %s" % (module.params["progress_file"], to_native(exc)),
                             workload=workload)
    progress = ProgressFile(module.params["progress_file"], levels) if module.params["progress_file"] else None

    def fail(**kwargs):
        if progress is not None:
            progress.state("failed", kwargs.get("msg"))
        _warn_progress(module, progress)
        module.fail_json(**kwargs)

    lock = ServerLock(module.params["url"])
    if progress is not None:
        progress.state("waiting", "waiting for any other benchmark of %s to end (leftover=%s)" % (module.params["url"], module.params["leftover"]))
    try:
        other = lock.acquire(module.params["lock_timeout"], module.params["leftover"], log=module.warn)
    except BenchmarkBusy as exc:
        fail(msg=to_native(exc), fault="busy", workload=workload)
    old_name = name_this_process()
    if progress is not None:
        progress.state("running")
    started_at = utc_timestamp()
    try:
        result, problem = _run_sync(run_benchmark(module.params, levels, prompts, log=module.warn, report=progress))
    except StalledServer as exc:
        fail(msg=to_native(exc), fault="stalled", workload=workload)
    except ServerUnreachable as exc:
        fail(msg=to_native(exc), fault="unreachable", workload=workload)
    except BenchError as exc:
        fail(msg=to_native(exc), fault=None, workload=workload)
    except Exception as exc:  # pylint: disable=broad-except
        fail(msg="benchmark crashed: %s" % to_native(exc), exception=traceback.format_exc(), workload=workload)
    finally:
        if old_name:
            name_this_process(old_name)
        lock.release()
    result["leftover_pid"] = other
    result["started_at"], result["finished_at"] = started_at, utc_timestamp()
    if problem:
        msg = "some requests failed: %s" % problem if result["fault"] not in ("stalled", "implausible", "starved") else problem
        if module.params["fail_on_error"]:
            fail(msg=msg, **result)
        module.warn(msg)
    else:
        msg = "measured %d concurrency levels" % len(result["levels"])
    if progress is not None:
        progress.state("done", msg)
    _warn_progress(module, progress)
    module.exit_json(changed=False, msg=msg, ansible_facts={"sglang_bench": result}, **result)


def _warn_progress(module, progress):
    if progress is not None and progress.error:
        module.warn(progress.error)


if __name__ == "__main__":
    main()
