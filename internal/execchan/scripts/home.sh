# home.sh ARGV…: runs ARGV in the login directory ($HOME; / when there is
# none), as the channel's runs are.
cd 2>/dev/null || cd /; exec "$@"
