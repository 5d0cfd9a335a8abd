"""Contract tests: every endpoint, streaming and not, against SGLang 0.5.23 shapes
(the source files named in server.py's comments)."""

import json
import signal
import time

import pytest

from sglang_sim.testing import Client, SimProcess

GEN = {"text": "The capital of France is", "sampling_params": {"max_new_tokens": 24, "temperature": 0, "ignore_eos": True}}


def test_health_endpoints_answer_200_when_ready(client):
    assert client.get("/health")[0] == 200
    assert client.get("/health_generate")[0] == 200


def test_model_info_shape(client):
    info = client.get_json("/model_info")
    assert info["model_path"] == "/models/sim"
    assert info["served_model_name"] == "qwen-sim"
    assert info["is_generation"] is True
    assert isinstance(info["tokenizer_path"], str)


def _spec_decode_enough(client):
    # internal_states[i].avg_spec_accept_length appears once a 40-decode-step interval was counted
    client.post("/generate", {"text": "warm", "sampling_params": {"max_new_tokens": 400, "temperature": 0, "ignore_eos": True}})


def test_server_info_has_resolved_args_and_the_effective_limit_per_dp(client):
    _spec_decode_enough(client)
    info = client.get_json("/server_info")
    for key in ("tp_size", "kv_cache_dtype", "speculative_algorithm", "speculative_num_steps", "speculative_eagle_topk",
                "speculative_num_draft_tokens", "max_running_requests", "max_total_num_tokens", "mem_fraction_static",
                "port", "host", "model_path", "served_model_name", "version", "launch_command", "startup_time",
                "max_req_input_len", "frontend"):
        assert key in info, key
    assert info["tp_size"] == 4
    assert info["speculative_algorithm"] == "EAGLE"
    assert (info["speculative_num_steps"], info["speculative_eagle_topk"], info["speculative_num_draft_tokens"]) == (3, 1, 4)
    assert isinstance(info["max_total_num_tokens"], int) and info["max_total_num_tokens"] > 0
    # 0.5.23: speculative decoding and no --max-running-requests resolve the top level to 48 ...
    assert info["max_running_requests"] == 48
    assert isinstance(info["internal_states"], list) and len(info["internal_states"]) == 1
    state = info["internal_states"][0]
    # ... and the limit the scheduler applies is per DP rank in internal_states
    effective = state["effective_max_running_requests_per_dp"]
    assert isinstance(effective, int) and 0 < effective
    assert state["max_running_requests"] == 48  # the resolved args are repeated per rank
    assert state["avg_spec_accept_length"] > 1.0
    assert isinstance(state["last_gen_throughput"], float)
    memory = state["memory_usage"]
    assert memory["token_capacity"] == info["max_total_num_tokens"]
    assert set(memory["graph"]) == {"prefill", "decode", "target_verify", "draft_prefill", "draft_decode", "draft_extend"}
    assert "simulator" in info  # says plainly what it is


def test_effective_limit_differs_from_the_resolved_48():
    # an explicit --max-running-requests above what the KV pool holds: top level says what was asked,
    # internal_states what applies
    with SimProcess(["--tp-size", "4", "--speculative-algorithm", "EAGLE", "--speculative-num-steps", "3",
                     "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", "4",
                     "--max-running-requests", "100000"], profile="fast") as sim:
        info = Client(sim.url).get_json("/server_info")
        assert info["max_running_requests"] == 100000
        assert info["internal_states"][0]["effective_max_running_requests_per_dp"] < 100000


def test_no_spec_means_no_resolved_limit_and_no_accept_length():
    with SimProcess(["--tp-size", "4"], profile="fast") as sim:
        info = Client(sim.url).get_json("/server_info")
        assert info["max_running_requests"] is None
        state = info["internal_states"][0]
        assert state["effective_max_running_requests_per_dp"] > 0
        assert "avg_spec_accept_length" not in state
        meta = json.loads(Client(sim.url).post("/generate", GEN)[2])["meta_info"]
        assert not [k for k in meta if k.startswith("spec_")]


def test_deprecated_endpoints_answer_and_log_a_warning(spec_server, client):
    assert client.get_json("/get_server_info")["internal_states"]
    assert client.get_json("/get_model_info")["model_path"] == "/models/sim"
    log = spec_server.output()
    assert ("Endpoint '/get_server_info' is deprecated and will be removed in a future version. "
            "Please use '/server_info' instead.") in log
    assert "Endpoint '/get_model_info' is deprecated" in log
    before = log.count("is deprecated")
    client.get_json("/server_info")
    client.get_json("/model_info")
    assert spec_server.output().count("is deprecated") == before


SPEC_FINAL_KEYS = {"spec_accept_rate", "spec_accept_length", "spec_num_correct_drafts", "spec_num_proposed_drafts",
                   "spec_verify_ct"}


def test_generate_non_streaming(client):
    status, _headers, text = client.post("/generate", GEN)
    assert status == 200
    out = json.loads(text)
    meta = out["meta_info"]
    assert isinstance(out["text"], str) and len(out["text"].split()) == 24
    assert meta["completion_tokens"] == 24
    assert meta["finish_reason"] == {"type": "length", "length": 24}
    assert meta["prompt_tokens"] > 0 and isinstance(meta["cached_tokens"], int)
    assert isinstance(meta["id"], str)
    assert meta["num_retractions"] == 0 and "total_retractions" not in meta
    assert meta["reasoning_tokens"] == 0
    assert 1 <= meta["spec_verify_ct"] <= 23
    assert isinstance(meta["e2e_latency"], float)
    assert SPEC_FINAL_KEYS <= set(meta)
    assert meta["spec_num_proposed_drafts"] == meta["spec_verify_ct"] * 3  # draft tokens - 1 per verify
    assert 0 <= meta["spec_num_correct_drafts"] <= meta["spec_num_proposed_drafts"]
    assert meta["spec_accept_length"] == meta["completion_tokens"] / meta["spec_verify_ct"]
    assert 1.0 <= meta["spec_accept_length"] <= 3 + 1 + 1  # prefill token included


def test_generate_streaming_chunks(client):
    chunks = client.sse("/generate", dict(GEN, stream=True))
    counts = [c["meta_info"]["completion_tokens"] for c in chunks]
    assert counts == sorted(counts) and counts[-1] == 24
    assert counts[0] == 1  # the prefill emits the first token
    steps = [b - a for a, b in zip(counts, counts[1:])]
    assert all(1 <= s <= 4 for s in steps)  # 1 .. steps + 1 tokens per decode step
    for c in chunks[:-1]:
        assert c["meta_info"]["finish_reason"] is None
        assert "e2e_latency" not in c["meta_info"]
        # 0.5.23: the speculative counters come on the finished output only
        assert not [k for k in c["meta_info"] if k.startswith("spec_")]
    last = chunks[-1]["meta_info"]
    assert last["finish_reason"]["type"] == "length"
    assert "e2e_latency" in last and SPEC_FINAL_KEYS <= set(last)
    assert last["spec_verify_ct"] == len(chunks) - 1
    # text is cumulative
    assert all(chunks[i + 1]["text"].startswith(chunks[i]["text"]) for i in range(len(chunks) - 1))
    assert len(chunks[-1]["text"].split()) == 24


def test_generate_input_ids_and_batch(client):
    status, _headers, text = client.post("/generate", {"input_ids": [1, 2, 3, 4, 5], "sampling_params": {"max_new_tokens": 3}})
    assert status == 200 and json.loads(text)["meta_info"]["prompt_tokens"] == 5
    status, _headers, text = client.post("/generate", {"text": ["a b", "c d"], "sampling_params": {"max_new_tokens": 2, "ignore_eos": True}})
    assert status == 200
    assert [o["meta_info"]["completion_tokens"] for o in json.loads(text)] == [2, 2]


def test_natural_stop_without_ignore_eos(client):
    # a batch runs its requests concurrently: 8 natural lengths in the time of the longest
    body = {"text": ["x %d" % i for i in range(8)], "sampling_params": {"max_new_tokens": 2000}}
    outs = json.loads(client.post("/generate", body)[2])
    lengths = [o["meta_info"]["completion_tokens"] for o in outs]
    assert len(set(lengths)) > 1  # drawn per request
    for out in outs:
        reason = out["meta_info"]["finish_reason"]
        if reason["type"] == "stop":
            assert out["meta_info"]["completion_tokens"] < 2000 and "matched" in reason
    assert "stop" in [o["meta_info"]["finish_reason"]["type"] for o in outs]


def test_v1_completions(client):
    status, _headers, text = client.post("/v1/completions", {"model": "qwen-sim", "prompt": "Say", "max_tokens": 7, "ignore_eos": True})
    assert status == 200
    out = json.loads(text)
    assert out["object"] == "text_completion"
    assert out["choices"][0]["finish_reason"] == "length"
    assert out["usage"]["completion_tokens"] == 7
    assert out["usage"]["total_tokens"] == out["usage"]["prompt_tokens"] + 7
    assert "sglext" not in out
    out = json.loads(client.post("/v1/completions", {"model": "qwen-sim", "prompt": "Say", "max_tokens": 7, "ignore_eos": True,
                                                     "return_spec_tokens_details": True})[2])
    details = out["sglext"]["spec_tokens_details"]
    assert details["spec_accept_length"] == 7 / details["spec_verify_ct"]


def test_v1_completions_stream_with_usage(client):
    chunks = client.sse("/v1/completions", {"model": "qwen-sim", "prompt": "Say", "max_tokens": 9, "ignore_eos": True,
                                            "stream": True, "stream_options": {"include_usage": True}})
    usage = chunks[-1]
    assert usage["choices"] == [] and usage["usage"]["completion_tokens"] == 9
    # serving_completions sends the final usage chunk with exclude_none
    assert "prompt_tokens_details" not in usage["usage"]
    body = chunks[:-1]
    assert all(c["object"] == "text_completion" and c["usage"] is None for c in body)
    assert len({c["id"] for c in chunks}) == 1
    assert body[-1]["choices"][0]["finish_reason"] == "length"
    assert all(c["choices"][0]["finish_reason"] is None for c in body[:-1])
    assert len("".join(c["choices"][0]["text"] for c in body).split()) == 9


def test_v1_completions_stream_continuous_usage_and_spec_details(client):
    chunks = client.sse("/v1/completions", {
        "model": "qwen-sim", "prompt": "Say", "max_tokens": 30, "ignore_eos": True, "stream": True,
        "stream_options": {"include_usage": True, "continuous_usage_stats": True}, "return_spec_tokens_details": True})
    content, sglext, usage = chunks[:-2], chunks[-2], chunks[-1]
    counts = [c["usage"]["completion_tokens"] for c in content]
    assert counts[0] == 1 and counts[-1] == 30 and counts == sorted(counts)
    # each chunk's usage counts exactly the words streamed so far
    text = ""
    for c in content:
        text += c["choices"][0]["text"]
        assert len(text.split()) == c["usage"]["completion_tokens"]
        assert c["usage"]["total_tokens"] == c["usage"]["prompt_tokens"] + c["usage"]["completion_tokens"]
    assert "sglext" not in content[-1]
    assert sglext["choices"] == [] and sglext["usage"] is None
    details = sglext["sglext"]["spec_tokens_details"]
    assert details["spec_verify_ct"] == len(content) - 1
    assert details["spec_accept_length"] == 30 / details["spec_verify_ct"]
    assert details["spec_num_proposed_drafts"] == 3 * details["spec_verify_ct"]
    assert usage["choices"] == [] and usage["usage"]["completion_tokens"] == 30


def test_v1_chat_completions(client):
    body = {"model": "qwen-sim", "max_tokens": 5, "ignore_eos": True, "messages": [{"role": "user", "content": "hi"}]}
    status, _headers, text = client.post("/v1/chat/completions", body)
    assert status == 200
    out = json.loads(text)
    assert out["object"] == "chat.completion"
    msg = out["choices"][0]["message"]
    assert msg["role"] == "assistant" and len(msg["content"].split()) == 5
    assert out["usage"]["completion_tokens"] == 5


def test_v1_chat_stream_with_and_without_usage(client):
    body = {"model": "qwen-sim", "max_tokens": 6, "ignore_eos": True, "stream": True,
            "messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]}
    chunks = client.sse("/v1/chat/completions", body)
    # sse_utils.build_sse_content: reasoning_content always present, usage left out when None
    assert chunks[0]["choices"][0]["delta"] == {"reasoning_content": None, "role": "assistant", "content": ""}
    assert all(c["object"] == "chat.completion.chunk" and "usage" not in c for c in chunks)
    # the finish reason comes in its own chunk, with an empty delta
    assert chunks[-1]["choices"][0]["finish_reason"] == "length"
    assert chunks[-1]["choices"][0]["delta"] == {"reasoning_content": None}
    assert all(c["choices"][0]["finish_reason"] is None for c in chunks[:-1])
    assert len("".join(c["choices"][0]["delta"].get("content", "") for c in chunks).split()) == 6
    chunks = client.sse("/v1/chat/completions", dict(body, stream_options={"include_usage": True}))
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["completion_tokens"] == 6
    assert chunks[-1]["usage"]["prompt_tokens"] > 0


def test_v1_chat_stream_continuous_usage_and_spec_details(client):
    chunks = client.sse("/v1/chat/completions", {
        "model": "qwen-sim", "max_tokens": 30, "ignore_eos": True, "stream": True,
        "messages": [{"role": "user", "content": "hi"}],
        "stream_options": {"include_usage": True, "continuous_usage_stats": True}, "return_spec_tokens_details": True})
    role, content, finish, sglext, usage = chunks[0], chunks[1:-3], chunks[-3], chunks[-2], chunks[-1]
    assert "usage" not in role and "usage" not in finish
    text = ""
    for c in content:
        text += c["choices"][0]["delta"]["content"]
        assert len(text.split()) == c["usage"]["completion_tokens"]
    assert content[-1]["usage"]["completion_tokens"] == 30
    assert finish["choices"][0]["finish_reason"] == "length"
    details = sglext["sglext"]["spec_tokens_details"]
    assert details["spec_verify_ct"] == len(content) - 1
    assert usage["choices"] == [] and usage["usage"]["completion_tokens"] == 30


def test_v1_models(client):
    out = client.get_json("/v1/models")
    assert out["object"] == "list"
    assert out["data"][0]["id"] == "qwen-sim" and out["data"][0]["object"] == "model"


def test_flush_cache_and_cached_tokens(client):
    body = {"text": "repeat this prompt please " * 8, "sampling_params": {"max_new_tokens": 1}}
    first = json.loads(client.post("/generate", body)[2])["meta_info"]
    second = json.loads(client.post("/generate", body)[2])["meta_info"]
    assert first["cached_tokens"] == 0
    assert second["cached_tokens"] == second["prompt_tokens"] - 1
    status, _headers, text = client.post("/flush_cache")
    assert status == 200 and text.startswith("Cache flushed")
    third = json.loads(client.post("/generate", body)[2])["meta_info"]
    assert third["cached_tokens"] == 0


def test_metrics(client):
    client.post("/generate", GEN)
    status, headers, text = client.get("/metrics")
    assert status == 200 and headers["Content-Type"].startswith("text/plain")
    for name in ("sglang:spec_accept_length", "sglang:spec_accept_rate", "sglang:gen_throughput", "sglang:num_running_reqs",
                 "sglang:num_queue_reqs", "sglang:token_usage", "sglang:generation_tokens_total", "sglang:prompt_tokens_total",
                 "sglang:time_to_first_token_seconds_bucket", "sglang:inter_token_latency_seconds_count",
                 "sglang:e2e_request_latency_seconds_sum"):
        assert name in text, name
    assert "sglang:max_running_requests{" not in text  # 0.5.23 exports no such gauge
    gen_total = [line for line in text.splitlines() if line.startswith("sglang:generation_tokens_total")][0]
    assert float(gen_total.split()[-1]) >= 24


@pytest.mark.parametrize("path,body,fragment", [
    ("/generate", {"sampling_params": {"max_new_tokens": 1}}, "Either text, input_ids"),
    ("/generate", {"text": "x", "sampling_params": {"temperature": -1}}, "temperature must be a non-negative finite number"),
    ("/generate", {"text": "x", "sampling_params": {"top_p": 0}}, "top_p must be in (0, 1]"),
    ("/generate", {"text": "x", "sampling_params": {"max_new_tokens": -1}}, "max_new_tokens must be at least 0"),
    ("/generate", {"text": "x", "sampling_params": {"max_new_tokens": 10 ** 7}}, "maximum context length"),
])
def test_generate_errors_are_sglang_400(client, path, body, fragment):
    status, _headers, text = client.post(path, body)
    assert status == 400
    err = json.loads(text)
    assert fragment in err["error"]["message"]


@pytest.mark.parametrize("path,body", [
    ("/v1/chat/completions", {"model": "m", "messages": []}),
    ("/v1/chat/completions", {"model": "m", "messages": [{"role": "user", "content": "x"}], "temperature": "hot"}),
    ("/v1/completions", {"model": "m"}),
    ("/v1/completions", {"model": "m", "prompt": "x", "max_tokens": -3}),
    ("/generate", {"text": 5}),
])
def test_openai_errors_are_400_error_objects(client, path, body):
    status, _headers, text = client.post(path, body)
    assert status == 400
    err = json.loads(text)
    assert err["object"] == "error" and err["code"] == 400 and isinstance(err["message"], str)


@pytest.mark.parametrize("raw", [b"{not json", b"[1, 2]", b""])
def test_malformed_json_is_answered_not_a_hang(client, raw):
    # SGLang 0.5.23: FastAPI's validation errors (400, "Bad Request"), except a JSON array on the chat
    # endpoint, which its ChatCompletionRequest validators fail on (500; see JUNK_ANSWERS below).
    status, _headers, text = client.request("POST", "/v1/chat/completions", raw=raw)
    if raw == b"[1, 2]":
        assert (status, text) == (500, "Internal Server Error")
    else:
        assert status == 400
        assert json.loads(text)["type"] == "Bad Request"
    for path in ("/generate", "/v1/completions"):
        status, _headers, text = client.request("POST", path, raw=raw)
        assert status == 400 and json.loads(text)["type"] == "Bad Request", (path, text)


def test_api_key_enforced_except_health():
    with SimProcess(["--tp-size", "4", "--api-key", "s3cret", "--enable-metrics"], profile="fast") as sim:
        anon = Client(sim.url)
        authed = Client(sim.url, api_key="s3cret")
        assert anon.get("/health")[0] == 200
        assert anon.get("/health_generate")[0] == 200
        assert anon.get("/metrics")[0] == 200
        for path in ("/server_info", "/get_server_info", "/v1/models", "/model_info"):
            status, _headers, text = anon.get(path)
            assert status == 401 and json.loads(text) == {"error": "Unauthorized"}
        assert Client(sim.url, api_key="wrong").post("/generate", GEN)[0] == 401
        assert authed.post("/generate", GEN)[0] == 200
        assert authed.get("/server_info")[0] == 200


def test_health_503_until_ready_and_sigint_exits_promptly(tmp_path):
    profile = tmp_path / "slow.yaml"
    profile.write_text("timing:\n  load_time_s: 0.3\n  warmup_s: 1.5\n")
    sim = SimProcess(["--tp-size", "4"], profile=str(profile), wait=False).start()
    try:
        client = Client(sim.url)
        deadline = time.time() + 10
        seen_503 = generate_checked = False
        while time.time() < deadline:
            try:
                status = client.get("/health")[0]
            except OSError:
                time.sleep(0.02)
                continue
            if status == 503:
                seen_503 = True
                # Readiness is one-way, so /health_generate must say 503 too
                # whenever /health still says so after it; warm-up may end
                # between the two requests, and then neither answer is wrong.
                generate_status = client.get("/health_generate")[0]
                if client.get("/health")[0] == 503:
                    assert generate_status == 503
                    generate_checked = True
            if status == 200:
                break
            time.sleep(0.05)
        assert seen_503 and generate_checked and status == 200
        start = time.time()
        assert sim.stop() == 0
        assert time.time() - start < 3
        log = sim.output()
        assert "The server is fired up and ready to roll!" in log
        assert log.index("Uvicorn running on http://127.0.0.1:%d" % sim.port) < log.index("fired up")
    finally:
        sim.stop()


def test_no_metrics_without_flag():
    with SimProcess(["--tp-size", "4"], profile="fast") as sim:
        assert Client(sim.url).get("/metrics")[0] == 404


def test_streaming_many_concurrent_requests_and_client_disconnect(spec_server):
    import asyncio

    import aiohttp

    async def go():
        async with aiohttp.ClientSession() as session:
            async def one(i, cut):
                body = dict(GEN, stream=True, text="q %d" % i)
                async with session.post(spec_server.url + "/generate", json=body) as resp:
                    n = 0
                    async for line in resp.content:
                        if line.startswith(b"data: "):
                            n += 1
                            if cut and n == 2:
                                return "cut"
                    return line
            return await asyncio.gather(*[one(i, i % 3 == 0) for i in range(30)])

    results = asyncio.run(go())
    assert results.count("cut") == 10
    # the server keeps serving after the disconnects
    client = Client(spec_server.url)
    assert client.post("/generate", GEN)[0] == 200
    time.sleep(0.3)
    text = client.get("/metrics")[2]
    running = [line for line in text.splitlines() if line.startswith("sglang:num_running_reqs")][0]
    assert float(running.split()[-1]) == 0.0


def test_sigterm_during_loading_exits_promptly(tmp_path):
    profile = tmp_path / "slow.yaml"
    profile.write_text("timing:\n  load_time_s: 60\n")
    sim = SimProcess(["--tp-size", "4"], profile=str(profile), wait=False).start()
    try:
        deadline = time.time() + 10
        while "Load weight begin" not in sim.output() and time.time() < deadline:
            time.sleep(0.05)
        start = time.time()
        # 0.5.23 has no SIGTERM handler on node rank 0 while it loads: the default action ends it.
        assert sim.stop(sig=signal.SIGTERM) == -signal.SIGTERM
        assert time.time() - start < 3
        assert "fired up" not in sim.output()
    finally:
        sim.stop()


def test_unknown_paths_and_methods_answer_like_fastapi(client):
    status, _headers, text = client.get("/no/such/path")
    assert status == 404 and json.loads(text) == {"detail": "Not Found"}
    status, _headers, text = client.get("/generate")
    assert status == 405 and json.loads(text) == {"detail": "Method Not Allowed"}


# What SGLang 0.5.23 answers each junk body with, per endpoint. Established from its sources (the
# sglang-0.5.23 wheel): the request models (entrypoints/openai/protocol.py CompletionRequest,
# ChatCompletionRequest) and the /generate contract (api/v1/api_types.py GenerateRequest) were run on
# these bodies under FastAPI with http_server.py's exception handlers; GenerateReqInput's field types
# (managers/io_struct.py) and what follows admission (io_struct._validate_inputs, SamplingParams.verify,
# serving_completions/serving_chat._validate_request) were read. The answers:
#   parse       400 {"object": "error", "message": "There was an error parsing the body", "type": "400", ...}
#               (a body that is not UTF-8: FastAPI's HTTPException, http_server's HTTPException handler)
#   validation  400 {"object": "error", "type": "Bad Request", ...} (RequestValidationError, http_server's handler)
#   contract    400 {"error": "invalid type: ..."} (/generate's api_contract.generate_contract_error)
#   value       400 {"error": {"message": ...}} (/generate: a ValueError of the tokenizer manager)
#   ok          200 (the body is valid: a batch of two token-id prompts; n = 3 non-streaming choices)
#   crash       500 "Internal Server Error" (ChatCompletionRequest's mode="before" validators call .get on
#               a body that is not an object)
#   sim         {"text": ""}: the simulator's own 400 "The input is empty."; 0.5.23 admits the body and
#               tokenizes it to no tokens, and what its scheduler does with an empty prompt is not established
JUNK_ANSWERS = [
    # body, /generate, /v1/completions, /v1/chat/completions
    (b"\xff\xfe\x00", "parse", "parse", "parse"),
    (b"null", "validation", "validation", "crash"),
    (b"3", "validation", "validation", "crash"),
    (b'"text"', "validation", "validation", "crash"),
    (b'{"text": null}', "value", "validation", "validation"),
    (b'{"text": "x", "sampling_params": 5}', "validation", "validation", "validation"),
    (b'{"text": "x", "sampling_params": {"max_new_tokens": 1.5}}', "contract", "validation", "validation"),
    (b'{"text": "x", "sampling_params": {"max_new_tokens": "9"}}', "contract", "validation", "validation"),
    (b'{"text": "x", "sampling_params": {"temperature": null, "top_k": 0}}', "value", "validation", "validation"),
    (b'{"input_ids": [1, "a"]}', "validation", "validation", "validation"),
    (b'{"input_ids": "abc"}', "validation", "validation", "validation"),
    (b'{"text": "x", "stream": "yes"}', "contract", "validation", "validation"),
    (b'{"text": ""}', "sim", "validation", "validation"),
    (b'{"prompt": [[1, 2], [3]]}', "value", "ok", "validation"),
    (b'{"messages": "hi"}', "value", "validation", "validation"),
    (b'{"messages": [{"role": "wizard", "content": "x"}]}', "value", "validation", "validation"),
    (b'{"messages": [{"role": "user", "content": 5}]}', "value", "validation", "validation"),
    (b'{"messages": [{"role": "user", "content": "x"}], "n": 3}', "value", "validation", "ok"),
    (b'{"messages": [{"role": "user", "content": "x"}], "stream_options": 7}', "value", "validation", "validation"),
    (b'{"text": "x", "sampling_params": {"stop": 3}}', "contract", "validation", "validation"),
    (b'{"text": "x", "sampling_params": {"ignore_eos": "no"}}', "contract", "validation", "validation"),
    (b'{"text": [1, 2]}', "validation", "validation", "validation"),
]
JUNK = [row[0] for row in JUNK_ANSWERS]
PATHS = ["/generate", "/v1/completions", "/v1/chat/completions"]


def check_answer(kind, status, text):
    """Whether (status, text) is the answer of the given kind (see JUNK_ANSWERS)."""
    if kind == "crash":
        return status == 500 and text == "Internal Server Error"
    body = json.loads(text)
    if kind == "ok":
        return status == 200 and "choices" in body
    if status != 400:
        return False
    if kind in ("parse", "validation"):
        return (set(body) == {"object", "message", "type", "param", "code"} and body["object"] == "error"
                and body["code"] == 400 and body["type"] == {"parse": "400", "validation": "Bad Request"}[kind]
                and (kind == "validation" or body["message"] == "There was an error parsing the body"))
    if kind == "contract":
        return set(body) == {"error"} and isinstance(body["error"], str) and body["error"].startswith("invalid type: ")
    if kind in ("value", "sim"):
        return set(body) == {"error"} and set(body["error"]) == {"message"}
    raise AssertionError(kind)


@pytest.mark.parametrize("path", PATHS)
def test_junk_bodies_get_sglang_0523s_answer(client, path):
    column = PATHS.index(path) + 1
    for row in JUNK_ANSWERS:
        raw, kind = row[0], row[column]
        status, _headers, text = client.request("POST", path, raw=raw)
        assert check_answer(kind, status, text), (path, raw, kind, status, text)
    assert client.get("/health")[0] == 200
    assert client.post("/generate", GEN)[0] == 200


def test_n_choices_and_prompt_batches_as_sglang_0523(client):
    """0.5.23 serves n > 1 choices (not streaming) and a batch of prompts on /v1/completions: one choice
    per request, indexed in order; usage counts each prompt once (UsageProcessor.calculate_response_usage)."""
    status, _headers, text = client.post("/v1/chat/completions", {"messages": [{"role": "user", "content": "x"}],
                                                                  "n": 3, "max_tokens": 4})
    assert status == 200
    body = json.loads(text)
    assert [c["index"] for c in body["choices"]] == [0, 1, 2]
    single = json.loads(client.post("/v1/chat/completions", {"messages": [{"role": "user", "content": "x"}],
                                                             "max_tokens": 4})[2])
    assert body["usage"]["prompt_tokens"] == single["usage"]["prompt_tokens"]
    assert body["usage"]["completion_tokens"] == 3 * single["usage"]["completion_tokens"]
    status, _headers, text = client.post("/v1/completions", {"prompt": [[1, 2], [3]], "max_tokens": 4})
    assert status == 200
    body = json.loads(text)
    assert [c["index"] for c in body["choices"]] == [0, 1]
    assert body["usage"]["prompt_tokens"] == 3 and body["usage"]["completion_tokens"] == 8


def test_the_ipv6_wildcard_serves_on_ipv6_only_and_logs_a_bracketed_url():
    """`--host ::`: uvicorn (asyncio) binds it IPv6-only and logs `http://[::]:PORT`; the simulator too.
    (llmops.sglang.sglang_url therefore reaches such a server on [::1], not on 127.0.0.1.)"""
    import socket
    import urllib.request
    if not socket.has_ipv6:
        pytest.skip("no IPv6 on this machine")
    sim = SimProcess(["--tp-size", "4", "--host", "::"], profile="fast", wait=False)
    try:
        sim.url = "http://[::1]:%d" % sim.port
        sim.start().wait_ready()
        with urllib.request.urlopen(sim.url + "/health", timeout=5) as resp:
            assert resp.status == 200
        with pytest.raises(OSError):
            socket.create_connection(("127.0.0.1", sim.port), timeout=2).close()
        assert "Uvicorn running on http://[::]:%d" % sim.port in sim.output()
    finally:
        sim.stop()
