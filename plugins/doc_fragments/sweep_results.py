# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.sglang contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type


class ModuleDocFragment(object):
    """The sweep's results store, as spec_sweep_store writes it and spec_sweep_decide reads it
    (the options of sweep_store.RESULTS_ARGUMENT_SPEC)."""

    DOCUMENTATION = r'''
options:
  results_dir:
    description: Directory holding the sweep results (one subdirectory per host).
    type: path
    required: true
  host:
    description: Inventory hostname whose results are written or read.
    type: str
    required: true
'''
