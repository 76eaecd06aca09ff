#!/usr/bin/env bash
# Builds FerretDB v1.24.2 from the Go module proxy (once, cached under .cache/) and starts it on the
# local PostgreSQL. Used by .ci/run and by anyone without a MongoDB server. Prints the MONGODB_URI.
#
#   scripts/ferretdb.sh start   build if needed, start if not running, wait until it answers
#   scripts/ferretdb.sh stop    stop the instance this script started
#   scripts/ferretdb.sh build   only build
#
# It runs on when the caller ends, Ctrl-C on `npm start` included (a session of its own, below; and
# src/db/localFerretDb.ts runs this script detached), so the next start finds it answering; `stop` ends it.
#
# Environment: FERRETDB_PORT (default: 27017 or the next free port), FERRETDB_PG_URL (postgres://root@127.0.0.1:5432/ferretdb),
# FERRETDB_STATE_DIR (where the pid, port and log files are; default .cache/ferretdb: another one runs a second instance).
set -euo pipefail

VERSION=v1.24.2
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CACHE="$ROOT/.cache/ferretdb"
BIN="$CACHE/bin/ferretdb-$VERSION"
PG_URL=${FERRETDB_PG_URL:-postgres://root@127.0.0.1:5432/ferretdb}
STATE=${FERRETDB_STATE_DIR:-$CACHE}
PIDFILE="$STATE/ferretdb.pid"
PORTFILE="$STATE/ferretdb.port"
LOG="$STATE/ferretdb.log"

port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# FERRETDB_PORT when given; otherwise 27017, or the next free port if another server holds it.
choose_port() {
  if [ -n "${FERRETDB_PORT:-}" ]; then echo "$FERRETDB_PORT"; return; fi
  local port
  for port in $(seq 27017 27047); do port_busy "$port" || { echo "$port"; return; }; done
  echo "ferretdb.sh: no free port between 27017 and 27047" >&2; exit 1
}

build() {
  [ -x "$BIN" ] && return 0
  command -v go >/dev/null || { echo "ferretdb.sh: Go is required to build FerretDB" >&2; exit 1; }
  mkdir -p "$CACHE/bin"
  echo "ferretdb.sh: building FerretDB $VERSION (first run only, takes a few minutes)" >&2
  local dir src
  dir=$(go mod download -json "github.com/FerretDB/FerretDB@$VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  [ -d "$dir" ] || { echo "ferretdb.sh: go mod download gave no directory" >&2; exit 1; }
  src="$CACHE/src"
  rm -rf "$src"; cp -r "$dir" "$src"; chmod -R u+w "$src"
  # The module does not ship build/version/version.txt, and the binary panics without it (FerretDB#2982).
  echo "$VERSION" > "$src/build/version/version.txt"
  (cd "$src" && CGO_ENABLED=0 go build -trimpath -o "$BIN" ./cmd/ferretdb)
  rm -rf "$src"
}

running() { [ -f "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; }

postgres_up() {
  pg_isready -q -h 127.0.0.1 -p 5432 && return 0
  # The machines start PostgreSQL before a session; start it again if it has stopped.
  if command -v pg_ctlcluster >/dev/null; then
    pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n1)" main start || true
  fi
  for _ in $(seq 1 50); do pg_isready -q -h 127.0.0.1 -p 5432 && return 0; sleep 0.2; done
  echo "ferretdb.sh: PostgreSQL is not answering on 127.0.0.1:5432" >&2; exit 1
}

start() {
  build
  postgres_up
  if running; then echo "mongodb://127.0.0.1:$(cat "$PORTFILE")/"; return 0; fi
  PORT=$(choose_port)
  mkdir -p "$STATE"
  local db=${PG_URL##*/}; db=${db%%\?*}
  if ! psql "${PG_URL%/*}/postgres" -tAc "select 1 from pg_database where datname='$db'" | grep -q 1; then
    createdb -h 127.0.0.1 -U root "$db" 2>/dev/null || psql "${PG_URL%/*}/postgres" -c "create database \"$db\"" >/dev/null
  fi
  # Indexes PostgreSQL can use for FerretDB's reads (see the file); before FerretDB opens its connections.
  psql "$PG_URL" -v ON_ERROR_STOP=1 -q -v dbname="$db" -f "$ROOT/scripts/ferretdb-indexes.sql" >/dev/null 2>&1 \
    || echo "ferretdb.sh: could not add the GIN indexes (scripts/ferretdb-indexes.sql); reads will scan" >&2
  # A session of its own where setsid exists: a Ctrl-C in the terminal that ran this (at its prompt, or on
  # the `npm start` that follows) never reaches it. Without setsid, npm start's own call is detached.
  local launch=(nohup)
  if command -v setsid >/dev/null; then launch=(setsid nohup); fi
  "${launch[@]}" "$BIN" --handler=postgresql --postgresql-url="$PG_URL" --listen-addr="127.0.0.1:$PORT" \
    --telemetry=disable --debug-addr=- --state-dir=- --log-level=warn >"$LOG" 2>&1 &
  echo $! > "$PIDFILE"
  echo "$PORT" > "$PORTFILE"
  for _ in $(seq 1 100); do
    running || break
    if port_busy "$PORT"; then
      # Something answers; make sure it is ours and not another server that already held the port.
      sleep 0.3
      running && { echo "mongodb://127.0.0.1:$PORT/"; return 0; }
      break
    fi
    sleep 0.2
  done
  echo "ferretdb.sh: FerretDB did not start; log follows" >&2; cat "$LOG" >&2; exit 1
}

stop() { if running; then kill "$(cat "$PIDFILE")"; fi; rm -f "$PIDFILE"; }

case "${1:-start}" in
  build) build ;;
  start) start ;;
  stop) stop ;;
  *) echo "usage: $0 [build|start|stop]" >&2; exit 2 ;;
esac
