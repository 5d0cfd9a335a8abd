"""The modules' one atomic file write."""
import os
import stat

import pytest

from ansible_collections.llmops.sglang.plugins.module_utils.atomic_file import write_atomic


def _mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def test_writes_text_and_bytes_creating_the_directory(tmp_path):
    text = tmp_path / 'a' / 'b' / 'x.txt'
    write_atomic(str(text), 'hello\n')
    assert text.read_text() == 'hello\n'
    blob = tmp_path / 'x.png'
    write_atomic(str(blob), b'\x89PNG', mode=0o644)
    assert blob.read_bytes() == b'\x89PNG'
    assert _mode(str(blob)) == 0o644
    assert _mode(str(text)) == 0o600  # the temp file's mode unless told
    assert sorted(os.listdir(str(tmp_path))) == ['a', 'x.png']


def test_replaces_through_the_given_move_and_leaves_no_temp_file(tmp_path):
    target = tmp_path / 'host.yml'
    target.write_text('old\n')
    moves = []

    def move(src, dest):
        moves.append((os.path.dirname(src), dest))
        os.replace(src, dest)

    write_atomic(str(target), 'new\n', replace=move)
    assert target.read_text() == 'new\n'
    assert moves == [(str(tmp_path), str(target))]  # renamed within the directory
    assert os.listdir(str(tmp_path)) == ['host.yml']


def test_failure_keeps_the_old_file_and_removes_the_temp_file(tmp_path):
    target = tmp_path / 'r.json'
    target.write_text('old\n')

    def broken(src, dest):
        raise OSError('disk on fire')

    with pytest.raises(OSError, match='disk on fire'):
        write_atomic(str(target), 'new\n', replace=broken)
    assert target.read_text() == 'old\n'
    assert os.listdir(str(tmp_path)) == ['r.json']
