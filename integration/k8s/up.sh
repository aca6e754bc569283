#!/usr/bin/env bash
# up.sh [NAME]: brings up the single-node test cluster NAME (default "dev"):
# etcd, a containerd of its own (never Docker's), kube-apiserver,
# kube-controller-manager, kube-scheduler and a kubelet, all in the network
# namespace mu-k8s-NAME; a relay from 127.0.0.1:PORT on the host to the API
# server; the admin kubeconfig at /var/lib/mu-k8s/NAME/kubeconfig; the
# namespace mu-plugins-test with its default ServiceAccount. Waits until the
# node is Ready. Writes /var/lib/mu-k8s/NAME/env (KEY=VALUE lines) last: its
# presence means the cluster is up. Already up: says so and does nothing.
# Half up: tears the rest down first. On failure it prints the logs'
# directory and the tail of each log, and tears down what it started
# (MU_K8S_KEEP=1 keeps it for a look; down.sh NAME removes it).
# Builds first when the cache lacks something (build.sh). Root only.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
k8s_instance "${1:-dev}"
t0=$(k8s_now)
[ "$(id -u)" = 0 ] || { echo "k8s up: must run as root" >&2; exit 1; }

api() { # api METHOD PATH [BODY]: one call to the API server as admin, through the relay
	curl -sS --max-time 10 -A mu-k8s-up --cacert "$pki/ca.crt" --cert "$pki/admin.crt" --key "$pki/admin.key" \
		-X "$1" -H 'Content-Type: application/json' ${3:+--data "$3"} "https://127.0.0.1:$port$2"
}
if [ -s "$K8S_STATE/env" ]; then
	port=$(sed -n 's/^MU_K8S_PORT=//p' "$K8S_STATE/env") pki=$K8S_STATE/pki
	if [ "$(api GET /readyz 2>/dev/null)" = ok ]; then
		echo "k8s up: $K8S_NAME is already up: KUBECONFIG=$K8S_KUBECONFIG"
		exit 0
	fi
fi
if [ -e "$K8S_STATE" ] || [ -e "$K8S_NETNS" ]; then
	echo "k8s up: $K8S_NAME is half up or stale: tearing it down first"
	"$k8s_here/down.sh" "$K8S_NAME"
fi

"$k8s_here/build.sh"

rm -rf "$K8S_LOGS"
mkdir -p "$K8S_LOGS" "$K8S_STATE"/{pids,cmds,pki,run,etc,cni/net.d,cni/ipam,kubelet,pod-logs,volume-plugins}
pki=$K8S_STATE/pki
up_ok=0 why=
# What failed, for the last line a failed bring-up prints: a failing command
# under set -e (its line and text), or wait_for's own reason.
trap 'why=${why:-"line $LINENO: $BASH_COMMAND (exit $?)"}' ERR
on_exit() {
	local rc=$? d
	[ $up_ok = 1 ] && return
	echo "k8s up: FAILED to bring up $K8S_NAME; logs in $K8S_LOGS" >&2
	for f in "$K8S_LOGS"/*.log; do
		[ -s "$f" ] || continue
		echo "---- $(basename "$f") (last 15 lines)" >&2
		tail -n 15 "$f" >&2
	done
	for d in "$K8S_STATE"/pids/*; do
		[ -f "$d" ] || continue
		if k8s_ours "$(cat "$d")"; then echo "k8s up: $(basename "$d") was running" >&2; else echo "k8s up: $(basename "$d") was NOT running" >&2; fi
	done
	if [ "${MU_K8S_KEEP:-0}" = 1 ]; then
		echo "k8s up: left as it is (MU_K8S_KEEP=1): $k8s_here/down.sh $K8S_NAME removes it" >&2
	else
		"$k8s_here/down.sh" "$K8S_NAME" >&2 || true
	fi
	echo "k8s up: FAILED to bring up $K8S_NAME: ${why:-exit $rc} (logs in $K8S_LOGS)" >&2
}
trap on_exit EXIT
echo "${MU_K8S_OWNER:-}" >"$K8S_STATE/owner"

# wait_for WHAT SECONDS CMD...: polls CMD until it succeeds; fails early
# when a daemon whose log is WHAT.log has died.
wait_for() {
	local what=$1 secs=$2 i
	shift 2
	for ((i = 0; i < secs * 5; i++)); do
		"$@" >/dev/null 2>&1 && return 0
		local pidf=$K8S_STATE/pids/$what
		if [ -f "$pidf" ] && ! k8s_ours "$(cat "$pidf")"; then
			why="$what exited while waiting for: $*"
			echo "k8s up: $why" >&2
			return 1
		fi
		sleep 0.2
	done
	why="$what not ready after ${secs}s: $*"
	echo "k8s up: $why" >&2
	return 1
}

# --- the network namespace: lo, and the node's address on a veth (the
# kernel here has no dummy driver). The pod bridge comes from the CNI.
ip netns add "$K8S_ID"
ip -n "$K8S_ID" link set lo up
ip -n "$K8S_ID" link add node0 type veth peer name node1
ip -n "$K8S_ID" addr add "$K8S_NODE_IP/24" dev node0
ip -n "$K8S_ID" link set node0 up
ip -n "$K8S_ID" link set node1 up
# The "kubernetes" service address reaches the API server from pods (there
# is no kube-proxy): one DNAT rule, inside the namespace.
k8s_in_netns iptables -t nat -A PREROUTING -d "$K8S_SERVICE_IP/32" -p tcp --dport 443 \
	-j DNAT --to-destination "$K8S_NODE_IP:6443"

# --- the cgroup under which the kubelet puts its pods (cgroupRoot), so
# that clusters side by side never share /kubepods.
for d in $(k8s_cgroup_dirs); do
	mkdir -p "$d"
	case $d in
	*/cpuset/*)
		cat /sys/fs/cgroup/cpuset/cpuset.cpus >"$d/cpuset.cpus"
		cat /sys/fs/cgroup/cpuset/cpuset.mems >"$d/cpuset.mems"
		;;
	esac
done
if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
	sed 's/\([a-z_]*\)/+\1/g' /sys/fs/cgroup/cgroup.subtree_control >"/sys/fs/cgroup/$K8S_ID/cgroup.subtree_control"
fi

. "$k8s_here/pki.sh"
. "$k8s_here/configs.sh"

# --- the daemons.
k8s_start etcd nsenter --net="$K8S_NETNS" etcd --name default --data-dir "$K8S_STATE/etcd" \
	--listen-client-urls http://127.0.0.1:2379 --advertise-client-urls http://127.0.0.1:2379 \
	--listen-peer-urls http://127.0.0.1:2380 --initial-advertise-peer-urls http://127.0.0.1:2380 \
	--initial-cluster default=http://127.0.0.1:2380 --log-level warn --logger zap
k8s_start containerd nsenter --net="$K8S_NETNS" containerd --config "$K8S_STATE/etc/containerd.toml"

# The relay: host 127.0.0.1:PORT -> a unix socket -> NODE_IP:6443 in the
# namespace. A unix socket belongs to no network namespace.
k8s_start relay-ns nsenter --net="$K8S_NETNS" socat \
	"UNIX-LISTEN:$K8S_STATE/run/api.sock,fork,mode=600" "TCP:$K8S_NODE_IP:6443"
for attempt in 1 2 3 4 5 6 7 8; do
	port=$((30000 + RANDOM % 15000))
	ss -Hltn "sport = :$port" | grep -q . && continue
	k8s_start relay socat "TCP-LISTEN:$port,bind=127.0.0.1,reuseaddr,fork" "UNIX-CONNECT:$K8S_STATE/run/api.sock"
	sleep 0.3
	kill -0 "$(cat "$K8S_STATE/pids/relay")" 2>/dev/null && break
	[ $attempt = 8 ] && { why="no free port for the relay"; echo "k8s up: $why" >&2; exit 1; }
done
echo "$port" >"$K8S_STATE/port"
. "$k8s_here/kubeconfigs.sh"

wait_for etcd 60 k8s_healthy etcd
k8s_start kube-apiserver nsenter --net="$K8S_NETNS" "$K8S_BIN/kube-apiserver" \
	--etcd-servers=http://127.0.0.1:2379 \
	--bind-address=0.0.0.0 --secure-port=6443 --advertise-address="$K8S_NODE_IP" \
	--tls-cert-file="$pki/apiserver.crt" --tls-private-key-file="$pki/apiserver.key" \
	--client-ca-file="$pki/ca.crt" --anonymous-auth=false \
	--kubelet-client-certificate="$pki/apiserver-kubelet.crt" --kubelet-client-key="$pki/apiserver-kubelet.key" \
	--kubelet-certificate-authority="$pki/ca.crt" --kubelet-preferred-address-types=InternalIP \
	--service-account-issuer=https://kubernetes.default.svc \
	--service-account-key-file="$pki/sa.pub" --service-account-signing-key-file="$pki/sa.key" \
	--service-cluster-ip-range="$K8S_SERVICE_CIDR" \
	--authorization-mode=Node,RBAC --enable-admission-plugins=NodeRestriction \
	--allow-privileged=false --profiling=false
wait_for containerd 60 test -S "$K8S_SOCK"
t=$(k8s_now)
(
	# A shared lock keeps build.sh (another worktree's) from replacing the
	# tarballs meanwhile; no daemon inherits it.
	flock -s 9
	for img in "$K8S_IMAGES/pause.tar" "$K8S_IMAGES/pod.tar"; do
		ctr -a "$K8S_SOCK" -n k8s.io images import "$img" >>"$K8S_LOGS/images.log" 2>&1 ||
			{ echo "k8s up: ctr import $img failed" >&2; exit 1; }
	done
) 9>"$K8S_CACHE/.lock"
echo "k8s up: images imported in $(k8s_since "$t")"
wait_for kube-apiserver 180 k8s_healthy kube-apiserver

k8s_start kube-controller-manager nsenter --net="$K8S_NETNS" "$K8S_BIN/kube-controller-manager" \
	--kubeconfig="$K8S_STATE/etc/controller-manager.kubeconfig" \
	--authentication-kubeconfig="$K8S_STATE/etc/controller-manager.kubeconfig" \
	--authorization-kubeconfig="$K8S_STATE/etc/controller-manager.kubeconfig" \
	--service-account-private-key-file="$pki/sa.key" --root-ca-file="$pki/ca.crt" \
	--use-service-account-credentials=true --leader-elect=false --bind-address=127.0.0.1 --profiling=false
k8s_start kube-scheduler nsenter --net="$K8S_NETNS" "$K8S_BIN/kube-scheduler" \
	--kubeconfig="$K8S_STATE/etc/scheduler.kubeconfig" \
	--authentication-kubeconfig="$K8S_STATE/etc/scheduler.kubeconfig" \
	--authorization-kubeconfig="$K8S_STATE/etc/scheduler.kubeconfig" \
	--leader-elect=false --bind-address=127.0.0.1 --profiling=false
k8s_start kubelet nsenter --net="$K8S_NETNS" "$K8S_BIN/kubelet" \
	--config="$K8S_STATE/etc/kubelet.yaml" --kubeconfig="$K8S_STATE/etc/kubelet.kubeconfig" \
	--root-dir="$K8S_STATE/kubelet" --hostname-override="$K8S_ID" --node-ip="$K8S_NODE_IP"

node_ready() { [[ $(api GET "/api/v1/nodes/$K8S_ID") == *'"type":"Ready","status":"True"'* ]]; }
wait_for kubelet 120 node_ready
ns_json='{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"'$K8S_NAMESPACE'"}}'
out=$(api POST /api/v1/namespaces "$ns_json")
[[ $out == *'"kind":"Namespace"'* || $out == *AlreadyExists* ]] || { why="creating namespace $K8S_NAMESPACE: $out"; echo "k8s up: $why" >&2; exit 1; }
# The controller-manager makes each namespace's default ServiceAccount and
# its kube-root-ca.crt ConfigMap; a pod is refused (or held) without them.
has() { [[ $(api GET "$2") == *'"kind":"'$1'"'* ]]; } # has KIND PATH
for ns in default "$K8S_NAMESPACE"; do
	wait_for kube-controller-manager 60 has ServiceAccount "/api/v1/namespaces/$ns/serviceaccounts/default"
	wait_for kube-controller-manager 60 has ConfigMap "/api/v1/namespaces/$ns/configmaps/kube-root-ca.crt"
done

cat >"$K8S_STATE/env.tmp" <<ENV
MU_K8S_NAME=$K8S_NAME
MU_K8S_KUBECONFIG=$K8S_KUBECONFIG
MU_K8S_CONTEXT=$K8S_ID
MU_K8S_NAMESPACE=$K8S_NAMESPACE
MU_K8S_IMAGE=$K8S_POD_IMAGE
MU_K8S_NODE=$K8S_ID
MU_K8S_PORT=$port
MU_K8S_SERVER=https://127.0.0.1:$port
MU_K8S_NETNS=$K8S_NETNS
MU_K8S_CONTAINERD=$K8S_SOCK
MU_K8S_STATE=$K8S_STATE
MU_K8S_LOGS=$K8S_LOGS
MU_K8S_VERSION=$K8S_VERSION
ENV
mv "$K8S_STATE/env.tmp" "$K8S_STATE/env"
up_ok=1
echo "k8s up: $K8S_NAME ready in $(k8s_since "$t0"): KUBECONFIG=$K8S_KUBECONFIG (namespace $K8S_NAMESPACE, image $K8S_POD_IMAGE)"
