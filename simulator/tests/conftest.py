"""Shared fixtures: simulators started as subprocesses on free ports (fast profile)."""

import pytest

from sglang_sim.testing import Client, SimProcess

SPEC_ARGS = ["--tp-size", "4", "--speculative-algorithm", "EAGLE", "--speculative-num-steps", "3",
             "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", "4"]


@pytest.fixture(scope="session")
def spec_server():
    with SimProcess(SPEC_ARGS + ["--enable-metrics", "--served-model-name", "qwen-sim"], profile="fast") as sim:
        yield sim


@pytest.fixture(scope="session")
def client(spec_server):
    return Client(spec_server.url)
