# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.sglang contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Round-trip update of an inventory host_vars YAML file (private to llmops.sglang).

Runs on the controller (ruamel.yaml keeps the user's comments, key order and quoting).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import io
import os

try:
    from ruamel.yaml import YAML
    from ruamel.yaml.comments import CommentedMap
    HAS_RUAMEL = True
    RUAMEL_IMPORT_ERROR = None
except ImportError as exc:  # pragma: no cover - reported by the module through missing_required_lib
    HAS_RUAMEL = False
    RUAMEL_IMPORT_ERROR = exc

# Keys that change with every sweep without changing its outcome.
VOLATILE_KEYS = ('date',)


class PinError(ValueError):
    pass


def host_vars_path(inventory_dir, host):
    """Where a host's pinned vars go: host_vars/<host>/sweep.yml if the user keeps a directory."""
    base = os.path.join(inventory_dir, 'host_vars')
    as_dir = os.path.join(base, host)
    if os.path.isdir(as_dir):
        return os.path.join(as_dir, 'sweep.yml')
    for ext in ('.yml', '.yaml'):
        if os.path.isfile(as_dir + ext):
            return as_dir + ext
    return as_dir + '.yml'


def _yaml():
    yaml = YAML(typ='rt')
    yaml.preserve_quotes = True
    yaml.width = 4096
    # The indentation ansible-lint's yamllint rules expect.
    yaml.indent(mapping=2, sequence=4, offset=2)
    return yaml


def _plain(value):
    """ruamel containers -> plain dicts/lists, for comparing."""
    if isinstance(value, dict):
        return dict((k, _plain(v)) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _strip_volatile(value):
    if isinstance(value, dict):
        return dict((k, v) for k, v in value.items() if k not in VOLATILE_KEYS)
    return value


def _to_yaml_node(value):
    if isinstance(value, dict):
        node = CommentedMap()
        for k, v in value.items():
            node[k] = _to_yaml_node(v)
        return node
    if isinstance(value, (list, tuple)):
        return [_to_yaml_node(v) for v in value]
    return value


def update_text(old_text, updates):
    """Return ``(new_text, changed_keys)``: ``old_text`` with ``updates`` set at the top level.

    Keys whose value only differs in volatile fields (the sweep date) are left alone, so a
    sweep with the same outcome leaves the file byte for byte as it was.
    """
    if not HAS_RUAMEL:
        raise PinError('ruamel.yaml is required on the controller to pin into host_vars: %s' % RUAMEL_IMPORT_ERROR)
    yaml = _yaml()
    text = old_text or ''
    data = yaml.load(text) if text.strip() else None
    if data is None:
        data = CommentedMap()
    if not isinstance(data, dict):
        raise PinError('the host_vars file does not hold a mapping at the top level')
    changed = []
    for key, value in updates.items():
        if key in data and _strip_volatile(_plain(data[key])) == _strip_volatile(_plain(value)):
            continue
        changed.append(key)
        data[key] = _to_yaml_node(value)
    if not changed:
        return old_text, []
    yaml.explicit_start = not text.strip() or text.lstrip().startswith('---')
    out = io.StringIO()
    yaml.dump(data, out)
    return out.getvalue(), changed
