#!/usr/bin/env bash
# Every benchmark the issues ask for, ours beside the peer in one run, then
# a ratio table (internal/benchtab). Figures only: nothing here asserts time.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh >/dev/null
integration/image/build.sh >/dev/null
out=$(mktemp)
# Every tier's benchmarks (docs/testing.md); a part missing fails.
export MU_TEST_TIERS=${MU_TEST_TIERS:-all}
pkgs=(./cmd/ ./protocol/ ./protocol/caller/ ./backend/fake/ ./cmd/mu-plugin-fake/ ./backend/ssh/ ./backend/docker/ ./internal/tmuxjob/)
# mu-plugin-k8s against kubectl, when a test cluster is up (MU_K8S_NAME, default dev: docs/k8s.md).
if [ -f "${MU_K8S_STATE_ROOT:-/var/lib/mu-k8s}/${MU_K8S_NAME:-dev}/env" ]; then
	pkgs+=(./backend/k8s/)
else
	echo "bench: no test cluster ${MU_K8S_NAME:-dev} up: mu-plugin-k8s left out (integration/k8s/up.sh)"
fi
echo "bench: $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB, $(uname -r), $(go version | cut -d' ' -f3)"
# -p 1: one package at a time, so that no other package's build shares the
# cores with a benchmark (it doubled the round trip's p50 in a run).
go test -p 1 -run '^$' -bench . -benchmem -benchtime "${BENCHTIME:-1s}" -timeout 30m "${pkgs[@]}" | tee "$out" | grep -E '^(Benchmark|ok|FAIL)' || true
echo
go run ./internal/benchtab -pair BenchmarkLinkExecTrue=BenchmarkShTrue <"$out"
rm -f "$out"
