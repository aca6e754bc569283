#!/usr/bin/env bash
# The project's one test command (`make test`): set-up, lint, every Go test
# under -race (real sshd, real Docker Engine, real git and tmux), then the
# docker-compose integration suite. Nothing is skipped: a missing part fails.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
step() { printf '\n== %s (%ds)\n' "$1" $(( $(date +%s) - start )); }

step "deps"
scripts/deps.sh
step "test image"
integration/image/build.sh
step "build"
make --no-print-directory build
step "lint"
scripts/lint.sh
step "go test -race"
go test -race -count=1 -timeout 40m ./...
if [ -f integration/docker-compose.yml ]; then
	step "integration"
	scripts/integration.sh
fi
step "done"
