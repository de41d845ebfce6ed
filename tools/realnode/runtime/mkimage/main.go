// Command mkimage writes a one-layer image (docker archive, which
// `ctr images import` reads) without any registry: each -file src=dst puts a
// local file at dst in the layer (mode kept), -link dst=target adds a symlink,
// and the image runs -entrypoint. Used for the real node's pause and test images.
package main

import (
	"archive/tar"
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"runtime"
	"sort"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

type pairs map[string]string

func (p pairs) String() string { return fmt.Sprint(map[string]string(p)) }

func (p pairs) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" || v == "" {
		return fmt.Errorf("want a=b, got %q", s)
	}
	p[k] = v
	return nil
}

func main() {
	files, links := pairs{}, pairs{}
	tag := flag.String("tag", "", "image name, e.g. localhost/realnode/pause:1")
	out := flag.String("out", "", "docker archive to write")
	entry := flag.String("entrypoint", "", "entrypoint, words split on spaces")
	flag.Var(files, "file", "src=dst: a local file put at dst (repeatable)")
	flag.Var(links, "link", "dst=target: a symlink (repeatable)")
	flag.Parse()
	if err := run(*tag, *out, *entry, files, links); err != nil {
		fmt.Fprintln(os.Stderr, "mkimage:", err)
		os.Exit(1)
	}
}

func run(tag, out, entry string, files, links pairs) error {
	if tag == "" || out == "" || entry == "" {
		return fmt.Errorf("-tag, -out and -entrypoint are required")
	}
	ref, err := name.NewTag(tag)
	if err != nil {
		return err
	}
	layerTar, err := buildTar(files, links)
	if err != nil {
		return err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	})
	if err != nil {
		return err
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", runtime.GOARCH
	cf.Config = v1.Config{Entrypoint: strings.Fields(entry), Env: []string{"PATH=/bin"}}
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return err
	}
	return tarball.WriteToFile(out, ref, img)
}

// buildTar makes the layer: parent directories first, then files (in source name order) and links
// (in name order) so the same inputs give the same digest.
func buildTar(files, links pairs) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dirs := map[string]bool{}
	addDirs := func(p string) error {
		var parts []string
		for d := path.Dir(strings.TrimPrefix(p, "/")); d != "." && d != "/"; d = path.Dir(d) {
			parts = append([]string{d}, parts...)
		}
		for _, d := range parts {
			if dirs[d] {
				continue
			}
			dirs[d] = true
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d + "/", Mode: 0o755}); err != nil {
				return err
			}
		}
		return nil
	}
	for _, src := range sorted(files) {
		dst := files[src]
		data, err := os.ReadFile(src)
		if err != nil {
			return nil, err
		}
		st, err := os.Stat(src)
		if err != nil {
			return nil, err
		}
		if err := addDirs(dst); err != nil {
			return nil, err
		}
		h := &tar.Header{Typeflag: tar.TypeReg, Name: strings.TrimPrefix(dst, "/"), Mode: int64(st.Mode().Perm()), Size: int64(len(data))}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(data); err != nil {
			return nil, err
		}
	}
	for _, dst := range sorted(links) {
		if err := addDirs(dst); err != nil {
			return nil, err
		}
		h := &tar.Header{Typeflag: tar.TypeSymlink, Name: strings.TrimPrefix(dst, "/"), Linkname: links[dst], Mode: 0o777}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// sorted returns p's keys in order.
func sorted(p pairs) []string {
	keys := make([]string, 0, len(p))
	for k := range p {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
