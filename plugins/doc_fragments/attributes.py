# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.sglang contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function
__metaclass__ = type


class ModuleDocFragment(object):
    """The modules' shared attributes.

    A module lists C(llmops.sglang.attributes) (check_mode, diff_mode) and, when it runs on the
    controller, C(llmops.sglang.attributes.controller) (platform) under
    extends_documentation_fragment, then states its own C(support) for each attribute (the two
    unit modules through C(llmops.sglang.service_unit)); a description (or details) of its own
    replaces the shared one where the module differs.
    """

    # check_mode and diff_mode: the generic meaning; each module sets `support`.
    DOCUMENTATION = r'''
options: {}
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
'''

    # The sweep's modules: they run on the controller (delegate_to localhost).
    CONTROLLER = r'''
options: {}
attributes:
  platform:
    support: full
    platforms: posix
    description: Runs on the controller (delegate_to localhost).
'''
