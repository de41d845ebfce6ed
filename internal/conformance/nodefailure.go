package conformance

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/mounting"
)

// outOfServiceTaint is what an operator puts on a node known to be shut
// down (kubectl taint nodes A node.kubernetes.io/out-of-service=
// nodeshutdown:NoExecute): pod GC force-deletes the node's terminating
// pods and the attach-detach loop detaches at once, instead of waiting
// out the 6-minute maxWaitForUnmountDuration.
var outOfServiceTaint = corev1.Taint{Key: corev1.TaintNodeOutOfService, Value: "nodeshutdown", Effect: corev1.TaintEffectNoExecute}

// restoreTimeout bounds bringing the node back and waiting for its agent
// to unmount what no pod uses: it runs also when the scenario's time is
// up, before the cleanup, which needs the node back.
const restoreTimeout = 30 * time.Second

// needNodeDown: the node-failure scenario needs a lab that can take a
// node down, a second node for the volume to move to, and a driver that
// attaches volumes (the forced detach is what the taint is for).
func needNodeDown(l *Lab) (bool, string) {
	switch {
	case l.NodeDown == nil:
		return false, "the lab cannot take a node down"
	case len(l.Nodes) < 2:
		return false, "the lab has one node: the volume has nowhere to move"
	case !l.Controller.Publish:
		return false, "the driver does not attach volumes (no PUBLISH_UNPUBLISH_VOLUME): nothing to detach by force"
	}
	return true, ""
}

// nodeFailure: the node of a pod using a volume goes down (its kubelet
// stops, it turns NotReady); the pod, deleted, stays Terminating, since
// nothing acts for the node. The node tainted out-of-service, the pod is
// force-deleted and its volume detached at once, and a new pod using the
// volume runs on another node. Then, also on failure, the taint goes, the
// node comes back, and its agent unmounts what no pod there uses.
func nodeFailure() Scenario {
	// The pod garbage collector force-deletes the pod on its own 20-s pass.
	return Scenario{Name: "node-failure", Applies: needNodeDown, MinTimeout: 2 * time.Minute, Run: func(s *Session) (err error) {
		var pv *corev1.PersistentVolume
		var first *corev1.Pod
		var down string
		defer func() {
			if down == "" {
				return
			}
			// The first failure is the one reported; the node comes back
			// anyway, for the cleanup and the next scenarios.
			if rerr := s.restoreNode(down, pv, first); err == nil && rerr != nil {
				err = &StepError{Step: "remove the taint, bring node " + down + " up: its agent unmounts what no pod uses", Err: rerr}
			}
		}()
		return s.Steps(
			Step{"create a claim of the Immediate class", func(ctx context.Context) error {
				return s.createClaim(ctx, s.newClaim("data", s.Lab.ImmediateClass))
			}},
			Step{"the claim binds, and a pod using it runs", func(ctx context.Context) (err error) {
				if _, pv, err = s.bound(ctx, "data"); err != nil {
					return err
				}
				first, err = s.startPod(ctx, s.newPod("first", s.firstNode(pv), "data", false))
				return err
			}},
			Step{"take the pod's node down", func(ctx context.Context) error {
				down = first.Spec.NodeName
				return s.Lab.NodeDown(ctx, down, true)
			}},
			Step{"delete the pod: it stays Terminating, nothing acts for its node", func(ctx context.Context) error {
				// A grace period, as a real pod's: with none the API
				// server would delete it at once, down node or not.
				err := s.Lab.Client.CoreV1().Pods(s.Namespace).Delete(ctx, "first", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](30)})
				if err != nil {
					return err
				}
				p, err := s.Lab.Client.CoreV1().Pods(s.Namespace).Get(ctx, "first", metav1.GetOptions{})
				if err != nil {
					return fmt.Errorf("the pod of a down node went at once: %w", err)
				}
				if p.DeletionTimestamp == nil {
					return errors.New("the deleted pod is not Terminating")
				}
				return nil
			}},
			Step{"taint the node " + outOfServiceTaint.ToString() + ": the pod goes and the volume is detached from it", func(ctx context.Context) error {
				if err := s.taintNode(ctx, down, true); err != nil {
					return err
				}
				if err := s.podGone(ctx, "first"); err != nil {
					return err
				}
				return s.detached(ctx, pv.Name)
			}},
			Step{"a new pod using the volume runs on another node", func(ctx context.Context) error {
				other := slices.IndexFunc(s.Lab.Nodes, func(n string) bool { return n != down })
				_, err := s.startPod(ctx, s.newPod("second", s.Lab.Nodes[other], "data", false))
				return err
			}},
		)
	}}
}

// restoreNode removes the out-of-service taint, brings the node up and
// waits until its agent has unmounted the first pod's volume: its pod
// directory and the volume's staging directory are gone from the node.
func (s *Session) restoreNode(node string, pv *corev1.PersistentVolume, first *corev1.Pod) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(s.ctx), restoreTimeout)
	defer cancel()
	if err := s.taintNode(ctx, node, false); err != nil {
		return err
	}
	if err := s.Lab.NodeDown(ctx, node, false); err != nil {
		return err
	}
	l := mounting.Layout{Root: mounting.NodeRoot(s.Lab.DataDir, node)}
	var left []string
	if first != nil {
		left = append(left, l.PodDir(first.UID))
	}
	if pv != nil && pv.Spec.CSI != nil {
		left = append(left, l.StagingDir(pv.Spec.CSI.Driver, pv.Spec.CSI.VolumeHandle))
	}
	return waitFor(ctx, "Node", "", node, "node "+node+"'s agent to unmount the volume no pod there uses", func(context.Context) (string, error) {
		for _, p := range left {
			if _, err := os.Stat(p); !os.IsNotExist(err) {
				return p + " is still on the node", nil
			}
		}
		return "", nil
	})
}

// taintNode puts the out-of-service taint on the node, or takes it off.
func (s *Session) taintNode(ctx context.Context, name string, on bool) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		node, err := s.Lab.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		outOfService := func(t corev1.Taint) bool { return outOfServiceTaint.MatchTaint(&t) }
		has := slices.ContainsFunc(node.Spec.Taints, outOfService)
		if has == on {
			return nil
		}
		node = node.DeepCopy()
		if on {
			node.Spec.Taints = append(node.Spec.Taints, outOfServiceTaint)
		} else {
			node.Spec.Taints = slices.DeleteFunc(node.Spec.Taints, outOfService)
		}
		_, err = s.Lab.Client.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{})
		return err
	})
}

// podGone waits until the pod is gone (deletePod, without the delete).
func (s *Session) podGone(ctx context.Context, name string) error {
	return waitFor(ctx, "Pod", s.Namespace, name, "pod "+name+" to be gone", func(ctx context.Context) (string, error) {
		_, err := s.Lab.Client.CoreV1().Pods(s.Namespace).Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return "", nil
		case err != nil:
			return err.Error(), nil
		}
		return "pod " + name + " is still there", nil
	})
}
