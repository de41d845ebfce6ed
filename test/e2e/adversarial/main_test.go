// Package adversarial is a namespace user trying to reach what is not
// theirs. A tenant holding only the built-in `edit` ClusterRole in its
// namespace (a real ServiceAccount token, neither admin nor impersonation)
// writes every annotation, label and finalizer volplane reads or writes on
// its own claims and pods, with values that name another tenant's volumes,
// nodes and driver endpoints, and deletes at every step. Everything `volplane
// up` runs is running (stacktest.Stack, two nodes).
//
// Each test starts from an empty cluster, makes a victim (namespace
// victim: a node-local claim and a network claim, both Bound, a file
// written into each backend volume), lets the tenant act in namespace
// evil, waits until the system answered (the tenant's claim is gone, Bound,
// or has its event: never a sleep), and then checks that nothing outside
// evil changed or was lost (invariants.Outside and Unchanged over the API
// objects and the drivers' ListVolumes), that the whole cluster keeps
// volplane's promises (invariants.Check), and that the victim's files are
// there. The tests run one at a time and each removes what it made.
package adversarial

import (
	"context"
	"fmt"
	"testing"

	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/volplane/volplane/internal/cluster"
	"github.com/volplane/volplane/internal/stacktest"
	"github.com/volplane/volplane/test/e2e/support"
)

// stack is the package's running stack, tenant the client of the tenant
// of namespace evil.
var (
	stack  *stacktest.Stack
	tenant kubernetes.Interface
)

func TestMain(m *testing.M) {
	support.StackMain(m, 2, "vp-adv-", stacktest.StackConfig{Capacity: 50 << 30}, setUp)
}

func setUp(cp *cluster.ControlPlane, s *stacktest.Stack) error {
	ctx := context.Background()
	stack = s
	if len(cp.Nodes) < 2 {
		return fmt.Errorf("want 2 nodes, have %v", cp.Nodes)
	}
	for _, class := range []*storagev1.StorageClass{onlyOn(firstNodeClass, cp.Nodes[0], storagev1.VolumeBindingImmediate),
		onlyOn(firstNodeWaitClass, cp.Nodes[0], storagev1.VolumeBindingWaitForFirstConsumer)} {
		if _, err := cp.Client.StorageV1().StorageClasses().Create(ctx, class, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	for _, ns := range []string{victimNS, evilNS} {
		if err := namespace(ctx, cp.Client, ns); err != nil {
			return err
		}
	}
	var err error
	tenant, err = editor(ctx, cp, evilNS)
	return err
}
