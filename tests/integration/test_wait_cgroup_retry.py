# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.sglang contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""sglang_service_wait against a start that ends at systemd's cgroup step (exit status 219/CGROUP).

The module runs through `ansible localhost -m`, with stand-ins for systemctl and journalctl first on
PATH: they play a unit whose first starts systemd could not move into its cgroup (the kernel's EBUSY
while the previous invocation's cgroup is removed, seen once on a test host), then one that runs.
A real server (a local HTTP stand-in) answers /health_generate and /server_info once it runs.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import http.server
import json
import subprocess
import sys
import textwrap
import threading

import pytest

from harness import free_port, tool

UNIT = "sglang-cgroup.service"
CGROUP_LINES = ["Started %s - SGLang server." % UNIT,
                "%s: Main process exited, code=exited, status=219/CGROUP" % UNIT,
                "%s: Failed with result 'exit-code'." % UNIT]

FAKE_SYSTEMCTL = textwrap.dedent("""\
    #!%(python)s
    # A unit whose first FAILS starts end at systemd's cgroup step (219/CGROUP), the next ones run.
    import json, os, sys
    path = os.environ["FAKE_SYSTEMD_STATE"]
    with open(path) as fh:
        state = json.load(fh)
    args = [a for a in sys.argv[1:] if not a.startswith("-")]
    state["calls"].append(args[0])
    if args[0] == "start":
        state["starts"] += 1
    with open(path, "w") as fh:
        json.dump(state, fh)
    if args[0] == "show":
        starts, fails = state["starts"], state["fails"]
        if starts == 0:
            props = dict(ActiveState="inactive", SubState="dead", Result="success", MainPID=0, ExecMainStatus=0)
        elif starts <= fails:
            props = dict(ActiveState="failed", SubState="failed", Result="exit-code", MainPID=0, ExecMainStatus=219)
        else:
            props = dict(ActiveState="active", SubState="running", Result="success", MainPID=4000 + starts,
                         ExecMainStatus=0)
        props.update(LoadState="loaded", NRestarts=0, InvocationID="inv%%d" %% starts, NeedDaemonReload="no",
                     ExecMainStartTimestampMonotonic=1000000 * starts)
        print("\\n".join("%%s=%%s" %% kv for kv in props.items()))
    """)
FAKE_JOURNALCTL = textwrap.dedent("""\
    #!%(python)s
    import sys
    if "--show-cursor" in sys.argv:
        print("-- cursor: s=fake")
    else:
        print(%(lines)r)
    """)


class Server(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 (http.server's name)
        if self.path == "/health_generate":
            body = b"{}"
        elif self.path == "/server_info":
            body = json.dumps({"version": "0.5.23", "tp_size": 4, "max_running_requests": 48,
                               "max_total_num_tokens": 100000}).encode()
        else:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture()
def server():
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), Server)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield "http://127.0.0.1:%d" % httpd.server_address[1]
    httpd.shutdown()


def run_wait(env, tmp_path, url, fails):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, text in (("systemctl", FAKE_SYSTEMCTL % {"python": sys.executable}),
                       ("journalctl", FAKE_JOURNALCTL % {"python": sys.executable, "lines": "\n".join(CGROUP_LINES)})):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    state = tmp_path / "state.json"
    state.write_text(json.dumps({"starts": 0, "fails": fails, "calls": []}))
    env = dict(env, PATH="%s:%s" % (bin_dir, env["PATH"]), FAKE_SYSTEMD_STATE=str(state))
    args = {"name": UNIT, "url": url, "start": True, "timeout": 30, "poll_interval": 0.1, "journal_tail": 10}
    tree = tmp_path / "tree"
    proc = subprocess.run([tool("ansible"), "localhost", "-c", "local", "-m", "llmops.sglang.sglang_service_wait",
                           "-a", json.dumps(args), "--tree", str(tree)], env=env, capture_output=True, text=True,
                          timeout=120, cwd=str(tmp_path), check=False)
    result = json.loads((tree / "localhost").read_text())
    calls = json.loads(state.read_text())["calls"]
    return result, [c for c in calls if c != "show"], proc.stdout + proc.stderr


def test_a_start_that_ended_at_the_cgroup_step_is_started_again(env, tmp_path, server):
    result, calls, output = run_wait(env, tmp_path, server, fails=1)
    assert result.get("ready") is True, result.get("msg")
    assert result["setup_retries"] == 1
    assert calls == ["start", "reset-failed", "start"]
    assert result["systemd"]["MainPID"] == 4002
    assert "could not move the new server process into its cgroup (exit status 219/CGROUP" in output


def test_a_cgroup_step_that_keeps_failing_is_systemds_not_the_configurations(env, tmp_path, server):
    result, calls, dummy = run_wait(env, tmp_path, server, fails=5)
    assert not result["ready"] and "crashed during startup" in result["msg"] and "[systemd_setup]" in result["msg"]
    assert result["setup_retries"] == 2
    assert calls == ["start", "reset-failed", "start", "reset-failed", "start"]
    assert result["diagnosis"]["key"] == "systemd_setup"
    assert result["diagnosis"]["evidence"] == CGROUP_LINES[1]
