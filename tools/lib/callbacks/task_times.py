# Developer-only Ansible callback for tools/task-times (not collection content: tools/ is in
# build_ignore). Appends one JSON line per task to $LLMOPS_TASK_TIMES_FILE: its name, file, action,
# start and duration (task start to the next task's start, as the playbook's wall clock sees it) and
# how its host results ended. ansible-core ships no profile_tasks (that is ansible.posix), and the
# summary needs the action and the file, which profile_tasks does not keep.
from __future__ import annotations

import json
import os
import time

from ansible.plugins.callback import CallbackBase

DOCUMENTATION = """
name: task_times
type: aggregate
short_description: one JSON line per task with its duration (tools/task-times)
description: Used by tools/task-times of the llmops.sglang repository; not shipped with the collection.
requirements: [enable in the callbacks_enabled setting]
"""


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = 'aggregate'
    CALLBACK_NAME = 'task_times'
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self):
        super().__init__()
        path = os.environ.get('LLMOPS_TASK_TIMES_FILE')
        # Nested ansible-playbook runs (molecule's converge starts sweeps) append to the same file.
        self._out = open(path, 'a', encoding='utf-8') if path else None  # pylint: disable=consider-using-with
        self._current = None

    def _finish(self):
        if self._current is not None and self._out is not None:
            self._current['duration_s'] = round(time.time() - self._current['start'], 4)
            self._out.write(json.dumps(self._current) + '\n')
            self._out.flush()
        self._current = None

    def v2_playbook_on_task_start(self, task, is_conditional):
        self._finish()
        self._current = {'name': task.get_name(), 'path': task.get_path(), 'action': task.action,
                         'delegate_to': task.delegate_to, 'start': time.time(), 'results': {}}

    def v2_playbook_on_handler_task_start(self, task):
        self.v2_playbook_on_task_start(task, False)

    def _count(self, status):
        if self._current is not None:
            self._current['results'][status] = self._current['results'].get(status, 0) + 1

    def v2_runner_on_ok(self, result):
        self._count('changed' if result.is_changed() else 'ok')

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._count('failed')

    def v2_runner_on_skipped(self, result):
        self._count('skipped')

    def v2_runner_on_unreachable(self, result):
        self._count('unreachable')

    def v2_playbook_on_stats(self, stats):
        self._finish()
