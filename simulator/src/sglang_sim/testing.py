"""Start a simulator as a subprocess on a free port (for tests and benchmarks)."""

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

import yaml


def free_port():
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return port


def write_profile(data, directory=None):
    """Write a profile override mapping to a temporary YAML file; returns its path."""
    handle = tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False, dir=directory)
    with handle:
        yaml.safe_dump(data, handle)
    return handle.name


class SimProcess(object):
    """``with SimProcess(["--speculative-algorithm", "EAGLE", ...], profile="fast") as sim: sim.url``"""

    def __init__(self, extra_args=(), profile="fast", model_path="/models/sim", port=None, cpu=None, wait=True):
        self.port = port or free_port()
        self.url = "http://127.0.0.1:%d" % self.port
        self.args = [sys.executable, "-u", "-m", "sglang_sim", "--model-path", model_path, "--port", str(self.port)]
        if profile:
            self.args += ["--sim-profile", profile]
        self.args += list(extra_args)
        self.cpu = cpu
        self.wait = wait
        self.proc = None
        self.log_file = tempfile.TemporaryFile()

    def start(self):
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        preexec = None
        if self.cpu is not None and hasattr(os, "sched_setaffinity"):
            cpu = self.cpu

            def preexec():
                os.sched_setaffinity(0, {cpu})
        self.proc = subprocess.Popen(self.args, stdout=self.log_file, stderr=subprocess.STDOUT, env=env,
                                     preexec_fn=preexec)
        if self.wait:
            self.wait_ready()
        return self

    def wait_ready(self, timeout=60):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("simulator exited with %s:\n%s" % (self.proc.returncode, self.output()))
            try:
                with urllib.request.urlopen(self.url + "/health", timeout=2) as resp:
                    if resp.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.05)
        raise RuntimeError("simulator not ready after %ss:\n%s" % (timeout, self.output()))

    def output(self):
        self.log_file.seek(0)
        return self.log_file.read().decode("utf-8", "replace")

    def stop(self, timeout=10, sig=signal.SIGINT):
        """Stop the server and return its exit code. SIGINT (uvicorn's handler) stops at once; SIGTERM
        drains in-flight requests first, as SGLang does (``startup.drain``: up to ``sigterm_poll_s``
        even when idle)."""
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode if self.proc else None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
        self.log_file.close()


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
        status, _headers, text = self.get(path)
        assert status == 200, text
        return json.loads(text)

    def sse(self, path, body):
        """POST and split an SSE stream into its JSON payloads, checking SGLang's framing."""
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
