# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.sglang contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fixtures of the integration tests that run the Ansible CLIs against this checkout."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import sys

import pytest

from bench_runs import ACCEPT, STEP_S
from harness import ACCURACY_PROFILE, ROOT

sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

import bench_client_overhead  # noqa: E402  (benchmarks/: the scripted server)


@pytest.fixture(scope="module")
def collections_path(tmp_path_factory):
    """A collections path where this checkout is llmops.sglang."""
    base = tmp_path_factory.mktemp("collections")
    link = base / "ansible_collections" / "llmops" / "sglang"
    link.parent.mkdir(parents=True)
    link.symlink_to(ROOT)
    return str(base)


@pytest.fixture(scope="module")
def env(collections_path, tmp_path_factory):
    """The environment of an ansible/ansible-playbook run against this checkout."""
    e = dict(os.environ)
    e.update({
        "ANSIBLE_COLLECTIONS_PATH": collections_path,
        "ANSIBLE_LOCAL_TEMP": str(tmp_path_factory.mktemp("ansible-tmp")),
        "ANSIBLE_NOCOLOR": "1",
        "ANSIBLE_PYTHON_INTERPRETER": sys.executable,
        "ANSIBLE_INVENTORY_UNPARSED_WARNING": "false",
        "ANSIBLE_LOCALHOST_WARNING": "false",
    })
    return e


@pytest.fixture(scope="session")
def accuracy_profile(tmp_path_factory):
    """harness.ACCURACY_PROFILE as a file, for harness.Sim."""
    path = tmp_path_factory.mktemp("profile") / "bench-accuracy.yaml"
    path.write_text(ACCURACY_PROFILE)
    return str(path)


def _scripted_server(**knobs):
    """The scripted SGLang-shaped server of benchmarks/bench_client_overhead.py with ``knobs``, as
    its URL while the fixture lasts (bench_runs.py holds its settings)."""
    proc, port, _stats = bench_client_overhead.start_scripted_server(accept=ACCEPT, **knobs)
    yield "http://127.0.0.1:%d" % port
    proc.terminate()
    proc.join(5)


@pytest.fixture(scope="module")
def server():
    yield from _scripted_server(step_s=STEP_S, prefill_s=0.002)


@pytest.fixture()
def stalled_server():
    yield from _scripted_server(step_s=STEP_S, stall_after_tokens=4)


@pytest.fixture()
def slow_server():
    """Requests of 90 tokens take about 0.6 s (30 steps of 20 ms): a benchmark of minutes in miniature."""
    yield from _scripted_server(step_s=0.02, prefill_s=0.002)
