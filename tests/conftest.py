"""Make this checkout importable as ``ansible_collections.llmops.sglang`` for plain pytest.

Modules and module_utils import each other by their collection path, as they do when Ansible
runs them; pytest from the repo root needs the same path, so point a symlink at the checkout.
"""
import os
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
_BASE = os.path.join(tempfile.gettempdir(), "llmops-sglang-pytest-%d" % os.getuid())
_LINK = os.path.join(_BASE, "ansible_collections", "llmops", "sglang")

if os.path.realpath(_LINK) != ROOT:
    os.makedirs(os.path.dirname(_LINK), exist_ok=True)
    if os.path.lexists(_LINK):
        os.unlink(_LINK)
    os.symlink(ROOT, _LINK)
if _BASE not in sys.path:
    sys.path.insert(0, _BASE)
