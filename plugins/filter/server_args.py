# Copyright: (c) 2026, llmops.sglang contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters that give the roles the server-argument table of module_utils/server_args.py."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.llmops.sglang.plugins.module_utils import server_args

SELECTIONS = {'all': None, 'fingerprint': True, 'not_fingerprint': False}


def sglang_server_arg_vars(selection='all'):
    """The sglang_service variables that are server arguments, in the table's order."""
    if selection not in SELECTIONS:
        raise AnsibleFilterError('sglang_server_arg_vars: unknown selection %r; known: %s' % (selection, ', '.join(SELECTIONS)))
    return server_args.role_vars(SELECTIONS[selection])


def sglang_server_args(values, speculative, files=None):
    """{options, expect, settings} of one deployment from {variable: value}; ``files``: {variable:
    path} of the mappings the role renders to files (the adaptive config)."""
    if not isinstance(values, dict):
        raise AnsibleFilterError('sglang_server_args: expects a mapping of the variables of sglang_server_arg_vars, got %r' % (values,))
    missing = [name for name in server_args.role_vars() if name not in values]
    if missing:
        raise AnsibleFilterError('sglang_server_args: no value for %s' % ', '.join(missing))
    try:
        if files is not None and not isinstance(files, dict):
            raise ValueError('sglang_server_args: files must be a mapping of variables to paths, got %r' % (files,))
        return server_args.resolve(values, speculative, files)
    except ValueError as exc:
        raise AnsibleFilterError(str(exc))


def sglang_extra_args_conflicts(extra_args):
    """The words of sglang_service_extra_args that set what the role sets, each with what to do instead."""
    if not isinstance(extra_args, (list, tuple)):
        raise AnsibleFilterError('sglang_extra_args_conflicts: expects a list of argv words, got %r' % (extra_args,))
    return server_args.extra_args_conflicts([str(word) for word in extra_args])


class FilterModule(object):
    def filters(self):
        return {
            'sglang_server_arg_vars': sglang_server_arg_vars,
            'sglang_server_args': sglang_server_args,
            'sglang_extra_args_conflicts': sglang_extra_args_conflicts,
        }
