"""SGLang's HTTP API over the simulated engine (aiohttp); the start-up sequence is in startup.py.

Shapes follow SGLang 0.5.23 (``srt/entrypoints/http_server.py``, ``srt/entrypoints/openai/``,
``srt/managers/tokenizer_manager.py``): /health, /health_generate, /model_info, /server_info
(the deprecated /get_model_info and /get_server_info still answer and log a warning),
/generate, /v1/completions, /v1/chat/completions, /v1/models, /flush_cache, /metrics.
"""

import asyncio
import json
import sys
import time

from aiohttp import web

from sglang_sim import SGLANG_VERSION, __version__, vocab
from sglang_sim.args import server_args_dict
from sglang_sim.engine import Engine

PROCESS_START = time.time()
SSE_HEADERS = {"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
DONE = b"data: [DONE]\n\n"
HTTP_REASONS = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 404: "Not Found", 405: "Method Not Allowed",
                500: "Internal Server Error", 503: "Service Unavailable"}
FLUSH_MSG = ("Cache flushed.\nPlease check backend logs for more details. "
             "(When there are running or waiting requests, the operation will not be performed.)\n")


class BadRequest(Exception):
    """A request SGLang 0.5.23 rejects, and at which layer (that decides the answer's shape):

    - ``validation``: FastAPI's body validation (pydantic), answered by http_server's
      RequestValidationError handler: 400 ``{"object": "error", "type": "Bad Request", ...}``;
    - ``parse``: a body FastAPI cannot read (not UTF-8), an HTTPException(400, "There was an error
      parsing the body") answered by the HTTPException handler: ``type`` "400";
    - ``contract``: /generate's schema gate (api_contract.generate_contract_error): 400 ``{"error": TEXT}``;
    - ``value``: a ValueError of the tokenizer manager (SamplingParams.verify, input checks):
      /generate 400 ``{"error": {"message": ...}}``, OpenAI endpoints serving_base's ``type`` "BadRequest";
    - ``handler``: an OpenAI handler's own _validate_request: create_error_response, ``type`` "BadRequestError";
    - ``crash``: what 0.5.23 fails on (an exception inside request validation): 500 "Internal Server Error".
    """

    def __init__(self, message, layer="validation"):
        Exception.__init__(self, message)
        self.message = message
        self.layer = layer


def _now_str():
    return time.strftime("%Y-%m-%d %H:%M:%S")


class Logger(object):
    """SGLang's log line format on stdout, flushed per line (the unit's journal)."""

    def __init__(self, stream=None):
        self.stream = stream or sys.stdout

    def main(self, msg):
        self.stream.write("[%s] %s\n" % (_now_str(), msg))
        self.stream.flush()

    def tp(self, msg, rank=0):
        self.stream.write("[%s TP%d] %s\n" % (_now_str(), rank, msg))
        self.stream.flush()

    def raw(self, msg):
        self.stream.write(msg + "\n")
        self.stream.flush()


def error_response(exc, api):
    """The answer SGLang 0.5.23 gives to ``exc`` (a BadRequest) on ``api`` (generate, openai)."""
    if exc.layer == "crash":
        return web.Response(status=500, text="Internal Server Error")
    if exc.layer == "parse":
        # http_server's HTTPException handler: ErrorResponse(type=str(status_code))
        return web.json_response({"object": "error", "message": exc.message, "type": "400", "param": None, "code": 400},
                                 status=400)
    if exc.layer == "validation":
        # http_server.validation_exception_handler: ErrorResponse(type=HTTPStatus.BAD_REQUEST.phrase)
        return web.json_response({"object": "error", "message": exc.message, "type": "Bad Request", "param": None,
                                  "code": 400}, status=400)
    if exc.layer == "contract":
        return web.json_response({"error": exc.message}, status=400)
    if api == "generate":
        # http_server._create_error_response
        return web.json_response({"error": {"message": exc.message}}, status=400)
    # serving_base.handle_request: a ValueError is err_type "BadRequest", _validate_request's message "BadRequestError"
    return web.json_response({"object": "error", "message": exc.message,
                              "type": "BadRequest" if exc.layer == "value" else "BadRequestError", "param": None,
                              "code": 400}, status=400)


def _unexpected(value):
    """serde's ``Unexpected`` text, as 0.5.23's api/v1/api_types._unexpected writes it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean `%s`" % ("true" if value else "false")
    if isinstance(value, int):
        return "integer `%d`" % value
    if isinstance(value, float):
        return "floating point `%r`" % value
    if isinstance(value, str):
        return 'string "%s"' % value
    return "sequence" if isinstance(value, list) else "map" if isinstance(value, dict) else type(value).__name__


def contract_error(value, expected):
    return BadRequest("invalid type: %s, expected %s" % (_unexpected(value), expected), "contract")


# pydantic's lax bool: what a FastAPI-validated boolean field accepts besides true and false
_LAX_TRUE = ("1", "on", "t", "true", "y", "yes")
_LAX_FALSE = ("0", "off", "f", "false", "n", "no")


def lax_bool(value, key):
    """A boolean field of a pydantic model (OpenAI requests, GenerateReqInput): lax mode."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in _LAX_TRUE + _LAX_FALSE:
        return value.strip().lower() in _LAX_TRUE
    raise BadRequest("%s: Input should be a valid boolean, unable to interpret input" % key)


def _lax_number(value, key, kind):
    """An int or float field of a pydantic model in lax mode (numeric strings, whole floats for ints)."""
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            raise BadRequest("%s: Input should be a valid %s, unable to parse string as %s"
                             % (key, "integer" if kind is int else "number", "an integer" if kind is int else "a number"))
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise BadRequest("%s: Input should be a valid %s" % (key, "integer" if kind is int else "number"))
    if kind is int and not float(value).is_integer():
        raise BadRequest("%s: Input should be a valid integer, got a number with a fractional part" % key)
    return kind(value)


def _opt_number(body, key, default, kind=float, api="generate"):
    """A sampling parameter: /generate's contract (i64 / f64, no coercion) or an OpenAI field (lax)."""
    value = body.get(key, default)
    if value is None:
        return default
    if api == "openai":
        return _lax_number(value, key, kind)
    if kind is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise contract_error(value, "i64")
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise contract_error(value, "f64")
    return float(value)


class SimServer(object):
    def __init__(self, args, profile, cfg, plan, log):
        self.args = args
        self.profile = profile
        self.cfg = cfg
        self.plan = plan
        self.log = log
        self.ready = False
        self.draining = False  # SIGTERM received: health answers 503 while requests drain (startup.drain)
        self.hung_rids = []  # requests whose forward never returns (faults.start_hang_min_steps): a drain waits on them
        self.context_len = cfg.context_length or profile["model"]["context_length"]
        # The words it generates and how it counts prompts: the tokenizer's when --tokenizer-path
        # (default: the model path) holds a tokenizer.json, so clients that re-tokenize count exactly.
        self.vocab, note = vocab.load(args.tokenizer_path, profile["model"]["chars_per_token"])
        if note:
            log.raw("[sglang-sim] %s" % note)
        elif self.vocab.source:
            log.raw("[sglang-sim] generating %d single-token words of %s" % (len(self.vocab.words), self.vocab.source))
        self.count_tokens = self.vocab.count
        seed = args.random_seed if args.random_seed is not None else profile.get("seed")
        self.engine = Engine(profile, cfg, plan, seed=seed, log=log.tp, words=self.vocab.words)
        self.engine.radix = not args.disable_radix_cache
        self.created = int(time.time())
        self.start_time = time.time()
        self.startup_time = 0.0  # seconds from launch to ready; set by startup_and_serve
        argv = list(sys.argv[1:])
        if "--sim-profile" in argv:  # the simulator's own flag, not SGLang's
            at = argv.index("--sim-profile")
            del argv[at:at + 2]
        self.launch_argv = argv

    # -- app ------------------------------------------------------------------------------
    def make_app(self):
        middlewares = [self.access_log_middleware, self.fastapi_errors_middleware]
        if self.args.api_key:
            middlewares.append(self.api_key_middleware)
        app = web.Application(middlewares=middlewares, client_max_size=64 * 1024 * 1024)
        r = app.router
        r.add_get("/health", self.health)
        r.add_get("/health_generate", self.health_generate)
        r.add_get("/model_info", self.model_info)
        r.add_get("/server_info", self.server_info)
        # SGLang 0.5.23 keeps the old names but logs a deprecation warning on every call.
        r.add_get("/get_model_info", self.deprecated(self.model_info, "/get_model_info", "/model_info"))
        r.add_get("/get_server_info", self.deprecated(self.server_info, "/get_server_info", "/server_info"))
        r.add_route("*", "/flush_cache", self.flush_cache)
        r.add_post("/generate", self.generate)
        r.add_post("/v1/completions", self.completions)
        r.add_post("/v1/chat/completions", self.chat_completions)
        r.add_get("/v1/models", self.list_models)
        if self.args.enable_metrics:
            r.add_get("/metrics", self.metrics)
        return app

    @web.middleware
    async def access_log_middleware(self, request, handler):
        try:
            resp = await handler(request)
        except web.HTTPException as exc:
            resp = exc
            raise
        finally:
            if request.path not in ("/health", "/metrics"):
                peer = request.transport.get_extra_info("peername") if request.transport else None
                peer = "%s:%s" % peer[:2] if peer else "-"
                status = getattr(locals().get("resp"), "status", 500)
                self.log.raw('INFO:     %s - "%s %s HTTP/%d.%d" %d %s' % (
                    peer, request.method, request.path_qs, request.version.major, request.version.minor, status,
                    HTTP_REASONS.get(status, "")))
        return resp

    @web.middleware
    async def fastapi_errors_middleware(self, request, handler):
        # SGLang's HTTP server is FastAPI: unknown paths and wrong methods answer {"detail": ...}
        try:
            return await handler(request)
        except web.HTTPNotFound:
            return web.json_response({"detail": "Not Found"}, status=404)
        except web.HTTPMethodNotAllowed:
            return web.json_response({"detail": "Method Not Allowed"}, status=405)

    @web.middleware
    async def api_key_middleware(self, request, handler):
        # SGLang 0.5.x add_api_key_middleware: /health* and /metrics need no key
        path = request.path
        if request.method == "OPTIONS" or path.startswith("/health") or path.startswith("/metrics"):
            return await handler(request)
        if request.headers.get("Authorization") != "Bearer " + self.args.api_key:
            return web.json_response({"error": "Unauthorized"}, status=401)
        return await handler(request)

    # -- simple endpoints -----------------------------------------------------------------
    def _draining_503(self):
        # 0.5.23 http_server.health_generate (both routes), first of all: gracefully_exit is set
        self.log.main("Health check request received during shutdown. Returning 503.")
        return web.Response(status=503)

    async def health(self, request):
        if self.draining:
            return self._draining_503()
        if not self.ready:
            return web.Response(status=503)
        return web.Response(status=200)

    async def health_generate(self, request):
        # SGLang 0.5.x: enqueue a one-token generation and answer 200 as soon as the scheduler
        # produces any output (a busy server is healthy without waiting in the queue); 503 after 20 s
        if self.draining:
            return self._draining_503()
        if not self.ready:
            return web.Response(status=503)
        engine = self.engine
        progress = engine.decode_steps
        req = engine.submit(None, 1, 1, 0.0, True, lambda r, piece, fin: None)
        deadline = time.monotonic() + 20.0
        while not req.done.done():
            if engine.decode_steps != progress:
                engine.abort(req)
                break
            if time.monotonic() > deadline:
                engine.abort(req)
                return web.Response(status=503)
            await asyncio.sleep(0.01)
        return web.Response(status=200)

    def deprecated(self, handler, old, new):
        # SGLang 0.5.23 http_server.get_server_info / get_model_info: logger.warning, then the new handler
        async def warn_then_answer(request):
            self.log.main("Endpoint '%s' is deprecated and will be removed in a future version. "
                          "Please use '%s' instead." % (old, new))
            return await handler(request)
        return warn_then_answer

    async def model_info(self, request):
        # SGLang 0.5.23 http_server.model_info
        model = self.profile["model"]
        return web.json_response({
            "model_path": self.args.model_path,
            "served_model_name": self.args.served_model_name,
            "tokenizer_path": self.args.tokenizer_path,
            "is_generation": True,
            "preferred_sampling_params": None,
            "weight_version": "default",
            "load_format": "auto",
            "reasoning_parser": None,
            "tool_call_parser": None,
            "disaggregation_mode": "null",
            "has_image_understanding": False,
            "has_audio_understanding": False,
            "model_type": model["model_type"],
            "architectures": [model["architecture"]],
        })

    def resolved_args(self):
        """The resolved server arguments, as ServerArgs.resolved_dict() reports them (0.5.23).

        ``max_running_requests`` is the resolved value, not the scheduler's: 48 when speculative
        decoding is on and it was not set (speculative_hook._handle_eagle_family), the flag's value
        when set, None otherwise. The limit the scheduler applies is per DP rank in
        internal_states[i].effective_max_running_requests_per_dp.
        """
        info = server_args_dict(self.args)
        info.update({
            "mem_fraction_static": self.plan["mem_fraction_static"],
            "cuda_graph_max_bs": self.plan["cuda_graph_max_bs"],
            "context_length": self.context_len,
        })
        return info

    def internal_state(self):
        """One DP rank's internal state (0.5.23 SchedulerInternalStateController.get_internal_state):
        the resolved server args, then topology, memory usage and speculative figures."""
        st = self.engine.stats
        state = self.resolved_args()
        graph = dict.fromkeys(("prefill", "decode", "target_verify", "draft_prefill", "draft_decode", "draft_extend"), 0.0)
        graph["decode"] = round(self.plan.get("initial_graph_gib", self.plan.get("cuda_graph_gib", 0.0)), 3)
        if self.plan.get("adaptive_states"):
            # 0.5.23 build_adaptive_runtime_state adds each further state's graphs to target_verify
            graph["target_verify"] = round(sum(st["graph_gib"] for st in self.plan["adaptive_states"]), 3)
        state.update({
            "world_size": self.cfg.tp_size * max(1, self.cfg.dp_size),
            "startup_time": self.startup_time,
            "effective_max_running_requests_per_dp": self.plan["max_running_requests"],
            "last_gen_throughput": st.last_gen_throughput,
            "memory_usage": {"weight": round(self.plan["weights_gib"], 3), "kvcache": round(self.plan["kv_gib"], 3),
                             "startup_available": round(self.plan["avail_before_weights_gib"], 3),
                             "token_capacity": self.plan["max_total_num_tokens"], "token_capacity_swa": None,
                             "graph": graph},
        })
        # Present once the first 40-decode-step interval has been counted (_average_accept_length).
        if self.cfg.spec and st.avg_spec_accept_length is not None:
            state["avg_spec_accept_length"] = st.avg_spec_accept_length
        engine = self.engine
        if engine.policy is not None:
            # 0.5.23 internal_states are resolved_server_args_dict(): the resolved args with the runtime
            # overrides laid over them, and apply_runtime_state overrides speculative_num_steps and
            # speculative_num_draft_tokens on every switch ("adaptive_spec.restore"); so here they are
            # the step count of the last decode batch, while the top level keeps the startup value.
            if engine.adaptive_switches:
                state["speculative_num_steps"] = engine.active_steps
                state["speculative_num_draft_tokens"] = engine.active_steps + 1
            # Not in SGLang (it exposes no per-entry state): each entry's current step count.
            state["sim_speculative_adaptive"] = {"active_steps": engine.active_steps, "switches": engine.adaptive_switches,
                                                 "entries": engine.policy.state()}
        return state

    async def server_info(self, request):
        # SGLang 0.5.23 http_server.server_info = utils.common.build_server_info (resolved args,
        # launch_command, the scheduler's init info) + startup_time, internal_states, version, frontend.
        info = self.resolved_args()
        info.update({
            "launch_command": " ".join(["python", "-m", "sglang.launch_server"] + list(self.launch_argv)),
            "status": "ready",
            "max_total_num_tokens": self.plan["max_total_num_tokens"],
            "max_req_input_len": self.context_len - 1,
            "startup_time": self.startup_time,
            "kv_events": None,
            "internal_states": [self.internal_state() for _rank in range(max(1, self.cfg.dp_size))],
            "version": self.profile.get("sglang_version") or SGLANG_VERSION,
            "frontend": "python",
            # not in SGLang: says plainly that this is the simulator
            "simulator": {"name": "sglang-sim", "version": __version__, "profile": self.profile["name"]},
        })
        return web.json_response(info)

    async def list_models(self, request):
        name = self.args.served_model_name
        return web.json_response({"object": "list", "data": [{
            "id": name, "object": "model", "created": self.created, "owned_by": "sglang", "root": name,
            "parent": None, "max_model_len": self.context_len}]})

    async def flush_cache(self, request):
        if self.engine.flush_cache():
            self.log.tp("Cache flushed successfully!")
            return web.Response(text=FLUSH_MSG, status=200)
        return web.Response(text=FLUSH_MSG, status=400)

    async def metrics(self, request):
        st = self.engine.stats
        eng = self.engine
        label = 'model_name="%s"' % self.args.served_model_name.replace('"', '\\"')
        lines = []

        def gauge(name, value, kind="gauge", help_text=""):
            lines.append("# HELP sglang:%s %s" % (name, help_text or name))
            lines.append("# TYPE sglang:%s %s" % (name, kind))
            lines.append("sglang:%s{%s} %s" % (name, label, repr(float(value))))

        gauge("num_running_reqs", len(eng.running), help_text="The number of running requests.")
        gauge("num_queue_reqs", len(eng.waiting), help_text="The number of requests in the waiting queue.")
        gauge("num_used_tokens", sum(r.prompt_tokens + r.completion_tokens for r in eng.running))
        gauge("token_usage", eng.token_usage(), help_text="The token usage.")
        gauge("gen_throughput", st.last_gen_throughput, help_text="The generation throughput (token/s).")
        gauge("cache_hit_rate", (st.cached_tokens_total / float(st.prompt_tokens_total)) if st.prompt_tokens_total else 0.0)
        gauge("spec_accept_length", st.avg_spec_accept_length or 0.0, help_text="The average acceptance length of speculative decoding.")
        gauge("spec_accept_rate", st.spec_accept_rate, help_text="The average acceptance rate of speculative decoding.")
        # 0.5.23 exports no sglang:max_running_requests gauge (observability/metrics_collector.py)
        gauge("max_total_num_tokens", eng.max_total_num_tokens)
        gauge("prompt_tokens_total", st.prompt_tokens_total, "counter", "Number of prefill tokens processed.")
        gauge("generation_tokens_total", st.generation_tokens_total, "counter", "Number of generation tokens processed.")
        gauge("cached_tokens_total", st.cached_tokens_total, "counter", "Number of cached prompt tokens.")
        gauge("num_requests_total", st.requests_total, "counter", "Number of requests processed.")
        for name, (buckets, counts, total) in sorted(st.hist.items()):
            lines.append("# HELP sglang:%s %s" % (name, name.replace("_", " ")))
            lines.append("# TYPE sglang:%s histogram" % name)
            cum = 0
            for bound, count in zip(buckets, counts):
                cum += count
                lines.append('sglang:%s_bucket{%s,le="%s"} %d' % (name, label, repr(float(bound)), cum))
            cum += counts[-1]
            lines.append('sglang:%s_bucket{%s,le="+Inf"} %d' % (name, label, cum))
            lines.append("sglang:%s_sum{%s} %s" % (name, label, repr(total[0])))
            lines.append("sglang:%s_count{%s} %d" % (name, label, cum))
        return web.Response(text="\n".join(lines) + "\n", content_type="text/plain", charset="utf-8")

    # -- generation -------------------------------------------------------------------------
    async def _json_body(self, request, endpoint):
        """The JSON object of a request body, or the error 0.5.23's FastAPI layer answers with."""
        raw = await request.read()
        if not raw:
            raise BadRequest("1 validation error: body: Field required")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise BadRequest("There was an error parsing the body", "parse")
        try:
            body = json.loads(text)
        except ValueError as exc:
            raise BadRequest("1 validation error: body: JSON decode error (%s)" % exc)
        if not isinstance(body, dict):
            if endpoint == "chat":
                # 0.5.23 protocol.ChatCompletionRequest's mode="before" validators call .get on the body:
                # an AttributeError inside validation, which FastAPI does not turn into a 400.
                raise BadRequest("Internal Server Error", "crash")
            if endpoint == "generate":
                raise BadRequest("1 validation error: body: Input should be a dictionary or an instance of GenerateReqInput")
            raise BadRequest("1 validation error: body: Input should be a valid dictionary or object to extract fields from")
        return body

    def _check_context(self, prompt_tokens, max_new_tokens):
        if prompt_tokens >= self.context_len:
            raise BadRequest("The input (%d tokens) is longer than the model's context length (%d tokens)."
                             % (prompt_tokens, self.context_len), "value")
        if max_new_tokens is not None and prompt_tokens + max_new_tokens > self.context_len:
            raise BadRequest(
                "Requested token count exceeds the model's maximum context length of %d tokens. You requested a "
                "total of %d tokens: %d tokens from the input messages and %d tokens for the completion. Please "
                "reduce the number of tokens in the input messages or the completion to fit within the limit."
                % (self.context_len, prompt_tokens + max_new_tokens, prompt_tokens, max_new_tokens), "value")

    def _sampling(self, params, default_max, api="generate", verify=True):
        """Sampling parameters: type checks of /generate's contract (0.5.23 api/v1/api_types
        decode_SamplingParams) or of the OpenAI request model (lax pydantic), then
        SamplingParams.verify's ValueErrors."""
        if isinstance(params, list):  # one dict per batch item; the simulator applies the first to all
            params = params[0] if params else {}
        if params is None:
            params = {}
        if not isinstance(params, dict):
            raise BadRequest("1 validation error: body.sampling_params: Input should be a valid dictionary")
        max_new = _opt_number(params, "max_new_tokens", default_max, int, api)
        temperature = _opt_number(params, "temperature", 1.0, float, api)
        top_p = _opt_number(params, "top_p", 1.0, float, api)
        top_k = _opt_number(params, "top_k", -1, int, api)
        ignore_eos = params.get("ignore_eos", False)
        if ignore_eos is None:
            ignore_eos = False
        elif api == "openai":
            ignore_eos = lax_bool(ignore_eos, "ignore_eos")
        elif not isinstance(ignore_eos, bool):
            raise contract_error(ignore_eos, "a boolean")
        stop = params.get("stop")
        if stop is not None and not (isinstance(stop, str) or (isinstance(stop, list) and all(isinstance(x, str) for x in stop))):
            if api == "openai":
                raise BadRequest("1 validation error: body.stop: Input should be a valid string or list of strings")
            raise contract_error(stop, "a value or an array of values for StringOrList")
        if not verify:
            return max_new, temperature, ignore_eos
        # sampling/sampling_params.py SamplingParams.verify (0.5.23), in its order
        if temperature < 0:
            raise BadRequest("temperature must be a non-negative finite number, got %s." % temperature, "value")
        if not 0.0 < top_p <= 1.0:
            raise BadRequest("top_p must be in (0, 1], got %s." % top_p, "value")
        if top_k < -1 or top_k == 0:
            raise BadRequest("top_k must be -1 (disable) or at least 1, got %d." % top_k, "value")
        if max_new is not None and max_new < 0:
            raise BadRequest("max_new_tokens must be at least 0, got %d." % max_new, "value")
        if top_k == 1:
            temperature = 0.0  # SGLang treats top_k 1 as greedy
        return max_new, temperature, ignore_eos

    def _meta(self, req, final, e2e=None):
        """meta_info of a /generate answer or stream chunk, as SGLang 0.5.23
        TokenizerManager._handle_batch_output builds it."""
        meta = {
            "id": req.rid,
            "finish_reason": req.finish_reason if final else None,
            "prompt_tokens": req.prompt_tokens,
            "weight_version": "default",
            "num_retractions": 0,
            "reasoning_tokens": 0,
            "completion_tokens": req.completion_tokens,
            "cached_tokens": req.cached_tokens,
        }
        if final:
            meta["e2e_latency"] = e2e if e2e is not None else (time.time() - req.t_arrival)
            # 0.5.23 _calculate_spec_decoding_metrics: on the finished output only, and only when
            # the request went through at least one verify pass.
            if self.cfg.spec and req.verify_ct > 0:
                proposed = req.proposed_drafts
                meta["spec_accept_rate"] = req.accepted_drafts / float(proposed) if proposed else 0.0
                meta["spec_accept_length"] = req.completion_tokens / float(req.verify_ct)
                meta["spec_num_correct_drafts"] = req.accepted_drafts
                meta["spec_num_proposed_drafts"] = proposed
                meta["spec_verify_ct"] = req.verify_ct
        return meta

    @staticmethod
    def spec_tokens_details(meta):
        """SGLang 0.5.23 openai/utils.spec_tokens_details_from_meta_info: None without spec keys."""
        if "spec_verify_ct" not in meta:
            return None
        return {"spec_accept_rate": meta["spec_accept_rate"], "spec_accept_length": meta["spec_accept_length"],
                "spec_cap_length": 0.0, "spec_block_accept_length": 0.0,
                "spec_num_correct_drafts": meta["spec_num_correct_drafts"],
                "spec_num_proposed_drafts": meta["spec_num_proposed_drafts"], "spec_verify_ct": meta["spec_verify_ct"],
                "spec_correct_drafts_histogram": [], "spec_cap_lens_histogram": []}

    async def generate(self, request):
        # 0.5.23 http_server.generate_request: FastAPI validates GenerateReqInput (a dataclass, lax
        # pydantic), then api_contract.generate_contract_error checks the body against the API schema,
        # then the tokenizer manager raises ValueErrors (GenerateReqInput._validate_inputs, SamplingParams).
        try:
            body = await self._json_body(request, "generate")
            text = body.get("text")
            input_ids = body.get("input_ids")
            if text is not None and not (isinstance(text, str) or (isinstance(text, list) and all(isinstance(t, str) for t in text))):
                raise BadRequest("1 validation error: body.text: Input should be a valid string or a valid list of strings")
            if input_ids is not None and not _valid_token_ids(input_ids):
                raise BadRequest("1 validation error: body.input_ids: Value error, must be a list of int64 or of lists of int64")
            params = body.get("sampling_params")
            if params is not None and not isinstance(params, (dict, list)):
                raise BadRequest("1 validation error: body.sampling_params: Input should be a valid dictionary or list")
            stream = body.get("stream", False)
            if stream is not None and not isinstance(stream, bool):
                lax_bool(stream, "body.stream")  # the dataclass accepts "yes", 1, ... ; the contract does not
                raise contract_error(stream, "a boolean")
            stream = bool(stream)
            self._sampling(params, 128, verify=False)  # the contract's types come before any ValueError
            if text is None and input_ids is None:
                raise BadRequest("Either text, input_ids or input_embeds should be provided.", "value")
            if isinstance(text, list) or (isinstance(input_ids, list) and input_ids and isinstance(input_ids[0], list)):
                return await self._generate_batch(body)
            if text is not None:
                prompt_tokens = self.count_tokens(text)
                key = text
            else:
                prompt_tokens = len(input_ids)
                key = ",".join(map(str, input_ids[:4096]))
            max_new, temperature, ignore_eos = self._sampling(params, 128)
            if prompt_tokens == 0:
                # Not established from 0.5.23's source (an empty prompt reaches the scheduler); the simulator refuses it.
                raise BadRequest("The input is empty.", "value")
            self._check_context(prompt_tokens, max_new)
        except BadRequest as exc:
            return error_response(exc, "generate")
        if not stream:
            req = self.engine.submit(key, prompt_tokens, max_new, temperature, ignore_eos, lambda r, p, f: None)
            await self._await_done(request, req)
            return web.json_response({"text": req.text.lstrip(" ") if req.text else "",
                                      "output_ids": [], "meta_info": self._meta(req, True)})
        return await self._stream(request, key, prompt_tokens, max_new, temperature, ignore_eos, self._generate_chunk)

    async def _generate_batch(self, body):
        texts = body.get("text")
        ids = body.get("input_ids")
        items = texts if texts is not None else ids
        if body.get("stream"):
            raise BadRequest("Streaming is not supported for batched /generate in the simulator.", "value")
        max_new, temperature, ignore_eos = self._sampling(body.get("sampling_params"), 128)
        reqs = []
        for item in items:
            if isinstance(item, str):
                n, key = self.count_tokens(item), item
            elif isinstance(item, list):
                n, key = len(item), ",".join(map(str, item[:4096]))
            else:
                raise BadRequest("1 validation error: body.text: Input should be a valid list of strings")
            self._check_context(n, max_new)
            reqs.append(self.engine.submit(key, n, max_new, temperature, ignore_eos, lambda r, p, f: None))
        await asyncio.gather(*[r.done for r in reqs])
        return web.json_response([{"text": r.text.lstrip(" "), "output_ids": [], "meta_info": self._meta(r, True)} for r in reqs])

    async def _await_done(self, request, req):
        try:
            await req.done
        except asyncio.CancelledError:
            self.engine.abort(req)
            raise

    def _generate_chunk(self, req, piece, final):
        # SGLang streams the cumulative text by default; fake words need no JSON escaping
        text = req.text[1:] if req.text.startswith(" ") else req.text
        meta = json.dumps(self._meta(req, final), separators=(", ", ": "))
        return ('data: {"text": "%s", "output_ids": [], "meta_info": %s}\n\n' % (text, meta)).encode()

    async def _stream(self, request, key, prompt_tokens, max_new, temperature, ignore_eos, make_chunk, prologue=None,
                      epilogue=None):
        queue = []
        wake = asyncio.Event()

        def sink(req, piece, final):
            queue.append(make_chunk(req, piece, final))
            wake.set()

        resp = web.StreamResponse(headers=SSE_HEADERS)
        await resp.prepare(request)
        req = self.engine.submit(key, prompt_tokens, max_new, temperature, ignore_eos, sink)
        try:
            if prologue is not None:
                await resp.write(prologue(req))
            while True:
                if not queue:
                    if req.done.done():
                        break
                    wake.clear()
                    await wake.wait()
                    continue
                data = b"".join(queue)
                del queue[:]
                await resp.write(data)
            if epilogue is not None:
                tail = epilogue(req)
                if tail:
                    await resp.write(tail)
            await resp.write(DONE)
        except (ConnectionResetError, asyncio.CancelledError):
            self.engine.abort(req)
            raise
        return resp

    # -- OpenAI-compatible ------------------------------------------------------------------
    def _openai_common(self, body, default_max):
        """Options shared by /v1/completions and /v1/chat/completions (0.5.23 protocol.py; pydantic in
        lax mode: "yes" is a true boolean, "9" an integer)."""
        stream = lax_bool(body.get("stream", False), "body.stream") if body.get("stream") is not None else False
        n = _lax_number(body.get("n", 1), "body.n", int) if body.get("n") is not None else 1
        if n < 1:  # the simulator's own check (0.5.23's answer to n < 1 is not established here)
            raise BadRequest("n must be at least 1.", "value")
        max_tokens = body.get("max_completion_tokens", body.get("max_tokens", default_max))
        if max_tokens is not None:
            max_tokens = _lax_number(max_tokens, "body.max_tokens", int)
            if max_tokens <= 0 and "max_tokens" in body:
                # protocol.CompletionRequest.validate_max_tokens_positive (a field validator: a validation error)
                raise BadRequest("1 validation error: body.max_tokens: Value error, max_tokens must be positive")
        params = {"max_new_tokens": max_tokens, "temperature": body.get("temperature", 1.0),
                  "top_p": body.get("top_p", 1.0), "top_k": body.get("top_k", -1),
                  "ignore_eos": body.get("ignore_eos", False), "stop": body.get("stop")}
        opts = body.get("stream_options")
        if opts is not None and not isinstance(opts, dict):
            raise BadRequest("1 validation error: body.stream_options: Input should be a valid dictionary or object "
                             "to extract fields from")
        opts = opts or {}
        return_spec = body.get("return_spec_tokens_details", False)
        return_spec = lax_bool(return_spec, "body.return_spec_tokens_details") if return_spec is not None else False
        # type checks (the request model) first, then the handler, then SamplingParams.verify (ValueErrors)
        self._sampling(params, default_max, "openai", verify=False)
        return stream, n, params, return_spec, opts

    def _openai_sampling(self, params, default_max):
        return self._sampling(params, default_max, "openai")

    @staticmethod
    def _stream_flags(opts, return_spec):
        # openai/utils.should_include_usage: (include_usage, continuous_usage_stats)
        return StreamFlags(bool(opts.get("include_usage")), bool(opts.get("continuous_usage_stats")), return_spec)

    def _final_response(self, reqs, obj, created, model, flags, contents, n=1):
        """A non-streaming OpenAI answer (0.5.23 serving_completions / serving_chat): one choice per
        request (a prompt batch, or n choices of one prompt), holding ``contents[i]`` (text or message),
        usage (UsageProcessor.calculate_response_usage: the prompt counted once per n choices), and
        sglext spec details when asked (a list when n > 1)."""
        choices = []
        for idx, (req, content) in enumerate(zip(reqs, contents)):
            reason, matched = self._finish_str(req)
            choice = dict({"index": idx}, **content)
            choice.update({"logprobs": None, "finish_reason": reason, "matched_stop": matched})
            choices.append(choice)
        prompt_tokens = sum(reqs[i].prompt_tokens for i in range(0, len(reqs), n))
        completion_tokens = sum(r.completion_tokens for r in reqs)
        usage = {"prompt_tokens": prompt_tokens, "total_tokens": prompt_tokens + completion_tokens,
                 "completion_tokens": completion_tokens, "prompt_tokens_details": None, "reasoning_tokens": 0,
                 "completion_tokens_details": None}
        out = {"id": reqs[0].rid, "object": obj, "created": created, "model": model, "choices": choices,
               "usage": usage, "metadata": {"weight_version": "default"}}
        if flags.return_spec:
            details = [d for d in (self.spec_tokens_details(self._meta(r, True)) for r in reqs) if d is not None]
            if details:
                out["sglext"] = {"spec_tokens_details": details if n > 1 else details[0]}
        return web.json_response(out)

    async def _run_all(self, request, items, max_new, temperature, ignore_eos):
        """Serve (key, prompt_tokens) items at once (a batch, or n choices); the finished requests."""
        reqs = [self.engine.submit(key, tokens, max_new, temperature, ignore_eos, lambda r, p, f: None)
                for key, tokens in items]
        try:
            await asyncio.gather(*[r.done for r in reqs])
        except asyncio.CancelledError:
            for req in reqs:
                self.engine.abort(req)
            raise
        return reqs

    @staticmethod
    def _usage(req):
        # 0.5.23 UsageInfo (prompt_tokens_details only with --enable-cache-report)
        return {"prompt_tokens": req.prompt_tokens, "total_tokens": req.prompt_tokens + req.completion_tokens,
                "completion_tokens": req.completion_tokens, "prompt_tokens_details": None, "reasoning_tokens": 0,
                "completion_tokens_details": None}

    @staticmethod
    def _usage_json(req):
        # UsageProcessor.calculate_token_usage(...) serialised, built by hand: it goes on every chunk
        return ('{"prompt_tokens":%d,"total_tokens":%d,"completion_tokens":%d,"prompt_tokens_details":null,'
                '"reasoning_tokens":0,"completion_tokens_details":null}'
                % (req.prompt_tokens, req.prompt_tokens + req.completion_tokens, req.completion_tokens))

    def _sglext(self, req, frame, flags):
        """The response-level chunk carrying sglext.spec_tokens_details (0.5.23: after the content
        chunks, before the usage chunk, only when asked and the request has spec figures)."""
        if not flags.return_spec:
            return b""
        details = self.spec_tokens_details(self._meta(req, True))
        if details is None:
            return b""
        doc = dict(frame, choices=[], usage=None, sglext={"spec_tokens_details": details})
        return ("data: " + _compact(doc) + "\n\n").encode()

    def _final_usage(self, req, frame, flags, drop_none):
        if not flags.include_usage:
            return b""
        usage = self._usage(req)
        if drop_none:  # model_dump_json(exclude_none=True), as serving_completions sends it
            usage = dict((k, v) for k, v in usage.items() if v is not None)
        return ("data: " + _compact(dict(frame, choices=[], usage=usage)) + "\n\n").encode()

    @staticmethod
    def _finish_str(req):
        reason = req.finish_reason or {}
        return reason.get("type"), reason.get("matched")

    async def completions(self, request):
        try:
            body = await self._json_body(request, "completions")
            prompt = body.get("prompt")
            if prompt is None:
                raise BadRequest("1 validation error: body.prompt: Field required")
            # protocol.CompletionRequest.prompt: Union[List[int], List[List[int]], str, List[str]]
            if isinstance(prompt, str) or _valid_token_ids(prompt) and (not prompt or not isinstance(prompt[0], list)):
                prompts = [prompt]
            elif isinstance(prompt, list) and prompt and (all(isinstance(p, str) for p in prompt) or _valid_token_ids(prompt)):
                prompts = list(prompt)
            else:
                raise BadRequest("1 validation error: body.prompt: Input should be a valid string, a list of strings, "
                                 "a list of integers or a list of lists of integers")
            stream, n, params, return_spec, opts = self._openai_common(body, 16)
            # serving_completions._validate_request
            if not prompt or all(not p for p in prompts):
                raise BadRequest("Prompt cannot be empty", "handler")
            items = []
            for item in prompts:
                if isinstance(item, str):
                    items.append((item, self.count_tokens(item)))
                else:
                    items.append((",".join(map(str, item[:4096])), len(item)))
            if stream and (len(items) > 1 or n > 1):
                raise BadRequest("the simulator streams one prompt and one choice (SGLang streams batches and n > 1)",
                                 "handler")
            max_new, temperature, ignore_eos = self._openai_sampling(params, 16)
            for _key, tokens in items:
                self._check_context(tokens, max_new)
        except BadRequest as exc:
            return error_response(exc, "openai")
        flags = self._stream_flags(opts, return_spec)
        model = body.get("model") or self.args.served_model_name
        created = int(time.time())
        if not stream:
            reqs = await self._run_all(request, [it for it in items for _copy in range(n)], max_new, temperature, ignore_eos)
            return self._final_response(reqs, "text_completion", created, model, flags, [{"text": r.text} for r in reqs], n)
        key, prompt_tokens = items[0]
        # 0.5.23 serving_completions._generate_completion_stream: one chunk per output, the last
        # with the finish reason; usage on each with continuous_usage_stats; then sglext, usage.
        state = {}

        def chunk(req, piece, final):
            head = state.get("head")
            if head is None:
                frame = state["frame"] = {"id": req.rid, "object": "text_completion", "created": created, "model": model}
                head = state["head"] = _compact(frame)[:-1] + ',"choices":[{"index":0,"text":"'
            if final:
                reason, matched = self._finish_str(req)
                tail = '","logprobs":null,"finish_reason":%s,"matched_stop":%s}],"usage":' % (
                    json.dumps(reason), json.dumps(matched))
            else:
                tail = '","logprobs":null,"finish_reason":null,"matched_stop":null}],"usage":'
            usage = self._usage_json(req) if flags.continuous_usage else "null"
            return ("data: " + head + piece + tail + usage + "}\n\n").encode()

        def epilogue(req):
            frame = state.get("frame") or {"id": req.rid, "object": "text_completion", "created": created, "model": model}
            return self._sglext(req, frame, flags) + self._final_usage(req, frame, flags, drop_none=True)

        return await self._stream(request, key, prompt_tokens, max_new, temperature, ignore_eos, chunk, epilogue=epilogue)

    async def chat_completions(self, request):
        try:
            body = await self._json_body(request, "chat")
            messages = body.get("messages")
            if messages is None:
                raise BadRequest("1 validation error: body.messages: Field required")
            if not isinstance(messages, list):
                raise BadRequest("1 validation error: body.messages: Input should be a valid list")
            content_tokens = 0
            for i, msg in enumerate(messages):
                if not isinstance(msg, dict) or msg.get("role") not in ("system", "user", "assistant", "tool", "developer"):
                    raise BadRequest("validation errors: body.messages.%d.role: Value error, 'role' must be one of "
                                     "'system', 'developer', 'user', 'assistant', 'tool'" % i)
                content = msg.get("content", "")
                if isinstance(content, list):
                    content = " ".join(part.get("text", "") for part in content if isinstance(part, dict))
                elif content is None:
                    content = ""
                elif not isinstance(content, str):
                    raise BadRequest("validation errors: body.messages.%d.content: Input should be a valid string" % i)
                content_tokens += self.count_tokens(content)
            stream, n, params, return_spec, opts = self._openai_common(body, None)
            # serving_chat._validate_request
            if not messages:
                raise BadRequest("Messages cannot be empty.", "handler")
            if stream and n > 1:
                raise BadRequest("the simulator streams one choice (SGLang streams n > 1 choices)", "handler")
            # a chat template adds a few tokens per message
            prompt_tokens = content_tokens + 4 * len(messages) + 3
            key = json.dumps(messages, sort_keys=True)
            max_new, temperature, ignore_eos = self._openai_sampling(params, None)
            if max_new is None:
                max_new = max(1, self.context_len - prompt_tokens)
            self._check_context(prompt_tokens, max_new)
        except BadRequest as exc:
            return error_response(exc, "openai")
        flags = self._stream_flags(opts, return_spec)
        model = body.get("model") or self.args.served_model_name
        created = int(time.time())
        if not stream:
            reqs = await self._run_all(request, [(key, prompt_tokens)] * n, max_new, temperature, ignore_eos)
            contents = [{"message": {"role": "assistant", "content": r.text.lstrip(" "), "reasoning_content": None,
                                     "tool_calls": None}} for r in reqs]
            return self._final_response(reqs, "chat.completion", created, model, flags, contents, n)
        # 0.5.23 serving_chat._generate_chat_stream (chunks built by sse_utils.build_sse_content, msgspec,
        # usage omitted when None): a role chunk before the first content, content chunks (usage on
        # each with continuous_usage_stats), a separate finish-reason chunk, then sglext, usage.
        state = {}

        def chunk(req, piece, final):
            head = state.get("head")
            out = ""
            if head is None:
                frame = state["frame"] = {"id": req.rid, "object": "chat.completion.chunk", "created": created,
                                          "model": model}
                head = state["head"] = _compact(frame)[:-1] + ',"choices":[{"index":0,"delta":{"reasoning_content":null'
                out = ("data: " + head + ',"role":"assistant","content":""},"logprobs":null,"finish_reason":null,'
                       '"matched_stop":null}]}\n\n')
                # The first piece's leading space is dropped, as the non-streaming answer lstrips it.
                if piece.startswith(" "):
                    piece = piece[1:]
            usage = ',"usage":' + self._usage_json(req) if flags.continuous_usage else ""
            out += ("data: " + head + ',"content":"' + piece + '"},"logprobs":null,"finish_reason":null,'
                    '"matched_stop":null}]' + usage + "}\n\n")
            if final:
                reason, matched = self._finish_str(req)
                out += ("data: " + head + '},"logprobs":null,"finish_reason":%s,"matched_stop":%s}]}\n\n' % (
                    json.dumps(reason), json.dumps(matched)))
            return out.encode()

        def epilogue(req):
            frame = state.get("frame") or {"id": req.rid, "object": "chat.completion.chunk", "created": created,
                                           "model": model}
            return self._sglext(req, frame, flags) + self._final_usage(req, frame, flags, drop_none=False)

        return await self._stream(request, key, prompt_tokens, max_new, temperature, ignore_eos, chunk, epilogue=epilogue)


def _valid_token_ids(value):
    """0.5.23 utils/field_validators.validate_optional_list_i64_1d_2d: a list of ints or of lists of ints."""
    def ints(row):
        return isinstance(row, list) and all(isinstance(i, int) and not isinstance(i, bool) for i in row)
    if not isinstance(value, list):
        return False
    if value and isinstance(value[0], list):
        return all(ints(row) for row in value)
    return ints(value)


def _compact(doc):
    # pydantic's model_dump_json / msgspec write compact JSON
    return json.dumps(doc, separators=(",", ":"))


class StreamFlags(object):
    """What an OpenAI request asked to be streamed besides the text."""

    __slots__ = ("include_usage", "continuous_usage", "return_spec")

    def __init__(self, include_usage, continuous_usage, return_spec):
        self.include_usage = include_usage
        self.continuous_usage = continuous_usage
        self.return_spec = return_spec


# -- startup ----------------------------------------------------------------------------------
# SGLang 0.5.23 srt/model_executor/runner_backend_utils/__init__.py CUDA_GRAPH_CAPTURE_FAILED_MSG
