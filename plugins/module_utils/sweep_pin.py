# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.sglang contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Line-level pinning into an inventory host_vars YAML file (private to llmops.sglang).

Runs on the controller. The file is the operator's: pinning rewrites only

* the value of each pinned top-level key, on that key's own line (an inline comment after
  it stays), or adds a missing key as one new line, and
* one evidence block between two marker comments (see BEGIN/END below).

Every other byte stays as it was: comments before and after ``---``, anchors and aliases,
vault blocks, folded strings, odd indentation, flow style, end-of-file comments. A YAML
dumper cannot promise that (a round trip through one rewrites what it does not model), so
the file is never dumped: the edit is made on the text and then checked by parsing the
result (every key that was not pinned must load exactly as before, the pinned ones as
asked). A file that cannot be edited this way (the key is a block, a multi-line or anchored
value, appears twice, or the file holds several documents) is refused with a message.

Only PyYAML is needed (Ansible itself depends on it): ``compose`` gives each node's position
in the text without constructing tagged values such as ``!vault``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os

try:
    import yaml
    HAS_YAML = True
    YAML_IMPORT_ERROR = None
except ImportError as exc:  # pragma: no cover - Ansible's controller always has PyYAML
    HAS_YAML = False
    YAML_IMPORT_ERROR = exc

# Keys whose value changes with every sweep without changing its outcome.
VOLATILE_KEYS = ('date',)

EVIDENCE_KEY = 'sglang_spec_sweep'
BEGIN = '# BEGIN llmops.sglang sweep evidence (written by the sweep; edits inside are replaced)'
END = '# END llmops.sglang sweep evidence'


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


def _tagged(loader, tag_suffix, node):
    if isinstance(node, yaml.ScalarNode):
        return ('!' + tag_suffix, loader.construct_scalar(node))
    if isinstance(node, yaml.SequenceNode):
        return ('!' + tag_suffix, loader.construct_sequence(node, deep=True))
    return ('!' + tag_suffix, loader.construct_mapping(node, deep=True))


if HAS_YAML:
    class _Loader(yaml.SafeLoader):  # pylint: disable=too-many-ancestors
        """SafeLoader that keeps tagged values (``!vault``, ``!unsafe``) as (tag, text) pairs."""

    _Loader.add_multi_constructor('!', _tagged)

    class _Dumper(yaml.SafeDumper):  # pylint: disable=too-many-ancestors
        """Indented block sequences (``key:`` then ``  - a``), as yamllint's default rules expect."""

        def increase_indent(self, flow=False, indentless=False):
            return super(_Dumper, self).increase_indent(flow, False)


def _plain(value):
    """Ansible's unsafe text and friends -> plain JSON types (int keys become strings)."""
    return json.loads(json.dumps(value, sort_keys=False))


def _strip_volatile(value):
    if isinstance(value, dict):
        return dict((k, v) for k, v in value.items() if k not in VOLATILE_KEYS)
    return value


def _one_document(parse, text, empty, is_mapping):
    """The one document of a host_vars file (None when there is none), with ``parse``
    (yaml.load_all or yaml.compose_all), ``empty`` telling an empty document and ``is_mapping``
    a mapping; PinError otherwise."""
    try:
        docs = list(parse(text, Loader=_Loader))
    except yaml.YAMLError as exc:
        raise PinError('the file is not valid YAML: %s' % exc)
    docs = [d for d in docs if not empty(d)]
    if not docs:
        return None
    if len(docs) > 1:
        raise PinError('the file holds %d YAML documents; host_vars must be one mapping' % len(docs))
    if not is_mapping(docs[0]):
        raise PinError('the file does not hold a mapping at the top level')
    return docs[0]


def _load(text):
    data = _one_document(yaml.load_all, text, lambda d: d is None, lambda d: isinstance(d, dict))
    return {} if data is None else data


def _compose(text):
    # An explicit but empty document ("---" and comments) composes to a null scalar.
    return _one_document(
        yaml.compose_all, text,
        lambda n: n is None or (isinstance(n, yaml.ScalarNode) and n.tag == 'tag:yaml.org,2002:null'),
        lambda n: isinstance(n, yaml.MappingNode))


def _scalar_text(value):
    """One plain YAML scalar, or a flow collection, as a line's value."""
    if value is None:
        return 'null'
    if isinstance(value, bool):
        return 'true' if value else 'false'
    if isinstance(value, (int, float)):
        return repr(value)
    out = yaml.dump(value, Dumper=_Dumper, default_flow_style=True, width=4096)
    out = out.strip()
    if out.endswith('...'):
        out = out[:-3].strip()
    if '\n' in out:
        raise PinError('pinned value %r does not fit on one line' % (value,))
    return out


def _evidence_block(value, newline):
    body = yaml.dump({EVIDENCE_KEY: value}, Dumper=_Dumper, default_flow_style=False, sort_keys=False,
                     width=4096, allow_unicode=True)
    return newline.join([BEGIN] + body.rstrip('\n').split('\n') + [END]) + newline


def _is_blank_or_comment(line):
    stripped = line.strip()
    return not stripped or stripped.startswith('#')


class _Text:
    """The file as lines (each keeps its own line ending) plus the offsets where they start."""

    def __init__(self, text):
        self.lines = text.splitlines(True)
        self.newline = '\r\n' if self.lines and self.lines[0].endswith('\r\n') else '\n'


def _entries(root):
    """[(key, key_node, value_node)] of the top-level mapping."""
    return [(k.value if isinstance(k, yaml.ScalarNode) else None, k, v) for k, v in root.value]


def _marker_span(lines):
    """(begin index, end index) of the evidence block's marker lines, or None."""
    begins = [i for i, line in enumerate(lines) if line.rstrip('\r\n') == BEGIN]
    ends = [i for i, line in enumerate(lines) if line.rstrip('\r\n') == END]
    if not begins and not ends:
        return None
    if len(begins) != 1 or len(ends) != 1 or ends[0] < begins[0]:
        raise PinError('the evidence markers (%r ... %r) are damaged: expected one of each, in order' % (BEGIN, END))
    return begins[0], ends[0]


def _entry_last_line(entries, index, lines):
    """Last line of top-level entry ``index``: up to the next entry, without trailing comments/blanks."""
    key_line = entries[index][1].start_mark.line
    if index + 1 < len(entries):
        stop = entries[index + 1][1].start_mark.line - 1
    else:
        value = entries[index][2]
        stop = value.end_mark.line if value.end_mark.column > 0 else value.end_mark.line - 1
        stop = min(stop, len(lines) - 1)
    while stop > key_line and _is_blank_or_comment(lines[stop]):
        stop -= 1
    return stop


def update_text(old_text, updates):
    """Return ``(new_text, changed_keys)``: ``old_text`` with ``updates`` pinned.

    ``updates`` maps top-level keys to scalars, plus EVIDENCE_KEY to the evidence mapping.
    Keys whose value only differs in volatile fields (the sweep date) are left alone, so a
    sweep with the same outcome leaves the file byte for byte as it was. Raises PinError
    naming the reason when the file cannot be edited without touching other lines.
    """
    if not HAS_YAML:
        raise PinError('PyYAML is required on the controller to pin into host_vars: %s' % YAML_IMPORT_ERROR)
    old_text = old_text or ''
    updates = _plain(updates)
    evidence = updates.pop(EVIDENCE_KEY, None)
    before = _load(old_text)
    root = _compose(old_text)
    text = _Text(old_text)
    lines = list(text.lines)
    nl = text.newline
    entries = _entries(root) if root is not None else []
    keys = [e[0] for e in entries]
    for key in list(updates) + ([EVIDENCE_KEY] if evidence is not None else []):
        if keys.count(key) > 1:
            raise PinError('%s appears %d times at the top level; keep one and pin again' % (key, keys.count(key)))
    if any(k == '<<' for k in keys):
        merged = [k for k in updates if k not in keys and k in before]
        if merged:
            raise PinError('%s come from a merge key (<<) the operator wrote; set them as plain top-level keys to let the sweep pin them'
                           % ', '.join(merged))
    if root is not None and root.flow_style:
        raise PinError('the top-level mapping is written in flow style ({...}); the sweep edits block mappings only')
    indent = entries[0][1].start_mark.column if entries else 0
    pad = ' ' * indent

    changed = []
    edits = []    # (first line, last line inclusive, replacement lines) on the original line numbers
    missing = []
    for key, value in updates.items():
        if key in before and before[key] == value:
            continue
        changed.append(key)
        if key not in keys:
            missing.append('%s%s: %s%s' % (pad, key, _scalar_text(value), nl))
            continue
        _k, key_node, value_node = entries[keys.index(key)]
        # A one-line value: a plain or quoted scalar, or a flow collection ({...} or [...]) on the key's
        # line, as the sweep pins an adaptive schedule's config.
        one_line = isinstance(value_node, yaml.ScalarNode) or (
            isinstance(value_node, (yaml.MappingNode, yaml.SequenceNode)) and value_node.flow_style)
        if not one_line or value_node.start_mark.line != key_node.start_mark.line \
                or value_node.end_mark.line != value_node.start_mark.line or getattr(value_node, 'style', None) in ('|', '>'):
            raise PinError('%s is not a one-line value on its own key\'s line (line %d); the sweep only replaces such values: '
                           'write it as "%s: <value>"' % (key, key_node.start_mark.line + 1, key))
        line_no = key_node.start_mark.line
        line = lines[line_no]
        start, end = value_node.start_mark.column, value_node.end_mark.column
        raw = line[start:end]
        # Inside a flow collection an anchor, alias or tag could stand anywhere: any of their marks refuses it.
        inner = not isinstance(value_node, yaml.ScalarNode) and any(mark in raw for mark in ('&', '*', '!'))
        if inner or raw.startswith(('&', '*', '!')) or (start > 0 and line[:start].rstrip().endswith(('&', '!'))) \
                or _has_anchor(line, key_node.end_mark.column, start):
            raise PinError('%s carries an anchor, alias or tag (line %d); the sweep will not rewrite it (other keys may refer to it)'
                           % (key, line_no + 1))
        edits.append((line_no, line_no, [line[:start] + _scalar_text(value) + line[end:]]))

    if evidence is not None:
        old_evidence = before.get(EVIDENCE_KEY)
        evidence_changed = _strip_volatile(old_evidence) != _strip_volatile(evidence)
        span = _marker_span(lines)
        if evidence_changed:
            changed.append(EVIDENCE_KEY)
        block = _evidence_block(evidence, nl).splitlines(True)
        if span is not None:
            if evidence_changed:
                edits.append((span[0], span[1], block))
            if missing:
                edits.append((span[0], span[0] - 1, missing))
                missing = []
        elif EVIDENCE_KEY in keys:
            # Pinned before the markers existed: the key's own lines become the marked block.
            idx = keys.index(EVIDENCE_KEY)
            first = entries[idx][1].start_mark.line
            edits.append((first, _entry_last_line(entries, idx, lines), missing + block))
            missing = []
            if EVIDENCE_KEY not in changed:
                changed.append(EVIDENCE_KEY)
        else:
            missing = missing + block

    if missing:
        # After the last top-level entry, before the file's trailing comments and blank lines.
        if entries:
            at = _entry_last_line(entries, len(entries) - 1, lines) + 1
        else:
            at = len(lines)  # only comments (and "---"): the keys go after them
        edits.append((at, at - 1, missing))

    if not changed:
        return old_text, []
    if not old_text.strip():
        new_text = '---' + nl + ''.join(''.join(r) for _a, _b, r in edits)
        _check(before, new_text, updates, evidence)
        return new_text, changed
    if lines and not lines[-1].endswith(('\n', '\r')):
        lines[-1] += nl
    for first, last, replacement in sorted(edits, key=lambda e: (e[0], e[1]), reverse=True):
        lines[first:last + 1] = replacement
    new_text = ''.join(lines)
    _check(before, new_text, updates, evidence)
    return new_text, changed


def _has_anchor(line, key_end, value_start):
    """An anchor or tag between the colon and the value (``key: &a value``)."""
    between = line[key_end:value_start]
    return '&' in between or '!' in between


def _check(before, new_text, updates, evidence):
    """The edited file must load with every other key as before and the pinned ones as asked."""
    after = _load(new_text)
    for key, value in before.items():
        if key in updates or key == EVIDENCE_KEY:
            continue
        if key not in after or after[key] != value:
            raise PinError('editing the file would change %s; nothing was written' % key)
    for key, value in updates.items():
        if after.get(key) != value:
            raise PinError('the edited file does not hold %s: %r; nothing was written' % (key, value))
    if evidence is not None and _strip_volatile(after.get(EVIDENCE_KEY)) != _strip_volatile(evidence):
        raise PinError('the edited file does not hold the evidence block as written; nothing was written')
    extra = set(after) - set(before) - set(updates) - set([EVIDENCE_KEY])
    if extra:
        raise PinError('editing the file would add %s; nothing was written' % ', '.join(sorted(extra)))
