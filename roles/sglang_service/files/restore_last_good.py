"""Put an SGLang unit back on its last good configuration once systemd has given up on it.

    python3 restore_last_good.py UNIT LAST_GOOD_DIR NAME=PATH [NAME=PATH ...]

The sglang_service role runs this from the unit's OnFailure= (the <unit>-rollback.service it
renders). The role rolls a failed deployment back itself while it watches the start; this covers
the deployment nobody watches any more: the controller was interrupted (Ctrl-C, a lost SSH
connection, a killed CI job) after it had started a configuration that never reaches ready, and
systemd stopped restarting it after StartLimitBurst starts. Left alone, the GPUs would sit idle
on a failed unit until someone came back.

LAST_GOOD_DIR is what the role kept once a configuration reached ready: a copy of each of its
files (named unit, env, config, ...) and config.json, which lists them. NAME=PATH says where
each file lives. The files in place that differ from their last good copies are put back (the
owner and mode of the copy, written atomically), systemd reloads, and the unit starts again.

Nothing is done when every file in place is already the last good one: then the failure is not a
deployment's (a GPU fell off, the model directory went away), and restarting the same
configuration would only loop. Nothing is done either without a last good configuration (a
unit's first deployment). Whatever it did, it says so in the journal and in LAST_GOOD_DIR/guard.json,
which the role's next run reports and removes once a configuration reached ready again. Standard
library only: it runs with the server's own interpreter.
"""

import datetime
import json
import os
import shutil
import subprocess
import sys

GUARD_RECORD = "guard.json"


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


def _leave_record(last_good_dir, unit, action, restored, record, message):
    """What the guard did, for the role's next run (it has no other way to learn of it)."""
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


def restore(last_good_dir, paths):
    """Put back the files of the last good configuration that differ; returns (names put back, its record).

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
    differing = [name for name in record.get("files", [])
                 if _read(os.path.join(last_good_dir, name)) != _read(paths[name])]
    for name in differing:
        _put_back(os.path.join(last_good_dir, name), paths[name])
    return differing, record


def main(argv):
    if len(argv) < 3 or not all("=" in arg for arg in argv[2:]):
        sys.stderr.write(__doc__)
        return 2
    unit, last_good_dir = argv[0], argv[1]
    paths = dict(arg.split("=", 1) for arg in argv[2:])
    try:
        restored, record = restore(last_good_dir, paths)
    except (OSError, ValueError) as exc:
        message = "%s failed; its last good configuration could not be restored: %s" % (unit, exc)
        print(message)
        _leave_record(last_good_dir, unit, "failed", [], None, message)
        return 1
    if record is None:
        message = ("%s failed; no configuration of it has reached ready yet (%s/config.json), so there is "
                   "nothing to roll back to. It stays failed." % (unit, last_good_dir))
        print(message)
        _leave_record(last_good_dir, unit, "none", [], None, message)
        return 0
    # The record also holds the API key: only its speculative settings are logged.
    what = json.dumps(record.get("speculative"), sort_keys=True)
    if not restored:
        message = ("%s failed with its last good configuration (%s) in place: the failure is not a deployment's, "
                   "nothing to roll back. It stays failed; see journalctl -u %s." % (unit, what, unit))
        print(message)
        _leave_record(last_good_dir, unit, "none", [], record, message)
        return 0
    message = ("%s failed with a configuration that never reached ready and nobody rolled it back (an interrupted "
               "deployment); restored the last good configuration (%s; files: %s) and starting it."
               % (unit, what, ", ".join(restored)))
    print(message)
    sys.stdout.flush()
    _leave_record(last_good_dir, unit, "restored", restored, record, message)
    for command in (["daemon-reload"], ["reset-failed", unit], ["start", "--no-block", unit]):
        subprocess.run(["systemctl"] + command, check=True)
    return 0

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
