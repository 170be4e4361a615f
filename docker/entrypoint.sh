#!/bin/sh
# Starts one portal service, named by the first argument (or PORTAL_APP): in the image, under
# `npm start` and in the end-to-end tests alike. `exec` makes node the process that was started (PID 1
# in a container), so it receives SIGTERM itself and shuts down gracefully.
set -eu
app="${1:-${PORTAL_APP:-}}"
if [ "$#" -gt 0 ]; then shift; fi
cd "$(dirname "$0")/.."
case "$app" in
  turn-orchestrator | compaction-worker)
    exec node --enable-source-maps "dist/apps/$app/src/main.js" "$@" ;;
  gateway | attachment-ingest)
    # Each picture upload brings megabytes of buffers (about 20 MB in the gateway, 10 in the worker);
    # against V8's old-generation limit, kept close above the live heap, they set off a full GC
    # for most uploads (docs/benchmarks.md). A flag NODE_OPTIONS does not take.
    exec node --enable-source-maps --initial-old-space-size=256 "dist/apps/$app/src/main.js" "$@" ;;
  migrate)
    exec node --enable-source-maps dist/tools/migrate.js "$@" ;;
  *)
    echo "usage: gateway | turn-orchestrator | attachment-ingest | compaction-worker | migrate (got \"$app\")" >&2
    exit 64 ;;
esac
