"""The speculative-decoding rules (module_utils/speculative.py) and their filters."""
import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.llmops.sglang.plugins.filter.speculative import (
    FilterModule, spec_algorithms, spec_draft_tokens, spec_eagle_family)
from ansible_collections.llmops.sglang.plugins.module_utils import speculative


def test_eagle_family_is_sglang_0_5_23s():
    assert speculative.EAGLE_FAMILY == ('EAGLE', 'EAGLE3', 'NEXTN', 'STANDALONE')
    assert spec_algorithms('eagle') == ['EAGLE', 'EAGLE3', 'NEXTN', 'STANDALONE']
    with pytest.raises(AnsibleFilterError, match='unknown family'):
        spec_algorithms('ngram')


def test_eagle_family_algorithms_are_recorded_in_the_contract():
    from ansible_collections.llmops.sglang.plugins.module_utils import sglang_contract
    assert set(speculative.EAGLE_FAMILY) <= set(sglang_contract.SPECULATIVE_ALGORITHMS)


@pytest.mark.parametrize('algorithm, expected', [
    ('EAGLE', True), ('eagle3', True), ('NextN', True), ('STANDALONE', True),
    ('NGRAM', False), ('DFLASH', False), (None, False), ('', False),
])
def test_eagle_family(algorithm, expected):
    assert spec_eagle_family(algorithm) is expected


@pytest.mark.parametrize('steps, topk, algorithm, asked, expected', [
    (4, 1, 'NEXTN', None, 5),        # topk 1: SGLang forces steps + 1
    (4, 1, 'EAGLE', 7, 5),           # ... whatever was asked for
    ('3', '1', 'eagle3', '', 4),     # strings as templating hands them over
    (4, 2, 'EAGLE', 6, 6),           # topk > 1: what was asked for
    (4, 2, 'EAGLE', None, None),     # ... or SGLang's default
    (4, 1, 'NGRAM', 8, 8),           # not the EAGLE family: never forced
    (4, 1, None, None, None),        # speculative decoding off
])
def test_draft_tokens(steps, topk, algorithm, asked, expected):
    assert spec_draft_tokens(steps, topk, algorithm, asked) == expected
    assert speculative.draft_tokens(steps, topk, algorithm, asked) == expected


def test_draft_tokens_default_algorithm_is_eagle():
    assert spec_draft_tokens(2, 1) == 3


def test_draft_tokens_rejects_junk():
    with pytest.raises(AnsibleFilterError, match='integers'):
        spec_draft_tokens('x', 1)


def test_resolved_algorithm_follows_sglang_alias():
    assert speculative.resolved_algorithm('nextn') == 'EAGLE'
    assert speculative.resolved_algorithm('eagle3') == 'EAGLE3'


def test_filters_are_registered():
    assert set(FilterModule().filters()) == {'spec_algorithms', 'spec_eagle_family', 'spec_draft_tokens', 'spec_adaptive_problems',
                                             'spec_adaptive_candidates', 'spec_adaptive_json'}


@pytest.mark.parametrize('algorithm, topk, extra, dp, words', [
    ('NEXTN', 1, [], 1, None),
    ('EAGLE3', 1, [], 1, None),
    ('NEXTN', 2, [], 1, 'speculative_eagle_topk=2 (only topk=1 is supported)'),
    ('STANDALONE', 1, [], 1, 'speculative_algorithm=STANDALONE (only EAGLE/EAGLE3 are supported)'),
    ('EAGLE', 1, ['--attn-dp-size', '2'], 1, 'attention DP is not supported'),
    ('EAGLE', 1, ['--enable-dp-attention'], 2, 'attention DP is not supported'),
    ('EAGLE', 1, ['--enable-two-batch-overlap'], 1, 'enable_two_batch_overlap=True is not supported'),
])
def test_adaptive_unsupported_reason_is_sglang_0_5_23s(algorithm, topk, extra, dp, words):
    reason = speculative.adaptive_unsupported_reason(algorithm, topk, extra, dp)
    assert (reason is None) if words is None else reason.startswith(words)
