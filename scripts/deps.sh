#!/usr/bin/env bash
# Installs what the tests need. As root on Debian it uses apt-get; anywhere
# else it stops at once and names what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

need_cmds=(git tmux sshd ssh mmdebstrap docker docker-compose ps busybox unshare useradd shellcheck)
# Login shells that are not POSIX ones, for backend/ssh's jobs on them.
need_cmds+=(fish tcsh)
# The test cluster (integration/k8s): etcd, a containerd of its own with
# runc, the CNI plugins, and the tools its scripts use.
need_cmds+=(etcd containerd ctr runc /usr/lib/cni/bridge socat conntrack iptables openssl nsenter ip curl flock)
pkg_for() {
	case "$1" in
	sshd) echo openssh-server ;;
	ssh) echo openssh-client ;;
	docker) echo docker.io ;;
	ps) echo procps ;;
	useradd) echo passwd ;;
	etcd) echo etcd-server ;;
	ctr) echo containerd ;;
	/usr/lib/cni/*) echo containernetworking-plugins ;;
	nsenter | flock | unshare) echo util-linux ;;
	ip) echo iproute2 ;;
	*) echo "$1" ;;
	esac
}
have() { command -v "$1" >/dev/null 2>&1 || [ -x "/usr/sbin/$1" ]; }

missing=()
for c in "${need_cmds[@]}"; do have "$c" || missing+=("$(pkg_for "$c")"); done
if [ ${#missing[@]} -gt 0 ]; then
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
		echo "deps: installing ${missing[*]}"
		export DEBIAN_FRONTEND=noninteractive
		apt-get update -qq
		apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
	else
		echo "deps: missing: ${missing[*]} (install them, or run as root on Debian)" >&2
		exit 1
	fi
fi
# sshd refuses to start without its privilege-separation directory.
[ -d /run/sshd ] || mkdir -p /run/sshd 2>/dev/null || true

if ! docker info >/dev/null 2>&1; then
	echo "deps: the Docker Engine is not reachable (docker info failed): start it" >&2
	exit 1
fi

# Go tools, pinned, into .cache/bin.
mkdir -p .cache/bin
if [ ! -x .cache/bin/staticcheck ]; then
	echo "deps: installing staticcheck"
	GOBIN="$PWD/.cache/bin" go install honnef.co/go/tools/cmd/staticcheck@v0.8.2
fi
