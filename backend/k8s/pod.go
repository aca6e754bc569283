package k8s

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mu-org/mu-plugins/internal/execchan"
)

// podName is the key's pod name. The name is the API server's atomic
// compare-and-set: a second create under it fails (AlreadyExists), so a
// key has at most one pod, and a fence placeholder under it refuses a late
// acquire.
func (b *Backend) podName(key string) string {
	sum := sha256.Sum256([]byte(key))
	return b.cfg.Prefix + "-" + hex.EncodeToString(sum[:16])
}

// hostCommand is the container's command (execchan.HostCommand): it
// waits, exits at once on SIGTERM (a process that ignores it would hold a
// delete for the whole grace period), and exits 0 once the host has been
// idle for the idle param, so that the pod ends (Succeeded) and reads
// gone with no mu running. The ttl is the pod's activeDeadlineSeconds
// (the cluster's clock, not the node's).
func hostCommand(s acquireSpec) []string { return execchan.HostCommand(nil, s.Idle) }

// hostPod is the pod of an acquire. The security defaults: not
// privileged, no privilege escalation, every capability dropped, a
// non-root user (runAsNonRoot), the runtime's default seccomp profile, no
// host namespace, no volume (no service account token either), no
// service links; limits always set. The pause container is PID 1 of a
// shared process namespace: it reaps orphans (Docker's --init).
func (b *Backend) hostPod(name, key string, s acquireSpec, annot map[string]string) *corev1.Pod {
	no, yes := false, true
	labels := b.labels()
	psc := &corev1.PodSecurityContext{RunAsNonRoot: &yes,
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}}
	if s.RunAsUser > 0 {
		uid := s.RunAsUser
		psc.RunAsUser = &uid
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, Annotations: annot},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			AutomountServiceAccountToken:  &no,
			EnableServiceLinks:            &no,
			ShareProcessNamespace:         &yes,
			ServiceAccountName:            s.ServiceAccount,
			NodeSelector:                  s.NodeSelector,
			TerminationGracePeriodSeconds: int64p(5),
			SecurityContext:               psc,
			Containers: []corev1.Container{{
				Name: containerName, Image: s.Image, ImagePullPolicy: s.PullPolicy, Command: hostCommand(s),
				Resources: corev1.ResourceRequirements{Limits: s.Limits, Requests: s.Requests},
				SecurityContext: &corev1.SecurityContext{
					Privileged: &no, AllowPrivilegeEscalation: &no, RunAsNonRoot: &yes,
					Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				},
			}},
		},
	}
	if s.RuntimeClass != "" {
		rc := s.RuntimeClass
		pod.Spec.RuntimeClassName = &rc
	}
	if s.TTL > 0 {
		// The cluster ends the pod at its deadline (phase Failed,
		// DeadlineExceeded), even with no mu running.
		pod.Spec.ActiveDeadlineSeconds = int64p(int64(s.TTL.Seconds()) + 1)
	}
	return pod
}

// fencePod is the placeholder that makes a fenced none final: it holds the
// key's name and can never run (a scheduling gate nothing removes: it is
// never scheduled, so it takes no resources and needs no image).
func (b *Backend) fencePod(name, key string) *corev1.Pod {
	no := false
	labels := b.labels()
	labels[LabelFence] = "1"
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, Annotations: map[string]string{AnnotKey: key}},
		Spec: corev1.PodSpec{
			SchedulingGates:              []corev1.PodSchedulingGate{{Name: "org.mu-plugins/fence"}},
			AutomountServiceAccountToken: &no,
			RestartPolicy:                corev1.RestartPolicyNever,
			Containers:                   []corev1.Container{{Name: containerName, Image: "mu-plugins.invalid/fence:never-runs", Command: []string{"false"}}},
		},
	}
}

func int64p(n int64) *int64 { return &n }

// labels are the labels of every pod the plugin creates: its own and the
// --label ones.
func (b *Backend) labels() map[string]string {
	l := map[string]string{LabelPlugin: pluginLabelVal, LabelInstance: b.instance}
	for k, v := range b.cfg.Labels {
		l[k] = v
	}
	return l
}

// podHealth is what a pod's status says of it as a host.
type podHealth int

const (
	podUp      podHealth = iota // running, its container ready
	podComing                   // pending or starting, nothing wrong seen
	podStuck                    // it cannot become ready without a person (remedy)
	podGone                     // it ended: its processes and files are gone
	podUnclear                  // being deleted, or a state we cannot read
)

// health reads the pod's phase and conditions. why is the reason (gone,
// unclear) or the remedy (stuck).
func health(p *corev1.Pod) (podHealth, string) {
	if p.DeletionTimestamp != nil {
		return podUnclear, "pod " + p.Name + " is being deleted"
	}
	switch p.Status.Phase {
	case corev1.PodSucceeded, corev1.PodFailed:
		why := fmt.Sprintf("pod %s ended (%s)", p.Name, p.Status.Phase)
		if p.Status.Reason != "" {
			why = fmt.Sprintf("pod %s ended: %s %s", p.Name, p.Status.Reason, p.Status.Message)
		}
		return podGone, strings.TrimSpace(why)
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			return podStuck, fmt.Sprintf("pod %s cannot be scheduled (%s): free room on a node, loosen the nodeSelector, cpuRequest or memoryRequest params, or release the host (kubectl describe pod %s)", p.Name, c.Message, p.Name)
		}
	}
	for _, cs := range p.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil {
			switch w.Reason {
			case "ErrImagePull", "ImagePullBackOff", "ErrImageNeverPull", "InvalidImageName", "RegistryUnavailable":
				return podStuck, fmt.Sprintf("pod %s cannot get image %s (%s: %s): load the image on the nodes or make it pullable, or pass another --param image=", p.Name, cs.Image, w.Reason, w.Message)
			case "CreateContainerConfigError", "CreateContainerError", "RunContainerError", "CrashLoopBackOff":
				return podStuck, fmt.Sprintf("pod %s cannot start its container (%s: %s): see kubectl describe pod %s; an image whose USER is not a numeric non-root UID needs --param runAsUser=UID (or --run-as-user)", p.Name, w.Reason, w.Message, p.Name)
			}
		}
		if t := cs.State.Terminated; t != nil {
			return podGone, fmt.Sprintf("pod %s: its container exited (%s, code %d)", p.Name, t.Reason, t.ExitCode)
		}
	}
	if p.Status.Phase == corev1.PodRunning {
		for _, cs := range p.Status.ContainerStatuses {
			if cs.Name == containerName && cs.Ready {
				return podUp, ""
			}
		}
	}
	return podComing, fmt.Sprintf("pod %s is %s", p.Name, p.Status.Phase)
}
