package cluster

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/pflag"
	kcmapp "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	kcmoptions "k8s.io/kubernetes/cmd/kube-controller-manager/app/options"
	schedulerapp "k8s.io/kubernetes/cmd/kube-scheduler/app"
	scheduleroptions "k8s.io/kubernetes/cmd/kube-scheduler/app/options"
)

// ReplacedControllers are the kube-controller-manager loops that volplane
// replaces; the embedded controller manager runs every other default loop, so
// namespaces, service accounts, garbage collection and node lifecycle behave
// as in a real cluster. These are every storage loop kube-controller-manager
// v1.37 runs by default (cmd/kube-controller-manager/app/core.go); its
// selinux-warning-controller is off by default and stays off.
var ReplacedControllers = []string{
	"persistentvolume-binder",
	"attachdetach",
	"persistentvolume-expander",
	"pvc-protection",
	"pv-protection",
	"ephemeral-volume",
	"volumeattributesclass-protection-controller",
}

// runScheduler runs the real kube-scheduler until ctx is cancelled. Like the
// API server it is built from its options, never through its cobra command
// (which would apply logging a second time and exit the process).
func runScheduler(ctx context.Context, kubeconfig string) error {
	opts := scheduleroptions.NewOptions()
	if err := parseFlags("kube-scheduler", opts.Flags.FlagSets, kubeconfig); err != nil {
		return err
	}
	if err := opts.ComponentGlobalsRegistry.Set(); err != nil {
		return fmt.Errorf("kube-scheduler feature gates: %w", err)
	}
	cc, sched, err := schedulerapp.Setup(ctx, opts)
	if err != nil {
		return fmt.Errorf("set up kube-scheduler: %w", err)
	}
	return schedulerapp.Run(ctx, cc, sched)
}

// runControllerManager runs the real kube-controller-manager without the
// volume controllers until ctx is cancelled.
func runControllerManager(ctx context.Context, kubeconfig string, p pki, keep []string, extra ...string) error {
	s, err := kcmoptions.NewKubeControllerManagerOptions()
	if err != nil {
		return fmt.Errorf("kube-controller-manager options: %w", err)
	}
	all, disabled, aliases := kcmapp.KnownControllers(), kcmapp.ControllersDisabledByDefault(), kcmapp.ControllerAliases()
	named := s.Flags(all, disabled, aliases)
	s.ParsedFlags = &named
	if err := parseFlags("kube-controller-manager", named.FlagSets, kubeconfig, append(controllerManagerArgs(p, keep), extra...)...); err != nil {
		return err
	}
	if err := s.ComponentGlobalsRegistry.Set(); err != nil {
		return fmt.Errorf("kube-controller-manager feature gates: %w", err)
	}
	c, err := s.Config(ctx, all, disabled, aliases)
	if err != nil {
		return fmt.Errorf("configure kube-controller-manager: %w", err)
	}
	return kcmapp.Run(ctx, c.Complete())
}

// controllerManagerArgs are kube-controller-manager's own flags: every
// default loop but the ones volplane replaces, less those in keep.
func controllerManagerArgs(p pki, keep []string) []string {
	off := slices.DeleteFunc(slices.Clone(ReplacedControllers), func(c string) bool { return slices.Contains(keep, c) })
	return []string{
		"--controllers=*,-" + strings.Join(off, ",-"),
		"--root-ca-file=" + p.caCert(),
		"--service-account-private-key-file=" + p.serviceAccount(),
		"--cluster-signing-cert-file=" + p.caCert(),
		"--cluster-signing-key-file=" + p.caKey(),
		"--use-service-account-credentials=false",
	}
}

// componentArgs are what every component of ours runs with (the admin
// kubeconfig for everything, no leader election, no serving port) and its
// own extra arguments.
func componentArgs(kubeconfig string, extra ...string) []string {
	return append([]string{
		"--kubeconfig=" + kubeconfig,
		"--authentication-kubeconfig=" + kubeconfig,
		"--authorization-kubeconfig=" + kubeconfig,
		"--leader-elect=false",
		"--secure-port=0",
	}, extra...)
}

// parseFlags parses a component's flag sets with componentArgs.
func parseFlags(component string, sets map[string]*pflag.FlagSet, kubeconfig string, extra ...string) error {
	fs := pflag.NewFlagSet(component, pflag.ContinueOnError)
	for _, f := range sets {
		fs.AddFlagSet(f)
	}
	if err := fs.Parse(componentArgs(kubeconfig, extra...)); err != nil {
		return fmt.Errorf("%s flags: %w", component, err)
	}
	return nil
}
