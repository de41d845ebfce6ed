package endpoint

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
)

// Scheme is the only endpoint scheme: drivers are reached over unix sockets.
const Scheme = "unix://"

// MaxSocketPath is the longest path a unix socket may have on Linux
// (sun_path holds 108 bytes including the terminating NUL).
const MaxSocketPath = 107

// example is what the errors show as a valid address.
const example = "unix:///path/to/csi.sock"

// Parse returns the socket path of address ("unix:///run/csi.sock" →
// "/run/csi.sock"), cleaned, or says why address is not one volplane can
// dial or serve: another scheme, a relative path, or a path longer than a
// unix socket's.
func Parse(address string) (string, error) {
	if address == "" {
		return "", errors.New("CSI endpoint is required (" + example + ")")
	}
	path, ok := strings.CutPrefix(address, Scheme)
	if !ok {
		return "", fmt.Errorf("CSI endpoint %q is not supported: only unix sockets are (%s)", address, example)
	}
	if !filepath.IsAbs(path) {
		return "", fmt.Errorf("CSI endpoint %q: the socket path must be absolute (%s)", address, example)
	}
	path = filepath.Clean(path)
	if len(path) > MaxSocketPath {
		return "", fmt.Errorf("CSI endpoint %q: the socket path is %d bytes, longer than the %d a unix socket allows",
			address, len(path), MaxSocketPath)
	}
	return path, nil
}

// Format is the address of the socket at path, which should be absolute.
func Format(path string) string { return Scheme + path }
