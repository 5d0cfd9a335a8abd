#!/usr/bin/env bash
# `make demo`: the speculative sweep end to end against the simulator on a local systemd test
# host (inventories/sim, host sim1). The inventory is copied to results/demo-inventory/ first so
# that pinning the winner does not dirty the committed inventories/sim/host_vars.
#
#   tools/demo.sh                 # sweep sim1, print the table, the pinned value and the time split
#   DEMO_HOSTS="sim1 sim2" tools/demo.sh   # both simulated hosts in parallel
#   DEMO_CLEANUP=1 tools/demo.sh  # stop the test hosts at the end (by default the winner keeps serving)
#   DEMO_ARGS='-e sweep_objective=throughput' tools/demo.sh
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
export PATH="$top/.venv/bin:$PATH"
export ANSIBLE_HOST_KEY_CHECKING=false

hosts=${DEMO_HOSTS:-sim1}
inv="$top/results/demo-inventory"
res="$top/results/demo"
declare -A ssh_port=([sim1]=2230 [sim2]=2231)

cleanup() {
  if [ -n "${DEMO_CLEANUP:-}" ]; then
    # shellcheck disable=SC2086
    tools/testhost destroy $hosts >/dev/null 2>&1 || true
  fi
}
trap cleanup EXIT

boot_start=$(date +%s.%N)
for h in $hosts; do
  tools/testhost create "$h" --ssh-port "${ssh_port[$h]}" >/dev/null
done
# The wall time is the sweep's own (ansible-playbook's), from a booted host as a user's server is: booting
# the test host is this rig's, not the collection's. It is printed beside it.
start=$(date +%s.%N)
rm -rf "$inv"
mkdir -p "$top/results"
cp -a inventories/sim "$inv"
limit=${hosts// /,}

# shellcheck disable=SC2086
ansible-playbook -i "$inv" playbooks/sweep.yml --limit "$limit" \
  -e '{"sweep_steps": [0, 1, 2, 3, 4, 5, 10], "sweep_output_len": 256, "sweep_input_len": 512}' \
  -e "sweep_results_dir=$res" -e sweep_fresh=true ${DEMO_ARGS:-}
end=$(date +%s.%N)

for h in $hosts; do
  echo
  echo "=== $h: report $res/$h/report/report.md"
  sed -n '/^## Results/,/^## Verdicts/p' "$res/$h/report/report.md" | sed '$d'
  echo "=== $h: pinned into $inv/host_vars/$h.yml"
  grep -E '^sglang_service_speculative_(num_steps|eagle_topk|num_draft_tokens|adaptive|adaptive_config):' "$inv/host_vars/$h.yml"
done

# Where the time went: server restarts (stopping the server before, SGLang's drain included, then
# start -> ready, as the role measured them, the winner's final deployment included; a start that
# crashed counts its start -> exit, and the rollback's start -> ready when it was awaited: a sweep's is
# not, the next deployment replaces it), benchmarking (the benchmark's own level durations and
# warm-ups), everything else (Ansible, SSH, provisioning the host).
# shellcheck disable=SC2086
python3 - "$res" "$boot_start" "$start" "$end" "$top/.ansible/collections" $hosts <<'PY'
import glob, json, os, sys
res, boot_start, start, end, collections, hosts = (sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]),
                                                   sys.argv[5], sys.argv[6:])
# A run's parts are counted as the sweep's own progress line counts them (the collection make demo installed).
sys.path.insert(0, collections)
from ansible_collections.llmops.sglang.plugins.module_utils.sweep_decide import run_parts


def seconds(doc, *keys):
    return sum(float(doc.get(key) or 0) for key in keys)


ready = bench = warm = 0.0
for h in hosts:
    # The step counts' runs and the derived schedule's (sweep_schedule).
    for path in glob.glob(os.path.join(res, h, 'measurements', '*', 'repeat-*.json')):
        with open(path) as fh:
            doc = json.load(fh)['result']
        # A level measured again (its client was starved) counts its discarded tries too.
        parts = run_parts(doc)
        ready += parts['restart_s']
        bench += parts['levels_s']
        warm += parts['warmup_s']
    # A configuration that crashed at start: stopping the server before, its start to its exit (and an awaited
    # rollback's start to ready).
    for path in glob.glob(os.path.join(res, h, 'measurements', '*', 'failure.json')):
        with open(path) as fh:
            failure = json.load(fh)['failure']
        ready += seconds(failure, 'time_to_stop_s', 'time_to_crash_s', 'rollback_time_to_ready_s')
    # The winner's final deployment is a restart too (unless the winner already served).
    report = os.path.join(res, h, 'report', 'measurements.json')
    if os.path.exists(report):
        with open(report) as fh:
            final = (json.load(fh).get('meta') or {}).get('final_deploy') or {}
        ready += seconds(final, 'time_to_stop_s', 'time_to_ready_s')
wall = end - start
other = wall - ready - bench - warm
print("\nthe test host(s) booted in %.1f s before the sweep (not counted below)" % (start - boot_start))
print('wall time %.0f s: server restarts (stop, start to ready, crashed starts and rollbacks) %.0f s, benchmarking %.0f s (measured %.0f s + warm-ups %.0f s), '
      'everything else (orchestration) %.0f s = %.0f%%' % (wall, ready, bench + warm, bench, warm, other, 100.0 * other / wall))
PY

if [ -z "${DEMO_CLEANUP:-}" ]; then
  declare -A api_port=([sim1]=30030 [sim2]=30031)
  for h in $hosts; do
    echo "$h keeps serving its winner: curl -s http://127.0.0.1:${api_port[$h]}/server_info"
  done
  echo "stop the test hosts with: make testhosts-down"
fi
