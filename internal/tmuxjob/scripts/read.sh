# read: $1 incarnation ("" for the current one), $2 turn number (0: none;
# -1: the last settled turn when the agent is idle), $3 the largest record
# emitted whole (turn.sh). The harness's state (one snapshot), and one
# settled turn's record.
inc=$1 n=$2 inl=$3
[ -e "$d/started" ] || { say "nojob 1"; exit 0; }
emitv agent "$d/agent"
emitv failed "$c/out/failed"
if readstate "$c/out/state"; then
	saystate
fi
if [ "$n" = -1 ]; then
	n=0
	[ "$st_state" = idle ] && [ "$st_runs" != 0 ] && n=$st_runs
fi
if [ "$n" != 0 ]; then
	[ -n "$inc" ] || inc=$st_inc
	[ -n "$inc" ] && emitturn "$c/out/turns/$inc.$n" "$inc.$n"
fi
say "ok 1"
