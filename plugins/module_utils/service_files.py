# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.sglang contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The files of a deployment, written in one module call: shared by sglang_service_files (render,
restore) and sglang_service_wait (keep the configuration that reached ready, in the same call)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import grp
import os
import pwd
import stat

from ansible.module_utils.common.text.converters import to_bytes, to_text

from ansible_collections.llmops.sglang.plugins.module_utils.atomic_file import write_atomic

# The options of one file entry (sglang_service_files' files[], sglang_service_wait's keep_files[]).
FILE_ENTRY_OPTIONS = dict(
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
)


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


def duplicate_names(entries):
    """The names that more than one entry has (they key the result)."""
    names = [entry['name'] for entry in entries]
    return sorted(set(name for name in names if names.count(name) > 1))
