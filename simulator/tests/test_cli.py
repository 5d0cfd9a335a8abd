"""Command line: SGLang's flags, aliases, speculative rules and startup failures."""

import subprocess
import sys

import pytest

from sglang_sim import args as sim_args
from sglang_sim.testing import free_port


def parse(argv):
    args = sim_args.build_parser().parse_args(["--model-path", "m"] + argv)
    return args, sim_args.resolve(args)


def test_aliases_and_prefix():
    assert parse(["--tp", "4"])[0].tp_size == 4
    assert parse(["--tensor-parallel-size", "2"])[0].tp_size == 2
    assert parse(["--dp-size", "2"])[0].dp_size == 2
    assert sim_args.build_parser().parse_args(["--model", "x"]).model_path == "x"


def test_defaults_match_sglang():
    args, _warnings = parse([])
    assert (args.host, args.port, args.kv_cache_dtype, args.watchdog_timeout) == ("127.0.0.1", 30000, "auto", 300)
    assert args.mem_fraction_static is None and args.max_running_requests is None


@pytest.mark.parametrize("argv", [["--no-such-flag"], ["--kv-cache-dtype", "int3"], ["--kv-cache-dtype", "fp4_e2m1"],
                                  ["--tp-size", "four"], ["--cuda-graph-max-bs", "8"]])
def test_bad_flags_fail_like_argparse(argv):
    with pytest.raises(SystemExit) as exc:
        parse(argv)
    assert exc.value.code == 2


def test_unknown_speculative_algorithm_fails_at_resolution_as_on_0_5_23():
    # 0.5.23's parser has no choices for it; SpeculativeAlgorithm.from_string raises later
    with pytest.raises(ValueError, match="Unknown speculative algorithm name: MAGIC"):
        parse(["--speculative-algorithm", "MAGIC"])
    args, _warnings = parse(["--speculative-algorithm", "nextn"])
    assert args.speculative_algorithm == "EAGLE"


def test_0_5_23_flags_parse():
    args, _warnings = parse(["--cuda-graph-max-bs-decode", "16", "--cuda-graph-max-bs-prefill", "8",
                             "--kv-cache-dtype", "fp4_mx_block16", "--context-length", "128k"])
    assert (args.cuda_graph_max_bs_decode, args.cuda_graph_max_bs_prefill) == (16, 8)
    assert args.kv_cache_dtype == "fp4_mx_block16" and args.context_length == 128000


def test_topk_1_forces_draft_tokens_with_warning():
    args, warnings = parse(["--speculative-algorithm", "EAGLE", "--speculative-num-steps", "3",
                            "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", "7"])
    assert args.speculative_num_draft_tokens == 4
    assert any("speculative_num_draft_tokens is adjusted to speculative_num_steps + 1" in w for w in warnings)


def test_max_running_requests_reset_to_48():
    args, warnings = parse(["--speculative-algorithm", "NEXTN", "--speculative-num-steps", "2", "--speculative-eagle-topk", "1"])
    assert args.max_running_requests == 48 and args.speculative_algorithm == "EAGLE"
    assert any(w.startswith("Max running requests is reset to 48 for speculative decoding.") for w in warnings)
    args, warnings = parse(["--speculative-algorithm", "EAGLE", "--speculative-num-steps", "2", "--speculative-eagle-topk", "1",
                            "--max-running-requests", "8"])
    assert args.max_running_requests == 8
    assert not any("reset to 48" in w for w in warnings)


def test_auto_pick_when_none_given():
    args, _warnings = parse(["--speculative-algorithm", "EAGLE"])
    assert (args.speculative_num_steps, args.speculative_eagle_topk, args.speculative_num_draft_tokens) == (3, 1, 4)


@pytest.mark.parametrize("argv", [["--speculative-eagle-topk", "1"], ["--speculative-num-draft-tokens", "4"],
                                  ["--speculative-num-steps", "3"]])
def test_all_three_or_none(argv):
    with pytest.raises(ValueError):
        parse(["--speculative-algorithm", "EAGLE"] + argv)


def run_sim(argv, timeout=30, profile="fast"):
    cmd = [sys.executable, "-u", "-m", "sglang_sim", "--model-path", "/m", "--port", str(free_port()),
           "--sim-profile", profile] + argv
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout, universal_newlines=True, check=False)


SPEC = ["--tp-size", "4", "--speculative-algorithm", "EAGLE", "--speculative-eagle-topk", "1", "--speculative-num-steps"]


def test_deep_drafts_die_with_not_enough_memory():
    proc = run_sim(SPEC + ["10"])
    assert proc.returncode != 0
    assert "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static." in proc.stdout
    assert "Load weight end." in proc.stdout
    assert "fired up" not in proc.stdout and "KV Cache is allocated" not in proc.stdout


def test_cuda_graph_capture_failure_lists_solutions():
    proc = run_sim(SPEC + ["3", "--mem-fraction-static", "0.98"])
    assert proc.returncode != 0
    assert "Capture cuda graph failed" in proc.stdout
    assert "Possible solutions:" in proc.stdout and "--cuda-graph-max-bs-decode" in proc.stdout
    assert "Capture target verify CUDA graph begin." in proc.stdout


def test_more_ranks_than_gpus_fail_as_sglang_does():
    # SGLang 0.5.23 bootstrap.init_parallel_runtime: the first rank without a GPU logs its context, set_device's
    # error reaches run_scheduler_process, whose SIGQUIT ends the tree (the main process SIGKILLs itself).
    proc = run_sim(["--tp-size", "8"])  # the fast profile has 4 GPUs
    assert proc.returncode == -9
    lines = proc.stdout.splitlines()
    context = [i for i, line in enumerate(lines) if "TP4] Context: device=cuda gpu_id=4 CUDA_VISIBLE_DEVICES=" in line]
    crash = [i for i, line in enumerate(lines) if "TP4] Scheduler hit an exception: Traceback" in line]
    ordinal = [i for i, line in enumerate(lines) if line == "torch.AcceleratorError: CUDA error: invalid device ordinal"]
    quit_line = [i for i, line in enumerate(lines) if "Received sigquit from a child process." in line]
    assert context and crash and ordinal and quit_line
    assert context[0] < crash[0] < ordinal[0] < quit_line[0]
    assert lines[context[0]].endswith(" tp_rank=4")
    assert "TP4] Init parallel begin." in proc.stdout and "Init parallel ends" not in proc.stdout
    assert "Load weight begin" not in proc.stdout


def _kv_tokens(log):
    line = [text for text in log.splitlines() if "KV Cache is allocated." in text][0]
    return int(line.split("#tokens: ")[1].split(",")[0])


def test_another_process_on_a_gpu_is_unbalanced_memory_as_sglang_does(tmp_path, monkeypatch):
    # SGLang 0.5.23 bootstrap._check_tp_memory_balance: the least free GPU below 90% of a free one fails the
    # start (SGLANG_ENABLE_TP_MEMORY_INBALANCE_CHECK, on by default); off, it warns and sizes the pools on it.
    from sglang_sim.testing import SimProcess, write_profile
    occupied = write_profile({"timing": {"load_time_s": 0.1, "warmup_s": 0.01}, "faults": {"occupied_gpu_gib": 20.0}},
                             directory=str(tmp_path))
    proc = run_sim(SPEC + ["3"], profile=occupied)
    assert proc.returncode == -9
    lines = proc.stdout.splitlines()
    error = [i for i, line in enumerate(lines) if line.startswith(
        "RuntimeError: The memory capacity is unbalanced. Some GPUs may be occupied by other processes. "
        "pre_model_load_memory=73.67, local_gpu_memory=93.67, local_gpu_memory * 0.9=")]
    parallel = [i for i, line in enumerate(lines) if "TP0] Init parallel ends." in line]
    assert parallel and error and parallel[0] < error[0]
    assert "Received sigquit from a child process." in proc.stdout and "Load weight begin" not in proc.stdout

    with SimProcess(SPEC + ["3"], profile="fast") as sim:
        free = sim.output()
    monkeypatch.setenv("SGLANG_ENABLE_TP_MEMORY_INBALANCE_CHECK", "false")
    with SimProcess(SPEC + ["3"], profile=occupied) as sim:  # serves
        warned = sim.output()
    assert "The memory capacity is unbalanced." in warned and "RuntimeError" not in warned
    assert _kv_tokens(warned) < _kv_tokens(free)


def test_a_warm_up_that_fails_ends_the_server_before_it_is_ready(tmp_path):
    # faults.start_failure_min_steps: the scheduler fails the warm-up's forward, and the tokenizer manager,
    # which has SIGQUIT once the first request was sent, ends the process tree (SGLang 0.5.23).
    from sglang_sim.testing import SimProcess, write_profile
    failing = write_profile({"timing": {"load_time_s": 0.1, "warmup_s": 0.01}, "faults": {"start_failure_min_steps": 4}},
                            directory=str(tmp_path))
    proc = run_sim(SPEC + ["4"], profile=failing)
    assert proc.returncode == -9
    lines = proc.stdout.splitlines()
    crash = [i for i, line in enumerate(lines) if "TP0] Scheduler hit an exception: Traceback" in line]
    error = [i for i, line in enumerate(lines) if line == "torch.AcceleratorError: CUDA error: an illegal memory access was encountered"]
    quit_line = [i for i, line in enumerate(lines) if "SIGQUIT received. signum=None, frame=None." in line]
    ready = [i for i, line in enumerate(lines) if "Uvicorn running on" in line]
    assert ready and crash and error and quit_line and ready[0] < crash[0] < error[0] < quit_line[0]
    assert "fired up" not in proc.stdout
    with SimProcess(SPEC + ["3"], profile=failing) as sim:  # fewer steps serve
        assert "fired up" in sim.output()


def test_a_warm_up_that_hangs_never_gets_ready_and_holds_a_sigterm_drain(tmp_path):
    import signal
    import time
    import urllib.error
    import urllib.request
    from sglang_sim.testing import SimProcess, write_profile
    hanging = write_profile({"timing": {"load_time_s": 0.1, "warmup_s": 0.01, "sigterm_poll_s": 0.2},
                             "faults": {"start_hang_min_steps": 4}},
                            directory=str(tmp_path))
    sim = SimProcess(SPEC + ["4"], profile=hanging, wait=False)
    with sim:
        deadline = time.monotonic() + 20
        while "faults.start_hang_min_steps" not in sim.output() and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(0.5)
        with pytest.raises(urllib.error.HTTPError) as answer:
            urllib.request.urlopen(sim.url + "/health_generate", timeout=5)
        assert answer.value.code == 503
        # SGLang's drain waits on the warm-up request it never finishes (systemd's TimeoutStopSec ends that)
        sim.proc.send_signal(signal.SIGTERM)
        with pytest.raises(subprocess.TimeoutExpired):
            sim.proc.wait(timeout=1.5)
        assert "Remaining number of requests 1." in sim.output()
        assert sim.stop(sig=signal.SIGINT) == 0  # uvicorn's SIGINT ends a drain at once
        assert "fired up" not in sim.output()


def test_weights_that_do_not_fit_are_cuda_oom():
    proc = run_sim(["--tp-size", "1"])
    assert proc.returncode != 0 and "torch.OutOfMemoryError: CUDA out of memory" in proc.stdout


def test_bad_profile_is_a_clear_error(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("timing:\n  jitter: -2\n")
    proc = subprocess.run([sys.executable, "-m", "sglang_sim", "--model-path", "m", "--sim-profile", str(bad)],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, timeout=30, check=False)
    assert proc.returncode == 2 and "timing.jitter: must be >= 0.0" in proc.stdout
    # argparse's wording for a refused value, which the collection's diagnosis reads as bad_argument
    assert proc.stdout.splitlines()[-1].startswith("sglang serve: error: argument --sim-profile: profile ")


def test_startup_log_lines_in_order():
    from sglang_sim.testing import SimProcess

    with SimProcess(SPEC + ["2", "--speculative-num-draft-tokens", "9"], profile="fast") as sim:
        log = sim.output()
    # SGLang 0.5.23's wording (distributed/bootstrap.py, model_runner.py, memory_pool.py, cuda_graph_setup.py)
    order = ["Max running requests is reset to 48", "speculative_num_draft_tokens is adjusted", "Init parallel begin.",
             "Init parallel ends. elapsed=", "Memory baseline taken. mem usage=", "Load weight begin. avail mem=",
             "Load weight end. elapsed=", "KV Cache is allocated. dtype: torch.bfloat16, #tokens: ", "Memory pool end. avail mem=",
             "Capture target verify CUDA graph begin. backend=full, num_tokens_per_req=3, avail mem=",
             "Capture target verify CUDA graph end. bs=[",
             "max_total_num_tokens=", "Uvicorn running on http://127.0.0.1:", "The server is fired up and ready to roll!"]
    positions = [log.index(item) for item in order]
    assert positions == sorted(positions)
    assert "max_running_requests=" in log


def test_bind_failure_exits_nonzero():
    import socket

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(1)
    port = sock.getsockname()[1]
    try:
        cmd = [sys.executable, "-m", "sglang_sim", "--model-path", "m", "--tp-size", "4", "--port", str(port),
               "--sim-profile", "fast"]
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, timeout=30,
                              check=False)
    finally:
        sock.close()
    assert proc.returncode != 0 and "error while attempting to bind" in proc.stdout


def test_predict_cli():
    out = subprocess.run([sys.executable, "-m", "sglang_sim", "predict", "--steps", "2", "--concurrency", "1", "--json"],
                         stdout=subprocess.PIPE, universal_newlines=True, timeout=30, check=True).stdout
    import json

    rows = json.loads(out)
    assert rows[0]["steps"] == 2 and rows[0]["per_request_tok_s"] > 0


def test_predict_cli_prints_a_configuration_that_cannot_start():
    # Steps 10 does not fit the default profile's memory (the seed: "Not enough memory" at start):
    # its row names the error at each level instead of failing the whole table.
    proc = subprocess.run([sys.executable, "-m", "sglang_sim", "predict", "--steps", "3", "--steps", "10",
                           "--concurrency", "1", "--concurrency", "16"],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=30, check=False)
    assert proc.returncode == 0, proc.stderr
    rows = [line.split() for line in proc.stdout.splitlines()[1:]]
    assert [row[:2] for row in rows] == [["3", "1"], ["3", "16"], ["10", "1"], ["10", "16"]]
    assert rows[2][-1] == rows[3][-1] == "not_enough_memory"
