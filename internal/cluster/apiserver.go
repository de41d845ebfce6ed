package cluster

import (
	"context"
	"fmt"
	"net"

	"github.com/spf13/pflag"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	apiserverapp "k8s.io/kubernetes/cmd/kube-apiserver/app"
	apiserveroptions "k8s.io/kubernetes/cmd/kube-apiserver/app/options"
)

// serviceCIDR is the service network of the embedded cluster; serviceIP is the
// first address in it, which the API server gives the `kubernetes` Service.
// Nothing routes to it unless a real node runs kube-proxy (tools/realnode).
const (
	serviceCIDR = "10.0.0.0/24"
	serviceIP   = "10.0.0.1"
)

// apiServerArgs are the flags of the embedded kube-apiserver. RBAC and the
// default admission plugins are on, as in a real cluster, because volplane's
// behaviour depends on them (protection finalizers, default StorageClass).
// It reaches etcd over TLS with the one client certificate etcd accepts.
// advertise is the address the `kubernetes` Service's endpoint names; the
// API server itself still listens on 127.0.0.1 only.
func apiServerArgs(p pki, etcdPort, port int, advertise net.IP) []string {
	return append(apiServerBaseArgs(p, etcdPort, port, advertise), endpointReconciler(advertise))
}

// endpointReconciler keeps the `kubernetes` Service's endpoint at the
// advertised address, except on loopback: an Endpoints object may not name a
// loopback address, and kube-apiserver 1.37 refuses to start with the lease
// reconciler and a loopback address (1.36 started and failed every write).
// Nothing routes the Service's address without a real node, whose relay
// advertises a routable address.
func endpointReconciler(advertise net.IP) string {
	if advertise.IsLoopback() {
		return "--endpoint-reconciler-type=none"
	}
	return "--endpoint-reconciler-type=lease"
}

func apiServerBaseArgs(p pki, etcdPort, port int, advertise net.IP) []string {
	return []string{
		fmt.Sprintf("--etcd-servers=https://127.0.0.1:%d", etcdPort),
		"--etcd-cafile=" + p.etcdCACert(),
		"--etcd-certfile=" + p.etcdClientCert(),
		"--etcd-keyfile=" + p.etcdClientKey(),
		fmt.Sprintf("--secure-port=%d", port),
		"--bind-address=127.0.0.1",
		"--advertise-address=" + advertise.String(),
		"--tls-cert-file=" + p.servingCert(),
		"--tls-private-key-file=" + p.servingKey(),
		"--client-ca-file=" + p.caCert(),
		// Every client of ours presents a certificate or a token; anonymous
		// requests, even to /healthz, get 401.
		"--anonymous-auth=false",
		"--service-account-key-file=" + p.serviceAccountPub(),
		"--service-account-signing-key-file=" + p.serviceAccount(),
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--api-audiences=https://kubernetes.default.svc.cluster.local",
		"--authorization-mode=Node,RBAC",
		"--service-cluster-ip-range=" + serviceCIDR,
		"--allow-privileged=true",
		"--enable-priority-and-fairness=false",
		"--profiling=false",
	}
}

// runAPIServer runs the real kube-apiserver until ctx is cancelled. It builds
// the options itself instead of going through the cobra command, because the
// command installs a process-wide signal handler and re-applies logging
// configuration, neither of which may happen inside volplane.
func runAPIServer(ctx context.Context, args []string) error {
	s := apiserveroptions.NewServerRunOptions()
	fs := pflag.NewFlagSet("kube-apiserver", pflag.ContinueOnError)
	for _, f := range s.Flags().FlagSets {
		fs.AddFlagSet(f)
	}
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("kube-apiserver flags: %w", err)
	}
	if err := s.GenericServerRunOptions.ComponentGlobalsRegistry.Set(); err != nil {
		return fmt.Errorf("kube-apiserver feature gates: %w", err)
	}
	completed, err := s.Complete(ctx)
	if err != nil {
		return fmt.Errorf("complete kube-apiserver options: %w", err)
	}
	if errs := completed.Validate(); len(errs) != 0 {
		return fmt.Errorf("kube-apiserver options: %w", utilerrors.NewAggregate(errs))
	}
	return apiserverapp.Run(ctx, completed)
}
