# arm.sh SECS DIR [ARG…]: the wrapper's preamble, before every run.
# It prints its process group ($$: sshd makes the session's process a group
# leader, and the command line execs into this shell) on stderr's first
# line, arms a watchdog in the group that kills the whole group SECS
# seconds later (the plugin cannot act on a lost connection), enters DIR,
# and clears its own variables; what follows sees ARG… as "$@". Its
# variables start with __mu_ so a script cannot clash with them.
# It is one line (its lines are continued with a backslash): it travels
# inside the SSH command line, which the login shell reads first.
__mu_t=$1; \
__mu_d=$2; \
shift 2; \
__mu_p=$$; \
echo "mu-ssh-pg $__mu_p" >&2; \
( trap "kill \$s 2>/dev/null; exit 0" TERM; sleep "$__mu_t" & s=$!; wait $s; kill -9 -$__mu_p ) </dev/null >/dev/null 2>&1 & __mu_w=$!; \
cd "$__mu_d" || { kill $__mu_w; exit 125; }; \
__mu_w2=$__mu_w; \
__mu_t=; \
__mu_d=; \
__mu_p=; \
__mu_w=
