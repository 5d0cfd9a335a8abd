"""The built collection artifact installs and its content works from the install location."""
import glob
import os
import subprocess
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BIN = os.path.dirname(sys.executable)


def run(argv, env=None, cwd=None):
    proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          check=False, env=env, cwd=cwd, timeout=300)
    assert proc.returncode == 0, "%s failed:\n%s" % (" ".join(argv), proc.stdout)
    return proc.stdout


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    build = tmp_path_factory.mktemp("build")
    dest = tmp_path_factory.mktemp("collections")
    run([os.path.join(BIN, "ansible-galaxy"), "collection", "build", "--output-path", str(build), ROOT])
    tarballs = glob.glob(str(build / "llmops-sglang-*.tar.gz"))
    assert len(tarballs) == 1
    run([os.path.join(BIN, "ansible-galaxy"), "collection", "install", "--force", "-p", str(dest), tarballs[0]],
        cwd=str(build))
    # Run from a directory without this checkout's ansible.cfg, so only the install is found.
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(dest))
    env.pop("ANSIBLE_CONFIG", None)
    return {"path": dest / "ansible_collections" / "llmops" / "sglang", "env": env, "cwd": str(build)}


def test_artifact_carries_content_not_dev_files(installed):
    path = installed["path"]
    for wanted in ("galaxy.yml", "MANIFEST.json", "README.md", "meta/runtime.yml", "roles", "plugins",
                   "playbooks", "simulator/pyproject.toml"):
        if wanted == "galaxy.yml":
            continue  # galaxy.yml becomes MANIFEST.json
        assert (path / wanted).exists(), wanted
    for unwanted in (".venv", ".ci", "Makefile", "tools", "extensions", "simulator/tests"):
        assert not (path / unwanted).exists(), unwanted


def test_every_module_documents_itself_from_the_install(installed):
    modules = sorted(os.path.splitext(os.path.basename(p))[0]
                     for p in glob.glob(os.path.join(ROOT, "plugins", "modules", "*.py")))
    assert modules, "no modules found"
    for module in modules:
        out = run([os.path.join(BIN, "ansible-doc"), "llmops.sglang." + module], env=installed["env"],
                  cwd=installed["cwd"])
        assert "llmops.sglang." + module in out
        assert "EXAMPLES" in out and "RETURN VALUES" in out


def test_every_role_entry_point_documents_itself_from_the_install(installed):
    roles = sorted(os.path.basename(p) for p in glob.glob(os.path.join(ROOT, "roles", "*")))
    assert roles
    for role in roles:
        out = run([os.path.join(BIN, "ansible-doc"), "-t", "role", "llmops.sglang." + role],
                  env=installed["env"], cwd=installed["cwd"])
        assert "ENTRY POINT:" in out and "main" in out


def test_playbooks_parse_from_the_install(installed):
    playbooks = sorted(glob.glob(str(installed["path"] / "playbooks" / "*.yml")))
    assert playbooks
    for playbook in playbooks:
        name = "llmops.sglang." + os.path.splitext(os.path.basename(playbook))[0]
        run([os.path.join(BIN, "ansible-playbook"), "--syntax-check", "-i", "localhost,", name],
            env=installed["env"], cwd=installed["cwd"])
