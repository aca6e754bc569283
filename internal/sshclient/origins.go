package sshclient

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// origins says where each option of one resolution was set: the --option
// flags first (they are ssh's -o, which win), then the config regions ssh
// applied, in the order it applied them. OpenSSH keeps the first value it
// obtains, so the first line naming an option inside an applied region is
// the one that set it.
type origins struct {
	options []string // Key=Value
	files   []string // config files read, in order
	regions []region

	optionFlag string // how the plugin names --option ("" is --option)

	mu    sync.Mutex
	lines map[string][]string
}

// region is a run of config lines that applied: from a line to the next
// Host or Match line (or the end of the file).
type region struct {
	file string
	from int // 1-based, the first line after the Host/Match line
}

var (
	reReading = regexp.MustCompile(`^debug\d: Reading configuration data (.+)$`)
	reApplied = regexp.MustCompile(`^debug\d: (.+) line (\d+): Applying options for `)
	reMatched = regexp.MustCompile(`^debug\d: (.+) line (\d+): (not )?matched `)
	reFound   = regexp.MustCompile(`^debug\d: match found$`)
)

// parseDebug reads `ssh -G -vvv`'s stderr: the files it read, the Host
// blocks it applied and the Match blocks that matched. Only these lines
// are read; nothing else of the debug output is kept (it can quote the
// environment).
func parseDebug(stderr string, opts []string) *origins {
	o := &origins{options: opts}
	var lastMatch *region
	for _, l := range strings.Split(stderr, "\n") {
		l = strings.TrimRight(l, "\r ")
		if m := reReading.FindStringSubmatch(l); m != nil {
			o.files = appendNew(o.files, m[1])
			o.regions = append(o.regions, region{file: m[1], from: 1})
			continue
		}
		if m := reApplied.FindStringSubmatch(l); m != nil {
			n, _ := strconv.Atoi(m[2])
			o.regions = append(o.regions, region{file: m[1], from: n + 1})
			continue
		}
		if m := reMatched.FindStringSubmatch(l); m != nil {
			n, _ := strconv.Atoi(m[2])
			lastMatch = &region{file: m[1], from: n + 1}
			continue
		}
		if reFound.MatchString(l) && lastMatch != nil {
			o.regions = append(o.regions, *lastMatch)
			lastMatch = nil
		}
	}
	return o
}

func appendNew(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

// find returns where key was first set ("--option Key=Value" or "FILE
// line N") and the value as written there.
func (o *origins) find(key string) (where, value string, ok bool) {
	for _, opt := range o.options {
		if k, v := splitKeyword(opt); strings.EqualFold(k, key) {
			flag := o.optionFlag
			if flag == "" {
				flag = "--option"
			}
			return flag + " " + opt, v, true
		}
	}
	for _, rg := range o.regions {
		lines := o.fileLines(rg.file)
		for i := rg.from - 1; i >= 0 && i < len(lines); i++ {
			k, v := splitKeyword(lines[i])
			if strings.EqualFold(k, "host") || strings.EqualFold(k, "match") {
				break
			}
			if strings.EqualFold(k, key) {
				return fmt.Sprintf("%s line %d", rg.file, i+1), v, true
			}
		}
	}
	return "", "", false
}

func (o *origins) fileLines(path string) []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	if l, ok := o.lines[path]; ok {
		return l
	}
	if o.lines == nil {
		o.lines = map[string][]string{}
	}
	b, err := os.ReadFile(ExpandTilde(path))
	if err != nil {
		o.lines[path] = nil
		return nil
	}
	o.lines[path] = strings.Split(string(b), "\n")
	return o.lines[path]
}

// splitKeyword splits an ssh_config line, "Key value" or "Key=value",
// into its keyword and its value (comments and blank lines give "").
func splitKeyword(line string) (key, value string) {
	line = strings.TrimSpace(line)
	if line == "" || strings.HasPrefix(line, "#") {
		return "", ""
	}
	i := strings.IndexAny(line, " \t=")
	if i < 0 {
		return line, ""
	}
	key, rest := line[:i], strings.TrimLeft(line[i:], " \t")
	rest = strings.TrimPrefix(rest, "=")
	return key, strings.TrimSpace(rest)
}
