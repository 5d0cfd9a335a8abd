"""tools/testhost leftovers counts a run's hosts, not its boots (a retried boot records two pids)."""
import os
import subprocess
import sys

TOOL = os.path.join(os.path.dirname(__file__), "..", "..", "tools", "testhost")


def test_a_retried_boot_is_one_host(tmp_path):
    runs = tmp_path / "runs"
    runs.mkdir()
    # Two pids for th-a (its first boot failed and was retried), one for th-b; none of them runs.
    (runs / "unit-run").write_text("th-a 4194301\nth-a 4194302\nth-b 4194303\n")
    env = dict(os.environ, LLMOPS_TESTHOST_ROOT=str(tmp_path))
    proc = subprocess.run([sys.executable, TOOL, "leftovers", "--run", "unit-run"], capture_output=True, text=True,
                          check=False, env=env, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "test run unit-run: 2 host(s) created, none left running or mounted" in proc.stderr
    assert not (runs / "unit-run").exists()
