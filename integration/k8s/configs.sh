# Sourced by up.sh: the configuration files of containerd, the CNI and the
# kubelet, into $K8S_STATE/etc. Each names only paths under $K8S_STATE.
etc=$K8S_STATE/etc

# containerd 1.6, a second one: its own root, state, socket and runc root.
# restrict_oom_score_adj: root here lacks CAP_SYS_RESOURCE, and runc failed
# every sandbox ("can't get final child's PID from pipe") trying to lower
# oom_score_adj. The sandbox image is our pause, imported without a
# registry. Pod network namespaces are mounted under the state directory,
# not /run/netns.
cat >"$etc/containerd.toml" <<TOML
version = 2
root = "$K8S_STATE/containerd/root"
state = "$K8S_STATE/containerd/state"
[grpc]
  address = "$K8S_SOCK"
[ttrpc]
  address = "$K8S_SOCK.ttrpc"
[plugins."io.containerd.internal.v1.opt"]
  path = "$K8S_STATE/containerd/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$K8S_PAUSE_IMAGE"
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  enable_selinux = false
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "$K8S_STATE/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$K8S_STATE/cni/net.d"
TOML

# One bridge in the namespace for the pods; no masquerade (nothing outside
# the namespace is reachable, by design); host-local IPAM state kept here.
cat >"$K8S_STATE/cni/net.d/10-mu-k8s.conflist" <<JSON
{
  "cniVersion": "0.4.0",
  "name": "$K8S_ID",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "cni0",
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": "$K8S_POD_CIDR"}]],
        "routes": [{"dst": "0.0.0.0/0"}],
        "dataDir": "$K8S_STATE/cni/ipam"
      }
    }
  ]
}
JSON

# The kubelet: cgroupfs under our own cgroupRoot (no systemd here), cgroup
# v1 allowed, oomScoreAdj 0 (see containerd above), image GC off (an image
# collected here cannot be pulled back), eviction only when nearly full,
# its serving certificate from our CA, webhook authn/authz via the API.
cat >"$etc/kubelet.yaml" <<YAML
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
containerRuntimeEndpoint: unix://$K8S_SOCK
cgroupDriver: cgroupfs
cgroupRoot: /$K8S_ID
failCgroupV1: false
failSwapOn: false
oomScoreAdj: 0
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard:
  memory.available: 100Mi
  nodefs.available: 1%
  nodefs.inodesFree: 1%
  imagefs.available: 1%
podLogsDir: $K8S_STATE/pod-logs
volumePluginDir: $K8S_STATE/volume-plugins
tlsCertFile: $K8S_STATE/pki/kubelet-serving.crt
tlsPrivateKeyFile: $K8S_STATE/pki/kubelet-serving.key
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: true
  x509:
    clientCAFile: $K8S_STATE/pki/ca.crt
authorization:
  mode: Webhook
YAML
