# Sourced by up.sh: the cluster's certificates and keys, into $pki, with
# openssl. One CA (ECDSA P-256, 10 years: the cluster lives for one run) signs
# every certificate; the service-account signing key is RSA.
pki_cnf=$pki/openssl.cnf
cat >"$pki_cnf" <<'CNF'
[req]
distinguished_name = dn
prompt = no
[dn]
[ca]
basicConstraints = critical,CA:TRUE
keyUsage = critical,keyCertSign,cRLSign,digitalSignature
subjectKeyIdentifier = hash
CNF

pki_key() { openssl ecparam -name prime256v1 -genkey -noout -out "$pki/$1.key" 2>/dev/null; }

# pki_cert NAME SUBJECT USAGE [SANS]: NAME.crt for SUBJECT (/CN=../O=..),
# USAGE serverAuth or clientAuth, SANS an openssl subjectAltName list.
pki_cert() {
	local ext=$pki/$1.ext
	pki_key "$1"
	openssl req -new -config "$pki_cnf" -key "$pki/$1.key" -subj "$2" -out "$pki/$1.csr"
	{
		echo "basicConstraints = critical,CA:FALSE"
		echo "keyUsage = critical,digitalSignature,keyEncipherment"
		echo "extendedKeyUsage = $3"
		[ -z "${4:-}" ] || echo "subjectAltName = $4"
	} >"$ext"
	openssl x509 -req -in "$pki/$1.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -CAcreateserial \
		-days 3650 -sha256 -extfile "$ext" -out "$pki/$1.crt" 2>/dev/null
	rm -f "$pki/$1.csr" "$ext"
}

pki_key ca
openssl req -x509 -new -config "$pki_cnf" -extensions ca -key "$pki/ca.key" \
	-subj "/CN=$K8S_ID-ca" -days 3650 -sha256 -out "$pki/ca.crt"
pki_cert apiserver "/CN=kube-apiserver" serverAuth \
	"IP:127.0.0.1,IP:$K8S_NODE_IP,IP:$K8S_SERVICE_IP,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
pki_cert apiserver-kubelet "/CN=kube-apiserver-kubelet-client/O=system:masters" clientAuth
pki_cert admin "/CN=mu-k8s-admin/O=system:masters" clientAuth
pki_cert controller-manager "/CN=system:kube-controller-manager" clientAuth
pki_cert scheduler "/CN=system:kube-scheduler" clientAuth
pki_cert kubelet "/CN=system:node:$K8S_ID/O=system:nodes" clientAuth
pki_cert kubelet-serving "/CN=system:node:$K8S_ID" serverAuth "IP:$K8S_NODE_IP,DNS:$K8S_ID"
openssl genrsa -out "$pki/sa.key" 2048 2>/dev/null
openssl rsa -in "$pki/sa.key" -pubout -out "$pki/sa.pub" 2>/dev/null
chmod 600 "$pki"/*.key
