package main

import (
	"archive/tar"
	"crypto/sha256"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

const dockerfile = "../../../../Dockerfile"

// The repository's Dockerfile reads: a static go build of ./cmd/volplane
// with the Go this machine has, and a final stage mkimage reproduces whole.
func TestSpecOfTheDockerfile(t *testing.T) {
	spec, err := specOf(dockerfile)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(spec.BuildEnv, "CGO_ENABLED=0") || !slices.Contains(spec.BuildArgs, "./cmd/volplane") {
		t.Errorf("build %v %v: want a static build of ./cmd/volplane", spec.BuildEnv, spec.BuildArgs)
	}
	gov, err := exec.Command("go", "env", "GOVERSION").Output()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(gov)); got != spec.GoVersion {
		t.Errorf("the Dockerfile builds with %s, this machine has %s: mkimage would refuse", spec.GoVersion, got)
	}
	if spec.Binary == "" || spec.User == "" || len(spec.Entrypoint) == 0 || len(spec.Tools) == 0 {
		t.Errorf("incomplete spec %+v", spec)
	}
}

// What mkimage cannot reproduce is refused, not skipped: the drift the
// local image would otherwise have.
func TestSpecRefusesWhatItWouldNotReproduce(t *testing.T) {
	base, err := os.ReadFile(dockerfile)
	if err != nil {
		t.Fatal(err)
	}
	for name, change := range map[string][2]string{
		"ENV":                   {"USER 65532:65532", "ENV A=b\nUSER 65532:65532"},
		"WORKDIR":               {"USER 65532:65532", "WORKDIR /x\nUSER 65532:65532"},
		"a second RUN":          {"USER 65532:65532", "RUN apt-get install -y e2fsprogs\nUSER 65532:65532"},
		"shell in build":        {"CGO_ENABLED=0 go build", "CGO_ENABLED=$X go build"},
		"shell-form ENTRYPOINT": {`ENTRYPOINT ["/usr/local/bin/volplane"]`, "ENTRYPOINT /usr/local/bin/volplane"},
		"COPY of another file":  {"COPY --from=build /out/volplane", "COPY --from=build /out/other"},
	} {
		text := strings.Replace(string(base), change[0], change[1], 1)
		if text == string(base) {
			t.Fatalf("%s: %q not in the Dockerfile", name, change[0])
		}
		p := filepath.Join(t.TempDir(), "Dockerfile")
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := specOf(p); err == nil {
			t.Errorf("%s: read without error", name)
		}
	}
}

func TestShellWords(t *testing.T) {
	got, err := shellWords(`--mount=type=cache,target=/x  CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o '/out/a b' ./cmd/volplane`)
	want := []string{"--mount=type=cache,target=/x", "CGO_ENABLED=0", "go", "build", "-trimpath", "-ldflags=-s -w", "-o", "/out/a b", "./cmd/volplane"}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("got %q, %v\nwant %q", got, err, want)
	}
	for _, bad := range []string{`a && b`, `"$HOME"`, `a; b`, `"unclosed`} {
		if _, err := shellWords(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// readImage reads back an OCI archive mkimage wrote: the name its index
// gives, its config and its one layer's entries by path.
func readImage(t *testing.T, file, wantRef string) (v1.Config, map[string]*tar.Header, map[string][]byte) {
	t.Helper()
	dir := t.TempDir()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for tr := tar.NewReader(f); ; {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(dir, h.Name)
		if h.Typeflag == tar.TypeDir {
			err = os.MkdirAll(dst, 0o755)
		} else if b, rerr := io.ReadAll(tr); rerr != nil {
			err = rerr
		} else if err = os.MkdirAll(filepath.Dir(dst), 0o755); err == nil {
			err = os.WriteFile(dst, b, 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil || len(im.Manifests) != 1 {
		t.Fatalf("index %+v, %v: want one image", im, err)
	}
	desc := im.Manifests[0]
	if got := desc.Annotations["io.containerd.image.name"]; got != wantRef || desc.MediaType != types.OCIManifestSchema1 {
		t.Errorf("index names %q (%s), want %q (%s)", got, desc.MediaType, wantRef, types.OCIManifestSchema1)
	}
	img, err := idx.Image(desc.Digest)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers %d, %v: want one", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	heads, data := map[string]*tar.Header{}, map[string][]byte{}
	for tr := tar.NewReader(rc); ; {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		p := "/" + strings.TrimSuffix(h.Name, "/")
		heads[p] = h
		if data[p], err = io.ReadAll(tr); err != nil {
			t.Fatal(err)
		}
	}
	return cf.Config, heads, data
}

// resolve follows symlinks of the layer as the kernel would in the
// container; it returns the regular file's path or "".
func resolve(heads map[string]*tar.Header, p string) string {
	for range 40 {
		parts := strings.Split(strings.TrimPrefix(p, "/"), "/")
		cur, moved := "/", false
		for i, part := range parts {
			next := path.Join(cur, part)
			h, ok := heads[next]
			if !ok {
				return ""
			}
			if h.Typeflag == tar.TypeSymlink {
				target := h.Linkname
				if !path.IsAbs(target) {
					target = path.Join(cur, target)
				}
				p, moved = path.Join(append([]string{target}, parts[i+1:]...)...), true
				break
			}
			cur = next
		}
		if !moved {
			if h := heads[p]; h != nil && h.Typeflag == tar.TypeReg {
				return p
			}
			return ""
		}
	}
	return ""
}

// The volplane image as the Dockerfile's final stage has it: the binary at
// its path, USER, ENTRYPOINT, Debian's PATH, and each tool of the tools
// line found on that PATH. As root, the layer is unpacked and each tool run
// in it (chroot): its libraries and loader came along.
func TestVolplaneImageIsTheDockerfiles(t *testing.T) {
	spec, err := specOf(dockerfile)
	if err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	img, err := volplaneImage("localhost/volplane/volplane:test", spec, self)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "volplane.tar")
	if err := img.writeOCI(file); err != nil {
		t.Fatal(err)
	}
	cfg, heads, data := readImage(t, file, img.ref)
	if cfg.User != spec.User || !slices.Equal(cfg.Entrypoint, spec.Entrypoint) || !slices.Equal(cfg.Env, []string{"PATH=" + debianPath}) || cfg.Cmd != nil {
		t.Errorf("config user %q entrypoint %q env %q cmd %q; want %q %q PATH=%s none", cfg.User, cfg.Entrypoint, cfg.Env, cfg.Cmd, spec.User, spec.Entrypoint, debianPath)
	}
	if h := heads[spec.Binary]; h == nil || h.Typeflag != tar.TypeReg || h.Mode&0o111 == 0 {
		t.Errorf("no executable %s in the layer: %+v", spec.Binary, h)
	}
	if h := heads["/tmp"]; h == nil || h.Mode != 0o1777 {
		t.Errorf("/tmp %+v, want a 1777 directory as Debian's", h)
	}
	for _, tool := range spec.Tools {
		found := ""
		for _, dir := range filepath.SplitList(debianPath) {
			if found = resolve(heads, path.Join(dir, tool)); found != "" {
				break
			}
		}
		if found == "" {
			t.Errorf("tool %s is not on the image's PATH", tool)
		}
	}
	if os.Getuid() != 0 {
		t.Log("not root: the tools are not run in the unpacked layer")
		return
	}
	root := t.TempDir()
	for p, h := range heads {
		dst := filepath.Join(root, p)
		var err error
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(dst, 0o755)
		case tar.TypeSymlink:
			if err = os.MkdirAll(filepath.Dir(dst), 0o755); err == nil {
				err = os.Symlink(h.Linkname, dst)
			}
		case tar.TypeReg:
			if err = os.MkdirAll(filepath.Dir(dst), 0o755); err == nil {
				err = os.WriteFile(dst, data[p], os.FileMode(h.Mode)&0o777)
			}
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, tool := range spec.Tools {
		cmd := &exec.Cmd{Args: []string{tool, "--version"}, Env: []string{"PATH=" + debianPath}}
		cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: root}
		for _, dir := range filepath.SplitList(debianPath) {
			if resolve(heads, path.Join(dir, tool)) != "" {
				cmd.Path = path.Join(dir, tool) // as the container's PATH finds it
				break
			}
		}
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "util-linux") {
			t.Errorf("%s --version in the image: %v: %s", tool, err, out)
		}
	}
}

// The same inputs give the same archive, byte for byte, so a rebuild
// imports as the same image.
func TestImagesAreReproducible(t *testing.T) {
	busybox := "/bin/busybox"
	if _, err := os.Stat(busybox); err != nil {
		t.Skip("no busybox-static (apt-get install busybox-static)")
	}
	var digests [][32]byte
	for range 2 {
		img, err := busyboxImage("localhost/volplane/busybox:test", busybox)
		if err != nil {
			t.Fatal(err)
		}
		file := filepath.Join(t.TempDir(), "busybox.tar")
		if err := img.writeOCI(file); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		digests = append(digests, sha256.Sum256(b))
		cfg, heads, _ := readImage(t, file, img.ref)
		if !slices.Equal(cfg.Entrypoint, []string{"/bin/sh"}) || resolve(heads, "/bin/sh") != "/bin/busybox" || resolve(heads, "/bin/nc") != "/bin/busybox" {
			t.Errorf("busybox image: entrypoint %q, /bin/sh -> %q, /bin/nc -> %q", cfg.Entrypoint, resolve(heads, "/bin/sh"), resolve(heads, "/bin/nc"))
		}
	}
	if digests[0] != digests[1] {
		t.Errorf("digests %v", digests)
	}
}
