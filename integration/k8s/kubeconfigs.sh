# Sourced by up.sh once the relay's port is known: a kubeconfig per client,
# certificates embedded. The admin one (the tests' and yours) reaches the API
# through the relay on 127.0.0.1; the components' ones reach it inside the
# namespace. The admin context's namespace is the tests' namespace.

# kubeconfig FILE SERVER CERT [NAMESPACE]
kubeconfig() {
	local b64='base64 -w0'
	cat >"$1" <<KC
apiVersion: v1
kind: Config
clusters:
- name: $K8S_ID
  cluster:
    server: $2
    certificate-authority-data: $($b64 "$pki/ca.crt")
users:
- name: $K8S_ID-$3
  user:
    client-certificate-data: $($b64 "$pki/$3.crt")
    client-key-data: $($b64 "$pki/$3.key")
contexts:
- name: $K8S_ID
  context:
    cluster: $K8S_ID
    user: $K8S_ID-$3${4:+
    namespace: $4}
current-context: $K8S_ID
KC
	chmod 600 "$1"
}
inside=https://$K8S_NODE_IP:6443
kubeconfig "$K8S_KUBECONFIG" "https://127.0.0.1:$port" admin "$K8S_NAMESPACE"
kubeconfig "$K8S_STATE/etc/controller-manager.kubeconfig" "$inside" controller-manager
kubeconfig "$K8S_STATE/etc/scheduler.kubeconfig" "$inside" scheduler
kubeconfig "$K8S_STATE/etc/kubelet.kubeconfig" "$inside" kubelet
