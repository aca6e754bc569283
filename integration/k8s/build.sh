#!/usr/bin/env bash
# Builds what the test cluster runs, into the cache (lib.sh: K8S_CACHE,
# default /var/cache/mu-plugins/k8s/v1.34.2), each part only when missing:
#   bin/     kube-apiserver, kube-controller-manager, kube-scheduler, kubelet
#            (CGO_ENABLED=0, from the Go module proxy through tools/go.mod),
#            pause and ociarchive (tools/pause, tools/ociarchive);
#   images/  pause.tar (an OCI image of the pause binary) and pod-<id>.tar
#            (`docker save` of the project's test image, whose id it names).
# Installs the Debian packages first (scripts/deps.sh). A lock keeps two
# worktrees from building at once. FORCE=1 rebuilds the binaries.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
t0=$(k8s_now)

"$k8s_repo/scripts/deps.sh"
mkdir -p "$K8S_BIN" "$K8S_IMAGES"
exec 9>"$K8S_CACHE/.lock"
flock 9

# The binaries are rebuilt when the build inputs change: the module files
# and the flags below.
v=k8s.io/component-base/version c=k8s.io/client-go/pkg/version
ldflags="-s -w"
for p in $v $c; do
	ldflags+=" -X $p.gitVersion=$K8S_VERSION -X $p.gitMajor=1 -X $p.gitMinor=34 -X $p.gitTreeState=clean"
done
stamp=$(cat "$k8s_here/tools/go.mod" "$k8s_here/tools/go.sum" "$k8s_here"/tools/*/main.go <(echo "$ldflags") | sha256sum | cut -c1-16)
built=1
for b in $K8S_COMPONENTS pause ociarchive; do [ -x "$K8S_BIN/$b" ] || built=0; done
[ "$(cat "$K8S_BIN/.stamp" 2>/dev/null)" = "$stamp" ] || built=0
if [ "${FORCE:-0}" = 1 ] || [ $built = 0 ]; then
	echo "k8s build: building Kubernetes $K8S_VERSION (a first build takes minutes: about 7 on 2 cores)"
	tmp=$(mktemp -d "$K8S_CACHE/bin.XXXXXX")
	trap 'rm -rf "$tmp"' EXIT
	t=$(k8s_now)
	pkgs=()
	for b in $K8S_COMPONENTS; do pkgs+=("k8s.io/kubernetes/cmd/$b"); done
	(
		cd "$k8s_here/tools"
		go mod download
		echo "k8s build: modules $(k8s_since "$t")"
		CGO_ENABLED=0 "$k8s_repo/scripts/ticking.sh" "k8s build" "compiling ${#pkgs[@]} components (about 6 min on 2 cores)" \
			go build -trimpath -ldflags "$ldflags" -o "$tmp/" "${pkgs[@]}" ./pause ./ociarchive
	)
	echo "$stamp" >"$tmp/.stamp"
	rm -rf "$K8S_BIN.old"
	mv "$K8S_BIN" "$K8S_BIN.old" && mv "$tmp" "$K8S_BIN" && rm -rf "$K8S_BIN.old"
	rm -f "$K8S_IMAGES/pause.tar"
	echo "k8s build: binaries $(k8s_since "$t") ($(du -sh "$K8S_BIN" | cut -f1))"
fi

if [ ! -s "$K8S_IMAGES/pause.tar" ]; then
	"$K8S_BIN/ociarchive" -name "$K8S_PAUSE_IMAGE" -entrypoint /pause \
		-o "$K8S_IMAGES/pause.tar.tmp" "pause=$K8S_BIN/pause"
	mv "$K8S_IMAGES/pause.tar.tmp" "$K8S_IMAGES/pause.tar"
fi

# The pod image: the Docker test image, saved once per image id.
"$k8s_repo/integration/image/build.sh" >/dev/null
id=$(docker image inspect -f '{{.Id}}' "$K8S_POD_IMAGE")
id=${id#sha256:}
pod=$K8S_IMAGES/pod-${id:0:16}.tar
if [ ! -s "$pod" ]; then
	t=$(k8s_now)
	docker save -o "$pod.tmp" "$K8S_POD_IMAGE"
	mv "$pod.tmp" "$pod"
	find "$K8S_IMAGES" -name 'pod-*.tar' ! -path "$pod" -delete
	echo "k8s build: saved $K8S_POD_IMAGE in $(k8s_since "$t") ($(du -h "$pod" | cut -f1))"
fi
ln -sfn "$(basename "$pod")" "$K8S_IMAGES/pod.tar"
echo "k8s build: ready in $(k8s_since "$t0"): $K8S_CACHE"
