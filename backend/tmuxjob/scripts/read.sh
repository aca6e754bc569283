# read: $1 incarnation ("" for the current one), $2 turn number (0: none).
# The harness's state, and one settled turn's record.
inc=$1 n=$2
[ -e "$d/started" ] || { say "nojob 1"; exit 0; }
emit agent "$d/agent"
tmpdir
if [ -f "$c/out/state" ]; then
	cp "$c/out/state" "$T/state" 2>/dev/null && emit state "$T/state"
fi
if [ "$n" != 0 ]; then
	[ -n "$inc" ] || inc=$(val inc "$T/state" 2>/dev/null)
	emit turn "$c/out/turns/$inc.$n"
fi
say "ok 1"
