#!/bin/sh
# Starts one portal service, named by the first argument (or PORTAL_APP): in the image, under
# `npm start` and in the end-to-end tests alike. `exec` makes node the process that was started (PID 1
# in a container), so it receives SIGTERM itself and shuts down gracefully.
set -eu
app="${1:-${PORTAL_APP:-}}"
if [ "$#" -gt 0 ]; then shift; fi
cd "$(dirname "$0")/.."
case "$app" in
  gateway | turn-orchestrator | compaction-worker)
    exec node --enable-source-maps "dist/apps/$app/src/main.js" "$@" ;;
  attachment-ingest)
    # Each picture brings about 10 MB of buffers; from V8's small first old generation they set off a
    # full GC during half the renders (docs/benchmarks.md). A flag NODE_OPTIONS does not take.
    exec node --enable-source-maps --initial-old-space-size=256 "dist/apps/$app/src/main.js" "$@" ;;
  migrate)
    exec node --enable-source-maps dist/tools/migrate.js "$@" ;;
  *)
    echo "usage: gateway | turn-orchestrator | attachment-ingest | compaction-worker | migrate (got \"$app\")" >&2
    exit 64 ;;
esac
