# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.sglang contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""sglang_bench's progress file: what it holds, how it is written, and the level's own snapshot."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import asyncio
import json
import os
import stat

import pytest

from ansible_collections.llmops.sglang.plugins.module_utils import bench_client as bc
from ansible_collections.llmops.sglang.plugins.module_utils import bench_progress as bp


class Clock:
    def __init__(self, now=1000.0):
        self.now = now

    def __call__(self):
        return self.now


class FakeRun:
    """What ProgressFile reads of a level: its snapshot()."""

    def __init__(self, **fields):
        self.fields = fields

    def snapshot(self):
        return dict(self.fields)


def read(path):
    with open(str(path)) as fh:
        return json.load(fh)


def test_the_file_holds_the_running_level_and_is_replaced_atomically(tmp_path):
    path = tmp_path / 'sub' / 'progress.json'
    clock = Clock()
    progress = bp.ProgressFile(str(path), [1, 8, 32], clock=clock)
    progress.state('waiting', 'waiting for any other benchmark')
    doc = read(path)
    assert doc['state'] == 'waiting' and doc['message'] == 'waiting for any other benchmark'
    assert doc['levels'] == 3 and doc['level'] is None and doc['pid'] == os.getpid()
    assert sorted(doc) == sorted(bp.FIELDS)
    # 0644 (no secret in it), and no temp file next to it.
    assert stat.S_IMODE(os.stat(str(path)).st_mode) == 0o644
    assert os.listdir(str(path.parent)) == ['progress.json']

    run = FakeRun(phase='measure', requests_done=3, requests_failed=0, requests_target=32, adaptive=False,
                  in_flight=8, output_tokens=1536, output_tok_s=512.0, level_elapsed_s=3.0, duration_s=None)
    clock.now += 12.5
    progress.state('running')
    progress.level(2, 8, run)
    doc = read(path)
    assert doc['state'] == 'running' and doc['level'] == 2 and doc['concurrency'] == 8 and doc['levels_done'] == 1
    assert doc['level_try'] == 1 and doc['retry_reason'] is None
    assert doc['requests_done'] == 3 and doc['requests_target'] == 32 and doc['output_tok_s'] == 512.0
    assert doc['elapsed_s'] == 12.5 and doc['updated_at'] == '1970-01-01T00:16:52Z'

    # Every write refreshes the level's figures.
    run.fields.update(requests_done=17, output_tok_s=530.5)
    progress.write()
    doc = read(path)
    assert doc['requests_done'] == 17 and doc['output_tok_s'] == 530.5
    # The level measured again after a discarded try: the file says which try, and why, until the next level.
    progress.level(2, 8, run, level_try=2, retry_reason='the benchmark client was starved of CPU on its host')
    doc = read(path)
    assert doc['level'] == 2 and doc['level_try'] == 2 and doc['retry_reason'].startswith('the benchmark client')
    progress.level_done(2)
    progress.level(3, 32, run)
    doc = read(path)
    assert doc['level_try'] == 1 and doc['retry_reason'] is None
    progress.state('done', 'measured 3 concurrency levels')
    doc = read(path)
    assert doc['state'] == 'done' and doc['levels_done'] == 2 and doc['message'] == 'measured 3 concurrency levels'
    assert os.listdir(str(path.parent)) == ['progress.json']


def test_a_file_that_cannot_be_written_never_fails_the_benchmark(tmp_path):
    blocker = tmp_path / 'not-a-dir'
    blocker.write_text('x')
    progress = bp.ProgressFile(str(blocker / 'progress.json'), [1])
    assert progress.write() is False
    assert 'could not be written' in progress.error and str(blocker) in progress.error
    # It gives up after the first error (no warning storm, no retries every 2 s).
    progress.state('running')
    assert progress.writes == 0


def test_it_keeps_writing_while_the_load_runs(tmp_path):
    path = tmp_path / 'progress.json'
    progress = bp.ProgressFile(str(path), [1], every=0.02)
    run = FakeRun(phase='measure', requests_done=0)
    progress.level(1, 1, run)

    async def load():
        writer = asyncio.ensure_future(progress.keep_writing())
        for done in range(1, 6):
            await asyncio.sleep(0.03)
            run.fields['requests_done'] = done
        writer.cancel()

    asyncio.run(load())
    assert progress.writes >= 4
    assert read(path)['requests_done'] >= 4


def _record(tokens, ok=True, finished=True):
    rec = bc.RequestRecord()
    rec.ok = ok
    rec.completion_tokens = tokens
    if finished:
        rec.t_end = 1.0
    return rec


def test_a_level_reports_requests_done_of_asked_and_the_rate_so_far():
    run = bc.LevelRun(None, '/generate', None, None, concurrency=4, requests=32, warmup=2)
    snap = run.snapshot()
    assert snap['phase'] == 'warmup' and snap['requests_done'] == 0 and snap['requests_target'] == 2
    assert snap['output_tok_s'] is None
    run.warmup_records = [_record(100), _record(100)]
    run.start = bc._now() - 2.0
    run.records = [_record(100), _record(100), _record(0, ok=False)]
    run._in_flight = {_record(50, finished=False)}
    snap = run.snapshot()
    assert snap['phase'] == 'measure'
    assert snap['requests_done'] == 3 and snap['requests_failed'] == 1 and snap['requests_target'] == 32
    assert snap['in_flight'] == 1 and snap['output_tokens'] == 250 and snap['adaptive'] is False
    # 250 tokens in about 2 s of the measured phase.
    assert 120 < snap['output_tok_s'] <= 125 and 2.0 <= snap['level_elapsed_s'] < 2.5
    # A duration has no count; an adaptive level's count is its cap.
    assert bc.LevelRun(None, '/generate', None, None, 1, None, 0, duration_s=30).snapshot()['duration_s'] == 30
    timed = bc.LevelRun(None, '/generate', None, None, 1, None, 0, duration_s=30)
    timed.start = bc._now()
    assert timed.snapshot()['requests_target'] is None


def test_the_progress_directory_is_made_private_and_a_foreign_one_refused(tmp_path):
    made = bp.private_directory(str(tmp_path / 'run' / 'bench-1'))
    assert os.stat(made).st_mode & 0o777 == 0o700
    # Again (the module's own directory, as a retried job finds it): accepted.
    assert bp.private_directory(made) == made
    # One that others may write to (made by someone else first, in a shared /tmp): refused.
    shared = tmp_path / 'bench-2'
    shared.mkdir()
    shared.chmod(0o777)
    with pytest.raises(ValueError, match='not a private directory'):
        bp.private_directory(str(shared))
    link = tmp_path / 'bench-3'
    link.symlink_to(made)
    with pytest.raises(ValueError, match='not a private directory'):
        bp.private_directory(str(link))


def running(**fields):
    doc = dict((name, None) for name in bp.FIELDS)
    doc.update(state='running', level=2, levels=4, concurrency=8, phase='measure', requests_done=12,
               requests_failed=0, requests_target=32, adaptive=False, output_tok_s=1234.54, level_elapsed_s=5.2,
               elapsed_s=40.4)
    doc.update(fields)
    return doc


@pytest.mark.parametrize('doc, line', [
    (None, 'gpu1 steps 4: benchmark starting (7 s)'),
    (running(), 'gpu1 steps 4: level 2/4 concurrency 8 measuring 12/32 requests, 1234.5 tok/s, 5 s in the level, 40 s in all'),
    (running(adaptive=True), 'gpu1 steps 4: level 2/4 concurrency 8 measuring 12/cap 32 requests, 1234.5 tok/s, 5 s in the level, '
                             '40 s in all'),
    (running(adaptive=True, phase='warmup', requests_done=1, requests_target=2, output_tok_s=None),
     'gpu1 steps 4: level 2/4 concurrency 8 warm-up 1/2 requests, 5 s in the level, 40 s in all'),
    (running(requests_target=None, duration_s=60, requests_failed=3),
     'gpu1 steps 4: level 2/4 concurrency 8 measuring 12 requests (3 failed) of 60 s, 1234.5 tok/s, 5 s in the level, 40 s in all'),
    (running(state='done', level=4, requests_done=32),
     'gpu1 steps 4: level 4/4 concurrency 8 measuring 32/32 requests, 1234.5 tok/s, 5 s in the level, 40 s in all (done)'),
    (running(state='waiting', level=None, message='waiting for another benchmark of this server (pid 42)'),
     'gpu1 steps 4: waiting for another benchmark of this server (pid 42) (40 s)'),
    (running(state='running', level=None), 'gpu1 steps 4: benchmark running (40 s)'),
    # A level measured again counts its requests from 0 again: the line says why.
    (running(level_try=2, retry_reason='the benchmark client was starved of CPU on its host', requests_done=3),
     'gpu1 steps 4: level 2/4 concurrency 8 measuring 3/32 requests (try 2, measured again: the benchmark client was '
     'starved of CPU on its host), 1234.5 tok/s, 5 s in the level, 40 s in all'),
    (running(level_try=1), 'gpu1 steps 4: level 2/4 concurrency 8 measuring 12/32 requests, 1234.5 tok/s, 5 s in the level, '
                           '40 s in all'),
])
def test_a_status_line_says_which_level_runs_how_far_and_how_fast(doc, line):
    assert bp.status_line(doc, 'gpu1', 'steps 4', waited_s=7.2) == line


def test_a_status_line_without_a_label_names_the_host_alone():
    assert bp.status_line(running(), 'gpu1').startswith('gpu1 level 2/4 ')
