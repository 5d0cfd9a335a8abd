# Copyright: (c) 2026, llmops.sglang contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The spec_sweep_bench_failure filter: whose failure a failed benchmark of the sweep is (module_utils/sweep_classify.py)."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.llmops.sglang.plugins.module_utils.sweep_classify import classify_bench_failure


def spec_sweep_bench_failure(failed, before, after, reachable=True, label='the configuration', host='the host', journal=None):
    """The failed task's result, the unit probe's lines before and after, the served invocation's end in
    its journal -> {fault, diagnosis, replaced, crashed}."""
    return classify_bench_failure(failed, before, after, reachable=reachable, label=label, host=host, journal=journal)


class FilterModule(object):
    def filters(self):
        return {'spec_sweep_bench_failure': spec_sweep_bench_failure}
