# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.sglang contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The sweep role's later entry points (measure_all, finish), run by ansible-playbook without prepare.

playbooks/sweep.yml runs prepare, measure_all and finish as three plays; a playbook of the user's
that calls a later one without prepare must fail at once, naming what is missing, before anything
on the host changes (not on an undefined variable deep inside a deployment).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import subprocess

import pytest

from harness import tool

PLAY = """
- name: Call a later entry point of the sweep without prepare
  hosts: localhost
  gather_facts: false
  tasks:
    - name: The entry point
      ansible.builtin.include_role:
        name: llmops.sglang.sweep
        tasks_from: {entry}
"""


@pytest.mark.parametrize("entry", ["measure_all", "finish"])
def test_a_later_entry_point_without_prepare_fails_naming_it(env, tmp_path, entry):
    play = tmp_path / "play.yml"
    play.write_text(PLAY.format(entry=entry))
    proc = subprocess.run([tool("ansible-playbook"), "-c", "local", "-i", "localhost,", str(play)],
                          env=env, capture_output=True, text=True, timeout=180, cwd=str(tmp_path), check=False)
    output = proc.stdout + proc.stderr
    assert proc.returncode != 0, output
    assert "Check that this host's sweep was prepared in this run" in output, output
    assert "llmops.sglang.sweep's %s needs its prepare entry point run on this host first" % entry in output, output
