// Command ociarchive writes a one-layer OCI image layout as a tar stream, so
// that `ctr images import` can load a locally built image without a
// registry (integration/k8s/build.sh packages the pause binary with it).
//
//	ociarchive -name mu-k8s.local/pause:1 -entrypoint /pause -o pause.tar pause=/path/to/pause
//
// Each FILE argument is DEST=SRC: SRC's bytes at /DEST in the layer, mode
// 0755, owned by root. The image is for this machine's OS and architecture.
package main

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"
)

type descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int               `json:"size"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

func main() {
	name := flag.String("name", "", "image name, e.g. mu-k8s.local/pause:1")
	entry := flag.String("entrypoint", "", "the image's entrypoint")
	out := flag.String("o", "", "output tar file")
	flag.Parse()
	if *name == "" || *out == "" || flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: ociarchive -name NAME [-entrypoint PATH] -o OUT.tar DEST=SRC...")
		os.Exit(2)
	}
	if err := run(*name, *entry, *out, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "ociarchive:", err)
		os.Exit(1)
	}
}

func run(name, entry, out string, files []string) error {
	layer, err := layerTar(files)
	if err != nil {
		return err
	}
	var blobs [][]byte // in the order written: layer, config, manifest
	put := func(mediaType string, b []byte) descriptor {
		sum := sha256.Sum256(b)
		d := "sha256:" + hex.EncodeToString(sum[:])
		blobs = append(blobs, b)
		return descriptor{MediaType: mediaType, Digest: d, Size: len(b)}
	}
	layerDesc := put("application/vnd.oci.image.layer.v1.tar", layer)
	cfg := map[string]any{
		"architecture": runtime.GOARCH,
		"os":           runtime.GOOS,
		"config":       map[string]any{},
		"rootfs":       map[string]any{"type": "layers", "diff_ids": []string{layerDesc.Digest}},
	}
	if entry != "" {
		cfg["config"] = map[string]any{"Entrypoint": []string{entry}}
	}
	cfgJSON, _ := json.Marshal(cfg)
	cfgDesc := put("application/vnd.oci.image.config.v1+json", cfgJSON)
	manifest, _ := json.Marshal(map[string]any{
		"schemaVersion": 2,
		"mediaType":     "application/vnd.oci.image.manifest.v1+json",
		"config":        cfgDesc,
		"layers":        []descriptor{layerDesc},
	})
	mDesc := put("application/vnd.oci.image.manifest.v1+json", manifest)
	tag := name[strings.LastIndex(name, ":")+1:]
	mDesc.Annotations = map[string]string{"io.containerd.image.name": name, "org.opencontainers.image.ref.name": tag}
	index, _ := json.Marshal(map[string]any{"schemaVersion": 2, "manifests": []descriptor{mDesc}})

	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	add := func(path string, b []byte, mode int64) error {
		h := &tar.Header{Name: path, Mode: mode, Size: int64(len(b)), ModTime: time.Unix(0, 0), Typeflag: tar.TypeReg}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		_, err := tw.Write(b)
		return err
	}
	if err := add("oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`), 0o644); err != nil {
		return err
	}
	if err := add("index.json", index, 0o644); err != nil {
		return err
	}
	for _, b := range blobs {
		sum := sha256.Sum256(b)
		if err := add("blobs/sha256/"+hex.EncodeToString(sum[:]), b, 0o644); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return os.WriteFile(out, buf.Bytes(), 0o644)
}

// layerTar is an uncompressed layer holding each DEST=SRC file.
func layerTar(files []string) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		dest, src, ok := strings.Cut(f, "=")
		if !ok {
			return nil, fmt.Errorf("%q: want DEST=SRC", f)
		}
		b, err := os.ReadFile(src)
		if err != nil {
			return nil, err
		}
		h := &tar.Header{Name: strings.TrimPrefix(dest, "/"), Mode: 0o755, Size: int64(len(b)), ModTime: time.Unix(0, 0), Typeflag: tar.TypeReg}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(b); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
