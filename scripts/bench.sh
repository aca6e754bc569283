#!/usr/bin/env bash
# Every benchmark the issues ask for, ours beside the peer in one run, then
# a ratio table (internal/benchtab). Figures only: nothing here asserts time.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh >/dev/null
integration/image/build.sh >/dev/null
out=$(mktemp)
pkgs=(./cmd/ ./protocol/ ./protocol/caller/ ./backend/fake/ ./cmd/mu-plugin-fake/ ./backend/ssh/ ./backend/docker/ ./backend/tmuxjob/)
echo "bench: $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB, $(uname -r), $(go version | cut -d' ' -f3)"
go test -run '^$' -bench . -benchmem -benchtime "${BENCHTIME:-1s}" -timeout 30m "${pkgs[@]}" | tee "$out" | grep -E '^(Benchmark|ok|FAIL)' || true
echo
go run ./internal/benchtab -pair BenchmarkLinkExecTrue=BenchmarkShTrue <"$out"
rm -f "$out"
