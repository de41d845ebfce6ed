package main

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// debianPath is the PATH of Debian's images (the Dockerfile's final stage
// inherits it from its debian base and sets none).
const debianPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// image is one image to write: its layer and its config.
type image struct {
	ref    string
	layer  layer
	config v1.Config
}

// v1Image assembles img: one layer and the config, with OCI media types
// when oci is set, Docker's otherwise.
func (img image) v1Image(oci bool) (v1.Image, error) {
	data, err := img.layer.tar()
	if err != nil {
		return nil, err
	}
	var opts []tarball.LayerOption
	if oci {
		opts = append(opts, tarball.WithMediaType(types.OCILayer))
	}
	lay, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil }, opts...)
	if err != nil {
		return nil, err
	}
	base := empty.Image
	if oci {
		base = mutate.ConfigMediaType(mutate.MediaType(base, types.OCIManifestSchema1), types.OCIConfigJSON)
	}
	im, err := mutate.AppendLayers(base, lay)
	if err != nil {
		return nil, err
	}
	cf, err := im.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Config = "linux", runtime.GOARCH, img.config
	return mutate.ConfigFile(im, cf)
}

// write saves img as a docker archive (what `docker save` writes) at out.
func (img image) write(out string) error {
	ref, err := name.NewTag(img.ref)
	if err != nil {
		return err
	}
	im, err := img.v1Image(false)
	if err != nil {
		return err
	}
	return tarball.WriteToFile(out, ref, im)
}

// writeOCI saves img as an OCI archive (an image layout in a tar, what
// `docker buildx build --output type=oci` writes) at out. Its index names
// the image the way `ctr images import` reads it back.
func (img image) writeOCI(out string) error {
	ref, err := name.NewTag(img.ref)
	if err != nil {
		return err
	}
	im, err := img.v1Image(true)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "mkimage-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	err = p.AppendImage(im, layout.WithAnnotations(map[string]string{
		"io.containerd.image.name":          ref.Name(),
		"org.opencontainers.image.ref.name": ref.TagStr(),
	}))
	if err != nil {
		return err
	}
	l := layer{}
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		return l.file(p, "/"+rel)
	})
	if err != nil {
		return err
	}
	data, err := l.tar()
	if err != nil {
		return err
	}
	return os.WriteFile(out, data, 0o644)
}

// volplaneImage is the Dockerfile's final stage rebuilt: the binary at its
// path, the tools of the tools line (the host's, with their libraries: the
// driver's losetup options are util-linux's, which busybox lacks) on
// Debian's PATH, /tmp, the USER and the ENTRYPOINT.
func volplaneImage(ref string, spec imageSpec, binary string) (image, error) {
	l := layer{}
	if err := l.file(binary, spec.Binary); err != nil {
		return image{}, err
	}
	if err := l.dir("/tmp", 0o1777); err != nil {
		return image{}, err
	}
	for _, tool := range spec.Tools {
		p, err := lookPath(tool, debianPath)
		if err != nil {
			return image{}, fmt.Errorf("tool %s (the Dockerfile's tools line): %w", tool, err)
		}
		if err := l.hostProgram(p); err != nil {
			return image{}, fmt.Errorf("tool %s: %w", tool, err)
		}
	}
	return image{ref: ref, layer: l, config: v1.Config{
		User: spec.User, Entrypoint: spec.Entrypoint, Env: []string{"PATH=" + debianPath},
	}}, nil
}

// lookPath finds a command on the host as a shell with PATH=path would.
func lookPath(cmd, path string) (string, error) {
	for _, dir := range filepath.SplitList(path) {
		p := filepath.Join(dir, cmd)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("not on the host's %s (Debian package mount or util-linux)", path)
}

// buildVolplane runs the Dockerfile's go build in repo, writing out.
func buildVolplane(repo string, spec imageSpec, out string) error {
	gov, err := exec.Command("go", "env", "GOVERSION").Output()
	if err != nil {
		return fmt.Errorf("go env GOVERSION: %w", err)
	}
	if got := strings.TrimSpace(string(gov)); got != spec.GoVersion {
		return fmt.Errorf("local Go is %s, the Dockerfile builds with %s: the binaries would differ", got, spec.GoVersion)
	}
	args := append([]string{"build", "-o", out}, spec.BuildArgs...)
	cmd := exec.Command("go", args...)
	cmd.Dir, cmd.Stdout, cmd.Stderr = repo, os.Stderr, os.Stderr
	cmd.Env = append(os.Environ(), spec.BuildEnv...)
	return cmd.Run()
}

// pauseImage is the pod sandbox: the pause program alone.
func pauseImage(ref, pause string) (image, error) {
	l := layer{}
	if err := l.file(pause, "/pause"); err != nil {
		return image{}, err
	}
	return image{ref: ref, layer: l, config: v1.Config{Entrypoint: []string{"/pause"}}}, nil
}

// busyboxImage is the test pods' image: a static busybox with every applet
// it lists linked in /bin.
func busyboxImage(ref, busybox string) (image, error) {
	out, err := exec.Command(busybox, "--list").Output()
	if err != nil {
		return image{}, fmt.Errorf("%s --list: %w", busybox, err)
	}
	if needs, err := elfNeeds(busybox); err != nil || len(needs) > 0 {
		return image{}, fmt.Errorf("%s is not static (needs %v, %v): install busybox-static", busybox, needs, err)
	}
	l := layer{}
	if err := l.file(busybox, "/bin/busybox"); err != nil {
		return image{}, err
	}
	if err := l.dir("/tmp", 0o1777); err != nil {
		return image{}, err
	}
	for _, applet := range strings.Fields(string(out)) {
		if applet != "busybox" && !strings.Contains(applet, "/") {
			if err := l.symlink("/bin/"+applet, "busybox"); err != nil {
				return image{}, err
			}
		}
	}
	return image{ref: ref, layer: l, config: v1.Config{Entrypoint: []string{"/bin/sh"}, Env: []string{"PATH=/bin"}}}, nil
}

// registrarImage is upstream's image of node-driver-registrar rebuilt:
// the binary at /csi-node-driver-registrar, its ENTRYPOINT, no USER.
func registrarImage(ref, registrar string) (image, error) {
	l := layer{}
	if err := l.file(registrar, "/csi-node-driver-registrar"); err != nil {
		return image{}, err
	}
	return image{ref: ref, layer: l, config: v1.Config{Entrypoint: []string{"/csi-node-driver-registrar"}}}, nil
}

// timed runs f and prints how long it took.
func timed(what string, f func() error) error {
	start := time.Now()
	if err := f(); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	fmt.Printf("%s: %.1fs\n", what, time.Since(start).Seconds())
	return nil
}
