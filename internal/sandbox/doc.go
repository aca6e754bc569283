// Package sandbox is what a provider of sandbox hosts reached over pooled
// exec channels (internal/execchan) has in common, whatever the provider:
// the hosts an instance acquired and their channels (Hosts), the link's
// exec, fetch and push (the git bridge over a one-off exec), tmuxjob's jobs
// over the same channels with the host's state deciding first (JobHandlers),
// the method table with its instance check and its reach gate (Methods),
// the declaration's shape (Seams), and the acquire terms every provider
// takes (Terms). A backend keeps only its provider's own calls (Docker's
// Engine API, Kubernetes' client-go): its Backend implements the Provider
// interface (Reach, HostMethods and Gate) and is given to NewHosts.
package sandbox
