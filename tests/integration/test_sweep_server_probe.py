# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.sglang contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The sweep's own "what serves" probe (roles/sweep/tasks/serving.yml), run by ansible-playbook.

SGLang 0.5.23 serves /server_info and logs a deprecation warning for every /get_server_info; a
server older than that answers 404 to /server_info and only knows /get_server_info. The probe
must read both, and must not make a 0.5.23 server log the warning (the simulator logs it as
SGLang does).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import subprocess
import sys

import pytest

from harness import ROOT, STEPS, Sim, tool

sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
import bench_client_overhead  # noqa: E402  (benchmarks/: the scripted server)

API_KEY = "sk-probe-test-4f1c"

PROBE_PLAY = """
- name: Ask what serves, as the sweep does
  hosts: localhost
  gather_facts: false
  tasks:
    - name: The sweep's probe
      ansible.builtin.include_role:
        name: llmops.sglang.sweep
        tasks_from: serving.yml
        public: true  # the role's derived vars, for the next task
      vars:
        _sweep_service_url: "{url}"
        _sweep_unit: sglang-probe.service
        _sweep_unit_probe: "true"
        _sweep_deployment: null
        sglang_service_api_key: {api_key}
    - name: Keep what it found
      ansible.builtin.copy:
        dest: "{out}"
        content: "{{{{ {{'serving': _sweep_serving, 'status': _sweep_serving_info.status,
                       'url': _sweep_serving_info.url}} | to_json }}}}"
        mode: "0644"
"""


def probe(env, tmp_path, url, api_key=None, verbosity=()):
    """Run the probe; returns what it found and the run's output."""
    out = tmp_path / "serving.json"
    play = tmp_path / "probe.yml"
    play.write_text(PROBE_PLAY.format(url=url, out=out, api_key=json.dumps(api_key)))
    proc = subprocess.run([tool("ansible-playbook"), "-c", "local", "-i", "localhost,", str(play)] + list(verbosity),
                          env=env, capture_output=True, text=True, timeout=180, cwd=str(tmp_path), check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    return json.loads(out.read_text()), proc.stdout + proc.stderr


@pytest.fixture(scope="module")
def older_server():
    proc, port, _stats = bench_client_overhead.start_scripted_server(step_s=0.004, accept=3)
    yield "http://127.0.0.1:%d" % port
    proc.terminate()
    proc.join(5)


@pytest.fixture(scope="module")
def sim(accuracy_profile):
    server = Sim(accuracy_profile)
    yield server
    server.stop()


@pytest.fixture(scope="module")
def sim_with_key(accuracy_profile):
    server = Sim(accuracy_profile, extra_args=["--api-key", API_KEY])
    yield server
    server.stop()


def test_probe_reads_sglang_0523_without_its_deprecation_warning(env, tmp_path, sim):
    found, _output = probe(env, tmp_path, sim.url)
    assert found["status"] == 200
    assert found["url"].endswith("/server_info")
    assert "serves EAGLE steps %d" % STEPS in found["serving"], found
    log = sim.output()
    assert "The server is fired up" in log
    assert "is deprecated" not in log, [line for line in log.splitlines() if "deprecated" in line]


def test_probe_falls_back_for_a_server_older_than_0523(env, tmp_path, older_server):
    found, _output = probe(env, tmp_path, older_server)
    # /server_info answered 404: the answer that counts is the old name's
    assert found["status"] == 200
    assert found["url"].endswith("/get_server_info")
    assert "(SGLang 0.5.4-scripted)" in found["serving"], found


def test_probe_sends_the_api_key_and_keeps_it_out_of_the_output(env, tmp_path, sim_with_key):
    found, output = probe(env, tmp_path, sim_with_key.url, api_key=API_KEY, verbosity=["-vvv"])
    # 200, not 401: the key went along as a bearer token
    assert found["status"] == 200, found
    assert "serves EAGLE steps %d" % STEPS in found["serving"], found
    assert API_KEY not in output  # the key is nowhere in the output, even at -vvv...
    assert "censored" in output  # ...because no_log hid the probes' arguments and results


def test_probe_without_the_key_is_refused_by_a_server_that_wants_one(env, tmp_path, sim_with_key):
    found, _output = probe(env, tmp_path, sim_with_key.url)
    assert found["status"] == 401, found
    assert "does not answer" in found["serving"] or "nothing" in found["serving"], found
