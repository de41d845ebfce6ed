package doctor

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"sigs.k8s.io/yaml"

	"github.com/volplane/volplane/internal/attachment"
	"github.com/volplane/volplane/internal/protection"
	"github.com/volplane/volplane/internal/provisioning"
)

// The tests of this file show that no fix doctor prints can lose data
// unless its Risk says so: each decision that keeps a fix back is a row.

var graceful = Thresholds{PendingFor: 5 * time.Minute, DeletingFor: 5 * time.Minute, AttachmentGrace: 6 * time.Minute}

// inUse is the unique volume name of a PV of hostpathDriver, as a node's
// volumesInUse reports it.
func inUse(pvName string) v1.UniqueVolumeName {
	return attachment.UniqueVolumeName(hostpathDriver, pvName)
}

func young(age time.Duration) func(*storagev1.VolumeAttachment) {
	return func(a *storagev1.VolumeAttachment) { a.CreationTimestamp = ago(age) }
}

func vaWith(name, pvName, nodeName string, opts ...func(*storagev1.VolumeAttachment)) *storagev1.VolumeAttachment {
	a := va(name, pvName, nodeName)
	for _, o := range opts {
		o(a)
	}
	return a
}

func kinds(fs []Finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, string(f.Kind)+" "+f.Object.String())
	}
	return out
}

func TestStaleAttachmentsWaitForTheNodeToUnmountAndAGrace(t *testing.T) {
	bound := func() *world {
		return newWorld().claims(claim("db", boundTo("pv-db"))).volumes(pv("pv-db", claimRef("db")))
	}
	gonePV := attachment.Name("vol-x", hostpathDriver, "n1")
	for _, tc := range []struct {
		name  string
		world *world
		want  Kind // "" for no finding
		risk  string
	}{
		{"the node still reports the volume in use: the loop waits for the unmount",
			bound().nodes(node("n1", inUse("pv-db"))).attachments(va("csi-1", "pv-db", "n1")), "", ""},
		{"unused, but made less than the grace ago",
			bound().attachments(vaWith("csi-1", "pv-db", "n1", young(time.Minute))), "", ""},
		{"unused, unmounted and older than the grace",
			bound().attachments(va("csi-1", "pv-db", "n1")), KindAttachmentUnused, "use the volume again"},
		{"the node is gone, less than the grace ago",
			bound().attachments(vaWith("csi-1", "pv-db", "gone", young(time.Minute))), "", ""},
		{"the node is gone, older than the grace: advised with the risk named",
			bound().attachments(va("csi-1", "pv-db", "gone")), KindAttachmentNodeGone, "still mounted"},
		{"the PV is gone, the node reports the volume the attachment's name hashes",
			newWorld().nodes(node("n1", attachment.UniqueVolumeName(hostpathDriver, "vol-x"))).
				attachments(func() *storagev1.VolumeAttachment {
					a := va(gonePV, "pv-gone", "n1")
					a.Spec.Attacher = hostpathDriver
					return a
				}()), "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Check(&tc.world.s, graceful)
			if tc.want == "" {
				if len(r.Findings) != 0 {
					t.Fatalf("got %v, want none", kinds(r.Findings))
				}
				return
			}
			if len(r.Findings) != 1 || r.Findings[0].Kind != tc.want {
				t.Fatalf("got %v, want one %s", kinds(r.Findings), tc.want)
			}
			fixes := r.Findings[0].Fixes
			if len(fixes) != 1 || !strings.Contains(fixes[0].Risk, tc.risk) {
				t.Fatalf("fixes %+v, want a risk ...%q...", fixes, tc.risk)
			}
		})
	}
}

func TestAVolumeStuckDeletingIsNotDetachedWhileItsNodeUsesIt(t *testing.T) {
	w := newWorld().nodes(node("n1", inUse("pv-db"))).
		volumes(pv("pv-db", pvDeleting(time.Hour, "external-attacher/hostpath-csi-volplane-io"))).
		attachments(va("csi-1", "pv-db", "n1"))
	r := Check(&w.s, graceful)
	if len(r.Findings) != 1 || r.Findings[0].Kind != KindStuckDeleting {
		t.Fatalf("got %v", kinds(r.Findings))
	}
	for _, f := range r.Findings[0].Fixes {
		if strings.Contains(f.Command, "delete volumeattachment") {
			t.Errorf("advises deleting an attachment its node reports in use: %+v", f)
		}
	}
}

func TestOrphansAreAdoptedOnlyWhenNoClaimMayBeMakingThem(t *testing.T) {
	inFlight := func(c *v1.PersistentVolumeClaim) { c.Finalizers = append(c.Finalizers, provisioning.ClaimFinalizer) }
	handed := func(driver string) claimOpt {
		return func(c *v1.PersistentVolumeClaim) {
			c.Annotations = map[string]string{"volume.kubernetes.io/storage-provisioner": driver}
		}
	}
	orphan := func(id string) Backend {
		return Backend{Driver: hostpathDriver, Volumes: []BackendVolume{{ID: id, CapacityBytes: 1 << 30}}}
	}
	for _, tc := range []struct {
		name    string
		world   *world
		finding bool
		adopt   bool
	}{
		{"a volume named for a claim being provisioned is that claim's",
			newWorld().claims(claim("data", pending(time.Minute), inFlight)).backends(orphan("pvc-uid-data")), false, false},
		{"a volume that may be a provisioning claim's is not adopted",
			newWorld().claims(claim("data", pending(time.Minute), inFlight)).backends(orphan("vol-1")), true, false},
		{"a claim handed to the driver, not yet bound, is being provisioned",
			newWorld().claims(claim("data", pending(time.Minute), handed(hostpathDriver))).backends(orphan("vol-1")), true, false},
		{"a claim of the driver's class not handed to it makes no volume",
			newWorld().classes(class("fast", hostpathDriver, true)).claims(claim("data", pending(time.Minute))).backends(orphan("vol-1")), true, true},
		{"a claim of the driver's class with the in-progress finalizer",
			newWorld().classes(class("fast", hostpathDriver, true)).claims(claim("data", pending(time.Minute), inFlight)).backends(orphan("vol-1")), true, false},
		{"a claim of another driver's class with the finalizer does not hold it back",
			newWorld().classes(class("fast", "other.example.com", false)).claims(claim("data", pending(time.Minute), inFlight)).backends(orphan("vol-1")), true, true},
		{"a claim of another driver does not hold it back",
			newWorld().claims(claim("data", pending(time.Minute), handed("other.example.com"))).backends(orphan("vol-1")), true, true},
		{"listed before the cluster was read, gone after: not an orphan",
			newWorld().backends(func() Backend { b := orphan("vol-1"); b.Relisted = map[string]bool{}; return b }()), false, false},
		{"listed twice, no PV, no claim in flight: adopt",
			newWorld().backends(orphan("vol-1")), true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Check(&tc.world.s, graceful)
			var got *Finding
			for i, f := range r.Findings {
				if f.Kind == KindOrphanedBackendVolume {
					got = &r.Findings[i]
				}
			}
			if (got != nil) != tc.finding {
				t.Fatalf("got %v, want an orphan finding: %v", kinds(r.Findings), tc.finding)
			}
			if got == nil {
				return
			}
			adopts := len(got.Fixes) > 0 && strings.Contains(got.Fixes[0].Command, "kubectl create")
			if adopts != tc.adopt {
				t.Fatalf("fixes %+v, want adopt %v (problem %q)", got.Fixes, tc.adopt, got.Problem)
			}
		})
	}
}

// The adopt command, run by a shell whose kubectl prints what it is fed,
// gives exactly the driver's strings back, and runs none of them.
func TestAdoptCommandQuotesWhatTheDriverSays(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	dir := t.TempDir()
	mark := filepath.Join(dir, "MARK")
	evil := "x' \"$(touch " + mark + ")\" `touch " + mark + "`\nEOF\n'EOF'\\n; touch " + mark + " #"
	vol := BackendVolume{ID: "vol-" + evil, CapacityBytes: 1 << 30,
		Context:    map[string]string{"path": evil, "k'" + evil: "v"},
		Accessible: []map[string]string{{topoKey: evil}}}
	w := newWorld().backends(Backend{Driver: hostpathDriver, Volumes: []BackendVolume{vol}})
	r := Check(&w.s, graceful)
	if len(r.Findings) != 1 || len(r.Findings[0].Fixes) != 1 {
		t.Fatalf("got %+v", r.Findings)
	}
	cmd := r.Findings[0].Fixes[0].Command
	sh := exec.Command("sh", "-c", "kubectl() { cat; }\n"+cmd)
	sh.Dir = dir
	out, err := sh.CombinedOutput()
	if _, statErr := os.Stat(mark); statErr == nil {
		t.Fatalf("the command ran what the driver said:\n%s", cmd)
	}
	if err != nil {
		t.Fatalf("sh: %v\n%s\ncommand:\n%s", err, out, cmd)
	}
	var got v1.PersistentVolume
	if err := yaml.UnmarshalStrict(out, &got); err != nil {
		t.Fatalf("manifest: %v\n%s", err, out)
	}
	if got.Spec.CSI == nil || got.Spec.CSI.VolumeHandle != vol.ID || got.Spec.CSI.Driver != hostpathDriver {
		t.Fatalf("csi %+v, want handle %q", got.Spec.CSI, vol.ID)
	}
	if got.Spec.CSI.VolumeAttributes["path"] != evil || got.Spec.CSI.VolumeAttributes["k'"+evil] != "v" {
		t.Errorf("attributes %q", got.Spec.CSI.VolumeAttributes)
	}
	terms := got.Spec.NodeAffinity.Required.NodeSelectorTerms
	if e := terms[0].MatchExpressions[0]; e.Key != topoKey || e.Values[0] != evil {
		t.Errorf("affinity %+v", e)
	}
	if got.Spec.PersistentVolumeReclaimPolicy != v1.PersistentVolumeReclaimRetain {
		t.Errorf("policy %s", got.Spec.PersistentVolumeReclaimPolicy)
	}
}

func TestRetainedVolumesAtRestAreInformation(t *testing.T) {
	for _, tc := range []struct {
		name  string
		world *world
		to    string
	}{
		{"its claim is gone", newWorld().volumes(pv("old", claimRef("gone"), phase(v1.VolumeReleased))),
			"volplane release pv old --to NAMESPACE/NAME"},
		{"a new claim has its claim's name", newWorld().claims(claim("data", claimUID("new"), pending(time.Minute))).
			volumes(pv("old", claimRef("data"), phase(v1.VolumeReleased))), "volplane release pv old --to ns/data"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Check(&tc.world.s, graceful)
			var got *Finding
			for i, f := range r.Findings {
				if f.Object.String() == "pv old" {
					got = &r.Findings[i]
				}
			}
			if got == nil || got.Kind != KindRetainedVolume || got.Severity != SeverityInfo || string(got.Kind) != "retained-volume" {
				t.Fatalf("got %+v, want retained-volume info", r.Findings)
			}
			if r.Problems() != 0 {
				t.Errorf("a retained volume counts as %d problem(s)", r.Problems())
			}
			if len(got.Fixes) != 1 || got.Fixes[0].Command != tc.to || !strings.Contains(got.Fixes[0].Risk, "data") {
				t.Errorf("fixes %+v, want %q with the risk named", got.Fixes, tc.to)
			}
			for _, f := range got.Fixes {
				if f.Command == "volplane release pv old" {
					t.Errorf("advises releasing the old tenant's data to anyone: %+v", f)
				}
			}
		})
	}
}

func TestMissingBackendVolumesOnlyFromACompleteListing(t *testing.T) {
	twoNodes := func() *world {
		return newWorld().nodes(node("n1"), node("n2")).csiNodes(csiNode("n1", hostpathDriver), csiNode("n2", hostpathDriver))
	}
	for _, tc := range []struct {
		name    string
		world   *world
		missing bool
		note    string
	}{
		{"affinity by hostname only, on a node whose endpoint was not listed",
			twoNodes().volumes(pv("far", onNodeAffinity(v1.LabelHostname, "n2"))).backends(nodeBackend("n1")),
			false, "n2"},
		{"no affinity, a node-local driver of which one node was listed",
			twoNodes().volumes(pv("any")).backends(nodeBackend("n1")), false, "n2"},
		{"no CSINode says where the node-local driver runs",
			newWorld().nodes(node("n1")).volumes(pv("here", onNodeAffinity(topoKey, "n1"))).backends(nodeBackend("n1")),
			false, "not checked"},
		{"affinity by hostname, that node's endpoint listed and it lacks the volume",
			twoNodes().volumes(pv("near", onNodeAffinity(v1.LabelHostname, "n1"))).backends(nodeBackend("n1")), true, ""},
		{"every node listed",
			twoNodes().volumes(pv("any")).backends(nodeBackend("n1"), nodeBackend("n2")), true, ""},
		{"a central endpoint lists them all",
			newWorld().volumes(pv("any")).backends(Backend{Driver: hostpathDriver}), true, ""},
		{"listed only after the cluster was read",
			newWorld().volumes(pv("new")).backends(Backend{Driver: hostpathDriver, Relisted: map[string]bool{"new": true}}), false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Check(&tc.world.s, graceful)
			if got := len(r.Findings) == 1 && r.Findings[0].Kind == KindMissingBackendVolume; got != tc.missing || len(r.Findings) > 1 {
				t.Fatalf("got %v, want missing %v", kinds(r.Findings), tc.missing)
			}
			if tc.note != "" && !strings.Contains(strings.Join(r.Notes, "\n"), tc.note) {
				t.Errorf("notes %q, want ...%q...", r.Notes, tc.note)
			}
		})
	}
}

func TestDeletingAClaimWhoseVolumeIsMissingCarriesTheRisk(t *testing.T) {
	w := newWorld().claims(claim("db", boundTo("pv-db"))).volumes(pv("pv-db", claimRef("db"))).backends(Backend{Driver: hostpathDriver})
	r := Check(&w.s, graceful)
	if len(r.Findings) != 1 {
		t.Fatalf("got %v", kinds(r.Findings))
	}
	for _, f := range r.Findings[0].Fixes {
		if strings.HasPrefix(f.Command, "kubectl delete") && f.Risk == "" {
			t.Errorf("a delete without its risk: %+v", f)
		}
	}
}

// Each finalizer fix, applied as the API server applies a JSON patch,
// removes exactly its finalizer from the object as read, and fails on the
// object once anything changed.
func TestFinalizerFixesAreJSONPatchesThatTestWhatTheyRemove(t *testing.T) {
	held := pv("held", pvDeleting(time.Hour, "example.com/hold", protection.VolumeFinalizer))
	r := Check(&newWorld().volumes(held).s, graceful)
	if len(r.Findings) != 1 || len(r.Findings[0].Fixes) != 2 {
		t.Fatalf("got %+v", r.Findings)
	}
	doc, err := json.Marshal(held)
	if err != nil {
		t.Fatal(err)
	}
	changed := held.DeepCopy()
	changed.ResourceVersion = "9"
	later, _ := json.Marshal(changed)
	for i, want := range [][]string{{protection.VolumeFinalizer}, {"example.com/hold"}} {
		cmd := r.Findings[0].Fixes[i].Command
		prefix := "kubectl patch pv held --type=json -p '"
		if !strings.HasPrefix(cmd, prefix) || !strings.HasSuffix(cmd, "'") {
			t.Fatalf("fix %d: %s, want %s...'", i, cmd, prefix)
		}
		patch, err := jsonpatch.DecodePatch([]byte(strings.TrimSuffix(strings.TrimPrefix(cmd, prefix), "'")))
		if err != nil {
			t.Fatalf("fix %d: %v", i, err)
		}
		out, err := patch.Apply(doc)
		if err != nil {
			t.Fatalf("fix %d on the object as read: %v", i, err)
		}
		var got v1.PersistentVolume
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatal(err)
		}
		if strings.Join(got.Finalizers, ",") != strings.Join(want, ",") {
			t.Errorf("fix %d leaves %v, want %v", i, got.Finalizers, want)
		}
		if _, err := patch.Apply(later); err == nil {
			t.Errorf("fix %d applies to the object changed since: %s", i, cmd)
		}
	}
}
