# Why the Engine socket could not be opened over SSH (run on the remote
# host by the login shell as `/bin/sh -c SCRIPT`). The socket path is the
# first line of stdin. Prints one word (missing, not-a-socket, denied or
# open), then `ls -ld` of the socket (an empty line when there is none),
# then `id`. This text travels inside single quotes: it must hold none.
IFS= read -r p || exit 3
if [ ! -e "$p" ]; then
	echo missing
elif [ ! -S "$p" ]; then
	echo not-a-socket
elif [ -r "$p" ] && [ -w "$p" ]; then
	echo open
else
	echo denied
fi
ls -ld -- "$p" 2>/dev/null || echo
id
