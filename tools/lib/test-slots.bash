# Machine-wide test slots, sourced by tools/run-tests and tools/run-molecule.
#
# The molecule scenarios' figure checks (steps 3 ahead of 2 at concurrency 32, a disturbed sweep
# within 3% of an undisturbed one, the split sweep's wall ratio) hold with two CPU-heavy stages at
# once on 2 cores and fail with four (seen: two `make test` from two checkouts, two lanes each).
# So every CPU-heavy stage of every run on this machine (a molecule scenario, or the lint, sanity
# and pytest stages of a run) holds one of LLMOPS_TEST_SLOTS slots (default 2): a second run
# shares the machine's capacity with the first instead of doubling the load. A scenario that
# compares wall times holds every slot. Slots are flock(1) locks: a run that dies frees its slots.
#
# Waiters queue: a stage that finds no free slot holds the queue lock (slot-queue) while it polls, and
# a newcomer takes the queue lock before its first try, so a job that arrives just as a slot is freed
# cannot take it from one that has been waiting (seen: one job waited 40 min while later ones ran).
#
# Needs: lock_dir (the directory of the lock files).

: "${lock_dir:?test-slots.bash needs lock_dir}"
test_slots=${LLMOPS_TEST_SLOTS:-2}
held_slot_fds=()

_slot_owners() {  # who holds the slots now (best effort, for the waiting message)
  local i owners=()
  for ((i = 0; i < test_slots; i++)); do
    [ -s "$lock_dir/slot-$i.owner" ] && owners+=("$(cat "$lock_dir/slot-$i.owner" 2>/dev/null)")
  done
  if [ ${#owners[@]} -eq 0 ]; then echo unknown; else printf '%s; ' "${owners[@]}" | sed 's/; $//'; fi
}

_slot_claim() {  # index, label, fd: record the owner (the lock file itself is never truncated)
  # Written aside and renamed, so that a waiter's message never reads a half-written owner.
  echo "$2 of run ${LLMOPS_TESTHOST_RUN:-?} in $(pwd)" > "$lock_dir/slot-$1.owner.$$"
  mv -f "$lock_dir/slot-$1.owner.$$" "$lock_dir/slot-$1.owner"
  held_slot_fds+=("$3")
}

_queue_fd=
_queue_enter() {  # label: the turn to wait for slots (at once when nobody else waits)
  exec {_queue_fd}>>"$lock_dir/slot-queue"
  if ! flock -n "$_queue_fd"; then
    echo "[$1] another stage is waiting for a test slot of this machine; queueing behind it"
    flock "$_queue_fd"
  fi
}

_queue_leave() {
  exec {_queue_fd}>&-
}

take_slot() {  # label: blocks until one slot is free (in turn with other waiters), then holds it until release_slots
  local label=$1 i fd said=
  _queue_enter "$label"
  while :; do
    for ((i = 0; i < test_slots; i++)); do
      exec {fd}>>"$lock_dir/slot-$i"
      if flock -n "$fd"; then _slot_claim "$i" "$label" "$fd"; _queue_leave; return 0; fi
      exec {fd}>&-
    done
    if [ -z "$said" ]; then
      echo "[$label] all $test_slots test slots of this machine are taken ($(_slot_owners)); waiting for one"
      said=1
    fi
    sleep 1
  done
}

take_all_slots() {  # label: every slot, in index order (so two of these cannot deadlock), in turn with other waiters
  local label=$1 i fd
  _queue_enter "$label"
  for ((i = 0; i < test_slots; i++)); do
    exec {fd}>>"$lock_dir/slot-$i"
    if ! flock -n "$fd"; then
      echo "[$label] needs the whole machine; waiting for test slot $i ($(cat "$lock_dir/slot-$i.owner" 2>/dev/null))"
      flock "$fd"
    fi
    _slot_claim "$i" "$label" "$fd"
  done
  _queue_leave
}

release_slots() {
  local fd
  for fd in "${held_slot_fds[@]}"; do exec {fd}>&-; done
  held_slot_fds=()
}
