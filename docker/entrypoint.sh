#!/bin/sh
# Starts one portal service, named by the first argument (or PORTAL_APP). `exec` makes node PID 1,
# so it receives SIGTERM itself and shuts down gracefully.
set -eu
app="${1:-${PORTAL_APP:-}}"
if [ "$#" -gt 0 ]; then shift; fi
cd "$(dirname "$0")/.."
case "$app" in
  gateway | turn-orchestrator | attachment-ingest | compaction-worker)
    exec node --enable-source-maps "dist/apps/$app/src/main.js" "$@" ;;
  migrate)
    exec node --enable-source-maps dist/tools/migrate.js "$@" ;;
  *)
    echo "usage: gateway | turn-orchestrator | attachment-ingest | compaction-worker | migrate (got \"$app\")" >&2
    exit 64 ;;
esac
