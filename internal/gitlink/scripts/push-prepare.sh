# push-prepare.sh REPO REV: readies REPO for a push of REV (a full sha).
# exit 0: REPO is a git repository without REV (created now if it was
#         none): push REV.
# exit 3: REPO already holds REV: nothing to push, nothing touched.
# other:  REPO cannot be made a repository (git says why on stderr).
repo=$1 rev=$2
if git -C "$repo" rev-parse --git-dir >/dev/null 2>&1; then
	if git -C "$repo" cat-file -e "$rev^{commit}" 2>/dev/null; then
		exit 3
	fi
	exit 0
fi
git init -q -- "$repo" >&2
