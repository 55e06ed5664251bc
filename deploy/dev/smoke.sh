#!/bin/sh
# smoke.sh: run one session end to end on the running dev stack, with the CLI
# as a user would: create it from the demo image (waiting for RUNNING), run a
# command in it, show its logs, destroy it. `make dev-up` runs this after the
# stack is ready (TESSERA_DEV_SMOKE=0 skips it).
set -eu
repo=$(cd "$(dirname "$0")/../.." && pwd)
STATE=${TESSERA_STATE_DIR:-$repo/.tessera-dev}
BIN=${TESSERA_BIN_DIR:-$repo/build/bin}
[ -f "$STATE/env" ] || { echo "smoke: no $STATE/env: run make dev-up first" >&2; exit 1; }
# shellcheck disable=SC1091
. "$STATE/env"
: "${TESSERA_DEMO_IMAGE:?smoke: the stack has no demo image (TESSERA_DEMO_IMAGE)}"
name="smoke-$(date +%H%M%S)-$$"
cli() { "$BIN/tessera" "$@"; }
echo "smoke: creating session $name from $TESSERA_DEMO_IMAGE"
cli session create "$TESSERA_DEMO_IMAGE" --name "$name" -r cpu=1,mem=256m --max-wait 60
cleanup() { cli session destroy "$name" >/dev/null 2>&1 || true; }
trap cleanup EXIT
status=$(cli --json session info "$name" | python3 -c 'import json,sys; print(json.load(sys.stdin)["status"])')
[ "$status" = RUNNING ] || { echo "smoke: session $name is $status, not RUNNING" >&2; exit 1; }
echo "smoke: running a command inside it"
out=$(cli session exec "$name" -- sh -c 'echo "hello from $(hostname)"; uname -s')
echo "$out" | sed 's/^/  | /'
echo "$out" | grep -q '^hello from' || { echo "smoke: unexpected output" >&2; exit 1; }
echo "smoke: destroying it"
trap - EXIT
cli session destroy "$name"
echo "smoke: a session ran end to end: create, RUNNING, exec, destroy"
