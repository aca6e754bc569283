# root: $1 the jobs directory as configured: absolute, or under the login
# directory. Prints "home DIR" for a relative one (the login directory,
# `cd && pwd -P`; "nohome 1" when there is none), then checks the state
# root and its jobs/ folder, where they exist: each must be the user's and
# neither group nor others may write it, else another user could swap a
# job's folder and the plugin would report forged state ("unsafe PATH
# WHY"). Every folder the plugin makes under them is made with umask 077.
dir=$1
case $dir in
/*) r=$dir ;;
*)
	h=$(cd && pwd -P) || { say "nohome 1"; exit 0; }
	case $h in /*) ;; *) say "nohome 1"; exit 0 ;; esac
	say "home $h"
	r=${h%/}/$dir
	;;
esac
for f in "$r" "$r/jobs"; do
	[ -e "$f" ] || continue
	[ -O "$f" ] || { say "unsafe $f is owned by another user"; exit 0; }
	m=$(ls -ld "$f") || { say "unsafe $f cannot be read"; exit 0; }
	case ${m%% *} in
	?????w* | ????????w*) say "unsafe $f can be written by group or others (${m%% *})"; exit 0 ;;
	esac
done
say "ok 1"
