# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.sglang contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The sglang_bench module and spec_bench role run by ansible / ansible-playbook against the
scripted SGLang-shaped server of benchmarks/bench_client_overhead.py (exact token schedule, fault
knobs): its settings and the runners the test_bench_*.py files share (the servers are fixtures in
conftest.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import subprocess

from harness import tool

STEP_S = 0.004
ACCEPT = 3
# Output tokens of a benchmark that must succeed: 151 decode in 50 steps, 0.2 s a request. At 31 tokens
# (40 ms) a client kept off the CPU for that long by the tests and linters beside it read a whole
# request in one piece, an infinite decode rate, and the module rightly refused the level as
# "implausible" (seen in CI on 2026-12-05).
STEADY_LEN = 151


def adhoc(env, tmp_path, args, check=False):
    """Run the module with `ansible localhost -m`; returns (rc, result dict)."""
    tree = tmp_path / "tree"
    cmd = [tool("ansible"), "localhost", "-c", "local", "-m", "llmops.sglang.sglang_bench", "-a", json.dumps(args),
           "--tree", str(tree)]
    if check:
        cmd.append("--check")
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120, cwd=str(tmp_path), check=False)
    with open(str(tree / "localhost")) as handle:
        return proc.returncode, json.load(handle)


def playbook(env, tmp_path, text, *extra):
    path = tmp_path / "play.yml"
    path.write_text(text)
    return subprocess.run([tool("ansible-playbook"), "-c", "local", "-i", "localhost,", str(path)] + list(extra),
                          env=env, capture_output=True, text=True, timeout=180, cwd=str(tmp_path), check=False)


def run_role(env, tmp_path, role_vars, *extra, **play):
    """Run the spec_bench role on localhost with ``role_vars`` (plus other play keys, e.g.
    post_tasks); the play is written as JSON, which is YAML."""
    play = dict({"name": "Benchmark", "hosts": "all", "gather_facts": False,
                 "roles": [{"role": "llmops.sglang.spec_bench", "vars": role_vars}]}, **play)
    return playbook(env, tmp_path, json.dumps([play], indent=1), *extra)
