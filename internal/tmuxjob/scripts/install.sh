# install.sh PATH: writes stdin to PATH (creating its directory), mode 0755,
# through a temporary file renamed into place.
set -e
mkdir -p "$(dirname "$1")"
cat >"$1.tmp.$$"
chmod 755 "$1.tmp.$$"
mv -f "$1.tmp.$$" "$1"
