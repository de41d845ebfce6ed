package main

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"fmt"
	"io/fs"
	"os"
	"path"
	"runtime"
	"slices"
	"strings"
)

// entry is one path of a layer: a directory, a regular file read from
// src, or a symlink to link.
type entry struct {
	kind byte // tar.TypeDir, tar.TypeReg or tar.TypeSymlink
	mode int64
	src  string
	link string
}

// layer is a file system tree built in memory and written as one tar, in
// path order (a parent before its children) with fixed owners and times,
// so the same inputs give the same digest.
type layer map[string]entry

func (l layer) put(p string, e entry) error {
	p = path.Clean("/" + p)
	if old, ok := l[p]; ok && old != e {
		return fmt.Errorf("%s twice: %c then %c", p, old.kind, e.kind)
	}
	for d := path.Dir(p); d != "/"; d = path.Dir(d) {
		if old, ok := l[d]; ok && old.kind != tar.TypeDir {
			return fmt.Errorf("%s: parent %s is not a directory in the layer", p, d)
		}
	}
	l[p] = e
	return nil
}

func (l layer) dir(p string, mode int64) error { return l.put(p, entry{kind: tar.TypeDir, mode: mode}) }

func (l layer) symlink(p, target string) error {
	return l.put(p, entry{kind: tar.TypeSymlink, mode: 0o777, link: target})
}

// file puts the local file src at p, keeping its mode bits.
func (l layer) file(src, p string) error {
	st, err := os.Stat(src)
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", src)
	}
	return l.put(p, entry{kind: tar.TypeReg, mode: tarMode(st.Mode()), src: src})
}

func tarMode(m fs.FileMode) int64 {
	mode := int64(m.Perm())
	for bit, v := range map[fs.FileMode]int64{fs.ModeSetuid: 0o4000, fs.ModeSetgid: 0o2000, fs.ModeSticky: 0o1000} {
		if m&bit != 0 {
			mode |= v
		}
	}
	return mode
}

// host copies the host's path p into the layer where it is on the host:
// each symlink met on the way (Debian's /lib -> usr/lib, a library's
// soname link) becomes the same symlink in the layer, the file at the end
// a regular file. It returns the file's real path.
func (l layer) host(p string) (string, error) {
	return l.hostDepth(path.Clean(p), 0)
}

func (l layer) hostDepth(p string, depth int) (string, error) {
	if depth > 40 {
		return "", fmt.Errorf("%s: too many symlinks", p)
	}
	parts := strings.Split(strings.TrimPrefix(p, "/"), "/")
	cur := "/"
	for i, part := range parts {
		next := path.Join(cur, part)
		st, err := os.Lstat(next)
		if err != nil {
			return "", err
		}
		switch {
		case st.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(next)
			if err != nil {
				return "", err
			}
			if err := l.symlink(next, target); err != nil {
				return "", err
			}
			if !path.IsAbs(target) {
				target = path.Join(cur, target)
			}
			return l.hostDepth(path.Join(append([]string{target}, parts[i+1:]...)...), depth+1)
		case i == len(parts)-1:
			return next, l.file(next, next)
		case st.IsDir():
			if err := l.dir(next, 0o755); err != nil {
				return "", err
			}
		default:
			return "", fmt.Errorf("%s: %s is not a directory", p, next)
		}
		cur = next
	}
	return "", fmt.Errorf("%s: no file", p)
}

// libDirs are where the host's dynamic loader finds libraries (Debian's
// multiarch layout first).
func libDirs() []string {
	triple := map[string]string{"amd64": "x86_64-linux-gnu", "arm64": "aarch64-linux-gnu"}[runtime.GOARCH]
	return []string{"/lib/" + triple, "/usr/lib/" + triple, "/lib64", "/usr/lib64", "/lib", "/usr/lib"}
}

// hostProgram copies the host program p and, if it is dynamically linked,
// its loader and every library it needs (transitively), each where the
// loader looks for it.
func (l layer) hostProgram(p string) error {
	real, err := l.host(p)
	if err != nil {
		return err
	}
	todo, done := []string{real}, map[string]bool{}
	for len(todo) > 0 {
		f := todo[0]
		todo = todo[1:]
		if done[f] {
			continue
		}
		done[f] = true
		needs, err := elfNeeds(f)
		if err != nil {
			return err
		}
		for _, n := range needs {
			if !path.IsAbs(n) {
				if n, err = findLib(n); err != nil {
					return fmt.Errorf("%s: %w", f, err)
				}
			}
			r, err := l.host(n)
			if err != nil {
				return err
			}
			todo = append(todo, r)
		}
	}
	return nil
}

// elfNeeds lists the interpreter (an absolute path) and the DT_NEEDED
// sonames of an ELF file; a static binary needs none.
func elfNeeds(p string) ([]string, error) {
	f, err := elf.Open(p)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	defer f.Close()
	var needs []string
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP {
			b := make([]byte, prog.Filesz)
			if _, err := prog.ReadAt(b, 0); err != nil {
				return nil, err
			}
			needs = append(needs, strings.TrimRight(string(b), "\x00"))
		}
	}
	libs, err := f.ImportedLibraries()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	return append(needs, libs...), nil
}

func findLib(soname string) (string, error) {
	for _, d := range libDirs() {
		if _, err := os.Stat(path.Join(d, soname)); err == nil {
			return path.Join(d, soname), nil
		}
	}
	return "", fmt.Errorf("library %s not found in %v", soname, libDirs())
}

// tar writes the layer; every parent directory is made (0755) if not put.
func (l layer) tar() ([]byte, error) {
	for p := range l {
		for d := path.Dir(p); d != "/"; d = path.Dir(d) {
			if _, ok := l[d]; !ok {
				l[d] = entry{kind: tar.TypeDir, mode: 0o755}
			}
		}
	}
	paths := make([]string, 0, len(l))
	for p := range l {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, p := range paths {
		e := l[p]
		h := &tar.Header{Typeflag: e.kind, Name: strings.TrimPrefix(p, "/"), Mode: e.mode, Linkname: e.link, Format: tar.FormatPAX}
		var data []byte
		switch e.kind {
		case tar.TypeDir:
			h.Name += "/"
		case tar.TypeReg:
			var err error
			if data, err = os.ReadFile(e.src); err != nil {
				return nil, err
			}
			h.Size = int64(len(data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
