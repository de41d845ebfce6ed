package bench

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
)

// The dynamic scenario compares provisioners: N claims of the bundled
// node-local driver's class (volplane-hostpath, Immediate binding), each
// provisioned through the driver's controller service and bound. The node's
// CSINode names the driver and its topology key before the controllers
// start, as the kubelet's plugin registration would (the external-provisioner
// builds its topology requirement from it). Once the controllers are ready
// the clock starts and the claims are created from the workload's writers;
// a claim counts from its POST until a claim watch sees it Bound, and, on
// the side, until a PV watch first sees a PV whose claimRef names it.
//
// Both sides run the same binder: volplane's, with its pvc-protection and
// pv-protection loops, in a process of its own, unthrottled and not
// measured. The measured process is the provisioner: volplane's
// (`volplane controller --controllers provisioner`) or the
// external-provisioner's, from ReferenceProvisionerProgram, each at the
// external-provisioner's limits unless --qps or --burst say otherwise, and
// each talking to the same driver endpoint.

// ReferenceProvisionerProgram is the binary of the reference provisioner
// (bench/cmd/volplane-reference-provisioner): external-provisioner cannot
// be linked into volplane's binary (see its package comment).
const ReferenceProvisionerProgram = "volplane-reference-provisioner"

// ProvisionerQPS and ProvisionerBurst are the external-provisioner
// sidecar's client limits (csi-lib-utils' standard flags, which its main
// registers: --kube-api-qps 5, --kube-api-burst 10).
const (
	ProvisionerQPS   = 5
	ProvisionerBurst = 10
)

// claimCreate is how the API server counts the workload's claim creations.
const claimCreate = "persistentvolumeclaims POST"

// createDynamicWorkload registers the node-local driver on the node's
// CSINode; the claims are created once the controllers run (createClaims).
func (e *sideEnv) createDynamicWorkload(ctx context.Context) error {
	return e.registerNodeDriver(ctx, localNodeService)
}

// createClaims creates every claim from the workload's writers and returns,
// by claim name, when each POST was sent.
func (e *sideEnv) createClaims(ctx context.Context) (map[string]time.Time, error) {
	return timed(ctx, e.o.Pairs, func(i int) error {
		if err := e.work.createClaim(ctx, Dynamic, i); err != nil {
			return fmt.Errorf("creating %s: %w", claimName(i), err)
		}
		return nil
	})
}

// startProvisionedWatch records, by claim name, when a PV naming the claim
// of the bench namespace in its claimRef is first seen.
func startProvisionedWatch(ctx context.Context, client kubernetes.Interface) (*bindWatch, error) {
	factory := informers.NewSharedInformerFactory(client, 0)
	return startWatch(ctx, "PVs", factory.Core().V1().PersistentVolumes().Informer(), factory.Start, pvForClaim)
}

// pvForClaim says the claim a PV was provisioned for, if any.
func pvForClaim(obj any) (string, bool) {
	pv, ok := obj.(*corev1.PersistentVolume)
	if !ok || pv.Spec.ClaimRef == nil || pv.Spec.ClaimRef.Namespace != benchNS {
		return "", false
	}
	return pv.Spec.ClaimRef.Name, true
}

// dynamicProcesses are the side's controllers: the binder (with the
// protection loops, unthrottled, not measured) and the provisioner under
// test (measured, at o.QPS and o.Burst), volplane's or the
// external-provisioner's.
func (e *sideEnv) dynamicProcesses(ctx context.Context, env []string) ([]*controllerProcess, error) {
	o, kc := e.o, e.cp.Kubeconfig
	binderArgs := []string{"controller", "--controllers", "binder,pvc-protection,pv-protection",
		"--leader-elect=false", "--metrics-bind-address", "127.0.0.1:0",
		"--kubeconfig", kc, "--kube-api-qps", "0", "--kube-api-burst", strconv.Itoa(o.Burst)}
	b, err := startProcess(ctx, o.Executable, e.dir, e.name+" binder", false, nil, binderArgs...)
	if err != nil {
		return nil, err
	}
	b.awaited = true
	limits := []string{"--kubeconfig", kc, "--kube-api-qps", fmtQPS(o.QPS), "--kube-api-burst", strconv.Itoa(o.Burst)}
	var p *controllerProcess
	if e.name == Reference {
		args := append([]string{"--csi-address", e.nodeEndpoint()}, limits...)
		p, err = startProcess(ctx, o.ReferenceProvisioner, e.dir, e.name+" csi-provisioner", true, env, args...)
		if p != nil {
			p.program = ReferenceProvisionerProgram
		}
	} else {
		args := append([]string{"controller", "--controllers", "provisioner", "--csi-endpoint", e.nodeEndpoint(),
			"--leader-elect=false", "--metrics-bind-address", "127.0.0.1:0"}, limits...)
		if o.Workers > 0 {
			args = append(args, "--workers", strconv.Itoa(o.Workers))
		}
		if o.Profile != "" {
			args = append(args, "--cpuprofile", o.Profile+".cpu.pprof", "--profiling")
		}
		p, err = startProcess(ctx, o.Executable, e.dir, e.name+" provisioner", true, env, args...)
	}
	if err != nil {
		b.stop()
		return nil, err
	}
	// The measured process first: the heap profile is taken of procs[0].
	return []*controllerProcess{p, b}, nil
}

// dynamicWording turns the report's bind wording into the dynamic
// scenario's; the JSON keeps its field names.
var dynamicWording = strings.NewReplacer(
	"time to bind all", "time to all bound",
	"binds/s", "provisions/s",
	"time to Bound", "claim created → Bound",
	"per bind", "per provision",
)

// FindReferenceProvisioner finds the reference provisioner's binary next
// to the volplane executable, else on $PATH.
func FindReferenceProvisioner(exe string) (string, error) {
	return findReference(exe, ReferenceProvisionerProgram, Dynamic, "--reference-provisioner")
}
