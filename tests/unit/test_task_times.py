"""tools/task-times enables its callback in the playbooks a command runs and sums their task times by group."""
import json
import os
import re
import subprocess
import sys

TOOL = os.path.join(os.path.dirname(__file__), "..", "..", "tools", "task-times")

PLAYBOOK = """\
- name: A play on the controller
  hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - name: Set a fact
      ansible.builtin.set_fact:
        answer: 42
    - name: Run a module on the host
      ansible.builtin.command: sleep 0.3
      changed_when: false
    - name: Skip everywhere
      ansible.builtin.command: "false"
      when: false
"""


def test_sums_task_times_by_group_and_keeps_the_lines(tmp_path):
    play = tmp_path / "play.yml"
    play.write_text(PLAYBOOK)
    kept = tmp_path / "times.jsonl"
    # A file kept from an earlier run is started afresh (the callback appends).
    kept.write_text(json.dumps({"name": "An earlier run's task", "action": "ansible.builtin.debug", "duration_s": 1.0}) + "\n")
    playbook = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
    command = [playbook, "-i", "localhost,", "-e", "ansible_python_interpreter=" + sys.executable, str(play)]
    run = subprocess.run([sys.executable, TOOL, "--keep", str(kept), "--"] + command,
                         capture_output=True, text=True, check=False, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    lines = [json.loads(line) for line in kept.read_text().splitlines()]
    by_name = {line["name"]: line for line in lines}
    assert set(by_name) == {"Set a fact", "Run a module on the host", "Skip everywhere"}
    assert by_name["Run a module on the host"]["duration_s"] >= 0.3
    assert by_name["Run a module on the host"]["results"] == {"ok": 1}
    assert by_name["Skip everywhere"]["results"] == {"skipped": 1}
    assert "task-times: 3 tasks" in run.stdout
    # The command is a host module run; the fact and the task skipped on every host cost the controller only.
    counts = dict(re.findall(r"^  ([a-z -]+?) +[0-9.]+ s +([0-9]+) tasks", run.stdout, re.M))
    assert counts == {"benchmarks": "0", "restarts": "0", "provisioning": "0", "host module runs": "1", "controller-only": "2"}


def test_passes_on_the_command_exit_code(tmp_path):
    run = subprocess.run([sys.executable, TOOL, "--", "false"], capture_output=True, text=True, check=False, timeout=60)
    assert run.returncode == 1
    assert "no Ansible task ran" in run.stderr
