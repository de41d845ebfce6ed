// Command mkimage writes container images without any registry, assembled
// with go-containerregistry, as archives `ctr images import` reads.
//
//	mkimage images -repo DIR -bin DIR -out DIR [-tag T] [-address SOCK]
//
// writes the real node's images as OCI archives: localhost/volplane/volplane:T, rebuilt from
// the repository's Dockerfile (its go build line, run here, and its final
// stage: binary path, tools line, USER, ENTRYPOINT); localhost/volplane/pause:T
// (BIN/pause); localhost/volplane/busybox:T (Debian's busybox-static); and
// localhost/volplane/csi-node-driver-registrar:VERSION when
// BIN/csi-node-driver-registrar exists. With -address it imports them into
// that containerd (BIN/ctr -n k8s.io images import), so pods run them with
// imagePullPolicy: Never.
//
//	mkimage -tag T -out FILE -entrypoint CMD [-file src=dst]... [-link dst=target]...
//
// writes one image of the given files and symlinks (PATH=/bin) as a docker
// archive.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

func main() {
	var err error
	if len(os.Args) > 1 && os.Args[1] == "images" {
		err = images(os.Args[2:])
	} else {
		err = one(os.Args[1:])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "mkimage:", err)
		os.Exit(1)
	}
}

func images(args []string) error {
	fl := flag.NewFlagSet("mkimage images", flag.ExitOnError)
	repo := fl.String("repo", ".", "volplane's repository (its Dockerfile and source)")
	bin := fl.String("bin", "/tmp/realnode-bin", "binaries: pause, ctr, csi-node-driver-registrar; volplane-image is built here")
	out := fl.String("out", "", "directory for the archives")
	tag := fl.String("tag", "dev", "tag of the volplane, pause and busybox images")
	regVersion := fl.String("registrar-version", "v2.17.0", "tag of the registrar image (the version BIN/csi-node-driver-registrar was built from)")
	busybox := fl.String("busybox", "/bin/busybox", "a static busybox")
	address := fl.String("address", "", "containerd socket to import the images into (none: only write them)")
	rebuild := fl.Bool("rebuild", false, "rebuild BIN/volplane-image even if present")
	_ = fl.Parse(args)
	if *out == "" {
		return fmt.Errorf("-out is required")
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	spec, err := specOf(filepath.Join(*repo, "Dockerfile"))
	if err != nil {
		return err
	}
	binary := filepath.Join(*bin, "volplane-image")
	if _, err := os.Stat(binary); err != nil || *rebuild {
		if err := timed("volplane-image (the Dockerfile's go build)", func() error { return buildVolplane(*repo, spec, binary) }); err != nil {
			return err
		}
	}
	type made struct {
		file string
		make func() (image, error)
	}
	todo := []made{
		{"volplane.tar", func() (image, error) { return volplaneImage("localhost/volplane/volplane:"+*tag, spec, binary) }},
		{"pause.tar", func() (image, error) {
			return pauseImage("localhost/volplane/pause:"+*tag, filepath.Join(*bin, "pause"))
		}},
		{"busybox.tar", func() (image, error) { return busyboxImage("localhost/volplane/busybox:"+*tag, *busybox) }},
	}
	registrar := filepath.Join(*bin, "csi-node-driver-registrar")
	if _, err := os.Stat(registrar); err == nil {
		todo = append(todo, made{"registrar.tar", func() (image, error) {
			return registrarImage("localhost/volplane/csi-node-driver-registrar:"+*regVersion, registrar)
		}})
	} else {
		fmt.Printf("registrar image: skipped, no %s\n", registrar)
	}
	for _, m := range todo {
		file := filepath.Join(*out, m.file)
		if err := timed(file, func() error {
			img, err := m.make()
			if err != nil {
				return err
			}
			if err := img.writeOCI(file); err != nil {
				return err
			}
			fmt.Printf("%s = %s\n", img.ref, file)
			if *address == "" {
				return nil
			}
			cmd := exec.Command(filepath.Join(*bin, "ctr"), "--address", *address, "-n", "k8s.io", "images", "import", file)
			if b, err := cmd.CombinedOutput(); err != nil {
				return fmt.Errorf("ctr images import %s: %w: %s", file, err, b)
			}
			return nil
		}); err != nil {
			return err
		}
	}
	return nil
}

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

func one(args []string) error {
	files, links := pairs{}, pairs{}
	fl := flag.NewFlagSet("mkimage", flag.ExitOnError)
	tag := fl.String("tag", "", "image name, e.g. localhost/realnode/pause:1")
	out := fl.String("out", "", "docker archive to write")
	entry := fl.String("entrypoint", "", "entrypoint, words split on spaces")
	fl.Var(files, "file", "src=dst: a local file put at dst (repeatable)")
	fl.Var(links, "link", "dst=target: a symlink (repeatable)")
	_ = fl.Parse(args)
	if *tag == "" || *out == "" || *entry == "" {
		return fmt.Errorf("-tag, -out and -entrypoint are required")
	}
	l := layer{}
	for _, src := range sorted(files) {
		if err := l.file(src, files[src]); err != nil {
			return err
		}
	}
	for _, dst := range sorted(links) {
		if err := l.symlink(dst, links[dst]); err != nil {
			return err
		}
	}
	img := image{ref: *tag, layer: l, config: v1.Config{Entrypoint: strings.Fields(*entry), Env: []string{"PATH=/bin"}}}
	return img.write(*out)
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
