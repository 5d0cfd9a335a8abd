# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.sglang contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""SGLang's speculative-decoding rules the collection relies on (private), in one place.

Hand-written (``sglang_contract.py`` next to it is generated). Used by the modules and, through
the ``llmops.sglang.spec_*`` filters (``plugins/filter/speculative.py``), by the roles and the
playbooks.

SGLang 0.5.23:

- The EAGLE family, the algorithms that draft a tree shaped by ``--speculative-eagle-topk`` and
  ``--speculative-num-draft-tokens``: EAGLE, EAGLE3, NEXTN (an alias of EAGLE) and STANDALONE
  (``srt/speculative/spec_info.py``: ``is_eagle()`` / ``is_standalone()``;
  ``srt/arg_groups/speculative_hook.py`` resolves NEXTN to EAGLE).
- With ``--speculative-eagle-topk 1`` the draft-token count is forced to steps + 1
  (``speculative_hook.py``: "speculative_num_draft_tokens is adjusted to
  speculative_num_steps + 1 when speculative_eagle_topk == 1").
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

EAGLE_FAMILY = ('EAGLE', 'EAGLE3', 'NEXTN', 'STANDALONE')

# Names SGLang rewrites while resolving its arguments (what /server_info reports back).
ALGORITHM_ALIASES = {'NEXTN': 'EAGLE'}


def is_eagle_family(algorithm):
    """Whether ``algorithm`` (any case; None or '' for off) is of the EAGLE family."""
    return str(algorithm or '').upper() in EAGLE_FAMILY


def resolved_algorithm(algorithm):
    """The algorithm's name as SGLang reports it after resolving aliases (upper case)."""
    value = str(algorithm).upper()
    return ALGORITHM_ALIASES.get(value, value)


def draft_tokens(steps, topk, algorithm='EAGLE', num_draft_tokens=None):
    """The draft-token count SGLang runs with.

    steps + 1 for the EAGLE family with topk 1 (SGLang forces it, whatever was asked for);
    otherwise ``num_draft_tokens`` as an integer, or None when it is not set (SGLang's default).
    """
    if is_eagle_family(algorithm) and int(topk) == 1:
        return int(steps) + 1
    if num_draft_tokens in (None, ''):
        return None
    return int(num_draft_tokens)
