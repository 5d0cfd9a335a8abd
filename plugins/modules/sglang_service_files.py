#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.sglang contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: sglang_service_files
short_description: Write, copy or remove the files of an SGLang deployment in one call
version_added: 0.2.0
description:
  - Puts every file of a deployment in place in one module call (one remote round trip) instead of
    a C(template) or C(copy) task per file, each of which costs a stat, a transfer and a move.
  - Each entry of O(files) is written from O(files[].content) (rendered on the controller, for example with
    the C(ansible.builtin.template) lookup), copied from O(files[].src) on the host, or removed (O(files[].state) absent).
  - A file whose content, owner, group and mode are already right is left alone, so a second run
    changes nothing. New content goes to a temporary file in the same directory that gets its
    owner, group and mode first and is then renamed into place, so that a reader sees the old file or
    the new one, never half of one and never with looser permissions.
  - Returns which entries changed, by name, so that the caller can decide whether to restart.
author:
  - llmops.sglang contributors (@llmops)
options:
  files:
    description: The files, in the order they are handled.
    type: list
    elements: dict
    required: true
    suboptions:
      name:
        description: What the caller calls the file; the key of RV(files).
        type: str
        required: true
      path:
        description: Absolute path of the file on the host.
        type: path
        required: true
      state:
        description: V(present) writes the file, V(absent) removes it.
        type: str
        choices: [present, absent]
        default: present
      content:
        description: The file's content; with O(files[].state) present, exactly one of this and O(files[].src).
        type: str
      src:
        description: A file on the host whose content is copied.
        type: path
      owner:
        description: Owner (name or uid); left as is when not given.
        type: str
      group:
        description: Group (name or gid); left as is when not given.
        type: str
      mode:
        description: Permission bits as an octal string such as V(0640); left as is when not given.
        type: str
      diff:
        description:
          - Whether this file's content goes into the diff in diff mode.
          - Turn it off for a file that may hold a secret.
        type: bool
        default: true
      return_before:
        description:
          - In diff mode, return the content the file had before a change (C(before) of its RV(files) entry), so that
            the caller can show a change of a file whose own diff is off (for example with a secret masked).
        type: bool
        default: false
extends_documentation_fragment:
  - llmops.sglang.attributes
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
notes:
  - Runs on the host (stdlib only).
seealso:
  - module: ansible.builtin.copy
  - module: ansible.builtin.template
'''

EXAMPLES = r'''
- name: Render the unit and its environment
  llmops.sglang.sglang_service_files:
    files:
      - name: unit
        path: /etc/systemd/system/sglang.service
        content: "{{ lookup('ansible.builtin.template', 'sglang.service.j2') }}"
        owner: root
        group: root
        mode: "0644"
      - name: adaptive
        path: /etc/sglang/sglang.adaptive.json
        state: absent
  register: rendered

- name: Keep a copy of the unit
  llmops.sglang.sglang_service_files:
    files:
      - name: unit
        path: /etc/sglang/sglang.last-good/unit
        src: /etc/systemd/system/sglang.service
        mode: "0644"
'''

RETURN = r'''
files:
  description: Per entry, by O(files[].name), its path and whether it changed (or would change in check mode).
  returned: always
  type: dict
  sample: {"unit": {"path": "/etc/systemd/system/sglang.service", "changed": true, "before": null}}
changed_names:
  description: The names of the entries that changed, in the order of O(files).
  returned: always
  type: list
  elements: str
  sample: ["unit"]
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.llmops.sglang.plugins.module_utils.service_files import (
    FILE_ENTRY_OPTIONS, FilesError, duplicate_names, handle)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            files=dict(type='list', elements='dict', required=True, options=FILE_ENTRY_OPTIONS),
        ),
        supports_check_mode=True,
    )
    if duplicate_names(module.params['files']):
        module.fail_json(msg='files: every name must be unique, got %s' % [f['name'] for f in module.params['files']])
    try:
        result = handle(module.params['files'], module.check_mode, module._diff)
    except (FilesError, OSError) as exc:
        module.fail_json(msg=str(exc))
    module.exit_json(**result)


if __name__ == '__main__':
    main()
