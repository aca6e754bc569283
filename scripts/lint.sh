#!/usr/bin/env bash
# gofmt, go vet, staticcheck, shellcheck: any finding fails.
set -euo pipefail
cd "$(dirname "$0")/.."
unformatted=$(git ls-files -z '*.go' | xargs -0 gofmt -l 2>/dev/null || true)
if [ -n "$unformatted" ]; then
	echo "gofmt: not formatted:"; echo "$unformatted"; exit 1
fi
go vet ./...
sc=.cache/bin/staticcheck
[ -x "$sc" ] || GOBIN="$PWD/.cache/bin" go install honnef.co/go/tools/cmd/staticcheck@v0.8.2
"$sc" ./...
scripts/shellcheck.sh
echo "lint: ok"
