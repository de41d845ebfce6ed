package doctor

import (
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"

	"github.com/volplane/volplane/internal/protection"
)

var thresholds = Thresholds{PendingFor: 5 * time.Minute, DeletingFor: 5 * time.Minute}

// want is one expected finding: its kind, its object as the table names
// it, words of its problem and the fix commands, in order.
type want struct {
	kind     Kind
	object   string
	problem  string
	commands []string
}

func TestCheckFindsEachKindOfProblemWithItsFix(t *testing.T) {
	const topo = "topology.hostpath.csi.volplane.io/node"
	for _, tc := range []struct {
		name  string
		world *world
		want  []want
	}{{
		name:  "a bound claim in use and an available volume are healthy",
		world: newWorld().claims(claim("db", boundTo("pv-db"))).volumes(pv("pv-db", claimRef("db")), pv("free")).pods(pod("web", "n1", "db")),
	}, {
		name:  "a claim Pending past the threshold, with the binder's verdicts counted",
		world: newWorld().claims(claim("data", pending(10*time.Minute))).volumes(pv("small", func(p *v1.PersistentVolume) { p.Spec.StorageClassName = "slow" })),
		want: []want{{KindClaimPending, "pvc ns/data", "Pending for 10m: Cannot provision a volume: storageclass.storage.k8s.io \"fast\" not found. 0/1 volume available: 1 other class.",
			[]string{"volplane explain pvc ns/data"}}},
	}, {
		name:  "a claim waiting for its provisioner",
		world: newWorld().classes(class("fast", "fast.example.com", false)).claims(claim("data", pending(10*time.Minute))),
		want: []want{{KindClaimPending, "pvc ns/data", "Pending for 10m: No volume fits; waiting for fast.example.com to provision one.",
			[]string{"volplane explain pvc ns/data"}}},
	}, {
		name:  "a WaitForFirstConsumer claim no pod uses is at rest",
		world: newWorld().classes(class("fast", "fast.example.com", true)).claims(claim("data", pending(10*time.Minute))),
	}, {
		name: "a WaitForFirstConsumer claim whose pod is not scheduled",
		world: newWorld().classes(class("fast", "fast.example.com", true)).claims(claim("data", pending(10*time.Minute))).
			pods(pod("web", "", "data")),
		want: []want{{KindClaimPending, "pvc ns/data", "Waiting for pod web to be scheduled: its class binds on the first consumer.", nil}},
	}, {
		name:  "a claim Pending for less than the threshold is not reported",
		world: newWorld().claims(claim("data", pending(time.Minute))),
	}, {
		name:  "a Released Retain volume whose claim is gone",
		world: newWorld().volumes(pv("old", claimRef("gone"), phase(v1.VolumeReleased))),
		want: []want{{KindRetainedVolume, "pv old", "its claim ns/gone is gone",
			[]string{"volplane release pv old --to NAMESPACE/NAME"}}},
	}, {
		name:  "a Released Retain volume whose claim's name has a new claim",
		world: newWorld().claims(claim("data", claimUID("new"), pending(time.Minute))).volumes(pv("old", claimRef("data"), phase(v1.VolumeReleased))),
		want:  []want{{KindRetainedVolume, "pv old", "now is a new one", []string{"volplane release pv old --to ns/data"}}},
	}, {
		name: "a Released Delete volume is the reclaim loop's, not stale",
		world: newWorld().volumes(pv("old", claimRef("gone"), phase(v1.VolumeReleased),
			policy(v1.PersistentVolumeReclaimDelete))),
	}, {
		name: "a backend volume no PV refers to, with the manifest that adopts it",
		world: newWorld().backends(Backend{Driver: hostpathDriver, Node: "n1", Topology: map[string]string{topo: "n1"},
			Volumes: []BackendVolume{{ID: "vol-1", CapacityBytes: 2 << 30, Context: map[string]string{"path": "/x"},
				Accessible: []map[string]string{{topo: "n1"}}}}}),
		want: []want{{KindOrphanedBackendVolume, "volume vol-1 of hostpath.csi.volplane.io on node n1", "no PV refers to",
			[]string{"kubectl create -f - <<'EOF'\napiVersion: v1\nkind: PersistentVolume\nmetadata:\n  name: adopted-vol-1\nspec:\n" +
				"  capacity:\n    storage: 2Gi\n  accessModes: [ReadWriteOnce]\n  persistentVolumeReclaimPolicy: Retain\n" +
				"  storageClassName: \"\"\n  claimRef: # the claim that gets its data, and no other\n    namespace: NAMESPACE\n    name: NAME\n" +
				"  csi:\n    driver: \"hostpath.csi.volplane.io\"\n    volumeHandle: \"vol-1\"\n" +
				"    volumeAttributes:\n      \"path\": \"/x\"\n  nodeAffinity:\n    required:\n      nodeSelectorTerms:\n" +
				"      - matchExpressions:\n        - key: \"" + topo + "\"\n          operator: In\n          values: [\"n1\"]\n" +
				"EOF"}}},
	}, {
		name: "the same handle on another node's endpoint is another volume",
		world: newWorld().volumes(pv("vol-1", onNodeAffinity(topo, "n2"))).backends(
			Backend{Driver: hostpathDriver, Node: "n1", Topology: map[string]string{topo: "n1"}, Volumes: []BackendVolume{{ID: "vol-1"}}}),
		want: []want{{KindOrphanedBackendVolume, "volume vol-1 of hostpath.csi.volplane.io on node n1", "no PV refers to", nil}},
	}, {
		name:  "a bound PV whose backend volume is gone: delete claim, then PV",
		world: newWorld().claims(claim("db", boundTo("pv-db"))).volumes(pv("pv-db", claimRef("db"))).backends(Backend{Driver: hostpathDriver}),
		want: []want{{KindMissingBackendVolume, "pv pv-db", "the data of claim ns/db is lost",
			[]string{"kubectl delete pvc -n ns db", "kubectl delete pv pv-db"}}},
	}, {
		name: "a Released Delete PV whose volume went first is being reclaimed",
		world: newWorld().volumes(pv("pv-db", claimRef("db"), phase(v1.VolumeReleased), policy(v1.PersistentVolumeReclaimDelete))).
			backends(Backend{Driver: hostpathDriver}),
	}, {
		name: "a PV of a node whose endpoint was not read is not checked",
		world: newWorld().volumes(pv("far", onNodeAffinity(topo, "n2"))).backends(
			Backend{Driver: hostpathDriver, Node: "n1", Topology: map[string]string{topo: "n1"}}),
	}, {
		name:  "a VolumeAttachment to a deleted node",
		world: newWorld().claims(claim("db", boundTo("pv-db"))).volumes(pv("pv-db", claimRef("db"))).attachments(va("csi-1", "pv-db", "gone")),
		want: []want{{KindAttachmentNodeGone, "volumeattachment csi-1", "node gone, which no longer exists",
			[]string{"kubectl delete volumeattachment csi-1"}}},
	}, {
		name: "a VolumeAttachment no pod on its node uses (the pod moved)",
		world: newWorld().claims(claim("db", boundTo("pv-db"))).volumes(pv("pv-db", claimRef("db"))).
			attachments(va("csi-1", "pv-db", "n1")).pods(pod("web", "n2", "db")),
		want: []want{{KindAttachmentUnused, "volumeattachment csi-1", "no pod there uses it and the node reports it unmounted (its claim is ns/db)",
			[]string{"kubectl delete volumeattachment csi-1"}}},
	}, {
		name: "a claim stuck deleting, held by the pod that uses it",
		world: newWorld().claims(claim("db", boundTo("pv-db"), claimDeleting(time.Hour, protection.ClaimFinalizer))).
			volumes(pv("pv-db", claimRef("db"))).pods(pod("web", "n1", "db")),
		want: []want{{KindStuckDeleting, "pvc ns/db", "Being deleted for 60m, held by kubernetes.io/pvc-protection: pods using it: web.",
			[]string{"kubectl delete pod -n ns web"}}},
	}, {
		name:  "a claim stuck deleting that nothing uses: the loop should have removed it",
		world: newWorld().claims(claim("db", pending(time.Hour), claimDeleting(time.Hour, protection.ClaimFinalizer))),
		want: []want{{KindStuckDeleting, "pvc ns/db", "no pod uses it",
			[]string{`kubectl patch pvc -n ns db --type=json -p '[{"op": "test", "path": "/metadata/resourceVersion", "value": "7"}, ` +
				`{"op": "test", "path": "/metadata/finalizers/0", "value": "kubernetes.io/pvc-protection"}, {"op": "remove", "path": "/metadata/finalizers/0"}]'`}}},
	}, {
		name: "a volume stuck deleting, held by its bound claim and the provisioner",
		world: newWorld().claims(claim("db", boundTo("pv-db"))).volumes(pv("pv-db", claimRef("db"),
			pvDeleting(time.Hour, protection.VolumeFinalizer, "external-provisioner.volume.kubernetes.io/finalizer"))),
		want: []want{{KindStuckDeleting, "pv pv-db", "kubernetes.io/pv-protection: claim ns/db is bound to it",
			[]string{"kubectl delete pvc -n ns db", "volplane explain pv pv-db",
				`kubectl patch pv pv-db --type=json -p '[{"op": "test", "path": "/metadata/resourceVersion", "value": "8"}, ` +
					`{"op": "test", "path": "/metadata/finalizers/1", "value": "external-provisioner.volume.kubernetes.io/finalizer"}, ` +
					`{"op": "remove", "path": "/metadata/finalizers/1"}]'`}}},
	}, {
		name: "a VolumeAttachment stuck deleting on the attacher's finalizer",
		world: newWorld().attachments(func() *storagev1.VolumeAttachment {
			a := va("csi-1", "pv-db", "n1")
			d := ago(time.Hour)
			a.DeletionTimestamp, a.Finalizers = &d, []string{"external-attacher/network-csi-volplane-io"}
			return a
		}()),
		want: []want{{KindStuckDeleting, "volumeattachment csi-1", "must first detach the volume from n1",
			[]string{`kubectl patch volumeattachment csi-1 --type=json -p '[{"op": "test", "path": "/metadata/resourceVersion", "value": "9"}, ` +
				`{"op": "test", "path": "/metadata/finalizers/0", "value": "external-attacher/network-csi-volplane-io"}, {"op": "remove", "path": "/metadata/finalizers/0"}]'`}}},
	}, {
		name:  "deleting for less than the threshold is not stuck",
		world: newWorld().claims(claim("db", pending(time.Hour), claimDeleting(time.Minute, protection.ClaimFinalizer))),
	}, {
		name: "a Bound claim whose volume points elsewhere breaks a binding invariant",
		world: newWorld().claims(claim("db", boundTo("pv-db"))).volumes(pv("pv-db", claimRef("other"))).
			claims(claim("other", boundTo("pv-db"))),
		want: []want{
			{KindBindingInvariant, "pv pv-db", "PV pv-db is the volume of two Bound claims", []string{"volplane explain pv pv-db"}},
			{KindBindingInvariant, "pvc ns/db", "its PV pv-db does not point back", []string{"volplane explain pvc ns/db"}},
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			r := Check(&tc.world.s, thresholds)
			if len(r.Findings) != len(tc.want) {
				t.Fatalf("got %d findings, want %d: %+v", len(r.Findings), len(tc.want), r.Findings)
			}
			for i, w := range tc.want {
				checkFinding(t, r.Findings[i], w)
			}
		})
	}
}

func checkFinding(t *testing.T, f Finding, w want) {
	t.Helper()
	if f.Kind != w.kind || f.Object.String() != w.object || !strings.Contains(f.Problem, w.problem) {
		t.Errorf("got %s %q: %q\nwant %s %q: ...%q...", f.Kind, f.Object, f.Problem, w.kind, w.object, w.problem)
	}
	if w.commands == nil {
		return
	}
	var got []string
	for _, fix := range f.Fixes {
		got = append(got, fix.Command)
	}
	if strings.Join(got, "\n--\n") != strings.Join(w.commands, "\n--\n") {
		t.Errorf("%s %s: fix commands\n%s\nwant\n%s", f.Kind, f.Object, strings.Join(got, "\n--\n"), strings.Join(w.commands, "\n--\n"))
	}
}

func TestCheckNotesTheBackendChecksItSkipped(t *testing.T) {
	r := Check(&newWorld().s, thresholds)
	if len(r.Findings) != 0 || len(r.Notes) != 1 || r.Notes[0] != "backend volumes not checked: no endpoint" {
		t.Fatalf("got %+v", r)
	}
	if r := Check(&newWorld().backends().s, thresholds); len(r.Notes) != 0 {
		t.Fatalf("backends read, yet notes %v", r.Notes)
	}
}
