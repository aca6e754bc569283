# turn.sh: emitturn, for the operations that read a settled turn (read,
# wait). A record of at most $inl bytes travels whole in the run's output
# ("@turn", base64); a larger one is only named ("turnbig SIZE INC.N"): the
# caller reads its head over the Runner's Files (SFTP), else with the
# turnhead operation, so a turn of many MiB never passes through a script's
# output. inl is set by the operation (its last argument).
inl=
# emitturn FILE NAME: turn record FILE (NAME: its "<inc>.<n>").
emitturn() {
	[ -f "$1" ] || return 0
	sz=$(wc -c <"$1") || return 0
	sz=$((sz + 0))
	if [ -n "$inl" ] && [ "$sz" -gt "$inl" ]; then
		say "turnbig $sz $2"
	else
		emit turn "$1"
	fi
}
