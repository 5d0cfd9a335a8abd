"""Put an SGLang unit back on its last good configuration when a deployment nobody watches fails.

    python3 restore_last_good.py [--health URL] [--watch-lock PATH] UNIT LAST_GOOD_DIR NAME=PATH [NAME=PATH ...]

The sglang_service role rolls a failed deployment back itself while it watches the start. This
covers the deployment nobody watches any more: the controller was interrupted (Ctrl-C, a lost SSH
connection, a killed CI job) after it had started a configuration that never reaches ready. Left
alone, the GPUs would sit idle until someone came back. The role's <unit>-rollback.service runs
this in two ways:

- from the unit's OnFailure=, once systemd gave up restarting a configuration that exits
  (StartLimitBurst starts): the unit is failed;
- from the deadline timer that sglang_service_wait arms at each start and disarms once the start
  is ready (sglang_service_ready_timeout plus sglang_service_rollback_grace later): a configuration
  that hangs without exiting never fails. Unless URL/health_generate answers 200 (it got ready
  after all), the running unit is stopped first. A stopped unit (stopped on purpose) is left alone.

Neither runs while the role itself watches the unit: sglang_service_wait holds a shared lock on
the --watch-lock file from its stop to the end of its watch, and handles what fails meanwhile. A
unit fails under it without any fault of a configuration: SGLang drains on SIGTERM and keeps
accepting requests, so a stop under steady traffic ends at TimeoutStopSec's SIGKILL, which systemd
records as a failure (OnFailure=) while the role goes on to start the new configuration.

LAST_GOOD_DIR is what the role kept once a configuration reached ready: a copy of each of its
files (named unit, env, config, ...) and config.json, which lists them. NAME=PATH says where
each file lives. The files in place that differ from their last good copies are put back (the
owner and mode of the copy, written atomically), systemd reloads, and the unit starts again.

Nor does it act on files written after the failed process started: that process never ran them.
A crash under load that systemd's restarts cannot bring back (StartLimitBurst) can fail the unit
just as the role deploys the next configuration, between its render and its watch; the files
in place are then that deployment's, and it starts and watches them itself.

Nothing is done when every file in place is already the last good one: then the failure is not a
deployment's (a GPU fell off, the model directory went away), and restarting the same
configuration would only loop. Nothing is done either without a last good configuration (a
unit's first deployment). What it did (or, for a failed unit, why not) goes to the journal and to
LAST_GOOD_DIR/guard.json, which the role's next run reports and removes once a deployment reached
ready again. Standard library only: it runs with the server's own interpreter.
"""

import datetime
import fcntl
import json
import os
import shutil
import subprocess
import sys
import time
import urllib.request

GUARD_RECORD = "guard.json"
HEALTH_TIMEOUT_S = 30


def _read(path):
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except FileNotFoundError:
        return None


def _put_back(src, dest):
    """Copy src over dest atomically, with src's owner and mode (the role wrote both)."""
    st = os.stat(src)
    tmp = "%s.rollback-%d" % (dest, os.getpid())
    try:
        shutil.copyfile(src, tmp)
        os.chown(tmp, st.st_uid, st.st_gid)
        os.chmod(tmp, st.st_mode & 0o7777)
        os.replace(tmp, dest)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _report(last_good_dir, unit, action, restored, record, message):
    """Say what the guard did: in the journal, and in GUARD_RECORD for the role's next run (which
    has no other way to learn of it)."""
    print(message)
    sys.stdout.flush()
    doc = {"at": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"), "unit": unit,
           "action": action, "restored": restored, "speculative": (record or {}).get("speculative"),
           "message": message}
    path = os.path.join(last_good_dir, GUARD_RECORD)
    tmp = "%s.%d" % (path, os.getpid())
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as fh:
            json.dump(doc, fh, sort_keys=True)
            fh.write("\n")
        os.replace(tmp, path)
    except OSError as exc:  # the directory went away: the journal still has the message
        print("could not leave %s: %s" % (path, exc))
        if os.path.exists(tmp):
            os.unlink(tmp)


def plan(last_good_dir, paths):
    """(names of the files in place that differ from their last good copies, the last good record).

    ``paths`` maps a file's name (unit, env, config, ...) to where it lives. Returns ([], None)
    without a last good configuration.
    """
    raw = _read(os.path.join(last_good_dir, "config.json"))
    if raw is None:
        return [], None
    record = json.loads(raw)
    unknown = [name for name in record.get("files", []) if name not in paths]
    if unknown:
        raise ValueError("the last good configuration has files this unit does not know: %s" % ", ".join(unknown))
    return [name for name in record.get("files", [])
            if _read(os.path.join(last_good_dir, name)) != _read(paths[name])], record


def restore(last_good_dir, paths):
    """Put back the files of the last good configuration that differ; returns (names put back, its record)."""
    differing, record = plan(last_good_dir, paths)
    for name in differing:
        _put_back(os.path.join(last_good_dir, name), paths[name])
    return differing, record


def _systemctl(*args):
    subprocess.run(["systemctl"] + list(args), check=True)


def _show(unit, prop):
    out = subprocess.run(["systemctl", "show", "-p", prop, "--value", unit],
                         capture_output=True, text=True, check=False)
    return out.stdout.strip()


def _active_state(unit):
    return _show(unit, "ActiveState")


def _result(unit):
    return _show(unit, "Result")


def _last_start(unit):
    """When systemd last started the unit's main process, in seconds of CLOCK_MONOTONIC (None: never)."""
    try:
        usec = int(_show(unit, "ExecMainStartTimestampMonotonic") or 0)
    except ValueError:
        return None
    return usec / 1e6 if usec > 0 else None


def _written_since(paths, names, since):
    """The names of the files in place written after ``since`` (CLOCK_MONOTONIC seconds, as systemd's)."""
    offset = time.time() - time.monotonic()
    out = []
    for name in names:
        try:
            if os.stat(paths[name]).st_mtime - offset > since:
                out.append(name)
        except FileNotFoundError:
            pass
    return out


def _ready(url):
    """Whether the server answers a one-token generation (SGLang's /health* paths need no API key)."""
    try:
        with urllib.request.urlopen(url.rstrip("/") + "/health_generate", timeout=HEALTH_TIMEOUT_S) as resp:
            return resp.status == 200
    except (OSError, ValueError):
        return False


def _speculative(record):
    # The record also holds the API key: only its speculative settings are logged.
    return json.dumps((record or {}).get("speculative"), sort_keys=True)


def _restart_on_last_good(unit, last_good_dir, restored, record, message):
    _report(last_good_dir, unit, "restored", restored, record, message)
    _systemctl("daemon-reload")
    _systemctl("reset-failed", unit)
    _systemctl("start", "--no-block", unit)
    return 0


def failed(unit, last_good_dir, paths):
    """systemd gave up on the unit (OnFailure=): roll back a configuration that never reached ready."""
    try:
        differing, record = plan(last_good_dir, paths)
    except (OSError, ValueError):
        differing, record = [], None  # restore() below reports it
    started = _last_start(unit)
    newer = _written_since(paths, differing, started) if differing and started is not None else []
    if newer:
        # The process that failed never ran these files: a deployment wrote them after it started (a crash
        # that systemd's restarts could not bring back, StartLimitBurst, just as the role deploys the next
        # configuration). Putting the last good files back would overwrite that deployment's. The note is for
        # an interrupted deployment that wrote them (the unit stays failed): the role's next run reports it. A
        # deployment in progress that reaches ready removes it.
        _report(last_good_dir, unit, "none", [], record, (
            "%s failed, but its files that differ from the last good configuration (%s) were written after its "
            "last start: that process did not run them. A deployment in progress starts and watches them itself "
            "(if none is, re-run the deployment or start the unit). Nothing to do." % (unit, ", ".join(newer))))
        return 0
    try:
        restored, record = restore(last_good_dir, paths)
    except (OSError, ValueError) as exc:
        message = "%s failed; its last good configuration could not be restored: %s" % (unit, exc)
        _report(last_good_dir, unit, "failed", [], None, message)
        return 1
    if record is None:
        message = ("%s failed; no configuration of it has reached ready yet (%s/config.json), so there is "
                   "nothing to roll back to. It stays failed." % (unit, last_good_dir))
        _report(last_good_dir, unit, "none", [], None, message)
        return 0
    if not restored and _result(unit) == "timeout":
        # Type=simple has no start timeout: this was a stop (an operator's, under traffic) that outlasted
        # TimeoutStopSec while SGLang drained, and systemd killed it. Stopped on purpose: nothing to report.
        print("%s was stopped and its stop outlasted TimeoutStopSec (SGLang serves requests that keep coming while "
              "it drains), so systemd killed it; its last good configuration (%s) is in place: nothing to do."
              % (unit, _speculative(record)))
        return 0
    if not restored:
        message = ("%s failed with its last good configuration (%s) in place: the failure is not a deployment's, "
                   "nothing to roll back. It stays failed; see journalctl -u %s." % (unit, _speculative(record), unit))
        _report(last_good_dir, unit, "none", [], record, message)
        return 0
    return _restart_on_last_good(unit, last_good_dir, restored, record, (
        "%s failed with a configuration that never reached ready and nobody rolled it back (an interrupted "
        "deployment); restored the last good configuration (%s; files: %s) and starting it."
        % (unit, _speculative(record), ", ".join(restored))))


def not_ready(unit, last_good_dir, paths, health_url):
    """The deadline of a start passed with nobody watching (the timer): roll back a start that hangs."""
    state = _active_state(unit)
    if state == "failed":  # OnFailure= has run (or runs) for it
        return failed(unit, last_good_dir, paths)
    if state in ("inactive", "deactivating", ""):
        print("%s is stopped (%s): stopped on purpose, nothing to do." % (unit, state or "unknown"))
        return 0
    if _ready(health_url):
        print("%s is ready: nothing to do." % unit)
        return 0
    try:
        differing, record = plan(last_good_dir, paths)
    except (OSError, ValueError) as exc:
        print("%s is not ready; its last good configuration could not be read: %s" % (unit, exc))
        return 1
    if record is None or not differing:
        # What starts is the last good configuration (put back by the guard or a rollback) or there is
        # none: nothing better to go back to, and no note to replace one about what happened before.
        print("%s is not ready (%s) with %s in place; left as it is." % (
            unit, state, "its last good configuration" if record else "no last good configuration"))
        return 0
    _systemctl("stop", unit)
    try:
        restored, record = restore(last_good_dir, paths)
    except (OSError, ValueError) as exc:
        message = ("%s was not ready by its deployment's deadline and was stopped, but its last good configuration "
                   "could not be restored: %s" % (unit, exc))
        _report(last_good_dir, unit, "failed", [], None, message)
        return 1
    return _restart_on_last_good(unit, last_good_dir, restored, record, (
        "%s was started with a configuration that was not ready by its deployment's deadline "
        "(sglang_service_ready_timeout plus sglang_service_rollback_grace) and nobody watches it any more (an "
        "interrupted deployment of a start that hangs); stopped it, restored the last good configuration "
        "(%s; files: %s) and starting it." % (unit, _speculative(record), ", ".join(restored))))


def watched(lock_path):
    """Whether sglang_service_wait holds ``lock_path`` (a shared flock, from its stop to the end of its
    watch): the lock goes with its process, so a killed deployment does not leave it behind."""
    try:
        fd = os.open(lock_path, os.O_RDONLY)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # and with it the lock, if this took it
    return False


def main(argv):
    options = {"--health": None, "--watch-lock": None}
    while argv[:1] and argv[0] in options and len(argv) > 1:
        options[argv[0]], argv = argv[1], argv[2:]
    health_url, watch_lock = options["--health"], options["--watch-lock"]
    if len(argv) < 3 or not all("=" in arg for arg in argv[2:]):
        sys.stderr.write(__doc__)
        return 2
    unit, last_good_dir = argv[0], argv[1]
    paths = dict(arg.split("=", 1) for arg in argv[2:])
    if watch_lock and watched(watch_lock):
        # Not a deployment nobody watches: the role stops, starts or waits for the unit right now and
        # rolls a failed start back itself (a stop that outlasted TimeoutStopSec fails the unit too).
        print("%s: a deployment of the role is stopping, starting or watching it (it holds %s) and handles what "
              "fails itself: nothing to do." % (unit, watch_lock))
        return 0
    # OnFailure= runs this with the unit failed; the deadline timer (with --health) finds it in any
    # state, and not_ready() hands a failed one to failed().
    if health_url:
        return not_ready(unit, last_good_dir, paths, health_url)
    return failed(unit, last_good_dir, paths)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
