"""Shared fixtures: simulators started as subprocesses on free ports (fast profile)."""

import json
import urllib.error
import urllib.request

import pytest

from sglang_sim.testing import SimProcess

SPEC_ARGS = ["--tp-size", "4", "--speculative-algorithm", "EAGLE", "--speculative-num-steps", "3",
             "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", "4"]


class Client(object):
    def __init__(self, url, api_key=None):
        self.url = url
        self.api_key = api_key

    def request(self, method, path, body=None, raw=None, headers=None):
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        hdrs = {"Content-Type": "application/json"}
        if self.api_key:
            hdrs["Authorization"] = "Bearer " + self.api_key
        hdrs.update(headers or {})
        req = urllib.request.Request(self.url + path, data=data, method=method, headers=hdrs)
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                return resp.status, resp.headers, resp.read().decode()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.headers, exc.read().decode()

    def get(self, path, **kw):
        return self.request("GET", path, **kw)

    def post(self, path, body=None, **kw):
        return self.request("POST", path, body=body, **kw)

    def get_json(self, path):
        status, _, text = self.get(path)
        assert status == 200, text
        return json.loads(text)

    def sse(self, path, body):
        """POST and split an SSE stream into its data payloads (the raw strings)."""
        status, headers, text = self.post(path, body)
        assert status == 200, text
        assert headers["Content-Type"].startswith("text/event-stream")
        assert text.endswith("data: [DONE]\n\n")
        events = text.split("\n\n")
        assert events[-1] == ""
        payloads = []
        for event in events[:-1]:
            assert event.startswith("data: "), event
            payloads.append(event[len("data: "):])
        assert payloads[-1] == "[DONE]"
        return [json.loads(p) for p in payloads[:-1]]


@pytest.fixture(scope="session")
def spec_server():
    with SimProcess(SPEC_ARGS + ["--enable-metrics", "--served-model-name", "qwen-sim"], profile="fast") as sim:
        yield sim


@pytest.fixture(scope="session")
def client(spec_server):
    return Client(spec_server.url)
