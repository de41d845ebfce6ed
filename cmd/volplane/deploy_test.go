package main

import (
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/volplane/volplane/deploy"
	"github.com/volplane/volplane/internal/controller/manager"
)

// Every volplane container of deploy/ runs a subcommand of this binary
// with flags it knows and values it takes ($(NODE_NAME) as the kubelet
// expands it), and the controllers it names exist.
func TestDeployRunsThisBinaryWithFlagsItKnows(t *testing.T) {
	objs, err := deploy.Objects()
	if err != nil {
		t.Fatal(err)
	}
	var checked int
	for _, o := range objs {
		var pod *corev1.PodSpec
		switch w := o.(type) {
		case *appsv1.Deployment:
			pod = &w.Spec.Template.Spec
		case *appsv1.DaemonSet:
			pod = &w.Spec.Template.Spec
		default:
			continue
		}
		for _, c := range pod.Containers {
			if !strings.Contains(c.Image, "volplane/volplane") {
				continue // the upstream registrar
			}
			checkArgs(t, c)
			checked++
		}
	}
	if checked < 3 {
		t.Errorf("%d volplane containers checked, want the controller, the driver and the node provisioner", checked)
	}
}

func checkArgs(t *testing.T, c corev1.Container) {
	t.Helper()
	if len(c.Command) != 0 {
		t.Errorf("%s overrides the image's entrypoint: %v", c.Name, c.Command)
	}
	var args []string
	for _, a := range c.Args {
		args = append(args, strings.ReplaceAll(a, "$(NODE_NAME)", "node-1"))
	}
	cmd, rest, err := newRootCommand().Find(args)
	if err != nil || cmd.Name() == "volplane" {
		t.Errorf("%s: %v is no subcommand (%v)", c.Name, c.Args, err)
		return
	}
	if err := cmd.ParseFlags(rest); err != nil {
		t.Errorf("%s: volplane %v: %v", c.Name, c.Args, err)
		return
	}
	if cmd.Name() != "controller" {
		return
	}
	controllers, _ := cmd.Flags().GetStringSlice("controllers")
	for _, name := range controllers {
		if !slices.Contains(manager.Known(), name) {
			t.Errorf("%s: no controller %q", c.Name, name)
		}
	}
}
