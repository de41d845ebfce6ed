package hostpath

import (
	"fmt"
	"path/filepath"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Everything a request carries is checked here, before any other code sees it.

const (
	// maxNameBytes is the CSI limit for strings; it is also ours for every
	// name and ID.
	maxNameBytes = 128
	// maxPathBytes is PATH_MAX on Linux.
	maxPathBytes = 4096
	// defaultVolumeBytes is the size of a volume requested without one.
	defaultVolumeBytes int64 = 1 << 30
	// maxVolumeBytes (1 PiB) is the largest volume served: anything larger is
	// a mistake, and sums of sizes stay far from overflowing int64.
	maxVolumeBytes int64 = 1 << 50
)

// checkName checks a name or ID from a request; field says which, for the
// error message.
func checkName(field, s string) error {
	if reason := nameProblem(s); reason != "" {
		return status.Errorf(codes.InvalidArgument, "%s %q %s", field, s, reason)
	}
	return nil
}

func nameProblem(s string) string {
	switch {
	case s == "":
		return "is required"
	case len(s) > maxNameBytes:
		return fmt.Sprintf("is %d bytes long; at most %d are allowed", len(s), maxNameBytes)
	case !utf8.ValidString(s):
		return "is not valid UTF-8"
	case strings.ContainsAny(s, `/\`):
		return `must not contain "/" or "\"`
	case strings.Contains(s, ".."):
		return `must not contain ".."`
	case strings.ContainsFunc(s, unicode.IsControl):
		return "must not contain control characters"
	}
	return ""
}

// checkNodePath checks a staging or target path from the CO and returns it
// cleaned. The CO owns these paths, but none may point into DataDir, where
// a mount would hide or expose the driver's own data. It looks at the path
// as written: Driver.nodePath checks it again once symlinks are resolved.
func checkNodePath(field, p, dataDir string) (string, error) {
	reason := ""
	switch {
	case p == "":
		reason = "is required"
	case len(p) > maxPathBytes:
		reason = fmt.Sprintf("is longer than %d bytes", maxPathBytes)
	case !utf8.ValidString(p) || strings.ContainsFunc(p, unicode.IsControl):
		reason = "must be valid UTF-8 without control characters"
	case !filepath.IsAbs(p):
		reason = "must be an absolute path"
	case within(dataDir, filepath.Clean(p)) || within(filepath.Clean(p), dataDir):
		reason = "must not be inside the driver's data dir nor contain it"
	}
	if reason != "" {
		return "", status.Errorf(codes.InvalidArgument, "%s %q %s", field, p, reason)
	}
	return filepath.Clean(p), nil
}

// within reports whether path p is root or below it; both must be clean.
func within(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// requestedBytes is the size to create for a capacity range: the required
// bytes, else the default clipped to the limit.
func requestedBytes(r *csi.CapacityRange) (int64, error) {
	req, lim := r.GetRequiredBytes(), r.GetLimitBytes()
	switch {
	case req < 0 || lim < 0:
		return 0, status.Errorf(codes.InvalidArgument, "capacity range: negative bytes (required %d, limit %d)", req, lim)
	case lim > 0 && lim < req:
		return 0, status.Errorf(codes.OutOfRange, "capacity range: limit %d is below the required %d bytes", lim, req)
	case req > maxVolumeBytes:
		return 0, status.Errorf(codes.OutOfRange, "capacity range: %d bytes is more than the largest volume served (%d)", req, maxVolumeBytes)
	case req > 0:
		return req, nil
	case lim > 0:
		return min(lim, defaultVolumeBytes), nil
	}
	return defaultVolumeBytes, nil
}

// fitsRange reports whether a volume of size satisfies r.
func fitsRange(size int64, r *csi.CapacityRange) bool {
	return size >= r.GetRequiredBytes() && (r.GetLimitBytes() == 0 || size <= r.GetLimitBytes())
}

// accessTypeOf checks that c is well formed (InvalidArgument otherwise) and
// returns its access type. Whether the driver supports it is capabilityProblem's call.
func accessTypeOf(c *csi.VolumeCapability) (accessType, error) {
	if c == nil {
		return "", status.Error(codes.InvalidArgument, "volume capability is required")
	}
	if c.GetAccessMode().GetMode() == csi.VolumeCapability_AccessMode_UNKNOWN {
		return "", status.Error(codes.InvalidArgument, "volume capability: access mode is required")
	}
	switch {
	case c.GetMount() != nil:
		return accessMount, nil
	case c.GetBlock() != nil:
		return accessBlock, nil
	}
	return "", status.Error(codes.InvalidArgument, "volume capability: access type (mount or block) is required")
}

// capabilityProblem says why a well-formed capability cannot be served, or
// "". multiNode: the volumes are network volumes, which several nodes may
// use at once.
func capabilityProblem(c *csi.VolumeCapability, multiNode bool) string {
	mode := c.GetAccessMode().GetMode()
	switch {
	case isSingleNodeMode(mode):
		return ""
	case multiNode && isMultiNodeMode(mode):
		return ""
	}
	return fmt.Sprintf("access mode %s is not supported: a volume lives on one node", mode)
}

// isSingleNodeMode reports whether mode lets one node at a time use the volume.
func isSingleNodeMode(mode csi.VolumeCapability_AccessMode_Mode) bool {
	switch mode {
	case csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER,
		csi.VolumeCapability_AccessMode_SINGLE_NODE_READER_ONLY,
		csi.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER,
		csi.VolumeCapability_AccessMode_SINGLE_NODE_MULTI_WRITER:
		return true
	}
	return false
}

func isMultiNodeMode(mode csi.VolumeCapability_AccessMode_Mode) bool {
	switch mode {
	case csi.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY,
		csi.VolumeCapability_AccessMode_MULTI_NODE_SINGLE_WRITER,
		csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER:
		return true
	}
	return false
}

// checkCapability checks one capability for a call that acts on it.
func checkCapability(c *csi.VolumeCapability, multiNode bool) (accessType, error) {
	t, err := accessTypeOf(c)
	if err != nil {
		return "", err
	}
	if problem := capabilityProblem(c, multiNode); problem != "" {
		return "", status.Error(codes.InvalidArgument, problem)
	}
	return t, nil
}

// checkCapabilities checks the capabilities of a new volume, which must all
// ask for the same access type.
func checkCapabilities(caps []*csi.VolumeCapability, multiNode bool) (accessType, error) {
	if len(caps) == 0 {
		return "", status.Error(codes.InvalidArgument, "volume capabilities are required")
	}
	var want accessType
	for _, c := range caps {
		t, err := checkCapability(c, multiNode)
		if err != nil {
			return "", err
		}
		if want != "" && t != want {
			return "", status.Error(codes.InvalidArgument, "volume capabilities ask for both mount and block access")
		}
		want = t
	}
	return want, nil
}

// isReadOnlyMode reports whether the access mode allows reading only, which
// makes every publication read-only whatever the request's readonly flag says.
func isReadOnlyMode(c *csi.VolumeCapability) bool {
	switch c.GetAccessMode().GetMode() {
	case csi.VolumeCapability_AccessMode_SINGLE_NODE_READER_ONLY, csi.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY:
		return true
	}
	return false
}

// checkPageToken accepts "" or an ID of the listed kind: tokens are the ID
// of the next entry to return.
func checkPageToken(token, prefix string) error {
	if token != "" && !isIssuedID(prefix, token) {
		return status.Errorf(codes.Aborted, "starting token %q is not valid; start the listing again", token)
	}
	return nil
}

// checkMaxEntries rejects a negative page size; 0 means all.
func checkMaxEntries(n int32) error {
	if n < 0 {
		return status.Errorf(codes.InvalidArgument, "max entries must not be negative, got %d", n)
	}
	return nil
}
