package attachment

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"

	corev1 "k8s.io/api/core/v1"
)

// Well-known names shared by the attach/detach controller, the attacher and
// the node agent.
const (
	// ManagedAnnotation on a Node says the attach/detach controller, not the
	// kubelet, attaches its volumes; only such nodes are managed.
	ManagedAnnotation = "volumes.kubernetes.io/controller-managed-attach-detach"
	// OutOfServiceTaint on a Node lets volumes be detached without waiting
	// for them to be unmounted; any effect counts.
	OutOfServiceTaint = "node.kubernetes.io/out-of-service"
	// NodeIDAnnotation on a VolumeAttachment records the driver's node ID,
	// from the node's CSINode, so that a detach still knows it once the
	// CSINode is gone.
	NodeIDAnnotation = "csi.alpha.kubernetes.io/node-id"
	// csiPluginName is the in-tree CSI plugin's name, the prefix of unique
	// volume names.
	csiPluginName = "kubernetes.io/csi"
)

// Name is the VolumeAttachment name of a volume on a node, as
// kube-controller-manager's CSI attacher computes it:
// csi-<hex(sha256(handle+driver+node))>.
func Name(handle, driver, node string) string {
	sum := sha256.Sum256([]byte(handle + driver + node))
	return "csi-" + hex.EncodeToString(sum[:])
}

// UniqueVolumeName is the name node.status.volumesAttached and
// node.status.volumesInUse use for a CSI volume:
// kubernetes.io/csi/<driver>^<handle>.
func UniqueVolumeName(driver, handle string) corev1.UniqueVolumeName {
	return corev1.UniqueVolumeName(csiPluginName + "/" + driver + "^" + handle)
}

// VolumeOf is the unique volume name of an attachable PersistentVolume
// (FromPV: a CSI PV, a migrated in-tree PV as its CSI driver sees it, an
// iscsi or fc PV), false for any other: the key under which every PV
// naming one volume is one volume.
func VolumeOf(pv *corev1.PersistentVolume) (corev1.UniqueVolumeName, bool) {
	v, ok, err := FromPV(pv)
	if !ok || err != nil {
		return "", false
	}
	return v.Unique, true
}

var unsafeDriverChars = regexp.MustCompile(`[^a-zA-Z0-9-]`)

// FinalizerPrefix starts every attacher finalizer (Finalizer).
const FinalizerPrefix = "external-attacher/"

// Finalizer is the finalizer the attacher of driver puts on a
// VolumeAttachment and on its PersistentVolume while the volume may be
// attached: "external-attacher/" + the driver name with every character
// other than letters, digits and '-' replaced by '-', and an 'X' appended if
// that leaves a trailing '-'. It is the external-attacher's name, so either
// attacher can finish what the other started.
func Finalizer(driver string) string {
	s := unsafeDriverChars.ReplaceAllString(driver, "-")
	if len(s) > 0 && s[len(s)-1] == '-' {
		s += "X"
	}
	return FinalizerPrefix + s
}
