#!/usr/bin/env bash
# The legacy Python SDK's own test suite (azure-cosmos 3.1.1, its tests
# unchanged) against a cmd/lethe built from this tree, for local triage:
# CI has no copy of those tests (they live in github.com/Azure/
# azure-cosmos-python, not in Debian's package), so CI runs only
# legacy_sdk_test.py beside this script.
#
#   sdktest/python/run_suite.sh SRC [pytest arguments...]
#
# SRC is a checkout of azure-cosmos-python (its test/ directory is used as
# it is) or its git directory (then the tests of the tag v3.1.1 are taken
# from it). The SDK itself is Debian's python3-azure-cosmos, for Debian's
# Python; pytest is Debian's python3-pytest. cmd/lethe listens on a free
# port over plain HTTP, in memory, with five ranges to every partitioned
# container as the emulator has, and is stopped at the end.
#
# Examples:
#   sdktest/python/run_suite.sh ~/azure-cosmos-python
#   sdktest/python/run_suite.sh ~/azure-cosmos-python test/crud_tests.py -k trigger
set -euo pipefail

if [ $# -lt 1 ]; then
  echo "usage: $0 SRC [pytest arguments...]" >&2
  exit 2
fi
src=$1
shift
repo=$(cd "$(dirname "$0")/../.." && pwd)
py=/usr/bin/python3

work=$(mktemp -d /tmp/lethe-pysuite-XXXXXX)
server=
cleanup() {
  if [ -n "$server" ]; then
    kill "$server" 2>/dev/null || true
    wait "$server" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

if [ -d "$src/test" ]; then
  cp -r "$src/test" "$work/test"
elif git --git-dir "$src" rev-parse --verify -q v3.1.1 >/dev/null 2>&1; then
  git --git-dir "$src" archive v3.1.1 test | tar -x -C "$work"
else
  echo "$0: $src holds neither test/ nor the tag v3.1.1" >&2
  exit 2
fi

# The suite was written against the emulator, which gives every
# partitioned container five partition key ranges (its tests of ranges,
# ORDER BY and the change feed count on them): -min-ranges 5 does too.
(cd "$repo/cmd/lethe" && go build -o "$work/lethe" .)
port=$("$py" -c 'import socket; s = socket.socket(); s.bind(("localhost", 0)); print(s.getsockname()[1])')
"$work/lethe" -http -min-ranges 5 -addr "localhost:$port" >"$work/lethe.log" 2>&1 &
server=$!
for _ in $(seq 300); do
  # Any HTTP status (401 without a signature) means it answers.
  if curl -s -o /dev/null "http://localhost:$port/"; then
    break
  fi
  sleep 0.1
done

# Every file of test/ holds tests, as the suite's tox.ini says
# (python_files=test/**.py); with no arguments, all of them run.
if [ $# -eq 0 ]; then
  set -- test
fi
cd "$work"
status=0
ACCOUNT_HOST="http://localhost:$port" "$py" -m pytest -p no:cacheprovider -o 'python_files=*.py' -q -rfE "$@" || status=$?
exit "$status"
