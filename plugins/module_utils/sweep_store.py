# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.sglang contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Results store of the step sweep (private to llmops.sglang), on the controller.

One JSON file per host, step count and repeat, written atomically as soon as it is
measured, so that an interrupted sweep resumes where it stopped::

    <results_dir>/<host>/measurements/steps-<N>/repeat-<R>.json   (a benchmark run)
    <results_dir>/<host>/measurements/steps-<N>/failure.json      (a start failure)
    <results_dir>/<host>/measurements/schedule/repeat-<R>.json    (the derived adaptive schedule)
    <results_dir>/<host>/claims/steps-<N>.json                    (who measures it now, sweep_split)

Step count 0 is the baseline (speculative decoding off). The schedule's files carry its adaptive
config and start step count in the fingerprint (``schedule_fingerprint``): a schedule derived
differently (the statics were measured again) is another configuration and is measured again.

Every file carries the sweep's *fingerprint* (workload, levels, model, speculative
settings other than the step count). Files whose fingerprint differs from the current
sweep are ignored: they measured something else.

Only a configuration's own *verdict* is ever stored as a failure: it failed to start
(``kind: start``, with the diagnosis) or failed under load (``kind: load``, with the
server's own error). Faults around it (host unreachable, controller error, stalled
server, interrupted benchmark) are not results; the sweep stops instead, and the
configuration is measured again on the next run. Records written before this rule
(``diagnosis: benchmark_failed``) are ignored for the same reason, and so are start failures
for a reason every step count shares (``sweep_classify.SHARED_START_DIAGNOSES``: a refused flag, another
process on a GPU, too few GPUs) and start failures with no known cause that were not weighed against a
control (``AMBIGUOUS_START_DIAGNOSES`` without ``control``) that earlier releases stored.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import datetime
import fcntl
import json
import os
import re
import shutil

from ansible_collections.llmops.sglang.plugins.module_utils.atomic_file import make_dirs, write_atomic
from ansible_collections.llmops.sglang.plugins.module_utils.speculative import adaptive_config_plain
from ansible_collections.llmops.sglang.plugins.module_utils.sweep_classify import AMBIGUOUS_START_DIAGNOSES, SHARED_START_DIAGNOSES

SCHEMA = 1

# The options that say which store and which host (spec_sweep_store, spec_sweep_decide; documented
# by the llmops.sglang.sweep_results doc fragment).
RESULTS_ARGUMENT_SPEC = dict(
    results_dir=dict(type='path', required=True),
    host=dict(type='str', required=True),
)

_REPEAT_RE = re.compile(r'^repeat-(\d+)\.json$')
_SAFE_HOST_RE = re.compile(r'[^A-Za-z0-9_.-]')


def utcnow():
    return datetime.datetime.utcnow().replace(microsecond=0).isoformat() + 'Z'


def host_dir(results_dir, host):
    # Inventory hostnames may hold characters that are awkward in paths.
    return os.path.join(results_dir, _SAFE_HOST_RE.sub('_', host))


SCHEDULE = 'schedule'


def measurements_dir(results_dir, host):
    return os.path.join(host_dir(results_dir, host), 'measurements')


def probe(results_dir, host):
    """Create the host's measurements directory and write and remove a probe file in it (the sweep's
    preflight: a results directory that cannot take a file fails before anything is deployed)."""
    path = measurements_dir(results_dir, host)
    probe_path = os.path.join(path, '.preflight-probe')
    write_json_atomic(probe_path, {'preflight': utcnow()})  # creates the directory, as a measurement would
    os.unlink(probe_path)
    return path


def config_dir(results_dir, host, steps):
    name = SCHEDULE if steps == SCHEDULE else 'steps-%d' % int(steps)
    return os.path.join(measurements_dir(results_dir, host), name)


def schedule_fingerprint(fingerprint, schedule):
    """The fingerprint of a schedule's records: the sweep's plus the adaptive config and its start steps."""
    return dict(fingerprint, schedule={'config': adaptive_config_plain(schedule['config']), 'start_steps': int(schedule['start_steps'])})


def _steps_value(steps):
    return SCHEDULE if steps == SCHEDULE else int(steps)


def write_json_atomic(path, data):
    """Write JSON atomically (temp file in the same directory, then renamed into place)."""
    write_atomic(path, json.dumps(data, indent=2, sort_keys=True) + '\n')


def _read(path):
    try:
        with open(path) as fh:
            return json.load(fh)
    except (IOError, OSError, ValueError):
        # A torn or foreign file counts as missing: it will be measured again.
        return None


def normalize(fingerprint):
    """The fingerprint as JSON would give it back (int keys become strings, tuples lists)."""
    return json.loads(json.dumps(fingerprint, sort_keys=True))


def _same(fingerprint, doc):
    return doc is not None and doc.get('schema') == SCHEMA and doc.get('fingerprint') == normalize(fingerprint)


def _same_version(server_version, doc):
    if not server_version:
        return True
    measured = ((doc or {}).get('result') or {}).get('sglang_version')
    return measured in (None, '') or str(measured) == str(server_version)


def record_measurement(results_dir, host, steps, fingerprint, result, repeat=None, schedule=None):
    """Store one benchmark run; ``repeat`` defaults to the next free index. Returns the path.

    With ``schedule`` ({config, start_steps}) the run is the schedule's (``steps`` is ignored)."""
    if schedule is not None:
        steps, fingerprint = SCHEDULE, schedule_fingerprint(fingerprint, schedule)
    cdir = config_dir(results_dir, host, steps)
    if repeat is None:
        # The next index after every stored run, whatever its fingerprint: a run of another setup
        # (an older SGLang, another workload) is kept, not overwritten.
        taken = [int(m.group(1)) for m in (_REPEAT_RE.match(n) for n in (os.listdir(cdir) if os.path.isdir(cdir) else [])) if m]
        repeat = max(taken) + 1 if taken else 1
    path = os.path.join(cdir, 'repeat-%d.json' % int(repeat))
    write_json_atomic(path, {
        'schema': SCHEMA, 'kind': 'measurement', 'host': host, 'steps': _steps_value(steps), 'repeat': int(repeat),
        'fingerprint': fingerprint, 'recorded_at': utcnow(), 'result': result,
    })
    # A successful start supersedes an earlier failure of the same configuration.
    failure = os.path.join(cdir, 'failure.json')
    if os.path.exists(failure):
        os.unlink(failure)
    return path


# What a stored failure may be: the configuration's own verdict.
VERDICT_KINDS = ('start', 'load')
# Written by releases before failures were classified: a benchmark error of any cause
# (outages included), so it says nothing about the configuration.
UNCLASSIFIED_DIAGNOSES = ('benchmark_failed',)


def is_verdict(failure):
    """Whether a stored failure is the configuration's own (start or load) verdict."""
    if not isinstance(failure, dict):
        return False
    if failure.get('diagnosis') in UNCLASSIFIED_DIAGNOSES:
        return False
    # Start failures recorded before the kind existed carried the service role's diagnosis.
    kind = failure.get('kind', 'start')
    # A start that failed for a reason every step count shares (stored as a verdict by releases before
    # they stopped the sweep on it) says nothing of the configuration.
    if kind == 'start' and failure.get('diagnosis') in SHARED_START_DIAGNOSES:
        return False
    # A start with no known cause is the configuration's only once the last good configuration got ready on the
    # same host after it (sweep_classify.classify_start_failure, which sets control).
    if kind == 'start' and failure.get('diagnosis') in AMBIGUOUS_START_DIAGNOSES and not failure.get('control'):
        return False
    return kind in VERDICT_KINDS


def record_failure(results_dir, host, steps, fingerprint, failure, schedule=None):
    if schedule is not None:
        steps, fingerprint = SCHEDULE, schedule_fingerprint(fingerprint, schedule)
    if not is_verdict(failure):
        raise ValueError('only a verdict (failure kind %s) is stored as a configuration\'s result, got kind %r diagnosis %r'
                         % (' or '.join(VERDICT_KINDS), failure.get('kind'), failure.get('diagnosis')))
    path = os.path.join(config_dir(results_dir, host, steps), 'failure.json')
    write_json_atomic(path, {
        'schema': SCHEMA, 'kind': 'failure', 'host': host, 'steps': _steps_value(steps),
        'fingerprint': fingerprint, 'recorded_at': utcnow(), 'failure': failure,
    })
    return path


def list_repeats(results_dir, host, steps, fingerprint, server_version=None):
    """``[(repeat_index, document), ...]`` of the runs that match the fingerprint, by index.

    With ``server_version``, runs measured on another SGLang version (as the server reported
    it) do not match either: an upgrade makes every stored figure stale.
    """
    cdir = config_dir(results_dir, host, steps)
    if not os.path.isdir(cdir):
        return []
    found = []
    for name in os.listdir(cdir):
        match = _REPEAT_RE.match(name)
        if not match:
            continue
        doc = _read(os.path.join(cdir, name))
        if _same(fingerprint, doc) and _same_version(server_version, doc):
            found.append((int(match.group(1)), doc))
    return sorted(found, key=lambda item: item[0])


def load_schedule(results_dir, host, fingerprint, schedule, server_version=None):
    """The record (see sweep_decide) of the schedule {config, start_steps}: what is stored for exactly it."""
    record = load_configs(results_dir, host, [SCHEDULE], schedule_fingerprint(fingerprint, schedule), server_version)[0]
    record.update(config=adaptive_config_plain(schedule['config']), start_steps=int(schedule['start_steps']))
    return record


def load_configs(results_dir, host, steps_list, fingerprint, server_version=None):
    """Configuration records (see sweep_decide) for every step count of the sweep."""
    configs = []
    for steps in steps_list:
        repeats = list_repeats(results_dir, host, steps, fingerprint, server_version)
        failure = _read(os.path.join(config_dir(results_dir, host, steps), 'failure.json'))
        if not _same(fingerprint, failure) or not is_verdict(failure.get('failure')):
            failure = None
        record = {'steps': _steps_value(steps), 'repeats': [], 'failure': None, 'files': [], 'recorded_at': None}
        if repeats:
            record['status'] = 'ok'
            for _idx, doc in repeats:
                result = doc.get('result') or {}
                record['repeats'].append({'levels': result.get('levels') or [], 'result': result})
                record['recorded_at'] = doc.get('recorded_at')
            record['files'] = [os.path.join(config_dir(results_dir, host, steps), 'repeat-%d.json' % i) for i, _d in repeats]
        elif failure is not None:
            record['status'] = 'failed'
            record['failure'] = failure.get('failure') or {}
            record['recorded_at'] = failure.get('recorded_at')
            record['files'] = [os.path.join(config_dir(results_dir, host, steps), 'failure.json')]
        else:
            record['status'] = 'missing'
        configs.append(record)
    return configs


def archive(results_dir, host):
    """Move a host's earlier results aside (never delete them). Returns the new path or None."""
    src = host_dir(results_dir, host)
    if not os.path.isdir(src):
        return None
    stamp = datetime.datetime.utcnow().strftime('%Y%m%dT%H%M%SZ')
    dest = '%s.archived-%s' % (src, stamp)
    n = 1
    while os.path.exists(dest):
        n += 1
        dest = '%s.archived-%s-%d' % (src, stamp, n)
    shutil.move(src, dest)
    return dest


def claims_dir(results_dir, host):
    return os.path.join(host_dir(results_dir, host), 'claims')


def claim(results_dir, host, run, claimant, candidates, live):
    """Claim the first of ``candidates`` (step counts, in the order to measure them) that no other
    host of this sweep measures now, for ``claimant``; returns ``(steps or None, held)``, ``held``
    mapping the candidates other hosts hold to their names.

    The hosts of a shared store (sweep_split) each take the next step count as soon as they are free
    rather than in rounds. A claim holds while it belongs to this run (``run``, the same for every host
    of the sweep) and to a host in ``live`` (still in the play): a host that failed or became
    unreachable leaves its step count to the others, and claims of an interrupted run count for
    nothing. The claims are read and written under one lock on the controller, so that two hosts never
    take the same step count.
    """
    directory = claims_dir(results_dir, host)
    make_dirs(directory)
    held = {}
    with open(os.path.join(directory, '.lock'), 'a') as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        try:
            for steps in candidates:
                path = os.path.join(directory, 'steps-%d.json' % int(steps))
                doc = _read(path) or {}
                holder = doc.get('claimant')
                if doc.get('run') == run and holder in live and holder != claimant:
                    held[int(steps)] = holder
                    continue
                write_json_atomic(path, {'run': run, 'claimant': claimant, 'at': utcnow()})
                return int(steps), held
            return None, held
        finally:
            fcntl.flock(lock.fileno(), fcntl.LOCK_UN)
