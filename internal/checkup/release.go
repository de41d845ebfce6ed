package checkup

import (
	"context"
	"fmt"
	"io"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/volplane/volplane/internal/doctor"
	"github.com/volplane/volplane/internal/inspect"
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
// Available (or bound it to the claim it was pre-bound to).
const pollEvery = 100 * time.Millisecond

// ReleaseConfig says which volume `volplane release pv` releases, to whom,
// and how long it waits for the binder.
type ReleaseConfig struct {
	Name string
	// To pre-binds the volume to this claim; zero releases it to any claim
	// that fits.
	To   types.NamespacedName
	Wait time.Duration
}

// Release clears the stale claimRef of a Retain, Released volume (or sets
// it to cfg.To) once doctor.DecideRelease, on what it read live, allows it;
// the write carries the resourceVersion read, and a conflict reads and
// decides again. It then waits up to cfg.Wait for the binder. A refusal is
// a *RefusedError.
func Release(ctx context.Context, client kubernetes.Interface, cfg ReleaseConfig, w io.Writer) error {
	var d doctor.ReleaseDecision
	for attempt := 1; ; attempt++ {
		in, err := readRelease(ctx, client, cfg)
		if err != nil {
			return err
		}
		if d = doctor.DecideRelease(in); d.Refusal != "" {
			return &RefusedError{Decision: d}
		}
		_, err = client.CoreV1().PersistentVolumes().Update(ctx, d.Apply(in.Volume), metav1.UpdateOptions{})
		if err == nil {
			break
		}
		if !apierrors.IsConflict(err) || attempt == releaseAttempts {
			return fmt.Errorf("persistentvolume %s: write claimRef: %w", cfg.Name, err)
		}
	}
	if d.ClaimRef == nil {
		fmt.Fprintf(w, "persistentvolume %s released: %s; its claimRef is cleared.\n", cfg.Name, d.Reason)
		return waitAvailable(ctx, client, cfg.Name, cfg.Wait, w)
	}
	fmt.Fprintf(w, "persistentvolume %s released: %s.\n", cfg.Name, d.Reason)
	if d.ClaimRef.UID == "" {
		return nil
	}
	return waitBound(ctx, client, cfg, w)
}

// readRelease reads, live, what DecideRelease needs: the volume, the claim
// its claimRef names, every attachment and node, the pods of the claim's
// namespace, and the claim of cfg.To.
func readRelease(ctx context.Context, client kubernetes.Interface, cfg ReleaseConfig) (doctor.ReleaseInput, error) {
	in := doctor.ReleaseInput{Name: cfg.Name, To: cfg.To}
	pv, err := client.CoreV1().PersistentVolumes().Get(ctx, cfg.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return in, nil
	}
	if err != nil {
		return in, fmt.Errorf("read persistentvolume %s: %w", cfg.Name, err)
	}
	in.Volume = pv
	ref := pv.Spec.ClaimRef
	if ref == nil {
		return in, nil
	}
	if in.Claim, err = getClaim(ctx, client, ref.Namespace, ref.Name); err != nil {
		return in, err
	}
	if cfg.To != (types.NamespacedName{}) {
		if in.Target, err = getClaim(ctx, client, cfg.To.Namespace, cfg.To.Name); err != nil {
			return in, err
		}
	}
	f, err := inspect.ReadFacts(ctx, client, ref.Namespace)
	if err != nil {
		return in, err
	}
	in.Attachments, in.Nodes, in.Pods = f.Attachments, f.Nodes, f.Pods
	return in, nil
}

// getClaim reads a claim live; nil when it does not exist.
func getClaim(ctx context.Context, client kubernetes.Interface, namespace, name string) (*v1.PersistentVolumeClaim, error) {
	c, err := client.CoreV1().PersistentVolumeClaims(namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read claim %s/%s: %w", namespace, name, err)
	}
	return c, nil
}

// waitAvailable waits for the binder to mark the volume Available (or to
// bind it already), and says what it saw.
func waitAvailable(ctx context.Context, client kubernetes.Interface, name string, wait time.Duration, w io.Writer) error {
	return poll(ctx, wait, w, func() (string, bool, error) {
		pv, err := client.CoreV1().PersistentVolumes().Get(ctx, name, metav1.GetOptions{})
		switch {
		case err != nil:
			return "", false, fmt.Errorf("read persistentvolume %s: %w", name, err)
		case pv.Status.Phase == v1.VolumeAvailable:
			return fmt.Sprintf("persistentvolume %s is Available.\n", name), true, nil
		case pv.Spec.ClaimRef != nil:
			return fmt.Sprintf("persistentvolume %s is already taken by claim %s/%s (%s).\n",
				name, pv.Spec.ClaimRef.Namespace, pv.Spec.ClaimRef.Name, pv.Status.Phase), true, nil
		}
		return fmt.Sprintf("nothing marked persistentvolume %s Available within %s: is a binder running (volplane controller --controllers binder)?\n", name, wait), false, nil
	})
}

// waitBound waits for the binder to bind the claim the volume was
// pre-bound to.
func waitBound(ctx context.Context, client kubernetes.Interface, cfg ReleaseConfig, w io.Writer) error {
	name, to := cfg.Name, cfg.To
	return poll(ctx, cfg.Wait, w, func() (string, bool, error) {
		pv, err := client.CoreV1().PersistentVolumes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return "", false, fmt.Errorf("read persistentvolume %s: %w", name, err)
		}
		if ref := pv.Spec.ClaimRef; ref == nil || ref.Namespace != to.Namespace || ref.Name != to.Name {
			return fmt.Sprintf("persistentvolume %s was changed by someone else meanwhile: see volplane explain pv %s.\n", name, name), true, nil
		}
		claim, err := getClaim(ctx, client, to.Namespace, to.Name)
		if err != nil {
			return "", false, err
		}
		if claim != nil && claim.Spec.VolumeName == name && claim.Status.Phase == v1.ClaimBound {
			return fmt.Sprintf("persistentvolume %s is Bound to claim %s.\n", name, to), true, nil
		}
		return fmt.Sprintf("nothing bound persistentvolume %s to claim %s within %s: see volplane explain pvc %s.\n", name, to, cfg.Wait, to), false, nil
	})
}

// poll asks seen until it says it is done or wait runs out, then writes
// what it said last.
func poll(ctx context.Context, wait time.Duration, w io.Writer, seen func() (string, bool, error)) error {
	deadline := time.Now().Add(wait)
	for {
		said, done, err := seen()
		if err != nil {
			return err
		}
		if done || !time.Now().Before(deadline) {
			_, err = io.WriteString(w, said)
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pollEvery):
		}
	}
}
