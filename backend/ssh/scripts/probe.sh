# probe.sh: the reach phase's probe, in one session: the shell, git and its
# version, and whether the login directory is writable.
echo "mu-sh ok"
if command -v git >/dev/null 2>&1; then echo "mu-git $(git --version 2>&1)"; else echo "mu-git none"; fi
t=".mu-check-$$"; if ( : > "$t" ) 2>/dev/null; then rm -f "$t"; echo "mu-home ok $(pwd)"; else echo "mu-home ro $(pwd)"; fi
