package conformance

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/volplane/volplane/internal/checkup"
	"github.com/volplane/volplane/internal/hostpath"
	"github.com/volplane/volplane/internal/invariants"
	"github.com/volplane/volplane/internal/mounting"
)

// The actions scenarios are made of: each creates, deletes or waits on
// one object of the session's namespace, so that a step's failure names
// that object (WaitError) and the cleanup knows what was made.

func (s *Session) createClaim(ctx context.Context, c *corev1.PersistentVolumeClaim) error {
	s.About(c.Name)
	_, err := s.Lab.Client.CoreV1().PersistentVolumeClaims(s.Namespace).Create(ctx, c, metav1.CreateOptions{})
	return err
}

func (s *Session) getClaim(ctx context.Context, name string) (*corev1.PersistentVolumeClaim, error) {
	return s.Lab.Client.CoreV1().PersistentVolumeClaims(s.Namespace).Get(ctx, name, metav1.GetOptions{})
}

// waitClaim waits until the claim passes check ("" when it does, else what
// it is).
func (s *Session) waitClaim(ctx context.Context, name, what string, check func(*corev1.PersistentVolumeClaim) string) (*corev1.PersistentVolumeClaim, error) {
	var c *corev1.PersistentVolumeClaim
	err := waitFor(ctx, "PersistentVolumeClaim", s.Namespace, name, what, func(ctx context.Context) (string, error) {
		var err error
		if c, err = s.getClaim(ctx, name); err != nil {
			return err.Error(), nil
		}
		return check(c), nil
	})
	return c, err
}

// bound waits until the claim is Bound and returns it and its PV.
func (s *Session) bound(ctx context.Context, name string) (*corev1.PersistentVolumeClaim, *corev1.PersistentVolume, error) {
	s.About(name)
	c, err := s.waitClaim(ctx, name, "claim "+name+" to be Bound", func(c *corev1.PersistentVolumeClaim) string {
		if c.Status.Phase != corev1.ClaimBound {
			return fmt.Sprintf("claim %s is %s", name, c.Status.Phase)
		}
		return ""
	})
	if err != nil {
		return nil, nil, err
	}
	pv, err := s.Lab.Client.CoreV1().PersistentVolumes().Get(ctx, c.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		return nil, nil, fmt.Errorf("read the PV of claim %s: %w", name, err)
	}
	return c, pv, nil
}

func (s *Session) createPod(ctx context.Context, p *corev1.Pod) error {
	_, err := s.Lab.Client.CoreV1().Pods(s.Namespace).Create(ctx, p, metav1.CreateOptions{})
	return err
}

// running waits until the pod is Running and returns it.
func (s *Session) running(ctx context.Context, name string) (*corev1.Pod, error) {
	var p *corev1.Pod
	err := waitFor(ctx, "Pod", s.Namespace, name, "pod "+name+" to run", func(ctx context.Context) (string, error) {
		var err error
		if p, err = s.Lab.Client.CoreV1().Pods(s.Namespace).Get(ctx, name, metav1.GetOptions{}); err != nil {
			return err.Error(), nil
		}
		if p.Status.Phase != corev1.PodRunning {
			return fmt.Sprintf("pod %s is %s on node %q", name, p.Status.Phase, p.Spec.NodeName), nil
		}
		return "", nil
	})
	return p, err
}

// startPod creates the pod and waits until it runs.
func (s *Session) startPod(ctx context.Context, p *corev1.Pod) (*corev1.Pod, error) {
	if err := s.createPod(ctx, p); err != nil {
		return nil, err
	}
	return s.running(ctx, p.Name)
}

// deletePod deletes the pod and waits until it is gone: the node agent
// lets it go once its volumes are unpublished.
func (s *Session) deletePod(ctx context.Context, name string) error {
	err := s.Lab.Client.CoreV1().Pods(s.Namespace).Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return s.podGone(ctx, name)
}

// deleteClaim deletes the claim, recording it and its volume for the
// invariant checker; it returns the PV it was bound to (nil if none).
func (s *Session) deleteClaim(ctx context.Context, name string) (*corev1.PersistentVolume, error) {
	c, err := s.getClaim(ctx, name)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	d := invariants.DeletedClaim{Namespace: s.Namespace, Name: name, UID: c.UID, PV: c.Spec.VolumeName}
	var pv *corev1.PersistentVolume
	if c.Spec.VolumeName != "" {
		pv, err = s.Lab.Client.CoreV1().PersistentVolumes().Get(ctx, c.Spec.VolumeName, metav1.GetOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return nil, err
		}
		if pv != nil && pv.Spec.CSI != nil {
			d.Volume = invariants.Volume{Driver: pv.Spec.CSI.Driver, Handle: pv.Spec.CSI.VolumeHandle}
			d.Policy = claimPolicy(pv)
		}
	}
	if err := s.Lab.Client.CoreV1().PersistentVolumeClaims(s.Namespace).Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return nil, err
	}
	s.deleted = append(s.deleted, d)
	return pv, nil
}

// pvGone waits until the PV is gone.
func (s *Session) pvGone(ctx context.Context, name string) error {
	return waitFor(ctx, "PersistentVolume", "", name, "PV "+name+" to be deleted", func(ctx context.Context) (string, error) {
		pv, err := s.Lab.Client.CoreV1().PersistentVolumes().Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return "", nil
		case err != nil:
			return err.Error(), nil
		}
		return fmt.Sprintf("PV %s is %s", name, pv.Status.Phase), nil
	})
}

// onBackend says whether the driver lists the volume handle; ok is false
// when the driver does not list its volumes.
func (s *Session) onBackend(ctx context.Context, handle string) (found, ok bool, err error) {
	if !s.Lab.Controller.List {
		return false, false, nil
	}
	listings, err := checkup.ListVolumes(ctx, s.Lab.Endpoints)
	if err != nil {
		return false, true, err
	}
	for _, l := range listings {
		for _, e := range l.Entries {
			if e.GetVolume().GetVolumeId() == handle {
				return true, true, nil
			}
		}
	}
	return false, true, nil
}

// podPath is where the pod's volume of pv is on its node: the target path
// the node agent published it at, as the lab's DataPath resolves it.
func (s *Session) podPath(p *corev1.Pod, pv string) string {
	target := mounting.Layout{Root: mounting.NodeRoot(s.Lab.DataDir, p.Spec.NodeName)}.TargetPath(p.UID, pv)
	if s.Lab.DataPath != nil {
		return s.Lab.DataPath(target)
	}
	return target
}

// dataFile is the file a scenario's writer pod leaves for a reader.
const dataFile = "conformance.txt"

// writeFile writes, as the pod would, text into its volume of pv.
//
// A driver whose NodePublishVolume mounts nothing at the target path (one
// on in-memory fakes) leaves a bare directory there: a file written into it
// would never reach the volume and would keep the driver's unpublish from
// removing the directory, so every later scenario would wait on that pod.
// Such a publish fails the step instead, before anything is written.
func (s *Session) writeFile(p *corev1.Pod, pv, text string) error {
	dir := s.podPath(p, pv)
	if s.Lab.DataPath == nil {
		mounted, err := hostpath.NewMounter().IsMountPoint(dir)
		if err != nil {
			return fmt.Errorf("is the volume of pod %s mounted at %s: %w", p.Name, dir, err)
		}
		if !mounted {
			return fmt.Errorf("the driver's NodePublishVolume mounted nothing at %s (the volume of pod %s): what a pod writes there would not reach the volume", dir, p.Name)
		}
	}
	path := filepath.Join(dir, dataFile)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		return fmt.Errorf("write into the volume of pod %s: %w", p.Name, err)
	}
	return nil
}

// readFile checks, as the pod would, that its volume of pv holds text.
func (s *Session) readFile(p *corev1.Pod, pv, text string) error {
	path := filepath.Join(s.podPath(p, pv), dataFile)
	got, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read back in pod %s what the writer wrote (does the driver publish the volume's data at the target path?): %w", p.Name, err)
	}
	if string(got) != text {
		return fmt.Errorf("pod %s read %q, want %q", p.Name, got, text)
	}
	return nil
}
