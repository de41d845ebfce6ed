package deploy

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// exactTag is a tag that names one build: a full version (v2.18.0,
// 1.26.8-trixie) or a dated snapshot (trixie-20261109-slim). A tag
// without one (latest, 1.26, trixie-slim) moves under the same name, so
// a rebuild or a node pulling afresh runs something nobody reviewed.
var exactTag = regexp.MustCompile(`(^|[^0-9])v?[0-9]+\.[0-9]+\.[0-9]+([^0-9.]|$)|(^|-)[0-9]{8}(-|$)`)

// pinned says why image is not pinned to one build, or "" if it is.
func pinned(image string) string {
	if strings.Contains(image, "@sha256:") {
		return ""
	}
	name := image[strings.LastIndex(image, "/")+1:]
	i := strings.LastIndex(name, ":")
	switch {
	case i < 0:
		return "no tag (latest)"
	case name[i+1:] == "latest":
		return "tag latest"
	case !exactTag.MatchString(name[i+1:]):
		return "floating tag " + name[i+1:]
	}
	return ""
}

func TestPinnedRecognisesFloatingTags(t *testing.T) {
	for image, want := range map[string]bool{
		"ghcr.io/volplane/volplane:v0.1.0":                              true,
		"registry.k8s.io/sig-storage/csi-node-driver-registrar:v2.18.0": true,
		"golang:1.26.8-trixie":                                          true,
		"debian:trixie-20261109-slim":                                   true,
		"busybox@sha256:0123":                                           true,
		"ghcr.io/volplane/volplane:latest":                              false,
		"ghcr.io/volplane/volplane":                                     false,
		"localhost:5000/volplane":                                       false,
		"golang:1.26":                                                   false,
		"golang:1.26-trixie":                                            false,
		"debian:trixie-slim":                                            false,
		"debian:13-slim":                                                false,
	} {
		if got := pinned(image) == ""; got != want {
			t.Errorf("%s pinned: %v (%s), want %v", image, got, pinned(image), want)
		}
	}
}

// Every image deploy/ runs, after kustomize's images: rewrite, and every
// base image of the Dockerfile names one build: no latest, no tag that
// moves.
func TestImagesArePinned(t *testing.T) {
	for _, pod := range pods(t) {
		for _, c := range slices.Concat(pod.spec.InitContainers, pod.spec.Containers) {
			if why := pinned(c.Image); why != "" {
				t.Errorf("%s container %s: image %s has %s", pod.name, c.Name, c.Image, why)
			}
		}
	}
	f, err := os.Open(filepath.Join("..", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	froms := 0
	for s := bufio.NewScanner(f); s.Scan(); {
		fields := strings.Fields(s.Text())
		if len(fields) < 2 || !strings.EqualFold(fields[0], "FROM") {
			continue
		}
		froms++
		if why := pinned(fields[1]); why != "" {
			t.Errorf("Dockerfile: FROM %s has %s", fields[1], why)
		}
	}
	if froms == 0 {
		t.Error("the Dockerfile has no FROM")
	}
}

// tokenPath is where client-go's in-cluster configuration reads the
// ServiceAccount's token, and where the kubelet mounts it by default.
const tokenPath = "/var/run/secrets/kubernetes.io/serviceaccount"

// Only the containers that call the API carry the ServiceAccount's token:
// those that run `volplane controller`. The bundled driver is privileged
// and reachable by every pod on its node through the volumes it serves;
// the node's token (which may create and delete PVs) must not be one
// escape away. The registrar calls no API either.
func TestOnlyContainersThatCallTheAPIHaveAToken(t *testing.T) {
	for _, pod := range pods(t) {
		for _, c := range pod.spec.Containers {
			callsAPI := len(c.Args) > 0 && c.Args[0] == "controller"
			if got := hasToken(pod.spec, c); got != callsAPI {
				t.Errorf("%s container %s: has the token %v, calls the API %v", pod.name, c.Name, got, callsAPI)
			}
		}
	}
	ds := workload[*appsv1.DaemonSet](t, objects(t), "volplane-node")
	if hasToken(ds.Spec.Template.Spec, container(t, ds.Spec.Template.Spec, "driver")) {
		t.Error("the privileged driver container carries the node's ServiceAccount token")
	}
}

// hasToken says whether the container can read a token of the pod's
// ServiceAccount: the kubelet's automatic mount (on unless the pod turns
// it off; deploy/'s ServiceAccounts leave it on), or a projected volume
// with a serviceAccountToken source mounted anywhere.
func hasToken(pod corev1.PodSpec, c corev1.Container) bool {
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		return true
	}
	for _, m := range c.VolumeMounts {
		i := slices.IndexFunc(pod.Volumes, func(v corev1.Volume) bool { return v.Name == m.Name })
		if i < 0 || pod.Volumes[i].Projected == nil {
			continue
		}
		for _, src := range pod.Volumes[i].Projected.Sources {
			if src.ServiceAccountToken != nil {
				return true
			}
		}
	}
	return false
}

// The containers that call the API find the token where client-go's
// in-cluster configuration looks, with the cluster's CA and the pod's
// namespace beside it, read-only.
func TestTokenIsWhereInClusterConfigReadsIt(t *testing.T) {
	for _, pod := range pods(t) {
		if pod.spec.AutomountServiceAccountToken == nil || *pod.spec.AutomountServiceAccountToken {
			continue // the kubelet's own mount
		}
		for _, c := range pod.spec.Containers {
			if !hasToken(pod.spec, c) {
				continue
			}
			i := slices.IndexFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == tokenPath })
			if i < 0 || !c.VolumeMounts[i].ReadOnly {
				t.Errorf("%s container %s: no read-only mount at %s", pod.name, c.Name, tokenPath)
				continue
			}
			v := pod.spec.Volumes[slices.IndexFunc(pod.spec.Volumes, func(v corev1.Volume) bool { return v.Name == c.VolumeMounts[i].Name })]
			var files []string
			for _, src := range v.Projected.Sources {
				switch {
				case src.ServiceAccountToken != nil:
					files = append(files, src.ServiceAccountToken.Path)
				case src.ConfigMap != nil && src.ConfigMap.Name == "kube-root-ca.crt":
					for _, item := range src.ConfigMap.Items {
						files = append(files, item.Path)
					}
				case src.DownwardAPI != nil:
					for _, item := range src.DownwardAPI.Items {
						if item.FieldRef != nil && item.FieldRef.FieldPath == "metadata.namespace" {
							files = append(files, item.Path)
						}
					}
				}
			}
			slices.Sort(files)
			if want := []string{"ca.crt", "namespace", "token"}; !slices.Equal(files, want) {
				t.Errorf("%s container %s: %s holds %v, want %v", pod.name, c.Name, tokenPath, files, want)
			}
		}
	}
}

// namedPod is a workload's pod template.
type namedPod struct {
	name string
	spec corev1.PodSpec
}

func pods(t *testing.T) []namedPod {
	t.Helper()
	objs := objects(t)
	var out []namedPod
	for _, d := range Of[*appsv1.Deployment](objs) {
		out = append(out, namedPod{"Deployment " + d.Name, d.Spec.Template.Spec})
	}
	for _, d := range Of[*appsv1.DaemonSet](objs) {
		out = append(out, namedPod{"DaemonSet " + d.Name, d.Spec.Template.Spec})
	}
	if len(out) == 0 {
		t.Fatal("deploy/ runs no pods")
	}
	return out
}
