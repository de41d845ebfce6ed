package bench

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// ceilingPairs bounds the pairs the ceiling writer rewrites: enough for a
// sustained rate, few enough to take seconds at any N.
const ceilingPairs = 10000

// ceilingAnnotation is what the ceiling writer changes, so that every one
// of its writes is a real write (the API server skips updates that change
// nothing).
const ceilingAnnotation = "bench.volplane.io/ceiling"

// measureCeiling rewrites up to ceilingPairs bound pairs with four writes
// each, the kinds a bind writes (PV, PV status, claim, claim again: a claim
// status cannot be changed at will), from 16 concurrent writers that read
// nothing while timed. It runs on the store the controller left, after the
// controller stopped, so the API server's cost per write is the one the
// controller met.
func measureCeiling(ctx context.Context, client kubernetes.Interface) (*Ceiling, error) {
	claims, err := client.CoreV1().PersistentVolumeClaims(benchNS).List(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		return nil, fmt.Errorf("ceiling: listing claims: %w", err)
	}
	pvs, err := client.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		return nil, fmt.Errorf("ceiling: listing PVs: %w", err)
	}
	byName := make(map[string]*corev1.PersistentVolume, len(pvs.Items))
	for i := range pvs.Items {
		byName[pvs.Items[i].Name] = &pvs.Items[i]
	}
	type pair struct {
		claim *corev1.PersistentVolumeClaim
		pv    *corev1.PersistentVolume
	}
	var pairs []pair
	for i := range claims.Items {
		c := &claims.Items[i]
		if pv, ok := byName[c.Spec.VolumeName]; ok && len(pairs) < ceilingPairs {
			pairs = append(pairs, pair{c, pv})
		}
	}
	if len(pairs) == 0 {
		return nil, fmt.Errorf("ceiling: no bound pair to rewrite")
	}
	began := time.Now()
	err = forEach(ctx, len(pairs), func() {}, func(i int) error {
		return fourWrites(ctx, client, pairs[i].pv, pairs[i].claim)
	})
	if err != nil {
		return nil, fmt.Errorf("ceiling: %w", err)
	}
	s := time.Since(began).Seconds()
	n := int64(4 * len(pairs))
	return &Ceiling{Writes: n, Seconds: s, WritesPerSec: float64(n) / s}, nil
}

func fourWrites(ctx context.Context, client kubernetes.Interface, pv *corev1.PersistentVolume, claim *corev1.PersistentVolumeClaim) error {
	pvs, cs := client.CoreV1().PersistentVolumes(), client.CoreV1().PersistentVolumeClaims(benchNS)
	pv = pv.DeepCopy()
	metav1.SetMetaDataAnnotation(&pv.ObjectMeta, ceilingAnnotation, "1")
	pv, err := pvs.Update(ctx, pv, metav1.UpdateOptions{})
	if err != nil {
		return err
	}
	pv.Status.Message = "ceiling"
	if _, err = pvs.UpdateStatus(ctx, pv, metav1.UpdateOptions{}); err != nil {
		return err
	}
	claim = claim.DeepCopy()
	metav1.SetMetaDataAnnotation(&claim.ObjectMeta, ceilingAnnotation, "1")
	if claim, err = cs.Update(ctx, claim, metav1.UpdateOptions{}); err != nil {
		return err
	}
	metav1.SetMetaDataAnnotation(&claim.ObjectMeta, ceilingAnnotation, "2")
	_, err = cs.Update(ctx, claim, metav1.UpdateOptions{})
	return err
}
