#!/bin/sh
# run-browser.sh [PYTEST ARGS...]: run the browser suite (tests/browser) with
# pytest from the repository root: the web console in a real headless
# Chromium (Debian's chromium and chromium-driver, through python3-selenium)
# against a temporary development stack, as a person uses it. Screenshots go
# to $TESSERA_SCREENSHOT_DIR (default build/console-screenshots/). Extra
# arguments go to pytest (-k, -x, a file). Needs root (the stack runs real
# sessions) and the console built by `make`.
# "No tests collected" (pytest exit 5) is a failure: a suite that runs
# nothing must not pass.
set -u
cd "$(dirname "$0")/.." || exit 1
. tools/pytest-lib.sh
suite_needs_root browser "the stack runs sessions with runc"
suite_python browser "pytest, requests, selenium"
for c in chromium chromedriver; do
  command -v $c >/dev/null 2>&1 || { echo "browser: $c is missing: run tools/deps.sh" >&2; exit 1; }
done
"$PY" -m pytest -q -p no:cacheprovider $(suite_where tests/browser "$@") "$@"
suite_exit browser $?
