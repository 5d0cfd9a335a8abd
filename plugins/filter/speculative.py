# Copyright: (c) 2026, llmops.sglang contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters for SGLang's speculative-decoding rules, from the module_utils the modules use."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.llmops.sglang.plugins.module_utils.speculative import (
    ADAPTIVE_ALGORITHMS, EAGLE_FAMILY, adaptive_candidates, adaptive_config_json, adaptive_config_problems, draft_tokens,
    is_eagle_family)

FAMILIES = {'eagle': EAGLE_FAMILY, 'adaptive': ADAPTIVE_ALGORITHMS}


def spec_algorithms(family):
    """The algorithms of a family by name ('eagle'), for messages and choices."""
    try:
        return list(FAMILIES[str(family)])
    except KeyError:
        raise AnsibleFilterError('spec_algorithms: unknown family %r; known: %s' % (family, ', '.join(sorted(FAMILIES))))


def spec_eagle_family(algorithm):
    """Whether the algorithm (any case; null for off) uses eagle_topk and draft tokens."""
    return is_eagle_family(algorithm)


def spec_draft_tokens(steps, topk, algorithm='EAGLE', num_draft_tokens=None):
    """The draft-token count SGLang runs with: steps + 1 for the EAGLE family with topk 1,
    else num_draft_tokens (null: SGLang's default)."""
    try:
        return draft_tokens(steps, topk, algorithm, num_draft_tokens)
    except (TypeError, ValueError) as exc:
        raise AnsibleFilterError('spec_draft_tokens: steps, topk and num_draft_tokens must be integers: %s' % exc)


def spec_adaptive_problems(config, var='sglang_service_speculative_adaptive_config'):
    """What is wrong with an adaptive config mapping (SGLang 0.5.23's rules), as messages naming ``var``."""
    if config is None:
        return []
    return adaptive_config_problems(config, var)


def spec_adaptive_candidates(config):
    """The union of the adaptive config's candidate_steps (null: SGLang 0.5.23's built-in config)."""
    return adaptive_candidates(config)


def spec_adaptive_json(config):
    """The adaptive config as the JSON file SGLang reads (string keys)."""
    return adaptive_config_json(config)


class FilterModule(object):
    def filters(self):
        return {
            'spec_algorithms': spec_algorithms,
            'spec_eagle_family': spec_eagle_family,
            'spec_draft_tokens': spec_draft_tokens,
            'spec_adaptive_problems': spec_adaptive_problems,
            'spec_adaptive_candidates': spec_adaptive_candidates,
            'spec_adaptive_json': spec_adaptive_json,
        }
