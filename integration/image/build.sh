#!/bin/sh
# Builds the test image without a registry:
#   1. mmdebstrap a minimal Debian bookworm rootfs from this machine's own apt
#      sources (mmdebstrap does not read them by itself),
#   2. docker import it as mu-plugins-base:bookworm-r2,
#   3. docker build Dockerfile.test FROM it as mu-plugins-test:r2.
# The tags name the images' revision (internal/testimage): a change to what
# they hold bumps it, so an older image, which other checkouts on the machine
# may still use, is left alone and the new one built beside it. Neither image
# carries a label: a label would mark every container made from it.
# Idempotent: skips what exists unless FORCE=1 (or --force). Prints timings.
# Needs: mmdebstrap (apt-get install mmdebstrap), docker, root (or fakeroot).
set -eu

BASE=${MU_TEST_BASE_IMAGE:-mu-plugins-base:bookworm-r2}
IMAGE=${MU_TEST_IMAGE:-mu-plugins-test:r2}
FORCE=${FORCE:-0}
[ "${1:-}" = "--force" ] && FORCE=1
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f s", b - a }'; }
have() { docker image inspect "$1" >/dev/null 2>&1; }

t0=$(now)
if [ "$FORCE" != 1 ] && have "$IMAGE"; then
	echo "build.sh: $IMAGE exists (FORCE=1 to rebuild)"
	exit 0
fi

sources=${MU_APT_SOURCES:-}
if [ -z "$sources" ]; then
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -f "$f" ] && grep -qs '^URIs:.*debian' "$f" && { sources=$f; break; }
	done
fi

if [ "$FORCE" = 1 ] || ! have "$BASE"; then
	command -v mmdebstrap >/dev/null || { echo "build.sh: mmdebstrap missing: apt-get install mmdebstrap" >&2; exit 1; }
	[ -n "$sources" ] || { echo "build.sh: no deb822 Debian sources file under /etc/apt/sources.list.d (set MU_APT_SOURCES)" >&2; exit 1; }
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	t=$(now)
	# Small: no docs, man pages or locales; no apt lists or caches.
	echo "build.sh: mmdebstrap: a minimal Debian bookworm rootfs (a first build: minutes)"
	# shellcheck disable=SC2016 # the hook's "$1" (the rootfs) is for mmdebstrap's shell
	"$root/scripts/ticking.sh" build.sh "mmdebstrap" mmdebstrap --variant=minbase --quiet \
		--include=git,tmux,openssh-server,ca-certificates,procps \
		--dpkgopt='path-exclude=/usr/share/man/*' \
		--dpkgopt='path-exclude=/usr/share/doc/*' \
		--dpkgopt='path-include=/usr/share/doc/*/copyright' \
		--dpkgopt='path-exclude=/usr/share/locale/*' \
		--dpkgopt='path-exclude=/usr/share/info/*' \
		--customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/* "$1"/var/log/*.log' \
		bookworm "$tmp/rootfs.tar" "$sources"
	echo "build.sh: mmdebstrap $(since "$t") ($(du -h "$tmp/rootfs.tar" | cut -f1))"
	t=$(now)
	docker import --change 'CMD ["sleep","infinity"]' \
		"$tmp/rootfs.tar" "$BASE" >/dev/null
	echo "build.sh: docker import $(since "$t")"
fi

t=$(now)
ctx=$(mktemp -d)
cp "$root/Dockerfile.test" "$ctx/Dockerfile"
if ! DOCKER_BUILDKIT=0 docker build --quiet --build-arg BASE="$BASE" -t "$IMAGE" "$ctx" >"$ctx.log" 2>&1; then
	cat "$ctx.log" >&2; rm -rf "$ctx" "$ctx.log"; exit 1
fi
rm -rf "$ctx" "$ctx.log"
echo "build.sh: docker build $(since "$t")"
echo "build.sh: $IMAGE ready in $(since "$t0") ($(docker image inspect -f '{{.Size}}' "$IMAGE" | awk '{ printf "%d MB", $1/1e6 }'))"
