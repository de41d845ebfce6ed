package checkup

import (
	"context"
	"fmt"
	"io"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/volplane/volplane/internal/doctor"
)

// RefusedError is a release refused, with the decision that refused it.
type RefusedError struct{ Decision doctor.ReleaseDecision }

func (e *RefusedError) Error() string {
	return "refused (" + string(e.Decision.Refusal) + "): " + e.Decision.Reason
}

// releaseAttempts bounds the read-decide-write rounds lost to concurrent
// writers (each a conflict on the resourceVersion read).
const releaseAttempts = 3

// pollEvery is how often Release looks whether the binder made the volume
// Available.
const pollEvery = 100 * time.Millisecond

// Release clears the stale claimRef of a Retain, Released volume after
// confirming its claim is gone (doctor.DecideRelease), then waits up to
// wait for the binder to make it Available. A refusal is a *RefusedError.
func Release(ctx context.Context, client kubernetes.Interface, name string, wait time.Duration, w io.Writer) error {
	var d doctor.ReleaseDecision
	for attempt := 1; ; attempt++ {
		pv, claim, err := readRelease(ctx, client, name)
		if err != nil {
			return err
		}
		if d = doctor.DecideRelease(name, pv, claim); d.Refusal != "" {
			return &RefusedError{Decision: d}
		}
		_, err = client.CoreV1().PersistentVolumes().Update(ctx, doctor.Released(pv), metav1.UpdateOptions{})
		if err == nil {
			break
		}
		if !apierrors.IsConflict(err) || attempt == releaseAttempts {
			return fmt.Errorf("persistentvolume %s: clear claimRef: %w", name, err)
		}
	}
	fmt.Fprintf(w, "persistentvolume %s released: %s; its claimRef is cleared.\n", name, d.Reason)
	return waitAvailable(ctx, client, name, wait, w)
}

// readRelease reads the volume and, live, the claim its claimRef names;
// nil for either that does not exist.
func readRelease(ctx context.Context, client kubernetes.Interface, name string) (*v1.PersistentVolume, *v1.PersistentVolumeClaim, error) {
	pv, err := client.CoreV1().PersistentVolumes().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read persistentvolume %s: %w", name, err)
	}
	ref := pv.Spec.ClaimRef
	if ref == nil {
		return pv, nil, nil
	}
	claim, err := client.CoreV1().PersistentVolumeClaims(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return pv, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read claim %s/%s: %w", ref.Namespace, ref.Name, err)
	}
	return pv, claim, nil
}

// waitAvailable waits for the binder to mark the volume Available (or to
// bind it already), and says what it saw.
func waitAvailable(ctx context.Context, client kubernetes.Interface, name string, wait time.Duration, w io.Writer) error {
	deadline := time.Now().Add(wait)
	for {
		pv, err := client.CoreV1().PersistentVolumes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("read persistentvolume %s: %w", name, err)
		}
		switch {
		case pv.Status.Phase == v1.VolumeAvailable:
			_, err = fmt.Fprintf(w, "persistentvolume %s is Available.\n", name)
			return err
		case pv.Spec.ClaimRef != nil:
			_, err = fmt.Fprintf(w, "persistentvolume %s is already taken by claim %s/%s (%s).\n",
				name, pv.Spec.ClaimRef.Namespace, pv.Spec.ClaimRef.Name, pv.Status.Phase)
			return err
		case !time.Now().Before(deadline):
			_, err = fmt.Fprintf(w, "nothing marked persistentvolume %s Available within %s: is a binder running (volplane controller --controllers binder)?\n", name, wait)
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pollEvery):
		}
	}
}
