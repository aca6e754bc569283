# exec.sh [GIT_PROTOCOL=V] CMD [ARG…] (between arm.sh and disarm.sh): runs
# CMD with stdin passed through (git's protocol). A first argument
# GIT_PROTOCOL=… is exported instead of run. One line, as arm.sh.
# $1 is GIT_PROTOCOL=VALUE: export assigns and exports it.
# shellcheck disable=SC2163
case "$1" in GIT_PROTOCOL=*) export "$1"; shift;; esac; \
"$@"
