# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.sglang contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The sweep's rescue (roles/sweep/tasks/classify.yml) after a deployment that failed because its host went
away in the middle of a module run: the module's failure looks like any error, so the rescue must find out
that the host no longer answers, say so, and not ask the vanished host what it serves."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import subprocess

from harness import free_port, tool

PLAY = """
- name: A deployment that fails as a module cut off by its vanishing host does
  hosts: gone
  gather_facts: false
  tasks:
    - name: Deploy and classify
      block:
        - name: A module run whose host went away mid-run
          ansible.builtin.fail:
            msg: "Module result deserialization failed: No start of json char found"
      rescue:
        - name: Classify as the sweep does
          ansible.builtin.include_role:
            name: llmops.sglang.sweep
            tasks_from: classify
          vars:
            _sweep_label: steps 3
            _sweep_phase: deploy
            sglang_service_failure: null
            sweep_reach_timeout: 1
"""


def test_a_deployment_cut_off_by_its_vanishing_host_says_the_host_became_unreachable(env, tmp_path):
    play = tmp_path / "play.yml"
    play.write_text(PLAY)
    inventory = tmp_path / "hosts.ini"
    # Nothing listens on the port: every connection is refused, as to a host powered off.
    inventory.write_text("gone ansible_host=127.0.0.1 ansible_port=%d ansible_connection=ssh "
                         "ansible_ssh_common_args='-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null'\n" % free_port())
    proc = subprocess.run([tool("ansible-playbook"), "-i", str(inventory), str(play)],
                          env=env, capture_output=True, text=True, timeout=180, cwd=str(tmp_path), check=False)
    output = " ".join((proc.stdout + proc.stderr).split())
    assert proc.returncode != 0, output
    assert ("Infrastructure fault, not a result of steps 3: host gone became unreachable while deploying steps 3 "
            "(it did not answer within sweep_reach_timeout, 1 s): Module result deserialization failed") in output, output
    assert "Serving now: unknown (the host is unreachable; steps 3 was deployed when it happened)" in output, output
    # The rescue's own end, not Ansible's: the vanished host was not asked what it serves.
    assert "UNREACHABLE" not in output and "Ask the server what it runs" not in output, output
