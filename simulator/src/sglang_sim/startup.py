"""The simulated server's start-up, as SGLang 0.5.23 starts (srt/entrypoints/http_server.py
launch_server, srt/managers/scheduler.py, model_executor/model_runner.py): load, memory plan, KV pool
and CUDA-graph capture with their log lines and failures, then the HTTP API (server.py) and the
warm-up request; SIGTERM ends it as SGLang does: once serving, it drains (see ``drain``).
"""

import asyncio
import os
import signal
import sysconfig
import time
import uuid

from aiohttp import web

from sglang_sim import adaptive, models
from sglang_sim.server import PROCESS_START, Logger, SimServer
from sglang_sim.args import server_args_dict


CUDA_GRAPH_FAILED_SOLUTIONS = (
    "Possible solutions:\n"
    "1. set --mem-fraction-static to a smaller value (e.g., 0.8 or 0.7)\n"
    "2. set --cuda-graph-max-bs-decode to a smaller value (e.g., 16)\n"
    "3. disable decode CUDA graph by --cuda-graph-backend-decode=disabled. "
    "(Not recommended. Huge performance loss)\n"
    "Open an issue on GitHub https://github.com/sgl-project/sglang/issues/new/choose \n"
)


# Where SGLang's sources would be: the site-packages of the interpreter that runs the server (the
# role installs SGLang into a venv), as a real traceback names them.
SGLANG_SOURCES = os.path.join(sysconfig.get_paths()["purelib"], "sglang", "srt")

# run_scheduler_process's frame (SGLang 0.5.23 managers/scheduler.py): during init, then serving.
SCHEDULER_INIT = (6362, "scheduler = Scheduler(server_args, port_args)")
SCHEDULER_LOOP = (6368, "scheduler.run_event_loop()")

# The innermost frame of each failure, 0.5.23's file (under srt/), line, function and statement.
FRAME_SET_DEVICE = ("distributed/bootstrap.py", 133, "init_parallel_runtime",
                    "torch.get_device_module(device).set_device(get_device().gpu_id)")
FRAME_BALANCE = ("distributed/bootstrap.py", 450, "_check_tp_memory_balance", "raise RuntimeError(msg)")
FRAME_LOAD_MODEL = ("model_executor/model_runner.py", 1312, "load_model", "loaded = load_model_with_memory_saver(")
FRAME_KV_POOL = ("model_executor/pool_configurator.py", 99, "__post_init__", "raise RuntimeError(msg)")
FRAME_CAPTURE = ("model_executor/runner/decode_cuda_graph_runner.py", 602, "__init__",
                 "raise Exception(")
FRAME_FORWARD = ("managers/scheduler.py", 4704, "run_batch", "batch_result = self.model_worker.forward_batch_generation(")


# torch's message for a device index beyond the GPUs it sees (c10 cuda check, get_cuda_error_help).
INVALID_DEVICE_ORDINAL = (
    "torch.AcceleratorError: CUDA error: invalid device ordinal\n"
    "GPU device may be out of range, do you have enough GPUs?\n"
    "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be "
    "incorrect.\n"
    "For debugging consider passing CUDA_LAUNCH_BLOCKING=1\n"
    "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.\n"
)

# torch's message for a kernel's bad memory access; a start's first forward is the warm-up request.
ILLEGAL_MEMORY_ACCESS = (
    "torch.AcceleratorError: CUDA error: an illegal memory access was encountered\n"
    "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be "
    "incorrect.\n"
    "For debugging consider passing CUDA_LAUNCH_BLOCKING=1\n"
    "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.\n"
)


def _scheduler_exception(log, outer, inner, exc_line, rank=0):
    """What a scheduler process logs before it sends SIGQUIT to the main process (SGLang 0.5.23
    scheduler.py run_scheduler_process: "Scheduler hit an exception: " and the traceback). The
    traceback keeps its outermost and innermost frames only; what the diagnosis reads is the
    exception line."""
    path, line, func, code = inner
    log.tp("Scheduler hit an exception: Traceback (most recent call last):\n"
           '  File "%s", line %d, in run_scheduler_process\n'
           "    %s\n"
           '  File "%s", line %d, in %s\n'
           "    %s\n"
           "%s" % (os.path.join(SGLANG_SOURCES, "managers", "scheduler.py"), outer[0], outer[1],
                   os.path.join(SGLANG_SOURCES, path), line, func, code, exc_line), rank)


def _scheduler_crash(log, exc_line, inner, rank=0):
    """A scheduler process that dies during init (its SIGQUIT is handled once the phase returns KILLED_TREE)."""
    _scheduler_exception(log, SCHEDULER_INIT, inner, exc_line, rank)


# A startup phase's end when a scheduler failed: its lines are out (the simulator's own [sglang-sim]
# hint after them), and the SIGQUIT it sent reaches the launch-phase handler, which ends the process tree.
KILLED_TREE = "killed"


def _kill_process_tree(log):
    """SGLang 0.5.23's end after a failed child (utils/common.py kill_process_tree(os.getpid())): the
    children first, then the process SIGKILLs itself, so systemd records code=killed, status=9/KILL."""
    log.main("kill_process_tree called: parent_pid=%d, include_parent=True, pid=%d" % (os.getpid(), os.getpid()))
    os.kill(os.getpid(), signal.SIGKILL)


def sigquit(log, running_phase):
    """SGLang 0.5.23's SIGQUIT, which its children send when they fail. Before the first request the
    engine's launch_phase_sigquit_handler has it (entrypoints/engine.py), after it the tokenizer
    manager's running_phase_sigquit_handler (installed with loop.add_signal_handler, so called
    without arguments); both kill the process tree."""
    if running_phase:
        log.main("SIGQUIT received. signum=None, frame=None. It usually means one child failed.")
    else:
        log.main("Received sigquit from a child process. It usually means the child failed.")
    _kill_process_tree(log)


def crash_under_load(log, running, tried_gib, total_gib):
    """The profile's crash under load (faults.crash_at_running_requests): a scheduler that hits an
    exception in its event loop logs it and sends SIGQUIT to the main process (scheduler.py
    run_scheduler_process), which ends the process tree."""
    _scheduler_exception(log, SCHEDULER_LOOP, FRAME_FORWARD,
                         "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate %.2f GiB. GPU 0 has a total capacity "
                         "of %.2f GiB of which 0 bytes is free." % (tried_gib, total_gib))
    log.raw("[sglang-sim] profile fault: crash at %d running requests (faults.crash_at_running_requests)" % running)
    os.kill(os.getpid(), signal.SIGQUIT)


def _memory_hint(log, plan):
    """A plainly marked simulator line (not SGLang's) saying where the memory model ran out."""
    log.raw("[sglang-sim] memory model per GPU: total %.2f GiB, weights %.2f GiB, outside the static pool %.2f GiB "
            "(1 - mem_fraction_static %.3f), speculative buffers %.2f GiB (cuda_graph_max_bs %d x %d draft tokens), "
            "left for the state and KV pools %.2f GiB"
            % (plan["total_gib"], plan["weights_gib"], plan["total_gib"] * (1 - plan["mem_fraction_static"]),
               plan["mem_fraction_static"], plan.get("spec_buffers_gib", 0.0), plan["cuda_graph_max_bs"],
               plan["draft_tokens"], plan.get("pool_gib", plan["avail_after_weights_gib"])))


async def _phase(seconds):
    if seconds > 0:
        await asyncio.sleep(seconds)


async def drain(server, log, poll_s, watchdog_origin, interrupt):
    """SGLang 0.5.23's answer to SIGTERM once it served its first request (the warm-up), which is when
    the tokenizer manager installs its handler (tokenizer_manager.py auto_create_handle_loop,
    SignalHandler.sigterm_handler, sigterm_watchdog): /health and /health_generate answer 503, but
    /generate and the OpenAI routes keep accepting and serving requests. The watchdog, a loop of 5 s
    sleeps since that first request, notices at its next wake-up, then every 5 s logs what remains
    until nothing does, and the server exits 0. A stop under steady load therefore lasts until the
    load pauses at a wake-up, or until systemd's TimeoutStopSec kills it. ``interrupt`` (SIGINT:
    uvicorn's own handler) ends the drain at once."""
    # asyncio calls the handler without arguments (loop.add_signal_handler), hence the two None.
    log.main("SIGTERM received. signum=None frame=None. Draining requests and shutting down...")
    server.draining = True
    engine = server.engine
    wait = poll_s - (time.monotonic() - watchdog_origin) % poll_s
    while True:
        try:
            await asyncio.wait_for(interrupt.wait(), wait)
            return
        except asyncio.TimeoutError:
            pass
        rids = [req.rid for req in engine.running + engine.waiting] + server.hung_rids
        log.main("Gracefully exiting... Remaining number of requests %d. Remaining requests remaining_rids=%r."
                 % (len(rids), rids))
        if not rids:
            return
        wait = poll_s


async def startup_and_serve(args, profile, cfg, plan, log, warnings):
    """Go through SGLang's startup phases, then serve until SIGTERM/SIGINT. Returns the exit code."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    interrupt = asyncio.Event()  # SIGINT: uvicorn stops at once, SGLang's drain is for SIGTERM only

    watchdog_origin = []  # when SGLang's SIGTERM watchdog starts: with the first request, the warm-up

    def on_signal(sig):
        if sig == signal.SIGINT:
            interrupt.set()
        stop.set()

    try:
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, on_signal, sig)
        # The first request is when the tokenizer manager takes SIGQUIT over from the launch phase.
        loop.add_signal_handler(signal.SIGQUIT, lambda: sigquit(log, bool(watchdog_origin)))
    except (NotImplementedError, RuntimeError):
        pass
    timing = profile["timing"]
    load = timing["load_time_s"]
    hw = profile["hardware"]
    tp = cfg.tp_size

    async def phases():
        for w in warnings:
            log.main(w)
        log.main("server_args=ServerArgs(%s)" % ", ".join("%s=%r" % kv for kv in sorted(server_args_dict(args).items())))
        # 0.5.23 distributed/bootstrap.py init_parallel_runtime (from Scheduler.__init__), then
        # measure_pre_model_load_memory (ModelRunner.init_torch_distributed)
        log.tp("Init parallel begin.")
        if tp > hw["gpu_count"]:
            # init_parallel_runtime selects each rank's device: the first rank without a GPU logs its
            # context and re-raises torch's error (torch 2.14: AcceleratorError, a RuntimeError).
            rank = hw["gpu_count"]
            log.tp("Init parallel begin.", rank)
            log.tp("Context: device=cuda gpu_id=%d CUDA_VISIBLE_DEVICES=%s tp_rank=%d"
                   % (rank, os.environ.get("CUDA_VISIBLE_DEVICES"), rank), rank)
            _scheduler_crash(log, INVALID_DEVICE_ORDINAL, FRAME_SET_DEVICE, rank)
            log.raw("[sglang-sim] --tp-size %d needs %d GPUs; the profile has %d (hardware.gpu_count)"
                    % (tp, tp, hw["gpu_count"]))
            return KILLED_TREE
        log.tp("Init parallel ends. elapsed=%.2f s" % (load * 0.01))
        unbalanced = memory_balance(profile, tp)
        if unbalanced:
            if _env_bool("SGLANG_ENABLE_TP_MEMORY_INBALANCE_CHECK", True):
                _scheduler_crash(log, "RuntimeError: " + unbalanced, FRAME_BALANCE)
                log.raw("[sglang-sim] profile fault: another process holds %.2f GiB of GPU %d (faults.occupied_gpu_gib)"
                        % (profile["faults"]["occupied_gpu_gib"], hw["gpu_count"] - 1))
                return KILLED_TREE
            log.tp(unbalanced)  # logger.warning: SGLang's log lines carry no level
        log.tp("Memory baseline taken. mem usage=%.2f GB" % hw["runtime_overhead_gib"])
        for rank in range(tp):
            log.tp("Load weight begin. avail mem=%.2f GB" % plan["avail_before_weights_gib"], rank)
        await _phase(load * 0.55)
        if plan["error"] == "cuda_out_of_memory":
            _scheduler_crash(log, "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate %.2f GiB. GPU 0 has a total "
                                  "capacity of %.2f GiB of which 0 bytes is free." % (plan["oom_tried_gib"], hw["gpu_memory_gib"]),
                             FRAME_LOAD_MODEL)
            log.raw("[sglang-sim] %.2f GiB of weights per GPU do not fit in %.2f GiB: raise --tp-size (the profile has %d GPUs)"
                    % (plan["weights_gib"], plan["avail_before_weights_gib"], hw["gpu_count"]))
            return KILLED_TREE
        log.tp("Load weight end. elapsed=%.2f s, type=%s, avail mem=%.2f GB, mem usage=%.2f GB."
               % (load * 0.55, profile["model"]["architecture"], plan["avail_after_weights_gib"], plan["weights_gib"]))
        if cfg.adaptive is not None and cfg.spec:
            # 0.5.23 AdaptiveSpeculativeParams.__init__ (the first entry's slot), in the EAGLE worker's init
            first = cfg.adaptive.keys[0]
            log.tp("AdaptiveSpeculativeParams initialized: steps=%d, candidate_steps=%s"
                   % (cfg.adaptive.initial_for(first), cfg.adaptive.entries[first][0]))
        await _phase(load * 0.05)
        if plan["error"] == "not_enough_memory":
            _scheduler_crash(log, "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.",
                             FRAME_KV_POOL)
            _memory_hint(log, plan)
            return KILLED_TREE
        if plan.get("mamba_slots") is not None:
            # 0.5.23 mem_cache/memory_pool.py (the simulator models the state pool as one figure: all of it as ssm_state)
            log.tp("Mamba Cache is allocated. max_mamba_cache_size: %d, conv_state size: 0.00GB, ssm_state size: %.2fGB "
                   "intermediate_ssm_state_cache size: 0.00GB intermediate_conv_window_cache size: 0.00GB "
                   % (plan["mamba_slots"], plan["mamba_gib"]))
        half = plan["kv_gib"] / 2.0
        log.tp("KV Cache is allocated. dtype: %s, #tokens: %d, K size: %.2f GB, V size: %.2f GB"
               % (models.TORCH_KV_DTYPE[cfg.kv_cache_dtype], plan["max_total_num_tokens"], half, half))
        log.tp("Memory pool end. avail mem=%.2f GB" % plan["avail_after_pools_gib"])
        # 0.5.23 cuda_graph_setup.py capture_decode_graph: a speculative target captures its verify graphs
        graph_name, per_req = ("target verify", cfg.draft_tokens) if cfg.spec else ("target decode", 1)
        log.tp("Capture %s CUDA graph begin. backend=full, num_tokens_per_req=%d, avail mem=%.2f GB"
               % (graph_name, per_req, plan["avail_after_pools_gib"]))
        await _phase(load * 0.35)
        failed_state = plan.get("graph_failed_state")
        if plan["error"] == "cuda_graph_capture_failed" and failed_state is None:
            _scheduler_crash(log, "Exception: Capture cuda graph failed: CUDA out of memory. Tried to allocate %.2f GiB.\n%s"
                             % (plan["cuda_graph_gib"], CUDA_GRAPH_FAILED_SOLUTIONS), FRAME_CAPTURE)
            log.raw("[sglang-sim] CUDA graphs need %.2f GiB, %.2f GiB is left outside the static pool after activations"
                    % (plan["cuda_graph_gib"], plan["graph_room_gib"]))
            return KILLED_TREE
        initial_gib = plan.get("initial_graph_gib", plan["cuda_graph_gib"])
        log.tp("Capture %s CUDA graph end. bs=%s, elapsed=%.2f s, mem usage=%.2f GB, avail mem=%.2f GB."
               % (graph_name, plan["capture_bs"], load * 0.35, initial_gib, plan["avail_after_pools_gib"] - initial_gib))
        # 0.5.23 EAGLEWorkerV2.init_cuda_graphs -> AdaptiveController.init_states: a runtime state per
        # further candidate, its graphs captured for the batch sizes that reach it (more start time).
        for i, state in enumerate(plan.get("adaptive_states") or []):
            capture_s = load * 0.35 * state["capture_share"]
            await _phase(capture_s)
            if failed_state == i:
                _scheduler_crash(log, "Exception: Capture cuda graph failed: CUDA out of memory. Tried to allocate %.2f GiB.\n%s"
                                 % (state["graph_gib"], CUDA_GRAPH_FAILED_SOLUTIONS), FRAME_CAPTURE)
                log.raw("[sglang-sim] CUDA graphs of %d adaptive states need %.2f GiB, %.2f GiB is left outside the static pool "
                        "after activations" % (len(plan["adaptive_states"]) + 1, plan["cuda_graph_gib"], plan["graph_room_gib"]))
                return KILLED_TREE
            log.tp("Built adaptive runtime state steps=%d: elapsed=%.2fs, mem=%.2fGB" % (state["steps"], capture_s, state["graph_gib"]))
        context_len = cfg.context_length or profile["model"]["context_length"]
        log.tp("max_total_num_tokens=%d, chunked_prefill_size=%d, max_prefill_tokens=16384, max_running_requests=%d, "
               "context_len=%d, available_gpu_mem=%.2f GB"
               % (plan["max_total_num_tokens"], args.chunked_prefill_size, plan["max_running_requests"], context_len,
                  plan["avail_after_graph_gib"]))
        await _phase(load * 0.05)
        return 0

    phase_task = asyncio.ensure_future(phases())
    stop_task = asyncio.ensure_future(stop.wait())
    done, _pending = await asyncio.wait([phase_task, stop_task], return_when=asyncio.FIRST_COMPLETED)
    if stop_task in done:
        phase_task.cancel()
        if not interrupt.is_set():
            # SGLang 0.5.23 has no SIGTERM handler on node rank 0 until uvicorn runs (engine.py installs
            # one for the other ranks only): the signal's default action ends the process.
            loop.remove_signal_handler(signal.SIGTERM)  # back to SIG_DFL
            os.kill(os.getpid(), signal.SIGTERM)
        return 0
    code = phase_task.result()
    if code == KILLED_TREE:
        sigquit(log, running_phase=False)  # no return: the process SIGKILLs itself
    if code:
        stop_task.cancel()
        return code

    server = SimServer(args, profile, cfg, plan, log)
    server.engine.on_crash = lambda running: crash_under_load(log, running, 0.5 + 0.05 * running, hw["gpu_memory_gib"])
    engine_task = asyncio.ensure_future(server.engine.run())
    runner = web.AppRunner(server.make_app(), access_log=None, handle_signals=False, shutdown_timeout=1.0)
    await runner.setup()
    site = web.TCPSite(runner, args.host, args.port, reuse_address=True)
    try:
        await site.start()
    except OSError as exc:
        log.main("ERROR: [Errno %d] error while attempting to bind on address ('%s', %d): %s"
                 % (exc.errno or 0, args.host, args.port, exc.strerror))
        engine_task.cancel()
        await runner.cleanup()
        return 1
    log.raw("INFO:     Started server process [%d]" % os.getpid())
    log.raw("INFO:     Waiting for application startup.")
    log.raw("INFO:     Application startup complete.")
    # uvicorn brackets an IPv6 host in this line (uvicorn.server: "%s://[%s]:%d" when ":" in the host).
    shown = "[%s]" % args.host if ":" in args.host else args.host
    log.raw("INFO:     Uvicorn running on http://%s:%d (Press CTRL+C to quit)" % (shown, args.port))

    async def warmup():
        await _phase(timing["warmup_s"])
        watchdog_origin.append(time.monotonic())
        hanging_steps = profile["faults"]["start_hang_min_steps"]
        if hanging_steps and cfg.spec and cfg.steps >= hanging_steps:
            # The warm-up reached the tokenizer manager (which then took SIGTERM over) and never comes back:
            # a SIGTERM's drain waits on it until systemd's TimeoutStopSec kills the server, as SGLang's would.
            server.hung_rids.append(uuid.uuid4().hex)
            log.raw("[sglang-sim] profile fault: the warm-up request is never answered at %d or more steps "
                    "(faults.start_hang_min_steps)" % hanging_steps)
            await asyncio.Event().wait()  # until the shutdown cancels it
        failing_steps = profile["faults"]["start_failure_min_steps"]
        if failing_steps and cfg.spec and cfg.steps >= failing_steps:
            # The scheduler fails the warm-up's forward and sends SIGQUIT; the tokenizer manager, which
            # took the signal over with this first request, ends the process tree.
            _scheduler_exception(log, SCHEDULER_LOOP, FRAME_FORWARD, ILLEGAL_MEMORY_ACCESS)
            log.raw("[sglang-sim] profile fault: the warm-up request fails at %d or more steps (faults.start_failure_min_steps)"
                    % failing_steps)
            os.kill(os.getpid(), signal.SIGQUIT)
            return
        req = server.engine.submit(None, 4, 1, 0.0, True, lambda r, p, f: None)
        await req.done
        log.raw('INFO:     127.0.0.1:0 - "POST /generate HTTP/1.1" 200 OK')
        server.ready = True
        server.startup_time = round(time.time() - PROCESS_START, 3)
        log.main("The server is fired up and ready to roll!")

    warm_task = asyncio.ensure_future(warmup())
    await stop.wait()
    if watchdog_origin and not interrupt.is_set():
        await drain(server, log, timing["sigterm_poll_s"], watchdog_origin[0], interrupt)
    log.raw("INFO:     Shutting down")
    warm_task.cancel()
    server.engine.stopping = True
    engine_task.cancel()
    await runner.cleanup()
    log.raw("INFO:     Finished server process [%d]" % os.getpid())
    return 0


def serve(args, profile, warnings):
    """Entry point for a parsed, resolved command line."""
    log = Logger()
    cfg = models.SimConfig(
        tp_size=args.tp_size, dp_size=args.dp_size, kv_cache_dtype=args.kv_cache_dtype,
        mem_fraction_static=args.mem_fraction_static, max_running_requests=args.max_running_requests,
        cuda_graph_max_bs=args.cuda_graph_max_bs_decode, context_length=args.context_length,
        chunked_prefill_size=args.chunked_prefill_size, speculative_algorithm=args.speculative_algorithm,
        speculative_num_steps=args.speculative_num_steps, speculative_eagle_topk=args.speculative_eagle_topk,
        speculative_num_draft_tokens=args.speculative_num_draft_tokens,
        adaptive=(adaptive.Schedule.from_path(args.speculative_adaptive_config, args.speculative_num_steps)
                  if args.speculative_adaptive else None))
    occupied = profile["faults"]["occupied_gpu_gib"]
    sized = profile
    if occupied > 0:
        # SGLang sizes its pools on the least free GPU (pre_model_load_memory, the minimum over the ranks).
        sized = dict(profile, hardware=dict(profile["hardware"], gpu_memory_gib=profile["hardware"]["gpu_memory_gib"] - occupied))
    plan = models.memory_plan(sized, cfg)
    return asyncio.run(startup_and_serve(args, profile, cfg, plan, log, warnings))


def _env_bool(name, default):
    """SGLang 0.5.23 environ.EnvBool: true/1/yes/y, false/0/no/n (any case); anything else the default."""
    value = os.environ.get(name, "").lower()
    if value in ("true", "1", "yes", "y"):
        return True
    if value in ("false", "0", "no", "n"):
        return False
    return default


def memory_balance(profile, tp):
    """0.5.23 bootstrap._check_tp_memory_balance with another process holding faults.occupied_gpu_gib on
    the last GPU: None when balanced (or tp 1, which skips the check), else its message."""
    occupied = profile["faults"]["occupied_gpu_gib"]
    local = profile["hardware"]["gpu_memory_gib"] - profile["hardware"]["runtime_overhead_gib"]
    least = local - occupied
    if tp <= 1 or occupied <= 0 or least >= local * 0.9:
        return None
    return ("The memory capacity is unbalanced. Some GPUs may be occupied by other processes. "
            "pre_model_load_memory=%r, local_gpu_memory=%r, local_gpu_memory * 0.9=%r"
            % (round(least, 2), round(local, 2), local * 0.9))
