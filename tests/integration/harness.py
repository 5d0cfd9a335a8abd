# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.sglang contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the integration tests share: the toolchain's CLIs, free ports and the simulator as a
local subprocess. Their pytest fixtures (the Ansible environment) are in conftest.py."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BIN = os.path.join(ROOT, ".venv", "bin")

# make venv installs the simulator (pip install -e simulator): a missing one fails, not skips.
from sglang_sim import profile as sim_profile  # noqa: E402

STEPS = 3

# The bundled deterministic profile (no jitter, fixed acceptance) with a near-free prefill.
# Why: SGLang (and the simulator) run a prefill as soon as a request arrives, so requests of
# one closed-loop round that arrive a millisecond apart join the batch one decode step apart;
# predict() models rounds in lock-step. A near-free prefill keeps that arrival spread out of
# the figures, so what remains between prediction and measurement is the client's own error.
ACCURACY_PROFILE = """\
name: bench-accuracy
seed: 0
model:
  natural_output_sigma: 0.0
timing:
  load_time_s: 0.3
  warmup_s: 0.05
  jitter: 0.0
  prefill_base_ms: 0.5
  prefill_token_ms: 0.0
acceptance:
  deterministic: true
"""


def tool(name):
    """An Ansible CLI of the pinned toolchain (make venv), else the one on PATH."""
    path = os.path.join(BIN, name)
    return path if os.path.exists(path) else name


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Sim:
    """The simulator as a subprocess on a free port (``extra_args``: more SGLang flags)."""

    def __init__(self, profile_path, steps=STEPS, extra_args=()):
        self.port = free_port()
        self.url = "http://127.0.0.1:%d" % self.port
        self.log = tempfile.NamedTemporaryFile(prefix="sglang-sim-", suffix=".log", delete=False)
        profile = sim_profile.load_profile(profile_path)
        self.tp = profile["hardware"]["gpu_count"]
        cmd = [sys.executable, "-m", "sglang_sim", "--model-path", "sim/model", "--port", str(self.port),
               "--tp-size", str(self.tp), "--sim-profile", profile_path,
               "--speculative-algorithm", "EAGLE", "--speculative-num-steps", str(steps),
               "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", str(steps + 1)] + list(extra_args)
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + 30
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("simulator exited: %s" % open(self.log.name).read()[-2000:])
            try:
                # /health needs no API key (SGLang 0.5.23's add_api_key_middleware)
                with urllib.request.urlopen(self.url + "/health", timeout=1) as resp:
                    if resp.status == 200:
                        return
            except Exception:  # noqa: BLE001 - still starting
                time.sleep(0.1)
        self.stop()
        raise RuntimeError("simulator did not become ready")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)
        os.unlink(self.log.name)
