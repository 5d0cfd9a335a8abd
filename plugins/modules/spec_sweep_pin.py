#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.sglang contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: spec_sweep_pin
short_description: Pin a sweep's winner into an inventory's host_vars, keeping everything else
version_added: 0.1.0
description:
  - Sets top-level variables (the winning speculative settings and the sweep's evidence) in a host's
    inventory C(host_vars) YAML file.
  - Edits lines, not a re-dumped document. Each pinned key's value is replaced on the key's own line
    (an inline comment stays) or the key is added as one line; the evidence (C(sglang_spec_sweep)) sits in
    one block between C(# BEGIN llmops.sglang sweep evidence) and C(# END llmops.sglang sweep evidence)
    marker comments. Every other byte stays (comments before and after C(---), anchors and aliases,
    vault blocks, folded strings, indentation, flow style, end-of-file comments).
  - The edited text is parsed before it is written; every key that was not pinned must load exactly
    as before. A file that cannot be edited this way (a pinned key written as a block, multi-line,
    anchored or tagged value, or twice; several YAML documents; a flow-style top level) fails with the reason.
  - Writes atomically (temp file in the same directory, then rename) and only when a value changes;
    differences in the evidence's C(date) alone do not count, so a sweep with the same outcome
    leaves the file untouched. The file keeps its mode and owner.
  - Runs on the controller (delegate it to V(localhost)). There its action plugin runs it inside the task's
    worker, without starting a module process (about 0.4 s a call less; a sweep checks, then pins, for each host).
author:
  - llmops.sglang contributors (@llmops)
requirements:
  - PyYAML (on the controller; Ansible depends on it)
attributes:
  check_mode:
    support: full
    description: Computes the new file and its diff without writing it.
  diff_mode:
    support: full
    description: Shows the host_vars file before and after.
extends_documentation_fragment:
  - llmops.sglang.attributes
  - llmops.sglang.attributes.controller
options:
  inventory_dir:
    description:
      - The inventory directory (the C(inventory_dir) magic variable). The file is
        C(host_vars/<host>/sweep.yml) when C(host_vars/<host>/) is a directory, otherwise
        C(host_vars/<host>.yml) (or an existing C(.yaml)).
      - Ignored when O(path) is set.
    type: path
  host:
    description: Inventory hostname. Required with O(inventory_dir).
    type: str
  path:
    description: Explicit file to pin into (created if missing).
    type: path
  values:
    description:
      - Top-level variables to set, plus C(sglang_spec_sweep) (the evidence mapping).
      - A value is a scalar or a mapping, which is written as one flow mapping on its key's line (an adaptive config).
    type: dict
    required: true
  preflight:
    description:
      - Only check that the file can be pinned into (it parses, the pinned keys can be edited in place,
        the file or its directory is writable); write nothing. The sweep runs this before its first
        deployment, so that a file it cannot edit fails the sweep before an hour of benchmarks.
    type: bool
    default: false
notes:
  - Supports check mode and diff mode.
seealso:
  - module: llmops.sglang.spec_sweep_decide
'''

EXAMPLES = r'''
- name: Pin the winner for this host
  llmops.sglang.spec_sweep_pin:
    inventory_dir: "{{ inventory_dir }}"
    host: "{{ inventory_hostname }}"
    values:
      sglang_service_speculative_num_steps: 4
      sglang_service_speculative_eagle_topk: 1
      sglang_service_speculative_num_draft_tokens: 5
      sglang_spec_sweep:
        objective: agentic
        date: "2026-11-29T19:00:00Z"
  delegate_to: localhost
'''

RETURN = r'''
path:
  description: The host_vars file.
  returned: always
  type: str
  sample: inventories/rtx6000bw/host_vars/gpu1.yml
changed_keys:
  description: Variables whose value changed.
  returned: always
  type: list
  elements: str
  sample: [sglang_service_speculative_num_steps, sglang_spec_sweep]
'''

import os
import tempfile

from ansible.module_utils.basic import missing_required_lib
from ansible.module_utils.common.text.converters import to_native
from ansible_collections.llmops.sglang.plugins.module_utils import sweep_pin
from ansible_collections.llmops.sglang.plugins.module_utils.atomic_file import replace_keeping_attributes, write_atomic
from ansible_collections.llmops.sglang.plugins.module_utils.module_runner import ModuleFailed, run_as_module

# Shared with the action plugin, which runs run() in-process on the controller (module_runner).
ARGUMENT_SPEC = dict(
    inventory_dir=dict(type='path'),
    host=dict(type='str'),
    path=dict(type='path'),
    values=dict(type='dict', required=True),
    preflight=dict(type='bool', default=False),
)
MODULE_KWARGS = dict(
    required_one_of=[('path', 'inventory_dir')],
    required_by={'inventory_dir': ('host',)},
)


def run(p, check_mode):
    if not sweep_pin.HAS_YAML:
        raise ModuleFailed(missing_required_lib('PyYAML'), exception=to_native(sweep_pin.YAML_IMPORT_ERROR))
    path = p['path'] or sweep_pin.host_vars_path(p['inventory_dir'], p['host'])
    old = ''
    if os.path.exists(path):
        with open(path) as fh:
            old = fh.read()
    try:
        new, changed_keys = sweep_pin.update_text(old, p['values'])
    except sweep_pin.PinError as exc:
        raise ModuleFailed('cannot pin into %s without touching the operator\'s other lines: %s' % (path, to_native(exc)), path=path)
    if p['preflight']:
        # The file is replaced through a temp file in its directory (created if missing): try exactly
        # that (permission bits alone say nothing for root, read-only mounts or immutable files).
        existing = os.path.dirname(os.path.abspath(path))
        while not os.path.exists(existing):
            existing = os.path.dirname(existing)
        try:
            fd, probe = tempfile.mkstemp(prefix='.%s.preflight.' % os.path.basename(path), dir=existing)
            os.close(fd)
            os.unlink(probe)
            if os.path.exists(path):
                with open(path, 'a'):
                    pass
        except (IOError, OSError) as exc:
            raise ModuleFailed('cannot pin into %s: %s' % (path, to_native(exc)), path=path)
        return dict(changed=False, path=path, changed_keys=[], msg='%s can be pinned into' % path)
    result = dict(changed=bool(changed_keys), path=path, changed_keys=changed_keys)
    if changed_keys:
        # Shown in diff mode only (module_runner and the action plugin drop it otherwise).
        result['diff'] = dict(before=old, after=new, before_header=path, after_header=path)
    if changed_keys and not check_mode:
        # The operator's file keeps its mode and owner; a new one gets the mode the umask gives.
        write_atomic(path, new, replace=replace_keeping_attributes)
    return result


def main():
    run_as_module(ARGUMENT_SPEC, run, **MODULE_KWARGS)


if __name__ == '__main__':
    main()
