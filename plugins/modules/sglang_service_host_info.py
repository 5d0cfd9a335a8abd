#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.sglang contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: sglang_service_host_info
short_description: Read in one call what a deployment of SGLang needs to know about its host
version_added: 0.2.0
description:
  - Reads, without changing anything, each of the things it is asked for, and returns them side by side. The
    C(llmops.sglang.sglang_service) role asks once per play what it used to read in up to six module runs, a
    round trip each. That is the GPUs, the model's C(config.json), the Python version, what the rollback guard
    did, the Debian packages the virtualenv needs, whether the virtualenv already holds the simulator, whether
    the service account and directories are already as the role makes them, and whether the unit is enabled.
  - Only what an option asks for is read; the result has a key for each of those, C(null) for the others.
  - A command that cannot run is a result, not a failure (its C(rc) says why, as C(timeout) and a shell would
    say it). A file that does not exist is C(null). A file that exists but cannot be read fails the module.
author:
  - llmops.sglang contributors (@llmops)
options:
  interpreter:
    description: A Python interpreter whose version to read (it is run with C(-c)).
    type: path
  packages:
    description: Debian packages whose install state to ask C(dpkg-query) for.
    type: list
    elements: str
    default: []
  simulator_python:
    description: The virtualenv's Python, asked whether it can import the simulator (C(sglang_sim)).
    type: path
  simulator_digest_file:
    description: The file in which the role noted which simulator sources the virtualenv holds.
    type: path
  guard_record:
    description: The rollback guard's record of what it did while no deployment watched.
    type: path
  model_config:
    description: The model's C(config.json).
    type: path
  nvidia_smi:
    description: Whether to list the GPUs with C(nvidia-smi -L).
    type: bool
    default: false
  layout:
    description:
      - The service account and directories the role creates, to compare with what the host has. The role
        skips its user, group and directory tasks when RV(layout.in_place); anything else runs them.
    type: dict
    suboptions:
      group:
        description: A group that must exist.
        type: str
      user:
        description: A user that must exist with these attributes (those C(ansible.builtin.user) would change).
        type: dict
        suboptions:
          name:
            description: The user's name.
            type: str
            required: true
          group:
            description: Its primary group's name.
            type: str
            required: true
          home:
            description: Its home directory.
            type: path
            required: true
          shell:
            description: Its login shell.
            type: path
            required: true
      directories:
        description: Directories that must exist with this owner, group and octal mode.
        type: list
        elements: dict
        default: []
        suboptions:
          path:
            description: The directory.
            type: path
            required: true
          owner:
            description: Its owner's name.
            type: str
            required: true
          group:
            description: Its group's name.
            type: str
            required: true
          mode:
            description: Its mode, in octal (for example C(0750)); any other form is never in place.
            type: str
            required: true
  unit_enabled:
    description: A systemd unit whose C(systemctl is-enabled) state to read.
    type: str
  command_timeout:
    description: Seconds after which a command is killed (a wedged driver can hang C(nvidia-smi)); its C(rc) is then 124.
    type: int
    default: 20
extends_documentation_fragment:
  - llmops.sglang.attributes
attributes:
  check_mode:
    support: full
    details: Reads only; it runs the same in check mode.
  diff_mode:
    support: none
notes:
  - Runs on the host (stdlib only).
seealso:
  - module: ansible.builtin.slurp
  - module: ansible.builtin.command
'''

EXAMPLES = r'''
- name: Read what the deployment needs to know about the host
  llmops.sglang.sglang_service_host_info:
    interpreter: /usr/bin/python3
    packages: [python3-venv, python3-packaging]
    model_config: /models/Qwen3.5-122B-A10B-FP8/config.json
    nvidia_smi: true
  register: host
'''

RETURN = r'''
interpreter:
  description: The interpreter's run (null when O(interpreter) is not set).
  returned: always
  type: dict
  contains:
    rc:
      description: Its exit code (127 when it does not exist or cannot be executed, 124 after O(command_timeout)).
      type: int
    version:
      description: The version it printed, for example C(3.11.2) (empty when rc is not 0).
      type: str
    stderr:
      description: What it printed on stderr, or why it could not run.
      type: str
  sample: {rc: 0, version: 3.11.2, stderr: ""}
packages:
  description: What C(dpkg-query) says of O(packages) (null when none were asked for).
  returned: always
  type: dict
  contains:
    rc:
      description: dpkg-query's exit code (1 when it knows one of the packages not at all, 127 without dpkg-query).
      type: int
    installed:
      description: The packages of O(packages) that are installed.
      type: list
      elements: str
    missing:
      description: The packages of O(packages) that are not (all of them when rc is neither 0 nor 1).
      type: list
      elements: str
  sample: {rc: 1, installed: [python3-packaging], missing: [python3-venv]}
simulator:
  description: Whether the virtualenv holds the simulator (null when O(simulator_python) is not set).
  returned: always
  type: dict
  contains:
    importable:
      description: Whether O(simulator_python) can import C(sglang_sim).
      type: bool
    digest:
      description: The content of O(simulator_digest_file), stripped (null when it does not exist).
      type: str
  sample: {importable: true, digest: 3f0c9a...}
guard_record:
  description: The content of O(guard_record) (null when it is not set or the file does not exist).
  returned: always
  type: str
model_config:
  description: What was read of O(model_config) (null when it is not set).
  returned: always
  type: dict
  contains:
    content:
      description: The file's content (null when it does not exist).
      type: str
  sample: {content: '{"num_attention_heads": 32, "num_key_value_heads": 2}'}
layout:
  description: How the host's account and directories compare with O(layout) (null when it is not set).
  returned: always
  type: dict
  contains:
    in_place:
      description: Whether everything O(layout) names exists as it says.
      type: bool
    differs:
      description: What does not, one line each.
      type: list
      elements: str
    user_differs:
      description: The lines of RV(layout.differs) about the user of O(layout.user).
      type: list
      elements: str
    user_is_login:
      description:
        - Whether the user of O(layout.user) exists as a login account (a UID of at least C(UID_MIN) of
          C(/etc/login.defs), 1000 without it), which the role must not turn into a system account.
      type: bool
  sample: {in_place: false, differs: ["directory /etc/sglang: mode 0700, not 0755"], user_differs: [], user_is_login: false}
unit_enabled:
  description: What C(systemctl is-enabled) printed for O(unit_enabled), for example C(enabled), C(disabled) or C(not-found) (null when it is not set).
  returned: always
  type: str
nvidia_smi:
  description: The run of C(nvidia-smi -L) (null when O(nvidia_smi) is false).
  returned: always
  type: dict
  contains:
    rc:
      description: Its exit code (127 when nvidia-smi is not installed, 124 after O(command_timeout)).
      type: int
    stdout_lines:
      description: What it printed, line by line.
      type: list
      elements: str
    stderr:
      description: What it printed on stderr, or why it could not run.
      type: str
  sample: {rc: 0, stdout_lines: ["GPU 0: NVIDIA RTX PRO 6000 Blackwell (UUID: GPU-...)"], stderr: ""}
'''

import errno
import grp
import os
import pwd
import stat

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.llmops.sglang.plugins.module_utils.service_systemd import run_with_timeout

PYTHON_VERSION = "import sys; print('%d.%d.%d' % sys.version_info[:3])"


def run(argv, timeout):
    """``argv``'s exit code, stdout and stderr (127: it cannot be executed; 124: it ran past ``timeout``
    seconds and its whole process group was killed)."""
    done = run_with_timeout(argv, timeout)
    return dict(rc=done.rc, stdout=done.stdout, stderr=done.stderr)


def read_text(path):
    """The file's content, or None when it does not exist (any other error is raised)."""
    try:
        with open(path) as fh:
            return fh.read()
    except (IOError, OSError) as exc:
        if exc.errno == errno.ENOENT:
            return None
        raise


def dpkg_state(packages, timeout):
    fmt = '--showformat=${Package} ${db:Status-Status}\n'
    done = run(['dpkg-query', '--show', fmt] + list(packages), timeout)
    installed = [line.split(' ', 1)[0] for line in done['stdout'].splitlines() if line.endswith(' installed')]
    return dict(rc=done['rc'], installed=[p for p in packages if p in installed],
                missing=[p for p in packages if p not in installed])


def _name(lookup, ident):
    try:
        return lookup(ident)[0]
    except KeyError:
        return str(ident)


def login_uid_min(path='/etc/login.defs'):
    """UID_MIN of login.defs: the first UID useradd gives a login account (1000 without the file or the key)."""
    try:
        with open(path) as fh:
            for line in fh:
                fields = line.split()
                if len(fields) >= 2 and fields[0] == 'UID_MIN' and fields[1].isdigit():
                    return int(fields[1])
    except (IOError, OSError):
        pass
    return 1000


def compare_layout(layout):
    """What of ``layout`` (the module's option) the host does not have as it says, one line each (those of
    its user also apart), and whether its user is a login account."""
    differs = []
    user_differs = []
    user_is_login = False
    if layout.get('group'):
        try:
            grp.getgrnam(layout['group'])
        except KeyError:
            differs.append('group %s: missing' % layout['group'])
    user = layout.get('user')
    if user:
        try:
            entry = pwd.getpwnam(user['name'])
        except KeyError:
            user_differs.append('user %s: missing' % user['name'])
        else:
            user_is_login = entry.pw_uid >= login_uid_min()
            have = dict(group=_name(grp.getgrgid, entry.pw_gid), home=entry.pw_dir, shell=entry.pw_shell)
            user_differs.extend('user %s: %s %s, not %s' % (user['name'], key, have[key], user[key])
                                for key in ('group', 'home', 'shell') if have[key] != user[key])
    differs.extend(user_differs)
    for want in layout.get('directories') or []:
        try:
            st = os.lstat(want['path'])
        except OSError:
            differs.append('directory %s: missing' % want['path'])
            continue
        if not stat.S_ISDIR(st.st_mode):
            differs.append('directory %s: not a directory' % want['path'])
            continue
        have = dict(owner=_name(pwd.getpwuid, st.st_uid), group=_name(grp.getgrgid, st.st_gid), mode='%04o' % stat.S_IMODE(st.st_mode))
        try:
            mode_wanted = '%04o' % int(want['mode'], 8)
        except ValueError:
            mode_wanted = want['mode']
        wanted = dict(owner=want['owner'], group=want['group'], mode=mode_wanted)
        differs.extend('directory %s: %s %s, not %s' % (want['path'], key, have[key], wanted[key])
                       for key in ('owner', 'group', 'mode') if have[key] != wanted[key])
    return dict(in_place=not differs, differs=differs, user_differs=user_differs, user_is_login=user_is_login)


def read_host(params):
    """What ``params`` ask for (the module's options), read from this host. Raises OSError for a file
    that exists but cannot be read."""
    timeout = params['command_timeout']
    result = dict(interpreter=None, packages=None, simulator=None, guard_record=None, model_config=None, nvidia_smi=None,
                  layout=None, unit_enabled=None)
    if params['interpreter']:
        done = run([params['interpreter'], '-c', PYTHON_VERSION], timeout)
        result['interpreter'] = dict(rc=done['rc'], version=done['stdout'].strip() if done['rc'] == 0 else '',
                                     stderr=done['stderr'].strip())
    if params['packages']:
        result['packages'] = dpkg_state(params['packages'], timeout)
    if params['simulator_python']:
        digest = read_text(params['simulator_digest_file']) if params['simulator_digest_file'] else None
        done = run([params['simulator_python'], '-c', 'import sglang_sim'], timeout)
        result['simulator'] = dict(importable=done['rc'] == 0, digest=digest.strip() if digest is not None else None)
    if params['guard_record']:
        result['guard_record'] = read_text(params['guard_record'])
    if params['model_config']:
        result['model_config'] = dict(content=read_text(params['model_config']))
    if params['layout']:
        result['layout'] = compare_layout(params['layout'])
    if params['unit_enabled']:
        # is-enabled exits 1 for disabled and not-found alike; what it printed tells them apart.
        done = run(['systemctl', 'is-enabled', params['unit_enabled']], timeout)
        result['unit_enabled'] = done['stdout'].strip() or 'unknown'
    if params['nvidia_smi']:
        done = run(['nvidia-smi', '-L'], timeout)
        result['nvidia_smi'] = dict(rc=done['rc'], stdout_lines=done['stdout'].splitlines(), stderr=done['stderr'].strip())
    return result


def main():
    module = AnsibleModule(
        argument_spec=dict(
            interpreter=dict(type='path'),
            packages=dict(type='list', elements='str', default=[]),
            simulator_python=dict(type='path'),
            simulator_digest_file=dict(type='path'),
            guard_record=dict(type='path'),
            model_config=dict(type='path'),
            nvidia_smi=dict(type='bool', default=False),
            layout=dict(type='dict', options=dict(
                group=dict(type='str'),
                user=dict(type='dict', options=dict(
                    name=dict(type='str', required=True),
                    group=dict(type='str', required=True),
                    home=dict(type='path', required=True),
                    shell=dict(type='path', required=True),
                )),
                directories=dict(type='list', elements='dict', default=[], options=dict(
                    path=dict(type='path', required=True),
                    owner=dict(type='str', required=True),
                    group=dict(type='str', required=True),
                    mode=dict(type='str', required=True),
                )),
            )),
            unit_enabled=dict(type='str'),
            command_timeout=dict(type='int', default=20),
        ),
        supports_check_mode=True,
    )
    try:
        result = read_host(module.params)
    except (IOError, OSError) as exc:
        module.fail_json(msg='Could not read %s: %s' % (exc.filename, exc.strerror or exc))
    module.exit_json(changed=False, **result)


if __name__ == '__main__':
    main()
