"""Make this checkout importable as ``ansible_collections.llmops.sglang`` for plain pytest.

Modules and module_utils import each other by their collection path, as they do when Ansible
runs them; pytest from the repo root needs the same path, so point a symlink at the checkout.
"""
import hashlib
import os
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
# One link directory per checkout: two checkouts running pytest at once must not import
# each other's code through a shared link.
_BASE = os.path.join(tempfile.gettempdir(), "llmops-sglang-pytest-%d-%s" % (
    os.getuid(), hashlib.sha1(ROOT.encode()).hexdigest()[:10]))
_LINK = os.path.join(_BASE, "ansible_collections", "llmops", "sglang")

if os.path.realpath(_LINK) != ROOT:
    # Made beside it and renamed over it: pytest-xdist's workers start at once and may race here.
    os.makedirs(os.path.dirname(_LINK), exist_ok=True)
    _tmp = "%s.%d" % (_LINK, os.getpid())
    os.symlink(ROOT, _tmp)
    os.replace(_tmp, _LINK)
# Tests that run the ansible CLI point ANSIBLE_COLLECTIONS_PATH here.
os.environ["LLMOPS_PYTEST_COLLECTIONS_PATH"] = _BASE
if _BASE not in sys.path:
    sys.path.insert(0, _BASE)

# Resolve ansible_collections.* through Ansible's own collection loader from the start, as
# ansible-playbook does: the role templates use the collection's filters (llmops.sglang.spec_*),
# and a loader installed later, after some test imported the collection through sys.path,
# finds no collection metadata for the modules imported before it.
from ansible.plugins.loader import init_plugin_loader  # noqa: E402
from ansible.utils.collection_loader import AnsibleCollectionConfig  # noqa: E402

if AnsibleCollectionConfig.collection_finder is None:
    init_plugin_loader([_BASE])
