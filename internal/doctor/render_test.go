package doctor

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/volplane/volplane/internal/protection"
)

// busy has a finding of most kinds, with long names.
func busy() *world {
	long := "pvc-0b9c1234-5678-4abc-9def-0123456789ab"
	return newWorld().
		claims(claim("a-claim-with-a-rather-long-name-indeed", pending(time.Hour)),
			claim("db", boundTo(long), pending(time.Minute), claimDeleting(time.Hour, protection.ClaimFinalizer))).
		volumes(pv(long, claimRef("db"), phase(v1.VolumeReleased), pvDeleting(time.Hour, protection.VolumeFinalizer,
			"external-provisioner.volume.kubernetes.io/finalizer", "external-attacher/network-csi-volplane-io"))).
		attachments(va("csi-8f0e3a0c9d1b2e4f6a7b8c9d0e1f2a3b4c5d6e7f8a9b0c1d2e3f4a5b6c7d8e9f", long, "gone")).
		pods(pod("web-with-a-long-name-0123456789", "n1", "db"))
}

func TestTableFitsEightyColumns(t *testing.T) {
	var b bytes.Buffer
	if err := Check(&busy().s, thresholds).Table(&b); err != nil {
		t.Fatal(err)
	}
	for i, line := range strings.Split(b.String(), "\n") {
		if len(line) > Width {
			t.Errorf("line %d is %d columns: %q", i+1, len(line), line)
		}
	}
	if !strings.HasPrefix(b.String(), "4 problems: 1 claim-pending, 2 stuck-deleting, 1 attachment-node-gone.\n") {
		t.Errorf("headline:\n%s", b.String())
	}
}

func TestTableSaysWhenThereIsNothingWrong(t *testing.T) {
	var b bytes.Buffer
	if err := Check(&newWorld().backends().s, thresholds).Table(&b); err != nil {
		t.Fatal(err)
	}
	if b.String() != "No problems found.\n" {
		t.Fatalf("got %q", b.String())
	}
}

func TestLongCommandsWrapWithABackslashOutsideQuotes(t *testing.T) {
	var b strings.Builder
	writeCommand(&b, "    ", `kubectl patch pv pvc-0b9c1234-5678-4abc-9def-0123456789ab --type=merge -p '{"metadata":{"finalizers":["a b"]}}'`)
	want := "    kubectl patch pv pvc-0b9c1234-5678-4abc-9def-0123456789ab --type=merge -p \\\n" +
		"      '{\"metadata\":{\"finalizers\":[\"a b\"]}}'\n"
	if b.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", b.String(), want)
	}
}

func TestLongJSONWrapsInsideItsQuotes(t *testing.T) {
	var b strings.Builder
	writeCommand(&b, "    ", `kubectl patch pv p --type=merge -p '{"metadata":{"finalizers":["kubernetes.io/pv-protection", "external-attacher/network-csi-volplane-io"]}}'`)
	want := "    kubectl patch pv p --type=merge -p \\\n" +
		"      '{\"metadata\":{\"finalizers\":[\"kubernetes.io/pv-protection\",\n" +
		"      \"external-attacher/network-csi-volplane-io\"]}}'\n"
	if b.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", b.String(), want)
	}
}

func TestJSONFieldNamesAreStable(t *testing.T) {
	var b bytes.Buffer
	if err := Check(&busy().s, thresholds).JSON(&b); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Findings []map[string]json.RawMessage `json:"findings"`
		Notes    []string                     `json:"notes"`
	}
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	for _, f := range doc.Findings {
		for _, key := range []string{"kind", "severity", "object", "problem", "fixes"} {
			if _, ok := f[key]; !ok {
				t.Errorf("finding without %q: %v", key, f)
			}
		}
	}
	if len(doc.Findings) != 4 || len(doc.Notes) != 1 {
		t.Fatalf("got %s", b.String())
	}
}

func TestAgeReadsLikeKubectl(t *testing.T) {
	for d, want := range map[time.Duration]string{45 * time.Second: "45s", 10 * time.Minute: "10m", 5 * time.Hour: "5h", 72 * time.Hour: "3d"} {
		if got := Age(d); got != want {
			t.Errorf("Age(%s) = %s, want %s", d, got, want)
		}
	}
}

func TestTableCountsInformationApartAndShowsEachRiskBeforeItsCommand(t *testing.T) {
	w := newWorld().volumes(pv("old", claimRef("gone"), phase(v1.VolumeReleased))).
		claims(claim("db", boundTo("pv-db"))).volumes(pv("pv-db", claimRef("db"))).attachments(va("csi-1", "pv-db", "gone"))
	var b bytes.Buffer
	r := Check(&w.s, graceful)
	if err := r.Table(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if !strings.HasPrefix(out, "1 problem: 1 attachment-node-gone. For information: 1 retained-volume.\n") {
		t.Errorf("headline:\n%s", out)
	}
	for _, want := range []string{"retained-volume (info): pv old\n", "  Risk: The Node object is gone, not necessarily the machine",
		"  Risk: The claim named gets the data of claim ns/gone as it is"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
	if strings.Index(out, "Risk: The Node") > strings.Index(out, "kubectl delete volumeattachment csi-1") {
		t.Errorf("the risk comes after its command:\n%s", out)
	}
	r = Check(&newWorld().volumes(pv("old", claimRef("gone"), phase(v1.VolumeReleased))).s, graceful)
	b.Reset()
	_ = r.Table(&b)
	if !strings.HasPrefix(b.String(), "No problems found. For information: 1 retained-volume.\n") || r.Problems() != 0 {
		t.Errorf("only information: %d problems,\n%s", r.Problems(), b.String())
	}
}

// A here-document ends only at a line that is its delimiter alone: the
// table writes a multi-line command from the first column.
func TestTableWritesAManifestAsItPastes(t *testing.T) {
	w := newWorld().backends(Backend{Driver: hostpathDriver, Volumes: []BackendVolume{{ID: "vol-1"}}})
	var b bytes.Buffer
	if err := Check(&w.s, graceful).Table(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "\nkubectl create -f - <<'EOF'\napiVersion: v1\n") || !strings.HasSuffix(b.String(), "\nEOF\n") {
		t.Errorf("got\n%s", b.String())
	}
}

// What drivers and users wrote reaches the table as printable text only:
// an escape sequence in a driver's message cannot clear or rewrite the
// reader's terminal, nor a bidi override reorder what they read.
func TestTableWritesOnlyPrintableProse(t *testing.T) {
	r := Report{
		Notes: []string{"driver says \x1b[2J\u202ehello"},
		Findings: []Finding{{Kind: KindClaimPending, Severity: SeverityProblem,
			Problem: "the driver answered \x1b]0;owned\x07 and \u2066left\u2069", Fixes: []Fix{{Says: "look \x1b[31mhere", Risk: "none\x1b[0m"}}}},
	}
	var b bytes.Buffer
	if err := r.Table(&b); err != nil {
		t.Fatal(err)
	}
	if i := strings.IndexAny(b.String(), "\x1b\x07\u202e\u2066\u2069"); i >= 0 {
		t.Errorf("control or bidi character at %d:\n%q", i, b.String())
	}
}
