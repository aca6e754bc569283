#!/usr/bin/env bash
# component.sh NAME ACTION COMPONENT: stops or starts one part of the running
# test cluster NAME, for tests of what a client sees when it goes away.
#   stop     SIGTERM, SIGKILL after 10 s; returns once it has exited
#   kill     SIGKILL at once (a crash)
#   start    starts it again (unless it runs) with the command line up.sh
#            gave it, and waits (at most 120 s) until it answers its health
#            check
#   restart  stop, then start
# COMPONENT: etcd, containerd, kube-apiserver, kube-controller-manager,
# kube-scheduler or kubelet. The pods keep running while the kubelet or
# containerd is down (their shims hold them). Starting the API server
# restarts the scheduler and the controller-manager too (below).
# internal/testk8s calls this.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
[ $# = 3 ] || { echo "usage: component.sh NAME stop|kill|start|restart COMPONENT" >&2; exit 2; }
k8s_instance "$1"
action=$2 comp=$3
case $comp in
etcd | containerd | kube-apiserver | kube-controller-manager | kube-scheduler | kubelet) ;;
*) echo "k8s component: unknown component '$comp'" >&2; exit 2 ;;
esac
[ -s "$K8S_STATE/env" ] || { echo "k8s component: cluster $K8S_NAME is not up" >&2; exit 1; }
pidf=$K8S_STATE/pids/$comp

stop() { # stop SIGNAL
	local pid
	pid=$(cat "$pidf" 2>/dev/null) || return 0
	k8s_ours "$pid" || return 0
	kill "-$1" "$pid" 2>/dev/null || true
	for ((i = 0; i < 100; i++)); do
		k8s_ours "$pid" || return 0
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null || true
	for ((i = 0; i < 50; i++)); do
		k8s_ours "$pid" || return 0
		sleep 0.1
	done
	echo "k8s component: $comp ($pid) does not exit" >&2
	return 1
}

start() {
	local pid
	if ! { pid=$(cat "$pidf" 2>/dev/null) && k8s_ours "$pid"; }; then
		mapfile -d '' -t argv <"$K8S_STATE/cmds/$comp"
		echo "--- component.sh: start $(date -u +%FT%TZ)" >>"$K8S_LOGS/$comp.log"
		k8s_start "$comp" "${argv[@]}"
	fi
	for ((i = 0; i < 600; i++)); do
		k8s_healthy "$comp" && return 0
		k8s_ours "$(cat "$pidf")" || { echo "k8s component: $comp exited; see $K8S_LOGS/$comp.log" >&2; return 1; }
		sleep 0.2
	done
	echo "k8s component: $comp does not answer after 120 s; see $K8S_LOGS/$comp.log" >&2
	return 1
}

# After the API server's start, the scheduler and the controller-manager are
# restarted too: their watches fail with 403 while its RBAC cache fills and
# then back off for up to a minute, which left the next pod unscheduled
# that long.
start_all() {
	start || return 1
	if [ "$comp" = kube-apiserver ]; then
		for comp in kube-scheduler kube-controller-manager; do
			pidf=$K8S_STATE/pids/$comp
			stop TERM && start || return 1
		done
	fi
}

case $action in
stop) stop TERM ;;
kill) stop KILL ;;
start) start_all ;;
restart) stop TERM && start_all ;;
*) echo "k8s component: unknown action '$action'" >&2; exit 2 ;;
esac
