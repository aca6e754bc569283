# json.awk: prints the value of the top-level string member `key` (awk -v
# key=NAME) of the JSON on stdin, decoded to UTF-8, with nothing added;
# exit 1 when there is none. On JSON lines, the first object that has it.
# With -v deep=1: the last string member `key` at any depth.
# Run it with LC_ALL=C: a decoded character is written byte by byte.
BEGIN { RS = "\001"; hex = "0123456789abcdef" }
{ s = (NR > 1 ? s "\001" : "") $0 }
function hexval(h,   v, k) {
	v = 0
	h = tolower(h)
	for (k = 1; k <= 4; k++) v = v * 16 + index(hex, substr(h, k, 1)) - 1
	return v
}
function utf8(cp) {
	if (cp < 128) return sprintf("%c", cp)
	if (cp < 2048) return sprintf("%c%c", 192 + int(cp / 64), 128 + cp % 64)
	if (cp < 65536) return sprintf("%c%c%c", 224 + int(cp / 4096), 128 + int(cp / 64) % 64, 128 + cp % 64)
	return sprintf("%c%c%c%c", 240 + int(cp / 262144), 128 + int(cp / 4096) % 64, 128 + int(cp / 64) % 64, 128 + cp % 64)
}
# put(mode, t): mode 2 prints t, 1 returns it, 0 drops it.
function put(mode, t) {
	if (mode == 2) { printf "%s", t; return "" }
	return mode == 1 ? t : ""
}
# str(mode): the string whose opening quote is at i, decoded; i moves past
# its closing quote.
function str(mode,   r, c, st, e, cp, lo) {
	i++
	st = i
	r = ""
	while (i <= n) {
		c = substr(s, i, 1)
		if (c == "\"") { r = r put(mode, substr(s, st, i - st)); i++; return r }
		if (c != "\\") { i++; continue }
		r = r put(mode, substr(s, st, i - st))
		e = substr(s, i + 1, 1)
		i += 2
		if (e == "u") {
			cp = hexval(substr(s, i, 4))
			i += 4
			if (cp >= 55296 && cp < 56320 && substr(s, i, 2) == "\\u") {
				lo = hexval(substr(s, i + 2, 4))
				if (lo >= 56320 && lo < 57344) { cp = 65536 + (cp - 55296) * 1024 + (lo - 56320); i += 6 }
			}
			e = utf8(cp)
		} else if (e == "n") e = "\n"
		else if (e == "t") e = "\t"
		else if (e == "r") e = "\r"
		else if (e == "b") e = "\b"
		else if (e == "f") e = "\f"
		r = r put(mode, e)
		st = i
	}
	return r
}
END {
	n = length(s)
	i = 1
	depth = 0
	wantkey = 0
	found = 0
	while (i <= n) {
		c = substr(s, i, 1)
		if (c == "\"") {
			if (wantkey) { cur[depth] = str(1); wantkey = 0; continue }
			if ((depth == 1 || deep) && ctype[depth] == "{" && cur[depth] == key) {
				if (!deep) { str(2); exit 0 }
				last = str(1)
				found = 1
				continue
			}
			str(0)
			continue
		}
		if (c == "{" || c == "[") { depth++; ctype[depth] = c; wantkey = (c == "{"); cur[depth] = "" }
		else if (c == "}" || c == "]") { depth--; wantkey = 0 }
		else if (c == ",") wantkey = (ctype[depth] == "{")
		i++
	}
	if (found) { printf "%s", last; exit 0 }
	exit 1
}
