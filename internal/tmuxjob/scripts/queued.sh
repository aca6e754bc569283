# queued: how many deliveries wait past the harness's cursor.
readstate "$c/out/state"
entries "$c/inbox"
say "queued $Q"
