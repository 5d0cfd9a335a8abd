# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.sglang contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The progress file of a running sglang_bench (private to llmops.sglang).

Stdlib only, Python 3.8+: it runs on the host that drives the load. While a benchmark runs,
``ProgressFile`` keeps a small JSON status in a file, replaced atomically (a reader sees the
old status or the new one, never half), every ``every`` seconds and at each change of level or
state, so that the caller (the spec_bench role, which runs the module asynchronously) can show
which level runs, how many requests are done of how many, and the output tok/s so far.

The document (``FIELDS``)::

    {"state": "running", "level": 2, "levels": 4, "concurrency": 8, "phase": "measure",
     "requests_done": 12, "requests_failed": 0, "requests_target": 32, "adaptive": false,
     "in_flight": 8, "output_tokens": 6144, "output_tok_s": 1234.5, "level_elapsed_s": 5.0,
     "duration_s": null, "levels_done": 1, "level_try": 1, "retry_reason": null, "elapsed_s": 40.1,
     "message": null, "updated_at": "2026-12-01T10:00:00Z", "pid": 4242}

``state`` is ``waiting`` (for another benchmark of the same server), ``running``, ``done`` or
``failed``; ``phase`` is ``warmup`` or ``measure``; ``requests_target`` is the level's count
(with ``adaptive`` its cap, lowered once the level is precise enough), null with ``duration_s``;
``level_try`` counts the tries of the level (2 and more when a try was discarded and the level is
measured again: its requests start from 0 again) and ``retry_reason`` says why the last was discarded.
Writing never fails the benchmark: after an error the file is left alone (``error`` says why).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import asyncio
import errno
import json
import os
import stat
import time

from ansible_collections.llmops.sglang.plugins.module_utils.atomic_file import write_atomic

FIELDS = ('state', 'level', 'levels', 'concurrency', 'phase', 'requests_done', 'requests_failed', 'requests_target',
          'adaptive', 'in_flight', 'output_tokens', 'output_tok_s', 'level_elapsed_s', 'duration_s', 'levels_done',
          'level_try', 'retry_reason', 'elapsed_s', 'message', 'updated_at', 'pid')

DEFAULT_EVERY = 2.0


def _utc(stamp):
    return time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(stamp))


def private_directory(path):
    """Make ``path`` the progress file's private directory: created with mode 0700 (its parents as
    needed), or, when it exists, a directory of this user that nobody else may write to. The caller
    (the spec_bench role) names a fresh one under /tmp; one that someone else made first is refused.
    Raises OSError or ValueError."""
    parent = os.path.dirname(path)
    if parent and not os.path.isdir(parent):
        os.makedirs(parent)
    try:
        os.mkdir(path, 0o700)
        return path
    except OSError as exc:
        if exc.errno != errno.EEXIST:
            raise
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o022:
        raise ValueError('%s exists and is not a private directory of this user (uid %d, mode %o)'
                         % (path, st.st_uid, stat.S_IMODE(st.st_mode)))
    return path


class ProgressFile:
    """Status of one benchmark in ``path`` (JSON, mode 0644: it holds no secret)."""

    def __init__(self, path, levels, every=DEFAULT_EVERY, clock=time.time, write=write_atomic):
        self.path = path
        self.every = every
        self._clock = clock
        self._write = write
        self._started = clock()
        self._run = None
        self.error = None
        self.writes = 0
        self.doc = dict((k, None) for k in FIELDS)
        self.doc.update(state='running', levels=len(levels), levels_done=0, pid=os.getpid())

    def state(self, state, message=None):
        """A change of state (waiting, running, done, failed): written at once."""
        self.doc.update(state=state, message=message)
        if state in ('done', 'failed'):
            self._run = None
        self.write()

    def level(self, index, concurrency, run, level_try=1, retry_reason=None):
        """Level ``index`` (1-based) at ``concurrency`` starts; ``run`` is its bench_client.LevelRun. A ``level_try``
        over 1 measures the level again after a discarded try, ``retry_reason`` says why that one was discarded."""
        self._run = run
        self.doc.update(state='running', level=index, concurrency=concurrency, levels_done=index - 1,
                        level_try=level_try, retry_reason=retry_reason)
        self.write()

    def level_done(self, index):
        self.doc['levels_done'] = index
        self.write()

    def snapshot(self):
        """The document as it would be written now (the running level's figures refreshed)."""
        now = self._clock()
        if self._run is not None:
            self.doc.update(self._run.snapshot())
        self.doc.update(elapsed_s=round(now - self._started, 1), updated_at=_utc(now))
        return dict(self.doc)

    def write(self):
        if self.error is not None:
            return False
        try:
            self._write(self.path, json.dumps(self.snapshot(), sort_keys=True) + '\n', mode=0o644)
        except (IOError, OSError) as exc:
            self.error = 'progress_file %s could not be written: %s' % (self.path, exc)
            return False
        self.writes += 1
        return True

    async def keep_writing(self):
        """Rewrite the status every ``every`` seconds until cancelled (runs beside the load)."""
        while True:
            await asyncio.sleep(self.every)
            self.write()


def status_line(doc, host, label=None, waited_s=0.0):
    """One operator's status line from a progress document (None before the benchmark wrote one):
    ``gpu-01 steps 4: level 2/4 concurrency 8 measuring 12/cap 64 requests, 1234.5 tok/s, 5 s in the
    level, 40 s in all``. ``waited_s`` is shown while there is no document yet."""
    prefix = '%s %s' % (host, ('%s: ' % label) if label else '')
    if doc is None:
        return '%sbenchmark starting (%.0f s)' % (prefix, waited_s)
    elapsed = float(doc.get('elapsed_s') or 0)
    if doc.get('state') == 'waiting':
        return '%s%s (%.0f s)' % (prefix, doc.get('message'), elapsed)
    if doc.get('level') is None:
        return '%sbenchmark %s (%.0f s)' % (prefix, doc.get('state'), elapsed)
    measuring = doc.get('phase') != 'warmup'
    target = doc.get('requests_target')
    if target is None:
        target = ''
    elif doc.get('adaptive') and measuring:
        target = '/cap %s' % target
    else:
        target = '/%s' % target
    line = '%slevel %s/%s concurrency %s %s %s%s requests' % (
        prefix, doc.get('level'), doc.get('levels'), doc.get('concurrency'),
        'measuring' if measuring else 'warm-up', doc.get('requests_done'), target)
    if doc.get('requests_failed'):
        line += ' (%s failed)' % doc['requests_failed']
    # A level measured again starts its count from 0: say so, or the count seems to go back.
    if (doc.get('level_try') or 1) > 1:
        line += ' (try %s, measured again: %s)' % (doc['level_try'], doc.get('retry_reason') or 'the last try was discarded')
    if doc.get('duration_s') is not None and measuring:
        line += ' of %s s' % doc['duration_s']
    if doc.get('output_tok_s') is not None:
        line += ', %.1f tok/s' % float(doc['output_tok_s'])
    if doc.get('level_elapsed_s') is not None:
        line += ', %.0f s in the level' % float(doc['level_elapsed_s'])
    line += ', %.0f s in all' % elapsed
    if doc.get('state') != 'running':
        line += ' (%s)' % doc.get('state')
    return line
