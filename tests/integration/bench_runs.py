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
# Output tokens of a benchmark that must succeed: 300 decode in 100 steps, 0.4 s a request. A client kept
# off the CPU by the tests and linters beside it reads the chunks that arrived meanwhile in one piece,
# which shortens that request's decode span: off the CPU for half the span, the request decodes at twice
# the schedule's pace and the module rightly refuses the level as "implausible" (its p90 over 6 requests
# is their fastest). Seen in CI at 31 tokens (40 ms, 2026-12-05) and at 151 (0.2 s, 2026-12-06).
STEADY_LEN = 301
STEADY_STEPS = (STEADY_LEN - 1) // ACCEPT


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
