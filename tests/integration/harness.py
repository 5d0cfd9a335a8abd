# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.sglang contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the integration tests share: the toolchain's CLIs, free ports and the simulator as a
local subprocess (the simulator package's own test helpers, with the flags these tests
deploy). Their pytest fixtures (the Ansible environment) are in conftest.py."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BIN = os.path.join(ROOT, ".venv", "bin")

# make venv installs the simulator (pip install -e simulator): a missing one fails, not skips.
from sglang_sim import profile as sim_profile  # noqa: E402
from sglang_sim import testing as sim_testing  # noqa: E402

free_port = sim_testing.free_port

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


class Sim(sim_testing.SimProcess):
    """The simulator as a local subprocess on a free port, started: EAGLE at ``steps`` (topk 1),
    --tp-size from the profile; ``extra_args`` are more SGLang flags."""

    def __init__(self, profile_path, steps=STEPS, extra_args=()):
        self.tp = sim_profile.load_profile(profile_path)["hardware"]["gpu_count"]
        super().__init__(["--tp-size", str(self.tp), "--speculative-algorithm", "EAGLE",
                          "--speculative-num-steps", str(steps), "--speculative-eagle-topk", "1",
                          "--speculative-num-draft-tokens", str(steps + 1)] + list(extra_args),
                         profile=profile_path, model_path="sim/model")
        try:
            self.start()
        except Exception:
            self.stop()
            raise

    def stop(self, timeout=10):
        # SIGKILL: a test may leave the server stopped (SIGSTOP) or mid-request, and nothing of its
        # shutdown is under test here (the simulator's own tests cover SIGTERM).
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout)
        self.log_file.close()
