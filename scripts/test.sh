#!/usr/bin/env bash
# The project's one test command (`make test`): set-up, lint, every Go test
# under -race in every tier (real sshd, real Docker Engine, real git and
# tmux, a real Kubernetes cluster) with the docker-compose integration suite
# beside them. Nothing is skipped: a missing part fails.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
step() { printf '\n== %s (%ds)\n' "$1" $(( $(date +%s) - start )); }

step "deps"
scripts/deps.sh
step "test image"
integration/image/build.sh
step "k8s cluster"
# One cluster for the run (integration/k8s, docs/k8s.md), brought up before
# the tests and always torn down after; the tests find it by MU_K8S_NAME
# (internal/testk8s). A cluster left by a run that was killed is removed
# first.
integration/k8s/down.sh --stale
export MU_K8S_NAME=test-$$ MU_K8S_OWNER=$$
k8s_down() {
	local rc=$?
	integration/k8s/down.sh "$MU_K8S_NAME" || rc=1
	[ $rc != 0 ] || rm -rf "${MU_K8S_STATE_ROOT:-/var/lib/mu-k8s}/$MU_K8S_NAME".logs{,.first}
	exit $rc
}
trap k8s_down EXIT
# A bring-up that fails is tried once more (set-up, not a test): the first
# try's logs are kept beside the second's, and its last line says what failed.
if ! integration/k8s/up.sh "$MU_K8S_NAME"; then
	logs=${MU_K8S_STATE_ROOT:-/var/lib/mu-k8s}/$MU_K8S_NAME.logs
	rm -rf "$logs.first"
	[ ! -d "$logs" ] || mv "$logs" "$logs.first"
	echo "k8s cluster: the first bring-up FAILED (above; its logs in $logs.first); trying once more"
	integration/k8s/up.sh "$MU_K8S_NAME"
fi
step "build"
make --no-print-directory build
step "lint"
scripts/lint.sh
step "go test -race, every tier (MU_TEST_TIERS=all), beside the integration suite"
# Every tier is asked: a part that is missing fails, nothing skips
# (docs/testing.md). The packages mostly wait (containers, pods, sshd), so
# more run at once than go test's defaults (-p and -parallel GOMAXPROCS:
# the four docker contract suites, 2-3 min each, mostly wait); the integration
# suite, on its own compose project and labels, runs beside them, its
# output kept and printed after theirs. testtimes prints go test's usual
# lines, then each package's and each tier's wall time.
export MU_TEST_TIERS=all
tools=$(mktemp -d)
go build -o "$tools/testtimes" ./internal/testtimes
it_pid=
if [ -f integration/docker-compose.yml ]; then
	scripts/integration.sh >"$tools/integration.log" 2>&1 &
	it_pid=$!
	echo "integration: running beside go test; its output comes after go test's"
fi
go_rc=0
go test -race -count=1 -timeout 40m -p "${MU_TEST_P:-4}" -parallel 4 -json ./... | "$tools/testtimes" || go_rc=$?
if [ -n "$it_pid" ]; then
	step "integration (ran beside go test)"
	it_rc=0
	wait "$it_pid" || it_rc=$?
	cat "$tools/integration.log"
	[ $it_rc = 0 ] || go_rc=$it_rc
fi
rm -rf "$tools"
[ $go_rc = 0 ] || exit $go_rc
step "done"
