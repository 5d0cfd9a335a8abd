"""tools/failure-digest finds the failed task in a molecule log, whichever way ansible-core reports it."""
import os
import subprocess
import sys

import pytest

TOOL = os.path.join(os.path.dirname(__file__), "..", "..", "tools", "failure-digest")

LOG_219 = """\
  \x1b[2m\x1b[32m\u2502\x1b[0m TASK [Show the measured figures] ****
  \u2502 ok: [bench-mol1] => (item=c=1)
  \u2502 TASK [The figures are what the models predict] ***
  \u2502 ok: [bench-mol1] => (item=0)
  \u2502 \x1b[31m[ERROR]: Task failed: Action failed: c=16: measured 171.6\x1b[0m
  \u2502 failed: [bench-mol1] (item=2) => {"assertion": "p90"}
"""

LOG_FATAL = """\
TASK [Start the service] ***
fatal: [sim1]: FAILED! => {"msg": "unit failed"}
"""


@pytest.mark.parametrize("log, task, message", [
    (LOG_219, "TASK [The figures are what the models predict]", "[ERROR]: Task failed: Action failed: c=16"),
    (LOG_FATAL, "TASK [Start the service]", 'fatal: [sim1]: FAILED! => {"msg": "unit failed"}'),
    ("TASK [Nothing failed] ***\nok: [sim1]\n", None, "no failed task in its log"),
])
def test_names_the_failed_task_and_its_message(tmp_path, log, task, message):
    (tmp_path / "molecule").mkdir()
    (tmp_path / "molecule" / "scen.log").write_text(log, encoding="utf-8")
    (tmp_path / "molecule" / "scen.result").write_text("FAILED\n")
    (tmp_path / "molecule" / "ok.result").write_text("passed\n")
    out = subprocess.run([sys.executable, TOOL, str(tmp_path)], check=True, capture_output=True, text=True).stdout
    lines = out.splitlines()
    assert lines[0] == "##### where it failed" and len(lines) == 2, out
    assert lines[1].startswith("molecule scen"), out
    if task:
        assert task in lines[1], out
    assert message in lines[1], out


def test_prints_nothing_when_nothing_failed(tmp_path):
    (tmp_path / "molecule").mkdir()
    (tmp_path / "molecule" / "ok.result").write_text("passed\n")
    assert subprocess.run([sys.executable, TOOL, str(tmp_path)], check=True, capture_output=True, text=True).stdout == ""
