# Copyright: (c) 2026, llmops.sglang contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The jsonl_prompts filter: a JSONL prompt file's text to the prompt list sglang_bench takes."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.llmops.sglang.plugins.module_utils.bench_workloads import parse_prompt_lines


def jsonl_prompts(text, origin="prompts"):
    """Parse with the module's own rules, so that the role and the module say the same (file, line, what)."""
    try:
        return parse_prompt_lines(str(text).splitlines(), origin)
    except ValueError as exc:
        raise AnsibleFilterError(str(exc))


class FilterModule(object):
    def filters(self):
        return {"jsonl_prompts": jsonl_prompts}
