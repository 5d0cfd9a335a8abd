"""sglang_service_files: the deployment's files in one call (write, copy on the host, remove),
unchanged files left alone, check mode, diffs, and the content before a change."""
import os
import stat

import pytest

from ansible_collections.llmops.sglang.plugins.modules.sglang_service_files import FilesError, handle

ME = str(os.getuid())
GROUP = str(os.getgid())


def entry(path, **kw):
    out = dict(name=os.path.basename(str(path)), path=str(path), state="present", content=None, src=None,
               owner=ME, group=GROUP, mode="0640", diff=True, return_before=False)
    out.update(kw)
    return out


def mode_of(path):
    return stat.S_IMODE(os.stat(str(path)).st_mode)


def test_writes_new_files_and_reports_them_by_name(tmp_path):
    result = handle([entry(tmp_path / "unit", content="a\n"), entry(tmp_path / "env", content="B=1\n", mode="0600")],
                    check_mode=False, diff_mode=False)
    assert result["changed"] and result["changed_names"] == ["unit", "env"]
    assert (tmp_path / "unit").read_text() == "a\n" and mode_of(tmp_path / "unit") == 0o640
    assert mode_of(tmp_path / "env") == 0o600
    assert "diff" not in result
    # no temporary file is left behind
    assert sorted(os.listdir(str(tmp_path))) == ["env", "unit"]


def test_a_second_run_changes_nothing(tmp_path):
    files = [entry(tmp_path / "unit", content="a\n"), entry(tmp_path / "gone", state="absent")]
    handle(files, check_mode=False, diff_mode=False)
    before = os.stat(str(tmp_path / "unit")).st_ino
    result = handle(files, check_mode=False, diff_mode=True)
    assert not result["changed"] and result["changed_names"] == [] and result["diff"] == []
    assert os.stat(str(tmp_path / "unit")).st_ino == before


def test_a_mode_change_alone_is_applied_in_place(tmp_path):
    handle([entry(tmp_path / "unit", content="a\n")], check_mode=False, diff_mode=False)
    result = handle([entry(tmp_path / "unit", content="a\n", mode="0600")], check_mode=False, diff_mode=False)
    assert result["changed_names"] == ["unit"] and mode_of(tmp_path / "unit") == 0o600


def test_check_mode_reports_and_touches_nothing(tmp_path):
    (tmp_path / "old").write_text("x")
    result = handle([entry(tmp_path / "unit", content="a\n"), entry(tmp_path / "old", state="absent")],
                    check_mode=True, diff_mode=True)
    assert result["changed_names"] == ["unit", "old"]
    assert not (tmp_path / "unit").exists() and (tmp_path / "old").exists()
    assert [d["after"] for d in result["diff"]] == ["a\n", ""]


def test_removes_and_copies_on_the_host(tmp_path):
    (tmp_path / "src").write_text("saved\n")
    (tmp_path / "adaptive.json").write_text("{}")
    result = handle([entry(tmp_path / "copy", src=str(tmp_path / "src"), mode="0600"),
                     entry(tmp_path / "adaptive.json", state="absent")], check_mode=False, diff_mode=False)
    assert result["changed_names"] == ["copy", "adaptive.json"]
    assert (tmp_path / "copy").read_text() == "saved\n" and not (tmp_path / "adaptive.json").exists()


def test_a_secret_file_has_no_diff_but_can_return_what_it_held(tmp_path):
    (tmp_path / "config").write_text("api-key: old\n")
    result = handle([entry(tmp_path / "config", content="api-key: new\n", diff=False, return_before=True)],
                    check_mode=False, diff_mode=True)
    assert result["diff"] == []
    assert result["files"]["config"]["before"] == "api-key: old\n"
    # only in diff mode
    result = handle([entry(tmp_path / "config", content="api-key: newer\n", diff=False, return_before=True)],
                    check_mode=False, diff_mode=False)
    assert result["files"]["config"]["before"] is None


@pytest.mark.parametrize("kw, message", [
    (dict(content="a", src="/x"), "exactly one of content and src"),
    (dict(content=None), "exactly one of content and src"),
    (dict(src="/does/not/exist"), "does not exist"),
    (dict(content="a", mode="rw"), "octal"),
    (dict(content="a", owner="no-such-user-llmops"), "no such user"),
])
def test_bad_entries_fail_naming_the_problem(tmp_path, kw, message):
    with pytest.raises(FilesError, match=message):
        handle([entry(tmp_path / "f", **kw)], check_mode=False, diff_mode=False)
    assert not (tmp_path / "f").exists()
