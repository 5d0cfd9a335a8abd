# Copyright: (c) 2026, llmops.sglang contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The spec_sweep_start_failure filter: whether a failed start of the sweep is the configuration's verdict
(module_utils/sweep_classify.py)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.llmops.sglang.plugins.module_utils.sweep_classify import classify_start_failure


def spec_sweep_start_failure(failure, rollback=None, label='the configuration'):
    """sglang_service_failure, the awaited rollback's result -> {verdict, fault, await_rollback}."""
    return classify_start_failure(failure, rollback=rollback, label=label)


class FilterModule(object):
    def filters(self):
        return {'spec_sweep_start_failure': spec_sweep_start_failure}
