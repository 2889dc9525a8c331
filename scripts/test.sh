#!/usr/bin/env bash
# Run the tests: the lint (`ruff check .`, configured in pyproject.toml), the default suite (slow,
# Qwen-model, end-to-end and kill tests deselected; see pyproject.toml), then the end-to-end tests and
# the fault suite's kill -9 tests as two more steps. Arguments run pytest with them instead (no lint, no kill step).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# The real-browser test drives Debian's chromium (never `playwright install`); without it, it skips.
if [ ! -x /usr/bin/chromium ] && command -v apt-get >/dev/null 2>&1; then
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo -n"
    APT="$SUDO env DEBIAN_FRONTEND=noninteractive apt-get"
    $APT install -y chromium || { $APT update && $APT install -y chromium; } \
        || echo "test: could not install chromium; the browser test will be skipped"
fi
if [ "$#" -gt 0 ]; then
    exec .venv/bin/python -m pytest "$@"
fi
# Lint first: a finding fails the run (and `.ci/run`) before the tests start.
.venv/bin/ruff check .
# One worker per core, at most 4 (pytest-xdist): a test file runs whole on one worker (tests/conftest.py).
WORKERS=$(nproc 2>/dev/null || echo 2)
[ "$WORKERS" -le 4 ] || WORKERS=4
.venv/bin/python -m pytest -n "$WORKERS" --dist loadfile
# The end-to-end tests (a real browser, a local Ray cluster, the whole demo store), then the fault suite's
# kill -9 tests, each as its own step (deselected from the default run above).
.venv/bin/python -m pytest -n "$WORKERS" --dist loadfile -m "e2e and not slow"
exec .venv/bin/python -m pytest -m kills
