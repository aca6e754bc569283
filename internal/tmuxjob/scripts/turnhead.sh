# turnhead: $1 a turn record's name ("<inc>.<n>"), $2 how many bytes of it.
# The record's head, a base64 blob ("@turn", as lib.sh's emit prints one),
# for a Runner with no Files (or a host without SFTP): a record too large
# for read's and wait's output.
name=$1 n=$2
f=$c/out/turns/$name
[ -f "$f" ] || { say "ERR no turn record $name"; exit 1; }
printf '@turn\n'
head -c "$n" "$f" | base64
printf '@\n'
say "ok 1"
