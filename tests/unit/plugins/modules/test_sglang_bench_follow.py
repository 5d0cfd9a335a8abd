"""sglang_bench_follow: one look at an async sglang_bench job per status line (wait up to the
interval, end early when the benchmark is done, the job's result once it has finished)."""
import json

from ansible_collections.llmops.sglang.plugins.modules.sglang_bench_follow import follow, job_finished, job_result, remove


class Clock:
    """A fake monotonic clock that sleep() advances, running ``at`` hooks as time passes."""

    def __init__(self, at=None):
        self.now = 0.0
        self.at = sorted((at or {}).items())

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds
        while self.at and self.at[0][0] <= self.now:
            self.at.pop(0)[1]()


def write(path, doc):
    path.write_text(json.dumps(doc))


def test_waits_the_interval_while_the_job_runs(tmp_path):
    prog, job = tmp_path / "progress.json", tmp_path / "job"
    write(prog, {"state": "running", "level": 1})
    write(job, {"started": 1, "finished": 0, "ansible_job_id": "j1"})
    clock = Clock()
    progress, result = follow(str(prog), str(job), 10, 5, clock=clock, sleep=clock.sleep)
    assert progress["level"] == 1 and not job_finished(result)
    assert 10 <= clock.now < 10.5


def test_ends_as_soon_as_the_job_has_written_its_result(tmp_path):
    prog, job = tmp_path / "progress.json", tmp_path / "job"
    write(prog, {"state": "running"})
    write(job, {"started": 1, "finished": 0})
    clock = Clock({3.0: lambda: (write(prog, {"state": "done"}), write(job, {"changed": False, "levels": [1]}))})
    progress, result = follow(str(prog), str(job), 10, 5, clock=clock, sleep=clock.sleep)
    assert progress["state"] == "done" and job_finished(result) and result["levels"] == [1]
    assert clock.now < 3.5


def test_a_done_benchmark_waits_a_little_for_its_result_then_returns(tmp_path):
    prog, job = tmp_path / "progress.json", tmp_path / "job"
    write(prog, {"state": "done"})
    write(job, {"started": 1, "finished": 0})
    clock = Clock()
    progress, result = follow(str(prog), str(job), 60, 2, clock=clock, sleep=clock.sleep)
    assert progress["state"] == "done" and not job_finished(result)
    assert 2 <= clock.now < 2.5


def test_a_missing_or_half_written_progress_file_is_no_progress(tmp_path):
    job = tmp_path / "job"
    write(job, {"started": 1, "finished": 0})
    (tmp_path / "half.json").write_text('{"state": "runn')
    clock = Clock()
    for name in ("missing.json", "half.json"):
        progress, dummy = follow(str(tmp_path / name), str(job), 1, 1, clock=clock, sleep=clock.sleep)
        assert progress is None


def test_the_wrappers_placeholder_is_not_a_result():
    assert not job_finished(None)
    assert not job_finished({"started": 1, "finished": 0, "ansible_job_id": "j"})
    # the job's own result, also a failure (the wrapper writes the module's JSON in place of the placeholder)
    assert job_finished({"failed": True, "msg": "stalled", "fault": "stalled"})


def test_cleanup_removes_the_status_file_and_the_progress_directory(tmp_path):
    job, pdir = tmp_path / "job", tmp_path / "x-sglang-bench"
    job.write_text("{}")
    pdir.mkdir()
    (pdir / "progress.json").write_text("{}")
    remove([str(job), str(pdir), str(tmp_path / "never-there")])
    assert list(tmp_path.iterdir()) == []


class FakeModule:
    def __init__(self):
        self.warnings = []

    def warn(self, text):
        self.warnings.append(text)


def test_the_jobs_structured_warnings_become_text():
    """ansible-core 2.19 writes a module's warnings into the async job file as structured summaries; handed on as
    they are, the controller refused the whole result ("Event.msg must be <class 'str'> instead of <class 'dict'>")
    and a benchmark that had stopped a leftover one (a warning) failed the sweep as an infrastructure fault."""
    job = {"failed": True, "msg": "some requests failed", "fault": "server_error", "invocation": {"module_args": {}},
           "warnings": [{"event": {"msg": "stopped a leftover benchmark (pid 42)", "__ansible_type": "Event"},
                         "__ansible_type": "WarningSummary"}, "a plain one"],
           "deprecations": [{"event": {"msg": "old option"}, "__ansible_type": "DeprecationSummary"}],
           "exception": {"event": {"msg": "boom", "formatted_traceback": "Traceback ...\nValueError: boom\n"},
                         "__ansible_type": "ErrorSummary"}}
    module = FakeModule()
    result = job_result(module, job)
    assert module.warnings == ["stopped a leftover benchmark (pid 42)", "a plain one",
                               "the benchmark reported a deprecation: old option"]
    assert "warnings" not in result and "deprecations" not in result and "invocation" not in result
    assert result["exception"] == "Traceback ...\nValueError: boom\n"
    assert result["fault"] == "server_error" and result["msg"] == "some requests failed"
    json.dumps(result)  # plain data only
