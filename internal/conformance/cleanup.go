package conformance

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/volplane/volplane/internal/csi"
)

// cleanup removes what the scenario made, pass or fail, in the order a
// user would: pods, snapshots, claims, then waits until their Delete PVs
// are gone; Retain PVs and the backend volumes the scenario kept are
// deleted by hand; the namespace last (not waited on: nothing is left in
// it that holds a volume).
func (s *Session) cleanup(ctx context.Context) error {
	core := s.Lab.Client.CoreV1()
	pods, err := core.Pods(s.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	var errs []error
	for _, p := range pods.Items {
		errs = append(errs, s.deletePod(ctx, p.Name))
	}
	errs = append(errs, s.deleteSnapshots(ctx))
	claims, err := core.PersistentVolumeClaims(s.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for _, c := range claims.Items {
		_, err := s.deleteClaim(ctx, c.Name)
		errs = append(errs, err)
	}
	for _, d := range s.deleted {
		errs = append(errs, s.claimGone(ctx, d.Name))
		if d.PV == "" {
			continue
		}
		if d.Policy == corev1.PersistentVolumeReclaimDelete {
			errs = append(errs, s.pvGone(ctx, d.PV))
			continue
		}
		errs = append(errs, s.deletePV(ctx, d.PV))
	}
	errs = append(errs, s.removeOrphans(ctx))
	for _, class := range s.classes {
		err := s.Lab.Client.StorageV1().StorageClasses().Delete(ctx, class, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, err)
		}
	}
	err = core.Namespaces().Delete(ctx, s.Namespace, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// claimGone waits until the claim is gone (pvc-protection lets it go
// once no pod uses it).
func (s *Session) claimGone(ctx context.Context, name string) error {
	return waitFor(ctx, "PersistentVolumeClaim", s.Namespace, name, "claim "+name+" to be gone", func(ctx context.Context) (string, error) {
		_, err := s.getClaim(ctx, name)
		switch {
		case apierrors.IsNotFound(err):
			return "", nil
		case err != nil:
			return err.Error(), nil
		}
		return "claim " + name + " is still there", nil
	})
}

// deletePV deletes a PV that is not the reclaim loop's to delete (Retain,
// or made by hand) and waits until it is gone.
func (s *Session) deletePV(ctx context.Context, name string) error {
	err := s.Lab.Client.CoreV1().PersistentVolumes().Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return s.pvGone(ctx, name)
}

// removeOrphans deletes from the backend the volumes the scenario kept
// past their PVs (a Retain volume): as an administrator would, with
// DeleteVolume at every controller endpoint of the driver (a node-local
// driver's volume is at one of them; deleting a missing one succeeds).
func (s *Session) removeOrphans(ctx context.Context) error {
	var errs []error
	for v := range s.orphans {
		if err := s.deleteVolume(ctx, v.Handle); err != nil {
			errs = append(errs, err)
			continue
		}
		s.forget(v)
	}
	return errors.Join(errs...)
}

// deleteVolume deletes the backend volume handle through the driver's
// controller endpoints.
func (s *Session) deleteVolume(ctx context.Context, handle string) error {
	for _, addr := range s.Lab.Endpoints {
		ep, err := csi.Dial(ctx, addr, nil)
		if err != nil {
			return err
		}
		err = ep.DeleteVolume(ctx, handle, nil)
		_ = ep.Close()
		if err != nil {
			return fmt.Errorf("DeleteVolume %s at %s: %w", handle, addr, err)
		}
	}
	return nil
}
