"""Start a simulator as a subprocess on a free port (for tests and benchmarks)."""

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

    def stop(self, timeout=10):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
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
