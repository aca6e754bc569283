# arm.sh SECS DIR [ARG…]: the wrapper's preamble, before every run.
# It prints its process group ($$: sshd makes the session's process a group
# leader, and the command line execs into this shell) on stderr's first
# line, arms a watchdog in the group that kills the whole group SECS
# seconds later (the plugin cannot act on a lost connection), enters DIR,
# and clears its own variables; what follows sees ARG… as "$@". Its
# variables start with __mu_ so a script cannot clash with them.
# It is one line (its lines are continued with a backslash): it travels
# inside the SSH command line, which the login shell reads first, whichever
# it is (bash, fish, tcsh…): so it holds no newline, no "\\" and no "\'",
# which fish reads as escapes inside single quotes. DIR and each ARG
# arrive as argEncode made them: one that starts with % is printf's %b
# escapes of the value (its newlines, quotes, backslashes and ! escaped:
# what fish and tcsh would read otherwise), decoded here.
__mu_t=$1; \
__mu_d=$2; \
shift 2; \
case $__mu_d in %*) __mu_d=$(printf "%b." "${__mu_d#%}"); __mu_d=${__mu_d%.};; esac; \
__mu_n=$#; \
for __mu_a; do case $__mu_a in %*) __mu_a=$(printf "%b." "${__mu_a#%}"); __mu_a=${__mu_a%.};; esac; set -- "$@" "$__mu_a"; done; \
shift "$__mu_n"; \
__mu_p=$$; \
echo "mu-ssh-pg $__mu_p" >&2; \
( trap "kill \$s 2>/dev/null; exit 0" TERM; sleep "$__mu_t" & s=$!; wait $s; kill -9 -$__mu_p ) </dev/null >/dev/null 2>&1 & __mu_w=$!; \
cd "$__mu_d" || { kill $__mu_w; exit 125; }; \
__mu_w2=$__mu_w; \
__mu_t=; \
__mu_d=; \
__mu_p=; \
__mu_w=; \
__mu_a=; \
__mu_n=
