package heartbeat

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

const (
	// LabelProvisioner marks a heartbeat Lease; its value is
	// LabelValue(driver name).
	LabelProvisioner = "heartbeat.volplane.io/provisioner"
	// AnnotationProvisioner holds the exact driver name the Lease beats for
	// (the label value may be a mapping of it).
	AnnotationProvisioner = "heartbeat.volplane.io/provisioner"
	// AnnotationNode holds the node of a node deployment's provisioner;
	// absent in the central mode.
	AnnotationNode = "heartbeat.volplane.io/node"

	namePrefix = "volplane-provisioner-"
	// hashLen hex digits of SHA-256 end a name that had to be mapped, so
	// that two different inputs never share it.
	hashLen = 16
)

// LeaseName is the name of the heartbeat Lease of provisioner served by
// one process: node is "" in the central mode, the node's name in node
// deployment. Readable names ("volplane-provisioner-hostpath.csi.volplane.io",
// "...--node-1" on a node) are kept as they are; a name with characters a
// Lease may not have, or too long, is mapped to a lowercase prefix of it
// and a hash of the exact input.
func LeaseName(provisioner, node string) string {
	plain := namePrefix + provisioner
	if node != "" {
		plain += "--" + node
	}
	clean := validation.IsDNS1123Subdomain(plain) == nil && !strings.Contains(provisioner, "--")
	if clean {
		return plain
	}
	return mapped(namePrefix, provisioner+"\x00"+node, validation.DNS1123SubdomainMaxLength, subdomainUnsafe)
}

// LabelValue is the value of LabelProvisioner for provisioner: the name
// itself when it is a valid label value (every CSI driver name that
// follows the CSI spec is), else a prefix of it and a hash.
func LabelValue(provisioner string) string {
	if len(validation.IsValidLabelValue(provisioner)) == 0 {
		return provisioner
	}
	return mapped("", provisioner, validation.LabelValueMaxLength, labelUnsafe)
}

// Selector selects the heartbeat Leases of provisioner (and, when a
// mapped label value is shared, maybe others: Find checks the
// annotation).
func Selector(provisioner string) string {
	return LabelProvisioner + "=" + LabelValue(provisioner)
}

// SidecarLeaseName is the name of the leader election Lease of the
// upstream external-provisioner for provisioner: the driver name with '/'
// and then every character but letters, digits and '-' turned into '-',
// and an "X" after a trailing '-' (csi-lib-utils' leaderelection).
func SidecarLeaseName(provisioner string) string {
	name := sidecarUnsafe.ReplaceAllString(provisioner, "-")
	if strings.HasSuffix(name, "-") {
		name += "X"
	}
	return name
}

var (
	subdomainUnsafe = regexp.MustCompile(`[^a-z0-9-]+`) // no dots: no empty or '-'-edged parts
	labelUnsafe     = regexp.MustCompile(`[^A-Za-z0-9._-]+`)
	sidecarUnsafe   = regexp.MustCompile(`[^a-zA-Z0-9-]`)
)

// mapped is prefix, a readable part of input (unsafe runs turned into
// '-', lowercase) and a hash of input, at most max long, beginning and
// ending with a letter or digit.
func mapped(prefix, input string, max int, unsafe *regexp.Regexp) string {
	sum := sha256.Sum256([]byte(input))
	hash := hex.EncodeToString(sum[:])[:hashLen]
	readable := unsafe.ReplaceAllString(strings.ToLower(strings.ReplaceAll(input, "\x00", "--")), "-")
	if room := max - len(prefix) - len(hash) - 1; len(readable) > room {
		readable = readable[:room]
	}
	readable = strings.TrimRight(readable, "-._")
	if prefix == "" {
		readable = strings.TrimLeft(readable, "-._")
	}
	if readable == "" {
		return prefix + hash
	}
	return prefix + readable + "-" + hash
}
