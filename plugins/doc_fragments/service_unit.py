# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.sglang contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type


class ModuleDocFragment(object):
    """What sglang_service_stop and sglang_service_wait share: the unit they act on, where they
    run and how they support check and diff mode (the same for both). Listed after
    C(llmops.sglang.attributes), which gives the attributes' descriptions."""

    DOCUMENTATION = r'''
options:
  name:
    description: Name of the systemd unit, with or without the C(.service) suffix.
    type: str
    required: true
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
notes:
  - Runs on the GPU host (stdlib only); needs C(systemctl).
'''
