# onboard.awk: Claude Code's global config file (~/.claude.json) with the
# answers to its first-run screens added (the claude adapter, on a host
# the plugin owns; docs/harness.md "What the plugin writes in a home"):
# hasCompletedOnboarding (the theme and security-notes screens), a theme
# unless one is set, bypassPermissionsModeAccepted (the bypass-mode
# warning), projects[cwd] trusted (the folder-trust screen), and, given a
# key, customApiKeyResponses.approved holding its last 20 characters (the
# "Detected a custom API key" screen). These are the keys Claude Code
# keeps there, as the tools that run it in containers pre-seed them
# (e.g. majorcontext/moat#253, khromov/codebay#89, anthropics/claude-code#8938).
# Its environment: ONBOARD_CWD and ONBOARD_KEY, JSON string literals
# (the key "" for none; not -v, which would undo their escapes). Input:
# the file (empty: none yet). Nothing is removed or reordered: each member
# is appended at the end of its object, and JSON.parse (Claude Code is a
# JavaScript program) keeps a duplicate key's last value; Claude Code
# rewrites the file whole when it next saves it.
BEGIN { RS = "\001"; cwd = ENVIRON["ONBOARD_CWD"]; key = ENVIRON["ONBOARD_KEY"] }
{ s = (NR > 1 ? s RS : "") $0 }
END {
	top = "\"hasCompletedOnboarding\":true,\"bypassPermissionsModeAccepted\":true"
	proj = cwd ":{\"hasTrustDialogAccepted\":true,\"hasCompletedProjectOnboarding\":true}"
	kr = key != "" ? ",\"customApiKeyResponses\":{\"approved\":[" key "],\"rejected\":[]}" : ""
	if (s !~ /^[ \t\r\n]*\{/) {
		printf "{%s,\"theme\":\"dark\",\"projects\":{%s}%s}\n", top, proj, kr
		exit 0
	}
	n = length(s); d = 0; str = 0; esc = 0; cur = ""; last = ""; k1 = ""; inproj = 0; theme = 0; projects = 0
	for (i = 1; i <= n; i++) {
		c = substr(s, i, 1)
		if (str) {
			if (length(cur) < 200) cur = cur c
			if (esc) esc = 0
			else if (c == "\\") esc = 1
			else if (c == "\"") { str = 0; last = cur }
			printf "%s", c
			continue
		}
		if (c == "\"") { str = 1; cur = c; full[d] = 1 }
		else if (c == ":" && d == 1) { k1 = last; if (k1 == "\"theme\"") theme = 1 }
		else if (c == "{") {
			full[d] = 1; d++; full[d] = 0
			if (d == 2 && k1 == "\"projects\"") { inproj = 1; projects = 1 }
		} else if (c == "}") {
			if (d == 2 && inproj) { printf "%s%s", (full[2] ? "," : ""), proj; inproj = 0 }
			if (d == 1) {
				printf "%s%s", (full[1] ? "," : ""), top
				if (!theme) printf ",\"theme\":\"dark\""
				if (!projects) printf ",\"projects\":{%s}", proj
				printf "%s", kr
			}
			d--
		} else if (c !~ /[ \t\r\n]/) full[d] = 1
		printf "%s", c
	}
}
