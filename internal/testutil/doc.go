// Package testutil is the index of the helpers the test packages share,
// each defined once, in a package by concern:
//
//   - waitfor: waiting for an outcome, never a fixed sleep (Eventually,
//     Poll, PollContext, Context, Patience);
//   - testlog: what a test captures and logs (LogWriter, Logger,
//     LockedBuffer);
//   - words: the strings tests make (JSON, ShQuote, RandHex);
//   - gitrepo: git with a test identity, and repositories (Git, Repo);
//   - osproc: a test's processes on this machine (Alive, Procs);
//   - dockercli: the docker CLI (Docker, DockerCLI, DockerLabelled);
//   - crashdrill: a crash drill's parts (Trials, ParallelAtMost,
//     Parallel, KillPoint, Tally);
//   - programs: the one way a test gets a program to run: this test
//     binary as a named command (Main, Command), or a main built once
//     (Build, BuildRace, BuildShipped);
//   - panes: a tmux server of the test's own, as mu's panes (Panes);
//   - drive: the one way a test drives a plugin, through protocol/caller;
//   - sandboxtest: the providers' tests' set-up and shared checks.
//
// All but drive and sandboxtest import no package of this module outside
// internal/testutil, so that any test, protocol's and protocol/caller's
// included, can use them.
package testutil
