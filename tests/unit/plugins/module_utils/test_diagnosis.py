"""The journal diagnosis: each SGLang startup failure is recognised from realistic journal
output (SGLang 0.5.23 wording) and carries SGLang's remedy; precedence between overlapping
messages is fixed."""
import pytest

import re

from ansible_collections.llmops.sglang.plugins.module_utils import diagnosis
from ansible_collections.llmops.sglang.plugins.module_utils.diagnosis import (
    DIAGNOSIS_KEYS, diagnose, mismatch_diagnosis, timeout_diagnosis)
from ansible_collections.llmops.sglang.plugins.module_utils.sglang_contract import FLAGS

START = [
    "[2026-11-29 19:00:01] server_args=ServerArgs(model_path='/models/Qwen3.5-122B-A10B-FP8', tp_size=4, ...)",
    "[2026-11-29 19:00:09 TP0] Load weight begin. avail mem=94.51 GB",
    "[2026-11-29 19:01:40 TP0] Load weight end. elapsed=91.20 s, type=Qwen3_5MoeForCausalLM, quant=fp8, avail mem=62.10 GB, "
    "mem usage=30.30 GB.",
]
DEATH = [
    "[2026-11-29 19:01:41] Received sigquit from a child process. It usually means the child failed.",
    "sglang-qwen.service: Main process exited, code=killed, status=9/KILL",
    "sglang-qwen.service: Failed with result 'signal'.",
]

NOT_ENOUGH = START + [
    "[2026-11-29 19:01:41 TP0] Scheduler hit an exception: Traceback (most recent call last):",
    '  File "/opt/sglang/venv/lib/python3.12/site-packages/sglang/srt/model_executor/model_runner.py", line 1402, in init_memory_pool',
    '    raise RuntimeError(',
    "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.",
] + DEATH

GRAPH = START + [
    "[2026-11-29 19:01:44 TP0] KV Cache is allocated. dtype: torch.bfloat16, #tokens: 412000, K size: 9.40 GB, V size: 9.40 GB",
    "[2026-11-29 19:01:44 TP0] Capture target verify CUDA graph begin. backend=full, num_tokens_per_req=4, avail mem=3.10 GB",
    "[2026-11-29 19:01:50 TP0] Scheduler hit an exception: Traceback (most recent call last):",
    "Exception: Capture cuda graph failed: CUDA out of memory. Tried to allocate 1.50 GiB. GPU 0 has a total capacity of 94.97 GiB",
    "Possible solutions:",
    "1. set --mem-fraction-static to a smaller value (e.g., 0.8 or 0.7)",
    "2. set --cuda-graph-max-bs-decode to a smaller value (e.g., 16)",
] + DEATH

OOM = START + [
    "[2026-11-29 19:01:44 TP2] Scheduler hit an exception: Traceback (most recent call last):",
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 2 has a total capacity of 94.97 GiB of which 1.02 GiB is free.",
] + DEATH

# 0.5.23 distributed/bootstrap.py _check_tp_memory_balance (SGLANG_ENABLE_TP_MEMORY_INBALANCE_CHECK, on by
# default): the ranks whose GPU is free see the minimum over the ranks below 90% of their own.
UNBALANCED = START[:1] + [
    "[2026-11-29 19:00:09 TP1] Scheduler hit an exception: Traceback (most recent call last):",
    "RuntimeError: The memory capacity is unbalanced. Some GPUs may be occupied by other processes. "
    "pre_model_load_memory=40.1, local_gpu_memory=94.5, local_gpu_memory * 0.9=85.05",
] + DEATH

# 0.5.23 with --tp-size 8 on a host with 4 GPUs (distributed/bootstrap.py init_parallel_runtime, torch 2.14)
TOO_FEW_GPUS = START[:1] + [
    "[2026-11-29 19:00:09 TP4] Init parallel begin.",
    "[2026-11-29 19:00:09 TP4] Context: device=cuda gpu_id=4 CUDA_VISIBLE_DEVICES=None tp_rank=4",
    "[2026-11-29 19:00:09 TP4] Scheduler hit an exception: Traceback (most recent call last):",
    '  File "/opt/sglang/venv/lib/python3.11/site-packages/sglang/srt/distributed/bootstrap.py", line 133, in init_parallel_runtime',
    "    torch.get_device_module(device).set_device(get_device().gpu_id)",
    "torch.AcceleratorError: CUDA error: invalid device ordinal",
    "GPU device may be out of range, do you have enough GPUs?",
] + DEATH

UNKNOWN = START + [
    "ModuleNotFoundError: No module named 'flashinfer'",
] + DEATH

# A kernel's bad memory access in the warm-up request's forward (the simulator's faults.start_failure_min_steps):
# nothing names a cause the collection knows a remedy for.
ILLEGAL_ACCESS = START + [
    "[2026-12-06 23:59:01 TP0] Scheduler hit an exception: Traceback (most recent call last):",
    "torch.AcceleratorError: CUDA error: an illegal memory access was encountered",
    "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.",
    "[2026-12-06 23:59:01] SIGQUIT received. signum=None, frame=None. It usually means one child failed.",
] + DEATH


# What the real 0.5.23 parser printed (prepare_server_args, Python 3.11), as journald shows it:
# the usage line (hundreds of lines, abridged here) and the error, then exit code 2.
USAGE = [
    "sglang-qwen[4711]: usage: sglang serve [-h] --model-path MODEL_PATH",
    "sglang-qwen[4711]:                     [--tokenizer-path TOKENIZER_PATH]",
    "sglang-qwen[4711]:                     [--enable-flashinfer-allreduce-fusion]",
]
EXIT2 = ["sglang-qwen.service: Main process exited, code=exited, status=2/INVALIDARGUMENT"]
# The journal tail of a test host's start on 2026-12-07 (systemd 252), the process never exec'd.
CGROUP = ["Started sglang-qwen.service - SGLang server (Qwen3.5-122B-A10B-FP8).",
          "sglang-qwen.service: Main process exited, code=exited, status=219/CGROUP",
          "sglang-qwen.service: Failed with result 'exit-code'."]
# With the forked child's own line, as systemd 252 writes it (src/core/execute.c: "Failed at step %s spawning %s: %m").
EXEC = ["sglang-qwen.service: Failed at step EXEC spawning /opt/sglang/venv/bin/python: No such file or directory",
        "sglang-qwen.service: Main process exited, code=exited, status=203/EXEC"]
AMBIGUOUS = USAGE + ["sglang-qwen[4711]: sglang serve: error: ambiguous option: --cuda-graph-max-bs could match "
                     "--cuda-graph-max-bs-decode, --cuda-graph-max-bs-prefill"] + EXIT2
UNRECOGNIZED = USAGE + ["sglang-qwen[4711]: sglang serve: error: unrecognized arguments: --enable-torch-compil 1"] + EXIT2
CHOICE = USAGE + ["sglang-qwen[4711]: sglang serve: error: argument --kv-cache-dtype: invalid choice: 'fp4_e2m1' (choose "
                  "from 'auto', 'fp8_e5m2', 'fp8_e4m3', 'mxfp8', 'bf16', 'bfloat16', 'nvfp4', 'fp4_mx_block16')"] + EXIT2


@pytest.mark.parametrize("lines, key", [
    (AMBIGUOUS, "bad_argument"),
    (UNRECOGNIZED, "bad_argument"),
    (CHOICE, "bad_argument"),
    (NOT_ENOUGH, "not_enough_memory"),
    (GRAPH, "cuda_graph_capture_failed"),
    (OOM, "cuda_out_of_memory"),
    (UNBALANCED, "unbalanced_memory"),
    (TOO_FEW_GPUS, "too_few_gpus"),
    (CGROUP, "systemd_setup"),
    (EXEC, "systemd_setup"),
    (UNKNOWN, "unknown"),
    (ILLEGAL_ACCESS, "unknown"),
    ([], "unknown"),
])
def test_each_failure_is_recognised(lines, key):
    d = diagnose(lines)
    assert d["key"] == key
    assert d["key"] in DIAGNOSIS_KEYS
    assert d["message"] and d["remedy"]
    if key != "unknown":
        assert d["evidence"] in [line.strip() for line in lines]


@pytest.mark.parametrize("lines, evidence", [
    (UNKNOWN, "ModuleNotFoundError: No module named 'flashinfer'"),
    (ILLEGAL_ACCESS, "torch.AcceleratorError: CUDA error: an illegal memory access was encountered"),
    (START + DEATH, None),
    ([], None),
])
def test_without_a_known_cause_the_evidence_is_the_exception_a_traceback_ended_with(lines, evidence):
    d = diagnose(lines)
    assert d["key"] == "unknown" and d["evidence"] == evidence


def test_systemd_setup_names_the_step_and_loses_to_sglangs_own_error():
    assert diagnose(CGROUP)["evidence"] == "sglang-qwen.service: Main process exited, code=exited, status=219/CGROUP"
    assert diagnose(EXEC)["evidence"].endswith("Failed at step EXEC spawning /opt/sglang/venv/bin/python: No such file or directory")
    # An exit of SGLang itself (argparse's 2) is not systemd's; a later start that ran names its own cause.
    assert diagnose(EXIT2)["key"] == "unknown"
    assert diagnose(CGROUP + NOT_ENOUGH)["key"] == "not_enough_memory"


def test_not_enough_memory_quotes_sglangs_remedy():
    d = diagnose(NOT_ENOUGH)
    assert "increase --mem-fraction-static" in d["remedy"]
    assert d["evidence"] == "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static."


def test_graph_capture_wins_over_the_oom_inside_it():
    # the capture failure message embeds "CUDA out of memory": the capture advice is the useful one
    d = diagnose(GRAPH)
    assert d["key"] == "cuda_graph_capture_failed"
    assert "--cuda-graph-max-bs-decode" in d["remedy"]


def test_oom_remedy_points_the_other_way_from_not_enough_memory():
    assert "lower --mem-fraction-static" in diagnose(OOM)["remedy"]
    assert "increase --mem-fraction-static" in diagnose(NOT_ENOUGH)["remedy"]


def test_unbalanced_memory_says_gpus_are_occupied():
    assert "occupied by other processes" in diagnose(UNBALANCED)["remedy"]


def test_too_few_gpus_names_the_tp_size_variable():
    d = diagnose(TOO_FEW_GPUS)
    assert d["evidence"] == "torch.AcceleratorError: CUDA error: invalid device ordinal"
    assert "sglang_service_tp_size" in d["remedy"] and "sglang_service_cuda_visible_devices" in d["remedy"]


def test_most_specific_cause_wins_regardless_of_order():
    # a crash loop's journal can hold several attempts; the KV-pool message is the root cause
    assert diagnose(OOM + NOT_ENOUGH)["key"] == "not_enough_memory"
    assert diagnose(NOT_ENOUGH + OOM)["key"] == "not_enough_memory"


def test_timeout_and_mismatch():
    assert timeout_diagnosis()["key"] == "timeout"
    d = mismatch_diagnosis([{"key": "speculative_num_steps", "expected": 4, "actual": 3}])
    assert d["key"] == "verification_mismatch"
    assert "speculative_num_steps: expected 4, server reports 3" in d["evidence"]


def test_ambiguous_old_flag_names_the_0_5_23_spelling():
    d = diagnose(AMBIGUOUS)
    assert "--cuda-graph-max-bs" in d["message"] and "0.5.23" in d["message"]
    assert d["remedy"].startswith("Use --cuda-graph-max-bs-decode")
    assert d["evidence"].endswith("could match --cuda-graph-max-bs-decode, --cuda-graph-max-bs-prefill")


def test_unrecognized_flag_gets_the_closest_0_5_23_spelling():
    d = diagnose(UNRECOGNIZED)
    assert "--enable-torch-compil" in d["message"]
    assert "use --enable-torch-compile" in d["remedy"]


def test_invalid_choice_lists_the_choices():
    d = diagnose(CHOICE)
    assert "'fp4_e2m1'" in d["message"] and "'fp4_mx_block16'" in d["remedy"]


def test_a_parse_failure_wins_over_anything_later():
    assert diagnose(AMBIGUOUS + NOT_ENOUGH)["key"] == "bad_argument"


def _remedies():
    """(text, refused flags it may quote) for every static entry and the argparse class's answers."""
    entries = list(diagnosis.DIAGNOSES) + [diagnosis.UNKNOWN, diagnosis.TIMEOUT, diagnosis.VERIFICATION_MISMATCH]
    out = [(e["message"] + " " + e["remedy"], set()) for e in entries]
    out += [(text, set()) for text in diagnosis.RENAMED_FLAGS.values()]
    for lines in (AMBIGUOUS, UNRECOGNIZED, CHOICE):
        d = diagnose(lines)
        # the refused flag is quoted from the journal's error line; everything else must exist
        refused = set(re.findall(r"--[a-z0-9][a-z0-9-]*", d["evidence"].split("could match")[0]))
        out.append((d["remedy"], refused))
    return out


def test_every_flag_a_remedy_names_exists_in_0_5_23():
    named = set()
    for text, refused in _remedies():
        flags = set(re.findall(r"--[a-z0-9][a-z0-9-]*", text)) - refused
        assert flags - FLAGS == set(), text
        named |= flags
    assert {"--cuda-graph-max-bs-decode", "--mem-fraction-static", "--enable-torch-compile"} <= named


def test_adaptive_disabled_reads_sglangs_reason_from_the_journal():
    from ansible_collections.llmops.sglang.plugins.module_utils.diagnosis import adaptive_disabled_diagnosis
    mismatches = [{"key": "speculative_adaptive", "expected": True, "actual": False}]
    # SGLang 0.5.23 speculative_hook._maybe_disable_adaptive's warning, as the journal shows it
    line = ("[2026-12-01 10:00:00] speculative_adaptive disabled: speculative_eagle_topk=2 (only topk=1 is supported). "
            "Falling back to static speculative params.")
    d = adaptive_disabled_diagnosis(["[2026-12-01 10:00:00] server_args=ServerArgs(...)", line], mismatches)
    assert d["key"] == "speculative_adaptive_disabled" and d["key"] in DIAGNOSIS_KEYS
    assert d["message"].endswith("was asked for: speculative_eagle_topk=2 (only topk=1 is supported).")
    assert d["evidence"] == line
    assert "sglang_service_speculative_adaptive" in d["remedy"]
    bare = adaptive_disabled_diagnosis([], mismatches)
    assert "does not say why" in bare["message"] and "speculative_adaptive: expected True" in bare["evidence"]


def test_adaptive_disabled_matches_the_simulators_copy_of_sglangs_warning():
    from sglang_sim import args as sim_args
    from ansible_collections.llmops.sglang.plugins.module_utils.diagnosis import adaptive_disabled_diagnosis
    args = sim_args.build_parser().parse_args(
        ["--model-path", "m", "--speculative-algorithm", "NEXTN", "--speculative-num-steps", "3", "--speculative-eagle-topk", "1",
         "--attn-dp-size", "2", "--speculative-adaptive"])
    lines = ["[2026-12-01 10:00:00] %s" % w for w in sim_args.resolve(args)]
    d = adaptive_disabled_diagnosis(lines, [{"key": "speculative_adaptive", "expected": True, "actual": False}])
    assert d["message"].endswith(": attention DP is not supported (adaptive tier decisions are not synchronized across DP ranks).")
