#!/usr/bin/env bash
# Runs every fuzz target for the given time each.
set -euo pipefail
cd "$(dirname "$0")/.."
t=${1:-20s}
# Fuzz targets in every tier's packages (docs/testing.md).
export MU_TEST_TIERS=${MU_TEST_TIERS:-all}
for pkg in $(go list ./...); do
	dir=$(go list -f '{{.Dir}}' "$pkg")
	# shellcheck disable=SC2013 # Go function names, one word each
	for f in $(grep -hoE '^func (Fuzz[A-Za-z0-9_]+)' "$dir"/*_test.go 2>/dev/null | awk '{print $2}'); do
		echo "fuzz: $pkg $f ($t)"
		go test -run '^$' -fuzz="^$f\$" -fuzztime="$t" "$pkg"
	done
done
