#!/usr/bin/env bash
# down.sh [NAME]: stops the test cluster NAME (default "dev") and removes
# everything up.sh made for it: its processes (daemons, relays, containerd
# shims, every process in its pods' cgroups), the mounts under its state
# directory, its network namespace (with the veth, the bridge and the
# iptables rule inside), its cgroups, its CNI cache entries and kubelet log
# links, and the state directory. Then checks that nothing is left and fails
# naming what is. Idempotent, and safe on a cluster only half up. The logs
# (/var/lib/mu-k8s/NAME.logs) stay for reading.
#
# down.sh --stale: the same for every instance whose owner (the pid of the
# `make test` that made it, recorded by up.sh from MU_K8S_OWNER) is gone.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
[ "$(id -u)" = 0 ] || { echo "k8s down: must run as root" >&2; exit 1; }

if [ "${1:-}" = --stale ]; then
	for owner in "$K8S_STATE_ROOT"/*/owner; do
		[ -f "$owner" ] || continue
		pid=$(cat "$owner")
		# shellcheck disable=SC2015 # skip the owner unless it is recorded and dead
		[ -n "$pid" ] && ! kill -0 "$pid" 2>/dev/null || continue
		name=$(basename "$(dirname "$owner")")
		echo "k8s down: $name's owner ($pid) is gone"
		"$0" "$name"
	done
	exit 0
fi
k8s_instance "${1:-dev}"
t0=$(k8s_now)

# kill_all SIGNAL PID...: signal each process and its process group.
kill_all() {
	local sig=$1 p
	shift
	for p in "$@"; do kill "-$sig" -- "-$p" "$p" 2>/dev/null || true; done
}
# ours_procs: every live process of the instance: the ones whose command
# line names the state directory (daemons, relays, shims), the ones in its
# network namespace, and the ones in its cgroups (the pods' processes).
ours_procs() {
	# A regex that does not match itself: grep's own command line holds it.
	local re ino d
	re=$(printf '%s' "$K8S_STATE" | sed 's/[].[\*^$]/\\&/g')'[/]'
	# (Each search may find nothing or race a process's exit: never fatal,
	# since set -e holds in the process substitutions that call this.)
	grep -lsa -e "$re" /proc/[0-9]*/cmdline | cut -d/ -f3 || true
	if [ -e "$K8S_NETNS" ] && ino=$(stat -Lc %i "$K8S_NETNS" 2>/dev/null); then
		find /proc/[0-9]*/ns/net -maxdepth 0 -lname "net:\[$ino\]" 2>/dev/null | cut -d/ -f3 || true
	fi
	pod_procs
}
pod_procs() {
	local d
	for d in $(k8s_cgroup_dirs); do
		if [ -d "$d" ]; then find "$d" -name cgroup.procs -exec cat {} + 2>/dev/null || true; fi
	done
}

# What the cluster held at the end, for the record.
rss=0 n=0
for p in $(ours_procs | sort -u); do
	r=$(awk '/^VmRSS:/ { print $2 }' "/proc/$p/status" 2>/dev/null || true)
	[ -n "$r" ] && rss=$((rss + r)) n=$((n + 1))
done
[ $n = 0 ] || echo "k8s down: $K8S_NAME: $n processes, $((rss / 1024)) MiB RSS in all"

# 1. Containers first, through our containerd while it answers, so that the
# shims exit by themselves and clean up after them.
if [ -S "$K8S_SOCK" ] && ctr -a "$K8S_SOCK" --timeout 5s version >/dev/null 2>&1; then
	for pidf in kubelet kube-scheduler kube-controller-manager; do
		[ -f "$K8S_STATE/pids/$pidf" ] && k8s_ours "$(cat "$K8S_STATE/pids/$pidf")" &&
			kill_all TERM "$(cat "$K8S_STATE/pids/$pidf")"
	done
	for id in $(ctr -a "$K8S_SOCK" -n k8s.io --timeout 10s tasks ls -q 2>/dev/null); do
		ctr -a "$K8S_SOCK" -n k8s.io --timeout 10s tasks kill -a -s SIGKILL "$id" >/dev/null 2>&1 || true
	done
	for id in $(ctr -a "$K8S_SOCK" -n k8s.io --timeout 10s tasks ls -q 2>/dev/null); do
		ctr -a "$K8S_SOCK" -n k8s.io --timeout 10s tasks rm -f "$id" >/dev/null 2>&1 || true
	done
fi

# 2. Every process of ours: the pods' at once with KILL (a container's PID 1
# ignores TERM sent from outside its namespace), the others with TERM, and
# KILL whatever is left after 5 s.
for ((i = 0; i < 30; i++)); do
	mapfile -t pids < <(pod_procs | sort -u)
	[ ${#pids[@]} = 0 ] && break
	kill -KILL "${pids[@]}" 2>/dev/null || true
	sleep 0.1
done
mapfile -t pids < <(ours_procs | sort -u)
if [ ${#pids[@]} -gt 0 ]; then
	kill_all TERM "${pids[@]}"
	deadline=$((SECONDS + 5))
	while [ $SECONDS -le $deadline ]; do
		any=0
		for p in "${pids[@]}"; do k8s_live "$p" && any=1 && break; done
		[ $any = 0 ] && break
		sleep 0.1
	done
	for ((i = 0; i < 15; i++)); do
		mapfile -t pids < <(ours_procs | sort -u)
		[ ${#pids[@]} = 0 ] && break
		kill_all KILL "${pids[@]}"
		sleep 0.2
	done
fi

# 3. Mounts under the state directory (overlay rootfs, shm, netns, the
# kubelet's volumes), deepest first.
ours_mounts() { awk -v s="$K8S_STATE/" 'index($5, s) == 1 { print $5 }' /proc/self/mountinfo | sort -r; }
for ((i = 0; i < 5; i++)); do
	mapfile -t mnts < <(ours_mounts)
	[ ${#mnts[@]} = 0 ] && break
	for m in "${mnts[@]}"; do umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true; done
done

# 4. The network namespace, then the cgroups, the files named after our
# pods elsewhere, the kubelet's links in /var/log/containers, and the state
# directory.
# shellcheck disable=SC2015 # best effort: a netns already gone is fine
[ -e "$K8S_NETNS" ] && ip netns del "$K8S_ID" 2>/dev/null || true
for d in $(k8s_cgroup_dirs); do
	# shellcheck disable=SC2015 # best effort: busy cgroups are left to the check below
	[ -d "$d" ] && find "$d" -depth -type d -exec rmdir {} + 2>/dev/null || true
done
# Files outside the state directory named after our pod sandboxes: libcni's
# result cache (/var/lib/cni/results/NETWORK-ID-IF, for our network and
# containerd's own loopback one) and a killed shim's socket, which
# containerd 1.6 puts at /run/containerd/s/sha256(ADDRESS/NAMESPACE/ID).
# shellcheck disable=SC2012 # sandbox ids are hex: ls is safe and sorts
mapfile -t sandboxes < <(ls "$K8S_STATE"/containerd/{root,state}/io.containerd.grpc.v1.cri/sandboxes 2>/dev/null | sort -u)
host_files() {
	local sb
	for sb in "${sandboxes[@]}"; do
		echo "/var/lib/cni/results/cni-loopback-$sb-lo"
		echo "/run/containerd/s/$(printf '%s' "$K8S_SOCK/k8s.io/$sb" | sha256sum | cut -d' ' -f1)"
	done
	ls -d /var/lib/cni/results/"$K8S_ID"-* 2>/dev/null || true
}
host_files | xargs -r rm -f
find /var/log/containers -maxdepth 1 -type l -lname "$K8S_STATE/*" -delete 2>/dev/null || true
[ -e "$K8S_STATE" ] && rm -rf --one-file-system "$K8S_STATE"

# 5. Nothing may be left.
left=()
mapfile -t pids < <(ours_procs | sort -u)
[ ${#pids[@]} = 0 ] || left+=("processes: ${pids[*]}")
mapfile -t mnts < <(ours_mounts)
[ ${#mnts[@]} = 0 ] || left+=("mounts: ${mnts[*]}")
[ ! -e "$K8S_NETNS" ] || left+=("netns: $K8S_NETNS")
for d in $(k8s_cgroup_dirs); do [ ! -d "$d" ] || left+=("cgroup: $d"); done
[ ! -e "$K8S_STATE" ] || left+=("state: $K8S_STATE")
for f in $(host_files); do [ ! -e "$f" ] || left+=("file: $f"); done
links=$(find /var/log/containers -maxdepth 1 -type l -lname "$K8S_STATE/*" 2>/dev/null)
[ -z "$links" ] || left+=("links: $links")
if [ ${#left[@]} -gt 0 ]; then
	echo "k8s down: $K8S_NAME: left behind:" >&2
	printf '  %s\n' "${left[@]}" >&2
	exit 1
fi
echo "k8s down: $K8S_NAME down, nothing left ($(k8s_since "$t0"); logs in $K8S_LOGS)"
