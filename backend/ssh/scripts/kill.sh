# kill.sh PGID: the control session's stop of a run whose wrapper leads
# process group PGID (arm.sh). It SIGKILLs the group, then re-checks
# (ignoring zombies, through /proc where it exists) until nothing of it is
# left, about 4 s at most, and prints "mu-ctl gone" or "mu-ctl left".
# It kills the group only when the wrapper really leads it (sshd makes
# every session's process a group leader; a server that does not would
# leave the wrapper in the server's own group): otherwise it kills the
# wrapper's process tree, read from /proc parent links.
# It runs inside the kept control shell, with PGID set by `set --`: it
# never exits. One line, as arm.sh (its lines are continued).
g=$1; \
# st splits a stat line's fields after the command's name on purpose.
# shellcheck disable=SC2086
st() { read -r l < "$1" || return 1; r=${l##*) }; set -- $r; s=$1; pp=$2; pg=$3; }; \
if [ -r /proc/self/stat ] && st "/proc/$g/stat" && [ "$pg" != "$g" ]; then tree=1; else tree=; fi; \
members() { if [ -n "$tree" ]; then t=" $g "; ch=1; \
while [ -n "$ch" ]; do ch=; for f in /proc/[0-9]*/stat; do st "$f" || continue; p=${f#/proc/}; p=${p%/stat}; \
case "$t" in *" $p "*) continue;; esac; case "$t" in *" $pp "*) t="$t$p "; ch=1;; esac; done; done; echo "$t"; \
elif [ -r /proc/self/stat ]; then for f in /proc/[0-9]*/stat; do st "$f" || continue; [ "$pg" = "$g" ] && [ "$s" != Z ] && { p=${f#/proc/}; echo "${p%/stat}"; }; done; \
else kill -0 -"$g" && echo "$g"; fi; }; \
kill1() { if [ -n "$tree" ]; then for p in $(members); do kill -9 "$p"; done; else kill -9 -"$g"; fi; }; \
alive() { for p in $(members); do [ -n "$tree" ] && { st "/proc/$p/stat" || continue; [ "$s" = Z ] && continue; }; return 0; done; return 1; }; \
kill1; i=0; while alive; do [ $i -ge 40 ] && break; sleep 0.1 || sleep 1; kill1; i=$((i+1)); done; \
if alive; then echo "mu-ctl left"; else echo "mu-ctl gone"; fi
