// Package schemas embeds the protocol's machine-readable schema, so every
// binary carries the exact bytes its handshake digest names.
package schemas

import (
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
)

// V1 is the exact bytes of plugin-protocol-v1.json. Replace the file with
// mu's published one and rebuild: the digest follows.
//
//go:embed plugin-protocol-v1.json
var V1 []byte

// Digest returns "sha256:" and the hex sha256 of b.
func Digest(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// V1Digest is the handshake's schema value for V1.
func V1Digest() string { return Digest(V1) }
