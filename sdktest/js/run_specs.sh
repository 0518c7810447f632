#!/usr/bin/env bash
# @azure/cosmos's own functional specs (their bodies unchanged) against a
# cmd/lethe built from this tree, for local triage: CI has no copy of the
# SDK's repository, so CI runs only the *.test.mjs beside this script
# (specs.test.mjs keeps what these specs found).
#
#   sdktest/js/run_specs.sh SRC [SPEC...]
#
# SRC is sdk/cosmosdb/cosmos in a checkout of Azure/azure-sdk-for-js (its
# test/ directory is used as it is). Each SPEC is a path under SRC's
# test/public (default: the container, item, permission, authorization,
# offer and script specs); each runs against a server of its own, in
# memory, over HTTPS with lethe's certificate: mocha with ts-node for a spec
# written for mocha, vitest for one that imports it. specs-harness/ stands
# in for what the specs import beyond the SDK's public API: the SDK's test
# helpers (common/, written to the signatures the specs call; the SDK's own
# check of its client-side diagnostics is left to the SDK), and src/, which
# maps the specs' "../../../src" imports onto the published @azure/cosmos of
# package.json. The runners are installed with npm into a temporary
# directory, which is removed at the end. It prints, per spec, its passes,
# its failures and the failed tests' names.
#
# Example:
#   sdktest/js/run_specs.sh ~/azure-sdk-for-js/sdk/cosmosdb/cosmos functional/item/item.spec.ts
set -euo pipefail

if [ $# -lt 1 ]; then
  echo "usage: $0 SRC [SPEC...]" >&2
  exit 2
fi
src=$(cd "$1" && pwd)
shift
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
specs=("$@")
if [ ${#specs[@]} -eq 0 ]; then
  specs=(functional/container.spec.ts functional/npcontainer.spec.ts functional/database.spec.ts
    functional/item/item.spec.ts functional/item/batch.item.spec.ts functional/item/bulk.item.spec.ts
    functional/item/executeBulkOperations.item.spec.ts functional/item/itemIdEncoding.spec.ts
    functional/permission.spec.ts functional/authorization.spec.ts
    integration/authorization.spec.ts functional/offer.spec.ts functional/user.spec.ts
    functional/sproc.spec.ts functional/trigger.spec.ts functional/udf.spec.ts functional/conflict.spec.ts
    functional/ttl.spec.ts functional/vectorEmbeddingPolicy.spec.ts functional/spatialIndexBoundingBox.spec.ts
    functional/databaseaccount.spec.ts integration/session.spec.ts)
fi

work=$(mktemp -d /tmp/lethe-jsspecs-XXXXXX)
server=
cleanup() {
  if [ -n "$server" ]; then
    kill "$server" 2>/dev/null || true
    wait "$server" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

cp -r "$src/test" "$work/test"
cp -r "$here/specs-harness/src" "$here/specs-harness/tsconfig.json" "$here/specs-harness/vitest.config.mts" "$work/"
cp "$here"/specs-harness/common/*.ts "$work/test/public/common/"
version=$(node -p 'require(process.argv[1]).dependencies["@azure/cosmos"]' "$here/package.json")
(cd "$work" && echo '{"private":true}' >package.json &&
  npm install --no-audit --no-fund --silent "@azure/cosmos@$version" mocha@10 ts-node typescript@5 chai@4 vitest@3 >/dev/null)
(cd "$repo/cmd/lethe" && go build -o "$work/lethe" .)

# summary reads a runner's JSON report on stdin: passes, failures, names.
summary() {
  node -e '
let s = "";
process.stdin.on("data", (d) => (s += d)).on("end", () => {
  try {
    const j = JSON.parse(s.slice(s.indexOf("{")));
    if (j.stats) console.log(j.stats.passes, j.stats.failures, j.failures.map((f) => JSON.stringify(f.fullTitle)).join(" | "));
    else console.log(j.numPassedTests, j.numFailedTests,
      j.testResults.flatMap((r) => r.assertionResults.filter((a) => a.status === "failed").map((a) => JSON.stringify(a.fullName))).join(" | "));
  } catch (e) { console.log("? ? no report:", e.message); }
});'
}

cd "$work"
for spec in "${specs[@]}"; do
  file=test/public/$spec
  log=$work/lethe.log
  ./lethe -addr 127.0.0.1:0 -compute-addr 127.0.0.1:0 2>"$log" &
  server=$!
  for _ in $(seq 100); do grep -q 'lethe: ready' "$log" && break; sleep 0.1; done
  endpoint=$(sed -n 's/.*serving the Cosmos DB REST API" endpoint=\([^ ]*\).*/\1/p' "$log")
  compute=$(sed -n 's/.* compute_gateway=\([^ ]*\).*/\1/p' "$log")
  export ACCOUNT_HOST=$endpoint COMPUTE_HOST=$compute NODE_TLS_REJECT_UNAUTHORIZED=0 MOCHA_TIMEOUT=60000
  if grep -q 'from "vitest"' "$file"; then
    result=$( (npx vitest run --reporter=json "$file" 2>/dev/null || true) | summary)
  else
    result=$( (npx mocha --require ts-node/register/transpile-only --timeout 60000 --reporter json "$file" 2>/dev/null || true) | summary)
  fi
  echo "$spec $result"
  kill -TERM "$server"
  wait "$server" || true
  server=
done
