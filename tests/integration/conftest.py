# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.sglang contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fixtures of the integration tests that run the Ansible CLIs against this checkout."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import sys

import pytest

from harness import ACCURACY_PROFILE, ROOT


@pytest.fixture(scope="module")
def collections_path(tmp_path_factory):
    """A collections path where this checkout is llmops.sglang."""
    base = tmp_path_factory.mktemp("collections")
    link = base / "ansible_collections" / "llmops" / "sglang"
    link.parent.mkdir(parents=True)
    link.symlink_to(ROOT)
    return str(base)


@pytest.fixture(scope="module")
def env(collections_path, tmp_path_factory):
    """The environment of an ansible/ansible-playbook run against this checkout."""
    e = dict(os.environ)
    e.update({
        "ANSIBLE_COLLECTIONS_PATH": collections_path,
        "ANSIBLE_LOCAL_TEMP": str(tmp_path_factory.mktemp("ansible-tmp")),
        "ANSIBLE_NOCOLOR": "1",
        "ANSIBLE_PYTHON_INTERPRETER": sys.executable,
        "ANSIBLE_INVENTORY_UNPARSED_WARNING": "false",
        "ANSIBLE_LOCALHOST_WARNING": "false",
    })
    return e


@pytest.fixture(scope="session")
def accuracy_profile(tmp_path_factory):
    """harness.ACCURACY_PROFILE as a file, for harness.Sim."""
    path = tmp_path_factory.mktemp("profile") / "bench-accuracy.yaml"
    path.write_text(ACCURACY_PROFILE)
    return str(path)
