# An idle cpu cgroup, sourced by tools/run-tests and tools/run-molecule: work that checks nothing CPU
# contention moves (lint, sanity, the idle molecule scenarios) runs in one and takes only the CPU the
# rest leaves. A normal-priority task preempts an idle one as soon as it wakes.
#
# Why a cgroup (cpu.idle, Linux 5.15+) and not SCHED_IDLE alone: the kernel weighs tasks session
# against session first (autogroup, on by default), and every SSH session and service on a test host
# is a session of its own, so with chrt alone idle work kept a normal share (2026-12-05: with
# sweep_split idle too, sweep 658 s and sweep_faults 622 s against 469 and 424 without it). A cgroup
# escapes autogroup, and whatever its tasks start inherits it (systemd-nspawn --keep-unit stays in
# its caller's cgroup). cgroup v1's cpu hierarchy or v2's; without either, callers fall back to
# SCHED_IDLE (chrt --idle 0), which they use in any case.

# idle_cgroup_make NAME: creates the cgroup llmops-idle-NAME and prints its directory (nothing, and a
# message on stderr, where no cgroup with cpu.idle can be made).
idle_cgroup_make() {
  local root dir
  for root in /sys/fs/cgroup/cpu /sys/fs/cgroup; do
    dir=$root/llmops-idle-$1
    if [ -f "$root/cgroup.procs" ] && mkdir -p "$dir" 2>/dev/null; then
      if [ -f "$dir/cpu.idle" ] && echo 1 > "$dir/cpu.idle" 2>/dev/null; then echo "$dir"; return 0; fi
      rmdir "$dir" 2>/dev/null
    fi
  done
  echo "no cpu cgroup with cpu.idle here: idle work runs under SCHED_IDLE only" >&2
}

# idle_cgroup_join DIR: moves the calling (sub)shell, and all it starts from now on, into DIR.
idle_cgroup_join() {
  [ -z "$1" ] || echo "$BASHPID" > "$1/cgroup.procs"
}

# idle_cgroup_kill DIR: ends every process in DIR (an interrupted run's idle work, its children included,
# and nothing else).
idle_cgroup_kill() {
  [ -n "$1" ] && [ -r "$1/cgroup.procs" ] || return 0
  xargs -r kill 2>/dev/null < "$1/cgroup.procs" || true
}

# idle_cgroup_remove DIR: once its tasks ended (a cgroup with tasks cannot be removed).
idle_cgroup_remove() {
  [ -n "$1" ] && [ -d "$1" ] || return 0
  local tries=10
  while [ "$tries" -gt 0 ]; do rmdir "$1" 2>/dev/null && return 0; sleep 1; tries=$((tries - 1)); done
  echo "could not remove $1 (tasks left in it)"
}
