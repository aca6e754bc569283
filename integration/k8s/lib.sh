# Shared by build.sh, up.sh and down.sh (sourced, bash): versions, paths and
# the names one cluster instance uses. Everything an instance NAME creates is
# named from NAME, so several clusters (one per worktree's `make test`) can
# run side by side and each down.sh removes only its own.

K8S_VERSION=v1.34.2
k8s_here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
k8s_repo=$(cd "$k8s_here/../.." && pwd)

# The cache survives between runs and is shared by every worktree and clean
# clone on the machine: the four binaries, the pause binary and image, and
# the pod image's tarball.
K8S_CACHE=${MU_K8S_CACHE:-/var/cache/mu-plugins/k8s/$K8S_VERSION}
K8S_BIN=$K8S_CACHE/bin
K8S_IMAGES=$K8S_CACHE/images
K8S_COMPONENTS="kube-apiserver kube-controller-manager kube-scheduler kubelet"

# Images: the sandbox (pause) image is ours; the pod image is the project's
# Docker test image (integration/image/build.sh), copied into the cluster's
# containerd without a registry. Pods name it with imagePullPolicy: Never.
K8S_PAUSE_IMAGE=mu-k8s.local/pause:1
K8S_POD_IMAGE=${MU_TEST_IMAGE:-mu-plugins-test:r2}

# Instances live under one root: STATE_ROOT/NAME holds every file of a
# running cluster (removed by down.sh), STATE_ROOT/NAME.logs its logs (kept
# for reading after a failure; removed by the next up.sh of that NAME).
K8S_STATE_ROOT=${MU_K8S_STATE_ROOT:-/var/lib/mu-k8s}

# Inside the instance's network namespace only (never routed from the host):
# the node's address on a veth, the pod range on the CNI bridge, the service
# range (the apiserver's "kubernetes" service, DNAT-ed to the node).
K8S_NODE_IP=10.240.0.1
K8S_POD_CIDR=10.241.0.0/24
K8S_SERVICE_CIDR=10.242.0.0/24
K8S_SERVICE_IP=10.242.0.1
K8S_NAMESPACE=mu-plugins-test

# k8s_instance NAME sets the names one instance uses, or fails on a bad NAME.
k8s_instance() {
	if ! [[ $1 =~ ^[a-z0-9]([a-z0-9-]{0,22}[a-z0-9])?$ ]]; then
		echo "k8s: instance name '$1' must be 1-24 of a-z, 0-9 and -, not starting or ending with -" >&2
		return 1
	fi
	K8S_NAME=$1
	K8S_ID=mu-k8s-$1 # netns, node, cgroup, CNI network and kubeconfig names
	K8S_STATE=$K8S_STATE_ROOT/$1
	K8S_LOGS=$K8S_STATE_ROOT/$1.logs
	K8S_NETNS=/run/netns/$K8S_ID
	K8S_SOCK=$K8S_STATE/run/containerd.sock
	K8S_KUBECONFIG=$K8S_STATE/kubeconfig
}

# k8s_in_netns CMD... runs CMD in the instance's network namespace. Not
# `ip netns exec`: that remounts /sys and hides the cgroup mounts.
k8s_in_netns() { nsenter --net="$K8S_NETNS" "$@"; }

# k8s_ours PID: is PID a process of this instance (its command line names the
# state directory)? Guards every kill by pid file against a reused pid.
k8s_ours() {
	local args
	{ mapfile -d '' -t args <"/proc/$1/cmdline"; } 2>/dev/null || return 1
	[[ "${args[*]}" == *"$K8S_STATE/"* ]]
}

# k8s_live PID: does PID run (a zombie has an empty command line)?
k8s_live() {
	local args
	{ mapfile -d '' -t args <"/proc/$1/cmdline"; } 2>/dev/null || return 1
	[ ${#args[@]} -gt 0 ]
}

# k8s_cgroup_dirs prints the instance's cgroup directory in each mounted
# hierarchy (cgroup v1: one per controller; v2: one).
k8s_cgroup_dirs() {
	if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
		echo "/sys/fs/cgroup/$K8S_ID"
		return
	fi
	local h
	for h in /sys/fs/cgroup/*/; do
		[ -f "$h/cgroup.procs" ] && echo "${h%/}/$K8S_ID"
	done
}

# k8s_start NAME CMD...: a daemon in its own session, with its pid and
# command line recorded (pids/NAME, cmds/NAME: component.sh restarts it the
# same way) and its output appended to the logs. Every daemon's command
# line names $K8S_STATE.
#
# It returns once the daemon has exec'd (or ended): until then the child's
# command line is this script's, which k8s_ours does not count as the
# instance's, so a check right after the start (up.sh's wait for the
# kubelet) read a daemon just started as "exited" (a red CI).
k8s_start() {
	local name=$1 pid i
	shift
	printf '%s\0' "$@" >"$K8S_STATE/cmds/$name"
	setsid "$@" >>"$K8S_LOGS/$name.log" 2>&1 </dev/null &
	pid=$!
	echo $pid >"$K8S_STATE/pids/$name"
	for ((i = 0; i < 1000; i++)); do
		k8s_ours $pid || ! k8s_live $pid && return 0
		sleep 0.01
	done
	echo "k8s: $name (pid $pid) has not started its command after 10 s" >&2
}

# k8s_healthy COMPONENT: does it answer its health check now? (The API
# server through the relay, as the tests reach it; the others inside the
# namespace, on their own health ports.)
k8s_healthy() {
	local pki=$K8S_STATE/pki port
	case $1 in
	etcd) k8s_in_netns curl -sf -m 5 http://127.0.0.1:2379/health >/dev/null ;;
	containerd) ctr -a "$K8S_SOCK" --timeout 5s version >/dev/null 2>&1 ;;
	kube-apiserver)
		port=$(cat "$K8S_STATE/port")
		[ "$(curl -sS -m 5 --cacert "$pki/ca.crt" --cert "$pki/admin.crt" --key "$pki/admin.key" \
			"https://127.0.0.1:$port/readyz" 2>/dev/null)" = ok ]
		;;
	kube-controller-manager) [ "$(k8s_in_netns curl -sk -m 5 https://127.0.0.1:10257/healthz)" = ok ] ;;
	kube-scheduler) [ "$(k8s_in_netns curl -sk -m 5 https://127.0.0.1:10259/healthz)" = ok ] ;;
	kubelet) # healthy, and it knows every pod bound to the node (exec asks it)
		[ "$(k8s_in_netns curl -s -m 5 http://127.0.0.1:10248/healthz)" = ok ] || return 1
		port=$(cat "$K8S_STATE/port")
		local want have
		want=$(curl -sS -m 5 -A mu-k8s --cacert "$pki/ca.crt" --cert "$pki/admin.crt" --key "$pki/admin.key" \
			"https://127.0.0.1:$port/api/v1/pods?fieldSelector=spec.nodeName%3D$K8S_ID" | { grep -o '"uid":"[^"]*"' || true; } | sort -u) || return 1
		have=$(k8s_in_netns curl -sS -m 5 --cacert "$pki/ca.crt" --cert "$pki/apiserver-kubelet.crt" \
			--key "$pki/apiserver-kubelet.key" "https://$K8S_NODE_IP:10250/pods" | { grep -o '"uid":"[^"]*"' || true; } | sort -u) || return 1
		[ -z "$(comm -23 <(echo "$want") <(echo "$have"))" ]
		;;
	*) return 1 ;;
	esac
}

k8s_now() { date +%s.%N; }
k8s_since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f s", b - a }'; }
