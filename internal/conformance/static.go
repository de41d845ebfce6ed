package conformance

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/invariants"
)

// staticRetain is reclaim policy Retain and static provisioning, driver
// agnostic: a volume provisioned through a Retain copy of the Immediate
// class outlives its claim (the PV goes Released, the backend keeps it,
// and keeps it when the PV is deleted); a PV made by hand for the same
// volume handle is bound by a claim naming it, and a pod reads what the
// first pod wrote. The volume is removed at the end as an administrator
// would, with DeleteVolume at the driver.
func staticRetain() Scenario {
	return Scenario{Name: "static-provisioning-retain", Applies: always, Run: func(s *Session) error {
		var class string
		var pv *corev1.PersistentVolume
		var writer *corev1.Pod
		static := s.Namespace + "-static"
		return s.Steps(
			Step{"create a Retain copy of the Immediate class", func(ctx context.Context) (err error) {
				class, err = s.retainClass(ctx)
				return err
			}},
			Step{"create a claim of it", func(ctx context.Context) error { return s.createClaim(ctx, s.newClaim("data", class)) }},
			Step{"the claim binds", func(ctx context.Context) (err error) {
				_, pv, err = s.bound(ctx, "data")
				return err
			}},
			Step{"a pod writes a file into it", func(ctx context.Context) (err error) {
				if writer, err = s.startPod(ctx, s.newPod("writer", s.firstNode(pv), "data", false)); err != nil {
					return err
				}
				return s.writeFile(writer, pv.Name, s.Namespace)
			}},
			Step{"the pod is deleted", func(ctx context.Context) error { return s.deletePod(ctx, "writer") }},
			Step{"delete the claim: the PV is Released and the volume stays", func(ctx context.Context) error {
				if _, err := s.deleteClaim(ctx, "data"); err != nil {
					return err
				}
				s.retain(backendVolume(pv))
				if err := s.released(ctx, pv.Name); err != nil {
					return err
				}
				return s.stillOnBackend(ctx, pv)
			}},
			Step{"delete the Released PV: the volume stays", func(ctx context.Context) error {
				if err := s.deletePV(ctx, pv.Name); err != nil {
					return err
				}
				return s.stillOnBackend(ctx, pv)
			}},
			Step{"create a PV by hand for the volume, and a claim naming it", func(ctx context.Context) error {
				if _, err := s.Lab.Client.CoreV1().PersistentVolumes().Create(ctx, staticPV(static, pv), metav1.CreateOptions{}); err != nil {
					return err
				}
				return s.createClaim(ctx, s.newClaim("static", "", func(c *corev1.PersistentVolumeClaim) { c.Spec.VolumeName = static }))
			}},
			Step{"the claim binds the PV", func(ctx context.Context) error {
				c, _, err := s.bound(ctx, "static")
				if err == nil && c.Spec.VolumeName != static {
					err = fmt.Errorf("claim static is bound to %s, want %s", c.Spec.VolumeName, static)
				}
				return err
			}},
			Step{"a pod using it reads the file back", func(ctx context.Context) error {
				reader, err := s.startPod(ctx, s.newPod("reader", s.otherNode(pv, writer), "static", false))
				if err != nil {
					return err
				}
				return s.readFile(reader, static, s.Namespace)
			}},
			Step{"delete the pod and the claim: the PV is Released and the volume stays", func(ctx context.Context) error {
				if err := s.deletePod(ctx, "reader"); err != nil {
					return err
				}
				if _, err := s.deleteClaim(ctx, "static"); err != nil {
					return err
				}
				if err := s.released(ctx, static); err != nil {
					return err
				}
				return s.stillOnBackend(ctx, pv)
			}},
			Step{"delete the PV, and the volume with DeleteVolume", func(ctx context.Context) error {
				if err := s.deletePV(ctx, static); err != nil {
					return err
				}
				return s.removeOrphans(ctx)
			}},
		)
	}}
}

// retainClass creates a copy of the Immediate class with reclaim policy
// Retain, removed by the cleanup.
func (s *Session) retainClass(ctx context.Context) (string, error) {
	classes := s.Lab.Client.StorageV1().StorageClasses()
	base, err := classes.Get(ctx, s.Lab.ImmediateClass, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	c := &storagev1.StorageClass{
		ObjectMeta:           metav1.ObjectMeta{Name: s.Namespace + "-retain"},
		Provisioner:          base.Provisioner,
		Parameters:           base.Parameters,
		MountOptions:         base.MountOptions,
		AllowVolumeExpansion: base.AllowVolumeExpansion,
		VolumeBindingMode:    base.VolumeBindingMode,
		AllowedTopologies:    base.AllowedTopologies,
		ReclaimPolicy:        ptr.To(corev1.PersistentVolumeReclaimRetain),
	}
	if _, err := classes.Create(ctx, c, metav1.CreateOptions{}); err != nil {
		return "", err
	}
	s.classes = append(s.classes, c.Name)
	return c.Name, nil
}

// staticPV is a PV made by hand for the volume of pv: its CSI source,
// size, modes and node affinity, no class, reclaim policy Retain.
func staticPV(name string, pv *corev1.PersistentVolume) *corev1.PersistentVolume {
	return &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      pv.Spec.Capacity,
			PersistentVolumeSource:        corev1.PersistentVolumeSource{CSI: pv.Spec.CSI.DeepCopy()},
			AccessModes:                   pv.Spec.AccessModes,
			VolumeMode:                    pv.Spec.VolumeMode,
			NodeAffinity:                  pv.Spec.NodeAffinity.DeepCopy(),
			MountOptions:                  pv.Spec.MountOptions,
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
		},
	}
}

// released waits until the PV is Released.
func (s *Session) released(ctx context.Context, name string) error {
	return waitFor(ctx, "PersistentVolume", "", name, "PV "+name+" to be Released", func(ctx context.Context) (string, error) {
		pv, err := s.Lab.Client.CoreV1().PersistentVolumes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err.Error(), nil
		}
		if pv.Status.Phase != corev1.VolumeReleased {
			return fmt.Sprintf("PV %s is %s", name, pv.Status.Phase), nil
		}
		return "", nil
	})
}

// stillOnBackend checks that the driver still lists pv's volume (when it
// lists its volumes).
func (s *Session) stillOnBackend(ctx context.Context, pv *corev1.PersistentVolume) error {
	found, lists, err := s.onBackend(ctx, pv.Spec.CSI.VolumeHandle)
	if err != nil || !lists || found {
		return err
	}
	return fmt.Errorf("the driver no longer lists volume %s of Retain PV %s", pv.Spec.CSI.VolumeHandle, pv.Name)
}

// backendVolume is pv's volume as the invariant checker names it.
func backendVolume(pv *corev1.PersistentVolume) invariants.Volume {
	return invariants.Volume{Driver: pv.Spec.CSI.Driver, Handle: pv.Spec.CSI.VolumeHandle}
}
