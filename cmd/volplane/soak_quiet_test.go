package main

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/volplane/volplane/internal/bundle"
)

// unfinished lists the work not done yet in a cluster the workload left:
// empty once it is quiescent (and, with snapshots, snapshotsUnfinished). Every claim is Bound but a
// WaitForFirstConsumer claim no pod uses (deliberately Pending); every pod
// runs; nothing is Terminating; every Delete PV whose claim is gone is
// gone; every expansion is done (on the node too where a pod uses the
// claim).
func unfinished(claims []corev1.PersistentVolumeClaim, pvs []corev1.PersistentVolume, pods []corev1.Pod) []string {
	var out []string
	used := map[string]bool{}
	for _, p := range pods {
		switch {
		case p.DeletionTimestamp != nil:
			out = append(out, fmt.Sprintf("pod %s is still Terminating", p.Name))
		case p.Status.Phase != corev1.PodRunning:
			out = append(out, fmt.Sprintf("pod %s is %s, not Running (node %q)", p.Name, p.Status.Phase, p.Spec.NodeName))
		}
		for _, v := range p.Spec.Volumes {
			if v.PersistentVolumeClaim != nil {
				used[v.PersistentVolumeClaim.ClaimName] = true
			}
		}
	}
	byName := map[string]*corev1.PersistentVolume{}
	for i := range pvs {
		byName[pvs[i].Name] = &pvs[i]
	}
	uids := map[types.UID]bool{}
	for _, c := range claims {
		uids[c.UID] = true
		out = append(out, claimUnfinished(c, byName[c.Spec.VolumeName], used[c.Name])...)
	}
	for _, pv := range pvs {
		ref := pv.Spec.ClaimRef
		switch {
		case pv.DeletionTimestamp != nil:
			out = append(out, fmt.Sprintf("PV %s is still Terminating (finalizers %v)", pv.Name, pv.Finalizers))
		case pv.Spec.PersistentVolumeReclaimPolicy == corev1.PersistentVolumeReclaimDelete && ref != nil && ref.UID != "" && !uids[ref.UID]:
			out = append(out, fmt.Sprintf("PV %s (Delete, %s) outlives its claim %s/%s", pv.Name, pv.Status.Phase, ref.Namespace, ref.Name))
		}
	}
	sort.Strings(out)
	return out
}

func claimUnfinished(c corev1.PersistentVolumeClaim, pv *corev1.PersistentVolume, used bool) []string {
	class := ""
	if c.Spec.StorageClassName != nil {
		class = *c.Spec.StorageClassName
	}
	switch {
	case c.DeletionTimestamp != nil:
		return []string{fmt.Sprintf("claim %s is still Terminating (finalizers %v)", c.Name, c.Finalizers)}
	case c.Status.Phase != corev1.ClaimBound && class == bundle.WaitClass && !used:
		return nil
	case c.Status.Phase != corev1.ClaimBound:
		return []string{fmt.Sprintf("claim %s (%s) is %s, not Bound", c.Name, class, c.Status.Phase)}
	case pv == nil:
		return nil // the invariant checker's to report
	}
	want := c.Spec.Resources.Requests[corev1.ResourceStorage]
	if got := pv.Spec.Capacity[corev1.ResourceStorage]; got.Cmp(want) < 0 {
		return []string{fmt.Sprintf("claim %s asks for %s, its PV %s has %s", c.Name, want.String(), pv.Name, got.String())}
	}
	if got := c.Status.Capacity[corev1.ResourceStorage]; used && got.Cmp(want) < 0 {
		return []string{fmt.Sprintf("claim %s asks for %s and is used by a pod, yet has %s", c.Name, want.String(), got.String())}
	}
	return nil
}

// settle deletes the pods whose claim is gone or going, as their owner
// would: such a pod can never start.
func settle(ctx context.Context, client kubernetes.Interface) {
	pods, err := client.CoreV1().Pods(soakNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return
	}
	for _, p := range pods.Items {
		claim := p.Labels[podLabel]
		c, err := client.CoreV1().PersistentVolumeClaims(soakNamespace).Get(ctx, claim, metav1.GetOptions{})
		if (err != nil && apierrors.IsNotFound(err)) || (err == nil && c.DeletionTimestamp != nil) {
			_ = client.CoreV1().Pods(soakNamespace).Delete(ctx, p.Name, metav1.DeleteOptions{})
		}
	}
}

// waitQuiescent waits until nothing is unfinished, and returns what still
// is when limit runs out. Each round first deletes the pods that can never
// start (settle) and, with a workload, starts a pod for every claim
// without one (useEveryClaim).
func waitQuiescent(ctx context.Context, client kubernetes.Interface, w *workload, limit time.Duration) []string {
	deadline := time.Now().Add(limit)
	var last []string
	for {
		settle(ctx, client)
		if w != nil {
			if w.snaps != nil {
				w.settleRestores(ctx)
			}
			_ = useEveryClaim(ctx, w)
		}
		claims, err1 := client.CoreV1().PersistentVolumeClaims("").List(ctx, metav1.ListOptions{})
		pvs, err2 := client.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
		pods, err3 := client.CoreV1().Pods(soakNamespace).List(ctx, metav1.ListOptions{})
		if err1 == nil && err2 == nil && err3 == nil {
			last = unfinished(claims.Items, pvs.Items, pods.Items)
			if w != nil && w.snaps != nil {
				snaps, err := listSnapshotWork(ctx, w.snaps, claims.Items)
				if err != nil {
					snaps = []string{"reading the snapshot API: " + err.Error()}
				}
				last = append(last, snaps...)
			}
			if len(last) == 0 {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return last
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// useEveryClaim starts a pod for every live claim without one, so that
// every claim must end Bound (WaitForFirstConsumer ones too) and every
// expansion must finish on the node as well.
func useEveryClaim(ctx context.Context, w *workload) error {
	claims, err := w.client.CoreV1().PersistentVolumeClaims(soakNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for _, c := range liveClaims(claims.Items) {
		if err := w.createPod(ctx, c); err != nil && !errors.Is(err, errNothingToDo) {
			return fmt.Errorf("a pod for claim %s: %w", c.Name, err)
		}
	}
	return nil
}

// deleteAllPods deletes every pod of the workload and waits until the node
// agent has torn them down, so nothing is left mounted.
func deleteAllPods(ctx context.Context, client kubernetes.Interface, limit time.Duration) error {
	if err := client.CoreV1().Pods(soakNamespace).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		return err
	}
	deadline := time.Now().Add(limit)
	for {
		pods, err := client.CoreV1().Pods(soakNamespace).List(ctx, metav1.ListOptions{})
		if err == nil && len(pods.Items) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("pods still there %s after deleting them all", limit)
		}
		time.Sleep(300 * time.Millisecond)
	}
}
