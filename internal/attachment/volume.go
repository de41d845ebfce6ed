package attachment

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	csitranslation "k8s.io/csi-translation-lib"
	"k8s.io/klog/v2"
)

// Kind is how the attach/detach controller attaches a volume.
type Kind int

const (
	// KindCSI is a CSI PersistentVolume: a VolumeAttachment for its driver.
	KindCSI Kind = iota
	// KindMigrated is the source of an in-tree plugin migrated to CSI
	// (every plugin csi-translation-lib knows: awsElasticBlockStore,
	// gcePersistentDisk, azureDisk, azureFile, cinder, vsphereVolume,
	// portworxVolume; kube-controller-manager v1.37 migrates them all,
	// always, csimigration.PluginManager.IsMigrationCompleteForPlugin):
	// a VolumeAttachment for the CSI source csi-translation-lib makes of
	// it, as if the PV were that CSI PV.
	KindMigrated
	// KindInTree is the source of an attachable in-tree plugin that is not
	// migrated and whose controller-side attach and detach do nothing
	// (iscsi, fc: their Attach and Detach return at once): the volume is
	// attached the moment it is wanted, and reported in
	// node.status.volumesAttached; no VolumeAttachment.
	KindInTree
)

// The in-tree plugins of KindInTree (pkg/volume/iscsi, pkg/volume/fc).
const (
	ISCSIPluginName = "kubernetes.io/iscsi"
	FCPluginName    = "kubernetes.io/fc"
)

// Volume is an attachable volume as attach/detach sees it: a
// PersistentVolume's, or a pod's inline volume's.
type Volume struct {
	Kind Kind
	// PV is the volume as a CSI PersistentVolume: the PV itself (KindCSI),
	// the PV csi-translation-lib makes of it (KindMigrated: of an inline
	// volume, named after the disk), or the in-tree PV (KindInTree, nil for
	// an inline volume).
	PV *v1.PersistentVolume
	// Inline is a pod's inline volume: its VolumeAttachment carries the
	// translated spec (spec.source.inlineVolumeSpec), not a PV name.
	Inline bool
	// Driver and Handle are the CSI driver and volume handle (not KindInTree).
	Driver, Handle string
	// Plugin is the in-tree plugin (KindMigrated, KindInTree).
	Plugin string
	// Unique is the unique volume name node status uses.
	Unique v1.UniqueVolumeName
	// Name names the volume in events, as the reference's volume.Spec
	// Name() does: the PV's name, the translated PV's for a migrated inline
	// volume, the pod volume's for an in-tree inline one.
	Name string
}

// FromPV is the attachable volume of a PersistentVolume; false for a PV of
// no attachable kind (nfs, hostPath, local, ...). A migrated source that
// csi-translation-lib cannot translate is its error, which callers wrap
// with their reference's text.
func FromPV(pv *v1.PersistentVolume) (Volume, bool, error) {
	if pv == nil {
		return Volume{}, false, nil
	}
	if csi := pv.Spec.CSI; csi != nil {
		return Volume{Kind: KindCSI, PV: pv, Driver: csi.Driver, Handle: csi.VolumeHandle,
			Unique: UniqueVolumeName(csi.Driver, csi.VolumeHandle), Name: pv.Name}, true, nil
	}
	if plugin, name, ok := inTreeName(pvISCSI(pv.Spec.ISCSI), pv.Spec.FC); ok {
		return Volume{Kind: KindInTree, PV: pv, Plugin: plugin, Unique: inTreeUnique(plugin, name), Name: pv.Name}, true, nil
	}
	tr := csitranslation.New()
	if !tr.IsPVMigratable(pv) {
		return Volume{}, false, nil
	}
	plugin, err := tr.GetInTreePluginNameFromSpec(pv, nil)
	if err != nil || plugin == "" {
		return Volume{}, false, nil
	}
	out, err := tr.TranslateInTreePVToCSI(klog.TODO(), pv)
	if err == nil && out.Spec.CSI == nil {
		err = fmt.Errorf("no CSI source")
	}
	if err != nil {
		return Volume{}, false, err
	}
	return migrated(out, plugin, false), true, nil
}

// FromInline is the attachable volume of a pod's inline volume (not a
// claim): an in-tree source of a migrated plugin, translated as the
// reference translates it (TranslateInTreeInlineVolumeToCSI, with the
// pod's namespace for any secret it names), or an iscsi or fc source.
// false for any other volume.
func FromInline(pod *v1.Pod, vol *v1.Volume) (Volume, bool, error) {
	if vol.PersistentVolumeClaim != nil || vol.Ephemeral != nil || vol.CSI != nil {
		return Volume{}, false, nil
	}
	if plugin, name, ok := inTreeName(vol.ISCSI, vol.FC); ok {
		return Volume{Kind: KindInTree, Inline: true, Plugin: plugin, Unique: inTreeUnique(plugin, name), Name: vol.Name}, true, nil
	}
	tr := csitranslation.New()
	if !tr.IsInlineMigratable(vol) {
		// Most inline volumes (projected tokens, configMaps): asking for
		// the plugin name would build an error per volume per sync.
		return Volume{}, false, nil
	}
	plugin, err := tr.GetInTreePluginNameFromSpec(nil, vol)
	if err != nil || plugin == "" {
		return Volume{}, false, nil
	}
	out, err := tr.TranslateInTreeInlineVolumeToCSI(klog.TODO(), vol, pod.Namespace)
	if err == nil && out.Spec.CSI == nil {
		err = fmt.Errorf("no CSI source")
	}
	if err != nil {
		return Volume{}, false, err
	}
	return migrated(out, plugin, true), true, nil
}

func migrated(pv *v1.PersistentVolume, plugin string, inline bool) Volume {
	csi := pv.Spec.CSI
	return Volume{Kind: KindMigrated, PV: pv, Inline: inline, Driver: csi.Driver, Handle: csi.VolumeHandle,
		Plugin: plugin, Unique: UniqueVolumeName(csi.Driver, csi.VolumeHandle), Name: pv.Name}
}

// inTreeName is the plugin and the volume name its GetVolumeName gives:
// iscsi "<targetPortal>:<iqn>:<lun>"; fc "[wwn ...]:<lun>" or "[wwid ...]"
// (Go's %v of the lists), or "" when it has neither (the reference names
// it so too).
func inTreeName(iscsi *v1.ISCSIVolumeSource, fc *v1.FCVolumeSource) (plugin, name string, ok bool) {
	switch {
	case iscsi != nil:
		return ISCSIPluginName, fmt.Sprintf("%v:%v:%v", iscsi.TargetPortal, iscsi.IQN, iscsi.Lun), true
	case fc != nil && len(fc.TargetWWNs) != 0 && fc.Lun != nil:
		return FCPluginName, fmt.Sprintf("%v:%v", fc.TargetWWNs, *fc.Lun), true
	case fc != nil && len(fc.WWIDs) != 0:
		return FCPluginName, fmt.Sprintf("%v", fc.WWIDs), true
	case fc != nil:
		return FCPluginName, "", true
	}
	return "", "", false
}

// pvISCSI is the PV's iscsi source in the inline form (the fields
// inTreeName reads), nil if it has none.
func pvISCSI(s *v1.ISCSIPersistentVolumeSource) *v1.ISCSIVolumeSource {
	if s == nil {
		return nil
	}
	return &v1.ISCSIVolumeSource{TargetPortal: s.TargetPortal, IQN: s.IQN, Lun: s.Lun}
}

// inTreeUnique is the reference's GetUniqueVolumeName: <plugin>/<name>.
func inTreeUnique(plugin, name string) v1.UniqueVolumeName {
	return v1.UniqueVolumeName(plugin + "/" + name)
}

// InTreePlugin is the KindInTree plugin a unique volume name is of, "" if
// none.
func InTreePlugin(u v1.UniqueVolumeName) string {
	for _, p := range []string{ISCSIPluginName, FCPluginName} {
		if strings.HasPrefix(string(u), p+"/") {
			return p
		}
	}
	return ""
}

// InlineVolumes are the pod's inline volumes that attach/detach attaches
// (migrated or in-tree), those that fail to translate left out: the
// caller reads their drivers and their attachments elsewhere.
func InlineVolumes(pod *v1.Pod) []Volume {
	var out []Volume
	for i := range pod.Spec.Volumes {
		if v, ok, err := FromInline(pod, &pod.Spec.Volumes[i]); ok && err == nil {
			out = append(out, v)
		}
	}
	return out
}
