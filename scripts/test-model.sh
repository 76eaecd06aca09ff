#!/usr/bin/env bash
# The model-based test of the service's promises (test/model, issue 34) with more runs than `npm test`:
#
#   npm run test:model -- [--runs N] [--seed S] [--max-commands M] [--time-limit SECONDS]
#                         [--checks every|removals] [--path P [--replay-path R]] [--no-shrink] [--log]
#                         [--without KIND,...] [--ignore REGEXP]
#
# Without --seed a random one is chosen and printed. A failure prints its seed, `path` and shrunk
# sequence (with its replayPath); `--seed S --path P --replay-path R --no-shrink` (and the same
# --without) replays just it. --without leaves command kinds out and --ignore a regular expression of
# problems, to look past a known bug (test/model/promises.test.ts). Uses MONGODB_URI when set;
# otherwise starts the bundled FerretDB on the local PostgreSQL with scripts/ferretdb.sh, as .ci/run
# does, and stops it afterwards if this script started it.
set -euo pipefail
cd "$(dirname "$0")/.."

runs=30 seed="" max_commands=25 time_limit=3600 checks="" path="" no_shrink="" log="" without="" ignore="" replay_path=""
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --max-commands) max_commands=$2; shift 2 ;;
    --time-limit) time_limit=$2; shift 2 ;;
    --checks) checks=$2; shift 2 ;;
    --path) path=$2; shift 2 ;;
    --replay-path) replay_path=$2; shift 2 ;;
    --no-shrink) no_shrink=1; shift ;;
    --log) log=1; shift ;;
    --without) without=$2; shift 2 ;;
    --ignore) ignore=$2; shift 2 ;;
    -h|--help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "test-model.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
for number in "$runs" "$max_commands" "$time_limit"; do
  [[ "$number" =~ ^[0-9]+$ ]] || { echo "test-model.sh: $number is not a whole number" >&2; exit 2; }
done
[ -n "$seed" ] || seed=$(( (RANDOM << 15 | RANDOM) ))
[[ "$seed" =~ ^-?[0-9]+$ ]] || { echo "test-model.sh: the seed must be a whole number" >&2; exit 2; }

if [ -z "${MONGODB_URI:-}" ]; then
  export MONGOMS_DISABLE_POSTINSTALL=1
  pidfile=.cache/ferretdb/ferretdb.pid
  was_running=""
  if [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then was_running=1; fi
  MONGODB_URI=$(bash scripts/ferretdb.sh start)
  export MONGODB_URI
  [ -n "$was_running" ] || trap 'bash scripts/ferretdb.sh stop' EXIT
fi

echo "test:model: $runs runs of up to $max_commands steps, seed $seed, at most ${time_limit}s (database $MONGODB_URI)" >&2
export MODEL_RUNS=$runs MODEL_SEED=$seed MODEL_MAX_COMMANDS=$max_commands MODEL_TIME_LIMIT_S=$time_limit
[ -z "$checks" ] || export MODEL_CHECKS=$checks
[ -z "$path" ] || export MODEL_PATH=$path
[ -z "$replay_path" ] || export MODEL_REPLAY_PATH=$replay_path
[ -z "$no_shrink" ] || export MODEL_NO_SHRINK=1
[ -z "$log" ] || export MODEL_LOG=1
[ -z "$without" ] || export MODEL_WITHOUT=$without
[ -z "$ignore" ] || export MODEL_IGNORE=$ignore
# The path first: --selectProjects takes several values and would swallow a path written after it.
status=0
npx jest test/model --selectProjects integration || status=$?
exit "$status"
