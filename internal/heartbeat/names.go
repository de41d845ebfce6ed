package heartbeat

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Role is what a heartbeat says runs: the provisioner (the
// external-provisioner's role) or the snapshotter (the csi-snapshotter's).
// Each role has its own Leases, label and annotation; the provisioner's are
// the names volplane always used.
type Role string

const (
	Provisioner Role = "provisioner"
	Snapshotter Role = "snapshotter"
)

// Roles are every role, in the order explain names them.
var Roles = []Role{Provisioner, Snapshotter}

const (
	// LabelProvisioner marks a provisioner's heartbeat Lease; its value is
	// LabelValue(driver name).
	LabelProvisioner = "heartbeat.volplane.io/provisioner"
	// AnnotationProvisioner holds the exact driver name the Lease beats for
	// (the label value may be a mapping of it).
	AnnotationProvisioner = "heartbeat.volplane.io/provisioner"
	// LabelSnapshotter and AnnotationSnapshotter are the snapshotter's.
	LabelSnapshotter      = "heartbeat.volplane.io/snapshotter"
	AnnotationSnapshotter = "heartbeat.volplane.io/snapshotter"
	// AnnotationNode holds the node of a node deployment's process; absent
	// in the central mode.
	AnnotationNode = "heartbeat.volplane.io/node"

	// snapshotterSidecarPrefix is the csi-snapshotter's leader election
	// lock name before the driver's (cmd/csi-snapshotter).
	snapshotterSidecarPrefix = "external-snapshotter-leader-"
	// hashLen hex digits of SHA-256 end a name that had to be mapped, so
	// that two different inputs never share it.
	hashLen = 16
)

// Label is the label that marks the role's heartbeat Leases (value:
// LabelValue(driver)); Annotation (the same key) holds the exact driver.
func (r Role) Label() string {
	if r == Snapshotter {
		return LabelSnapshotter
	}
	return LabelProvisioner
}

// Annotation holds the exact driver name on the role's heartbeat Leases.
func (r Role) Annotation() string {
	if r == Snapshotter {
		return AnnotationSnapshotter
	}
	return AnnotationProvisioner
}

// prefix begins the role's Lease names.
func (r Role) prefix() string { return "volplane-" + string(r.normal()) + "-" }

// normal is the role, the provisioner for any unknown one (the zero Role
// is the provisioner: what a Beat without a role always meant).
func (r Role) normal() Role {
	if r == Snapshotter {
		return Snapshotter
	}
	return Provisioner
}

// Sidecar names the upstream process of the role, as a reason says it.
func (r Role) Sidecar() string {
	if r.normal() == Snapshotter {
		return "csi-snapshotter"
	}
	return "external-provisioner"
}

// LeaseName is the name of the role's heartbeat Lease of driver served by
// one process (node "" in the central mode): LeaseName for the provisioner,
// "volplane-snapshotter-<driver>[--<node>]" for the snapshotter, mapped the
// same way.
func (r Role) LeaseName(driver, node string) string {
	plain := r.prefix() + driver
	if node != "" {
		plain += "--" + node
	}
	clean := validation.IsDNS1123Subdomain(plain) == nil && !strings.Contains(driver, "--")
	if clean {
		return plain
	}
	return mapped(r.prefix(), driver+"\x00"+node, validation.DNS1123SubdomainMaxLength, subdomainUnsafe)
}

// Selector selects the role's heartbeat Leases of driver (and, when a
// mapped label value is shared, maybe others: Find checks the annotation).
func (r Role) Selector(driver string) string {
	return r.Label() + "=" + LabelValue(driver)
}

// SidecarLeaseName is the leader election Lease of the role's upstream
// process for driver: SidecarLeaseName for the external-provisioner; for
// the csi-snapshotter its lock "external-snapshotter-leader-<driver, '/'
// as '-'>" cleaned the same way.
func (r Role) SidecarLeaseName(driver string) string {
	if r.normal() == Snapshotter {
		return SidecarLeaseName(snapshotterSidecarPrefix + strings.ReplaceAll(driver, "/", "-"))
	}
	return SidecarLeaseName(driver)
}

// LeaseName is the name of the heartbeat Lease of provisioner served by
// one process: node is "" in the central mode, the node's name in node
// deployment. Readable names ("volplane-provisioner-hostpath.csi.volplane.io",
// "...--node-1" on a node) are kept as they are; a name with characters a
// Lease may not have, or too long, is mapped to a lowercase prefix of it
// and a hash of the exact input.
func LeaseName(provisioner, node string) string { return Provisioner.LeaseName(provisioner, node) }

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
func Selector(provisioner string) string { return Provisioner.Selector(provisioner) }

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
