package userdriver

import (
	"testing"

	storagev1 "k8s.io/api/storage/v1"

	"github.com/volplane/volplane/internal/csi"
)

func TestObjectsFollowTheDriversCapabilities(t *testing.T) {
	s := Spec{Name: "x.example.com", Parameters: map[string]string{"type": "fast"}, PodInfoOnMount: true, FSGroupPolicy: "File",
		Attributes: map[string]string{"iops": "10"}}
	secrets := map[SecretKind]map[string]string{SecretExpand: {"k": "v"}}

	set, names := Objects(s, csi.Info{Controller: true}, secrets, true)
	d := set.CSIDrivers[0].Spec
	if *d.AttachRequired || !*d.PodInfoOnMount || *d.StorageCapacity || *d.FSGroupPolicy != storagev1.FileFSGroupPolicy {
		t.Errorf("CSIDriver spec %+v", d)
	}
	if len(set.Classes) != 2 || names.ImmediateClass != "x.example.com" || names.WaitClass != "x.example.com-wffc" {
		t.Fatalf("classes %v, names %+v", set.Classes, names)
	}
	imm := set.Classes[0]
	if imm.Annotations["storageclass.kubernetes.io/is-default-class"] != "true" || *imm.VolumeBindingMode != storagev1.VolumeBindingImmediate {
		t.Errorf("Immediate class %+v", imm)
	}
	if *set.Classes[1].VolumeBindingMode != storagev1.VolumeBindingWaitForFirstConsumer || set.Classes[1].Annotations != nil {
		t.Errorf("wait class %+v", set.Classes[1])
	}
	p := imm.Parameters
	if p["type"] != "fast" || p["csi.storage.k8s.io/controller-expand-secret-name"] != "x.example.com-expand" ||
		p["csi.storage.k8s.io/controller-expand-secret-namespace"] != SecretNamespace || len(set.Secrets) != 1 || set.Secrets[0].StringData["k"] != "v" {
		t.Errorf("parameters %v, secrets %v", p, set.Secrets)
	}
	if s.Parameters["csi.storage.k8s.io/controller-expand-secret-name"] != "" {
		t.Error("Objects wrote into the spec's parameters")
	}
	if len(set.SnapshotClasses)+len(set.GroupClasses)+len(set.AttributeClasses) != 0 || names.SnapshotClass != "" {
		t.Errorf("a driver that cannot snapshot or modify got classes for it: %+v", names)
	}

	set, names = Objects(s, csi.Info{Controller: true, Publish: true, Snapshot: true, GroupSnapshot: true, Modify: true}, nil, false)
	if !*set.CSIDrivers[0].Spec.AttachRequired {
		t.Error("PUBLISH_UNPUBLISH_VOLUME must make attachRequired true")
	}
	if set.Classes[0].Annotations != nil {
		t.Error("not the default driver, yet its class is the default")
	}
	if names.SnapshotClass != "x.example.com-snapshots" || set.SnapshotClasses[0].Driver != s.Name ||
		names.GroupClass != "x.example.com-group" || set.GroupClasses[0].Driver != s.Name ||
		names.AttributesClass != "x.example.com-attributes" || set.AttributeClasses[0].Parameters["iops"] != "10" {
		t.Errorf("names %+v, set %+v", names, set)
	}
}
