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

import grp
import os
import pwd
import stat

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_bytes, to_text

from ansible_collections.llmops.sglang.plugins.module_utils.atomic_file import write_atomic


class FilesError(Exception):
    """A file that cannot be handled (message for fail_json)."""


def resolve_owner(owner):
    """The uid of ``owner`` (a name or a number), None when not given."""
    if owner in (None, ''):
        return None
    if str(owner).isdigit():
        return int(owner)
    try:
        return pwd.getpwnam(owner).pw_uid
    except KeyError:
        raise FilesError('no such user: %s' % owner)


def resolve_group(group):
    """The gid of ``group`` (a name or a number), None when not given."""
    if group in (None, ''):
        return None
    if str(group).isdigit():
        return int(group)
    try:
        return grp.getgrnam(group).gr_gid
    except KeyError:
        raise FilesError('no such group: %s' % group)


def parse_mode(mode):
    """Permission bits from an octal string (V(0640)), None when not given."""
    if mode in (None, ''):
        return None
    try:
        value = int(str(mode), 8)
    except ValueError:
        raise FilesError('mode must be an octal string such as 0640, got %r' % (mode,))
    if value > 0o7777:
        raise FilesError('mode %r is out of range' % (mode,))
    return value


def read_bytes(path):
    """The bytes of ``path``, None when it does not exist."""
    try:
        with open(path, 'rb') as fh:
            return fh.read()
    except (IOError, OSError) as exc:
        if not os.path.exists(path):
            return None
        raise FilesError('cannot read %s: %s' % (path, exc))


def plan(entry):
    """What ``entry`` needs: (desired bytes or None for absent, uid, gid, mode, current bytes, current stat)."""
    path = entry['path']
    if not os.path.isabs(path):
        raise FilesError('%s: path must be absolute, got %s' % (entry['name'], path))
    uid, gid, mode = resolve_owner(entry.get('owner')), resolve_group(entry.get('group')), parse_mode(entry.get('mode'))
    if entry.get('state', 'present') == 'absent':
        desired = None
    elif (entry.get('content') is None) == (entry.get('src') in (None, '')):
        raise FilesError('%s: give exactly one of content and src' % entry['name'])
    elif entry.get('src') not in (None, ''):
        desired = read_bytes(entry['src'])
        if desired is None:
            raise FilesError('%s: src %s does not exist' % (entry['name'], entry['src']))
    else:
        desired = to_bytes(entry['content'], errors='surrogate_or_strict')
    try:
        st = os.lstat(path)
    except OSError:
        st = None
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise FilesError('%s: %s exists and is not a regular file' % (entry['name'], path))
    current = read_bytes(path) if st is not None else None
    return desired, uid, gid, mode, current, st


def attributes_differ(st, uid, gid, mode):
    """Whether an existing file's owner, group or mode is not the one asked for."""
    return ((uid is not None and st.st_uid != uid) or (gid is not None and st.st_gid != gid)
            or (mode is not None and stat.S_IMODE(st.st_mode) != mode))


def write_file(path, data, uid, gid, mode, st):
    """Write ``data`` to ``path`` through a temporary file that has its owner, group and mode
    before it is renamed into place; without them the old file's (or 0644 root for a new one)."""
    directory = os.path.dirname(path)
    if not os.path.isdir(directory):
        raise FilesError('directory %s does not exist' % directory)
    if st is not None:
        uid = st.st_uid if uid is None else uid
        gid = st.st_gid if gid is None else gid
        mode = stat.S_IMODE(st.st_mode) if mode is None else mode

    def chown_and_rename(tmp, dest):
        if uid is not None or gid is not None:
            os.chown(tmp, -1 if uid is None else uid, -1 if gid is None else gid)
        os.rename(tmp, dest)
    write_atomic(path, data, mode=0o644 if mode is None else mode, replace=chown_and_rename)


def apply_entry(entry, check_mode):
    """Handle one entry; returns (changed, before bytes or None, after bytes or None)."""
    desired, uid, gid, mode, current, st = plan(entry)
    path = entry['path']
    if desired is None:
        if st is None:
            return False, None, None
        if not check_mode:
            os.unlink(path)
        return True, current, None
    if st is not None and current == desired:
        if not attributes_differ(st, uid, gid, mode):
            return False, current, desired
        if not check_mode:
            os.chown(path, -1 if uid is None else uid, -1 if gid is None else gid)
            if mode is not None:
                os.chmod(path, mode)
        return True, current, desired
    if not check_mode:
        write_file(path, desired, uid, gid, mode, st)
    return True, current, desired


def handle(entries, check_mode, diff_mode):
    """Handle every entry; returns the module result (changed, files, changed_names, diff)."""
    files, names, diffs = {}, [], []
    for entry in entries:
        changed, before, after = apply_entry(entry, check_mode)
        show_before = diff_mode and entry.get('return_before') and changed
        files[entry['name']] = dict(path=entry['path'], changed=changed,
                                    before=to_text(before, errors='surrogate_or_replace') if show_before and before is not None else None)
        if changed:
            names.append(entry['name'])
            if diff_mode and entry.get('diff', True):
                diffs.append(dict(before_header=entry['path'], after_header=entry['path'],
                                  before=to_text(before or b'', errors='surrogate_or_replace'),
                                  after=to_text(after or b'', errors='surrogate_or_replace')))
    result = dict(changed=bool(names), files=files, changed_names=names)
    if diff_mode:
        result['diff'] = diffs
    return result


def main():
    module = AnsibleModule(
        argument_spec=dict(
            files=dict(type='list', elements='dict', required=True, options=dict(
                name=dict(type='str', required=True),
                path=dict(type='path', required=True),
                state=dict(type='str', choices=['present', 'absent'], default='present'),
                content=dict(type='str'),
                src=dict(type='path'),
                owner=dict(type='str'),
                group=dict(type='str'),
                mode=dict(type='str'),
                diff=dict(type='bool', default=True),
                return_before=dict(type='bool', default=False),
            )),
        ),
        supports_check_mode=True,
    )
    names = [f['name'] for f in module.params['files']]
    if len(set(names)) != len(names):
        module.fail_json(msg='files: every name must be unique, got %s' % names)
    try:
        result = handle(module.params['files'], module.check_mode, module._diff)
    except (FilesError, OSError) as exc:
        module.fail_json(msg=str(exc))
    module.exit_json(**result)


if __name__ == '__main__':
    main()
