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

HERE = os.path.dirname(__file__)
sys.path.insert(0, HERE)

import test_bench_ansible as ansible_harness  # noqa: E402  (its scripted older server and env)
import test_bench_sim as sim_harness  # noqa: E402  (its simulator subprocess)

env = ansible_harness.env
collections_path = ansible_harness.collections_path

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
    - name: Keep what it found
      ansible.builtin.copy:
        dest: "{out}"
        content: "{{{{ {{'serving': _sweep_serving, 'status': _sweep_serving_info.status,
                       'url': _sweep_serving_info.url}} | to_json }}}}"
        mode: "0644"
"""


def probe(env, tmp_path, url):
    out = tmp_path / "serving.json"
    play = tmp_path / "probe.yml"
    play.write_text(PROBE_PLAY.format(url=url, out=out))
    proc = subprocess.run([ansible_harness._tool("ansible-playbook"), "-c", "local", "-i", "localhost,", str(play)],
                          env=env, capture_output=True, text=True, timeout=180, cwd=str(tmp_path), check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    return json.loads(out.read_text())


@pytest.fixture(scope="module")
def older_server():
    proc, port, _stats = ansible_harness.bench_client_overhead.start_scripted_server(
        step_s=ansible_harness.STEP_S, accept=ansible_harness.ACCEPT)
    yield "http://127.0.0.1:%d" % port
    proc.terminate()
    proc.join(5)


@pytest.fixture(scope="module")
def sim(tmp_path_factory):
    profile = tmp_path_factory.mktemp("profile") / "profile.yaml"
    profile.write_text(sim_harness.ACCURACY_PROFILE)
    server = sim_harness.Sim(str(profile))
    yield server
    server.stop()


def test_probe_reads_sglang_0523_without_its_deprecation_warning(env, tmp_path, sim):
    found = probe(env, tmp_path, sim.url)
    assert found["status"] == 200
    assert found["url"].endswith("/server_info")
    assert "serves EAGLE steps %d" % sim_harness.STEPS in found["serving"], found
    with open(sim.log.name) as handle:
        log = handle.read()
    assert "The server is fired up" in log
    assert "is deprecated" not in log, [line for line in log.splitlines() if "deprecated" in line]


def test_probe_falls_back_for_a_server_older_than_0523(env, tmp_path, older_server):
    found = probe(env, tmp_path, older_server)
    # /server_info answered 404: the answer that counts is the old name's
    assert found["status"] == 200
    assert found["url"].endswith("/get_server_info")
    assert "(SGLang 0.5.4-scripted)" in found["serving"], found
