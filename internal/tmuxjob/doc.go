// Package tmuxjob runs mu's detached agent jobs under tmux on any host a
// Runner reaches, and serves their channel over the harness contract
// (docs/harness.md). It keeps no state in the plugin: every fact is a file
// on the host, so any invocation reads what another wrote, and a plugin
// killed at any point leaves nothing a later call cannot resolve.
//
// On the host, under Options.Root:
//
//	tmux.sock                 the one tmux socket (Options.Socket)
//	jobs/<id>/                one job (id: 24 hex digits of the key's sha256)
//	  lock                    flock: start, lookup, stop, deliveries and receipts take it
//	  key agent cwd cmd env   the spec (env: `export NAME='value'` lines)
//	  wrap                    the wrapper the tmux pane runs
//	  started go              the start's commit, and its release of the wrapper
//	  fenced stopped          a fenced lookup's none, a stop: no start after them
//	  notaccepted/<hash>      a receipt's not-accepted: no delivery of that msgId after it
//	  pid exit                the wrapper's pid, the command's exit code
//	  log                     the terminal's output (tmux pipe-pane)
//	  harness role            a harness adapter (adapters.go) and the spec's role
//	  adapter/ quiet          the adapter's own files; no nudge during a turn
//	  chan/                   $MU_CHANNEL_DIR: inbox/, answers/, out/ (the contract)
//
// Wiring a backend (the docker plugin, the ssh plugin): give each host a
// Runner (an exec in the container; a session on the SSH connection), find
// its state root once (Roots), build a Jobs per call from the call's target
// through a Resolver, add Handlers(resolve) to the plugin's method table
// (every job.* and channel.* method), declare the job and channel seams
// Seams returns, and make Options.View a command that runs the plugin's own
// view sub-command (ViewCmd, which calls Jobs.Follow). A Runner that can
// also move files without a script run (Files: SFTP on the SSH connection)
// serves Install, the view's log reads and large turn records (turn.go).
//
// Every script is a constant (scripts/*.sh) run as `/bin/sh -c SCRIPT
// mu-tmuxjob ROOT ID SOCKET ARGS…`; values travel as arguments or on stdin
// (delivery text, spec.env), never spliced into a command line.
package tmuxjob
