// Package testutil holds the helpers the test packages share, defined
// once: a locked buffer (LockedBuffer), waiting for an outcome
// (Eventually, Poll, Context), a value as JSON (JSON), a writer into the
// test's log (LogWriter), git, docker and processes (Git, Repo, ShQuote,
// RandHex, Docker, DockerCLI, Alive, Procs), a crash
// drill's parts (ParallelAtMost, Trials, KillPoint, Tally), and the
// one way a test gets a program to run:
//
//   - this test binary itself, as a named command (Main and Command, on
//     testscript's Main, as mvdan/sh does): a package's own test plugins
//     and mains, run under -race with the tests;
//   - a main package built once per test binary: Build (a plugin the tests
//     run against), BuildRace (the plugin under test, under -race with the
//     tests), BuildShipped (static, as `make build` ships it).
//
// It imports no package of this module, so that any test, protocol's and
// protocol/caller's included, can use it. Driving a plugin through
// protocol/caller is package drive's (internal/testutil/drive).
package testutil
