# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.sglang contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Atomic file writes for the modules (private): readers see the old file or the new one, never half.

Stdlib only.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import stat
import tempfile


def make_dirs(directory):
    """``os.makedirs`` that accepts a directory another process created at the same moment (the hosts of
    a shared sweep store write to the controller at once)."""
    try:
        os.makedirs(directory)
    except OSError:
        if not os.path.isdir(directory):
            raise


def write_atomic(path, data, mode=None, replace=os.replace):
    """Write ``data`` (str or bytes) to ``path`` atomically.

    Through a temp file in the same directory (created if missing), flushed to disk, then renamed
    into place with ``replace(tmp, path)``: ``os.replace`` by default, or a module's
    ``atomic_move`` to keep the old file's mode and ownership. ``mode`` sets the new file's
    permission bits first (else the temp file's 0600). The temp file is removed if anything fails.
    """
    directory = os.path.dirname(path) or '.'
    make_dirs(directory)
    fd, tmp = tempfile.mkstemp(prefix='.%s.' % os.path.basename(path), suffix='.tmp', dir=directory)
    try:
        with os.fdopen(fd, 'wb' if isinstance(data, bytes) else 'w') as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def replace_keeping_attributes(tmp, path):
    """A ``replace`` for ``write_atomic`` that gives the new file the old one's mode and owner (as a module's
    ``atomic_move`` does), or for a new file the mode the process's umask gives, instead of the temp file's 0600."""
    try:
        old = os.stat(path)
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
    else:
        os.chmod(tmp, stat.S_IMODE(old.st_mode))
        if (old.st_uid, old.st_gid) != (os.geteuid(), os.getegid()):
            try:
                os.chown(tmp, old.st_uid, old.st_gid)
            except OSError:
                pass  # not root: the file becomes the writer's, as with atomic_move
    os.replace(tmp, path)
