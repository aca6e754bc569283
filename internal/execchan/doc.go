// Package execchan is the link's long-lived exec channels into a sandbox
// (a Docker container, a Kubernetes pod), shared by the backends whose
// exec API has no kill: a POSIX sh loop (AgentScript) runs each script or
// argv it is sent, marks the run's processes (RunVar) and kills what the
// run left behind; a timed-out run is killed from a second exec
// (StopScript) before the answer, so no process of a run survives it
// (remoteOnTimeout "stopped"). A Pool keeps a host's channels for warm
// calls; Pool.Run is tmuxjob's Runner over them.
package execchan
