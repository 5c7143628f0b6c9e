#!/usr/bin/env bash
# The whole experiment: bring up an emulated RocketMQ cluster, run your application (app.js, a
# real ali-ons client) against it, kill broker-a's master mid-run and restart it 5 s later, stop
# the cluster and write the report. Exits with app.js's status: 0 when no acked message was lost.
#
#   npm install            # once, in this directory (ali-ons 3.12.0), or set NODE_PATH
#   ./run.sh               # from any directory; needs rmqemu and node on PATH
#   APP=java ./run.sh      # the same with the Java client (RealClientChaos.java; needs mvn)
#
# Environment (all optional):
#   APP           node (app.js, the default) or java (RealClientChaos.java through Maven)
#   TOPOLOGY      the cluster (default: the repository's topologies/real-clients.yaml)
#   RUNS          where run directories go (default: ./runs, from the current directory)
#   KILL_AFTER_S  seconds after app.js starts before broker-a-0 is killed (default 5)
#   RESTART_AFTER how long broker-a-0 stays dead (default 5s)
#   COUNT, INTERVAL_MS, DEADLINE_MS   passed to app.js (200 messages, 50 ms apart, 60 s deadline)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
TOPOLOGY="${TOPOLOGY:-$here/../../../topologies/real-clients.yaml}"
RUNS="${RUNS:-./runs}"
KILL_AFTER_S="${KILL_AFTER_S:-5}"
RESTART_AFTER="${RESTART_AFTER:-5s}"
APP="${APP:-node}"

say() { printf '\n==> %s\n' "$*"; }
die() { printf 'run.sh: %s\n' "$*" >&2; exit 2; }

command -v rmqemu >/dev/null || die "rmqemu is not on PATH (pip install rmqemu, or activate its venv)"
[[ -f "$TOPOLOGY" ]] || die "no topology at $TOPOLOGY (set TOPOLOGY=path/to/real-clients.yaml)"
case "$APP" in
  node)
    command -v node >/dev/null || die "node is not on PATH (Node.js 16 or later)"
    # app.js finds ali-ons in ./node_modules (npm install) or under NODE_PATH
    (cd "$here" && node -e "require.resolve('ali-ons')" 2>/dev/null) \
      || die "ali-ons is not installed: run 'npm install' in $here (or set NODE_PATH to a node_modules holding it)"
    app=(node "$here/app.js")
    ;;
  java)
    command -v mvn >/dev/null || die "mvn is not on PATH (Maven 3 and Java 8 or later)"
    # built before the cluster starts, so that the fault lands while the application runs
    say "Building the Java application: mvn -q compile"
    mvn -q -f "$here/pom.xml" compile
    app=(mvn -q -f "$here/pom.xml" exec:exec)
    ;;
  *) die "APP must be node or java, not '$APP'" ;;
esac

run_dir=""   # set once the cluster is up
app_pid=""   # set while app.js runs
cluster_up=0

# Whatever happens from here on (a failure, Ctrl-C), the cluster is stopped: no process is left.
cleanup() {
  local status=$?
  if [[ -n "$app_pid" ]] && kill -0 "$app_pid" 2>/dev/null; then
    kill -TERM "$app_pid" 2>/dev/null || true
  fi
  if (( cluster_up )); then
    say "Stopping the cluster (after a failure)"
    rmqemu down --run "$run_dir" || true
  fi
  exit "$status"
}
trap cleanup EXIT
trap 'exit 143' TERM

say "Starting the cluster: rmqemu up $TOPOLOGY --root $RUNS"
up_out="$(rmqemu up "$TOPOLOGY" --root "$RUNS")"
echo "$up_out"
run_dir="$(sed -n 's/^.* is up: //p' <<<"$up_out")"
[[ -n "$run_dir" ]] || run_dir="$(cd "$RUNS/latest" && pwd -P)"
cluster_up=1
NAMESRV_ADDR="$(sed -n 's/^namesrvAddr=//p' <<<"$up_out")"
[[ -n "$NAMESRV_ADDR" ]] || die "rmqemu up printed no namesrvAddr= line: does the topology say 'remoting: true'?"
export NAMESRV_ADDR

say "Starting the application: NAMESRV_ADDR=$NAMESRV_ADDR ${app[*]}"
"${app[@]}" &
app_pid=$!
# how rmqemu names the application: client@<its process id> (under Maven, the java process's)
if [[ "$APP" == node ]]; then client="client@$app_pid"; else client="client@<java's pid>"; fi
# Ctrl-C reaches app.js too: it stops sending and prints its summary. Wait for that, then clean up.
interrupted=0
trap 'interrupted=1' INT

sleep "$KILL_AFTER_S" || true
if (( !interrupted )) && kill -0 "$app_pid" 2>/dev/null; then
  say "The cluster with the application connected (it is $client): rmqemu status"
  rmqemu status --run "$run_dir" || true
  say "Fault: rmqemu kill broker-a-0 --restart-after $RESTART_AFTER"
  rmqemu kill broker-a-0 --restart-after "$RESTART_AFTER" --run "$run_dir"
fi

while :; do
  app_status=0
  wait "$app_pid" || app_status=$?
  # still running: the wait was cut short by Ctrl-C (127: not our child any more)
  (( app_status != 127 )) && kill -0 "$app_pid" 2>/dev/null || break
done
app_pid=""

# Let the fault end first: `rmqemu down` drains the cluster, and a master still dead would hold
# that up for the whole drain timeout (30 s). The report then ends on a healed cluster.
shown=0
for _ in $(seq $(( interrupted ? 0 : 120 ))); do
  faults="$(rmqemu faults --run "$run_dir")"
  [[ "$faults" == "no active fault" ]] && break
  if (( !shown )); then
    say "Waiting for the fault to end: rmqemu faults"
    echo "$faults"
    shown=1
  fi
  sleep 0.5
done
say "Stopping the cluster: rmqemu down (each node stops; this can take some seconds)"
rmqemu down --run "$run_dir"
cluster_up=0

if (( interrupted )); then
  echo "interrupted: no report written (to write it: rmqemu report $run_dir)"
  exit 130
fi

say "Writing the report: rmqemu report $run_dir"
report_status=0
rmqemu report "$run_dir" || report_status=$?

say "Done"
echo "application exit status: $app_status ($([[ $app_status == 0 ]] && echo 'no acked message lost' || echo 'FAILED'))"
echo "run directory:           $run_dir"
if [[ -f "$run_dir/report/report.html" ]]; then
  echo "report:                  $run_dir/report/report.html"
  echo "metrics:                 $run_dir/report/metrics.json"
  echo "                         (the application appears there as $client)"
else
  echo "report:                  not written (rmqemu report exited $report_status)"
  (( app_status != 0 )) || app_status=3
fi
exit "$app_status"
