# queued: how many deliveries wait past the harness's cursor.
cursor=$(val cursor "$c/out/state" 2>/dev/null)
n=$(ls "$c/inbox" 2>/dev/null | awk -F. -v cur="${cursor:-0}" '$1+0 > cur+0' | wc -l)
say "queued $((n))"
