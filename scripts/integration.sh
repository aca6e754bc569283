#!/usr/bin/env bash
# The docker-compose suite: bring the environment up, run the tests, and
# always tear it down; then check by label that nothing was left behind.
# MU_IT_RUN=REGEXP runs only the tests it matches (go test -run).
set -euo pipefail
cd "$(dirname "$0")/.."
if docker compose version >/dev/null 2>&1; then compose=(docker compose); else compose=(docker-compose); fi
project=mu-plugins-it-$$
work=$(mktemp -d)
export MU_IT_DIR=$work MU_IT_PROJECT=$project
# The suite needs sshd and the Docker Engine: asked, never skipped
# (internal/testutil: Tier).
export MU_TEST_TIERS=${MU_TEST_TIERS:-all}
ssh-keygen -q -t ed25519 -N '' -C mu-it -f "$work/id_ed25519"
MU_AUTHORIZED_KEY=$(cat "$work/id_ed25519.pub")
export MU_AUTHORIZED_KEY
export MU_PLUGINS_BIN=${MU_PLUGINS_BIN:-$PWD/bin}
dc() { "${compose[@]}" -p "$project" -f integration/docker-compose.yml "$@"; }

# Containers mu-plugin-docker made for the suite carry this label
# (integration/plugin_test.go: itLabel).
itlabel=org.mu-plugins.test.it=$project
start=$(date +%s)

down() {
	dc down --volumes --remove-orphans --timeout 5 >/dev/null 2>&1 || true
	ids=$(docker ps -aq --filter "label=$itlabel")
	# shellcheck disable=SC2086 # a list of container ids, split on purpose
	[ -z "$ids" ] || docker rm -f -v $ids >/dev/null 2>&1 || true
	rm -rf "$work"
	left=$(docker ps -aq --filter "label=com.docker.compose.project=$project"
		docker ps -aq --filter "label=$itlabel"
		docker network ls -q --filter "label=com.docker.compose.project=$project"
		docker volume ls -q --filter "label=com.docker.compose.project=$project")
	if [ -n "$left" ]; then
		echo "integration: left behind: $left" >&2
		exit 1
	fi
	echo "integration: environment torn down, nothing left behind ($(($(date +%s) - start)) s in all)"
}
trap down EXIT

integration/image/build.sh
dc up -d
go test -race -count=1 -timeout 30m -tags integration -v ${MU_IT_RUN:+-run "$MU_IT_RUN"} ./integration/... 2>&1 | tee "$work/test.log" | grep -E '^(=== RUN|--- |PASS|FAIL|ok|drill:|    )' || true
grep -qE '^(FAIL|--- FAIL)' "$work/test.log" && { echo "integration: FAILED"; exit 1; }
grep -q '^ok' "$work/test.log" || { tail -50 "$work/test.log"; echo "integration: no test result"; exit 1; }
