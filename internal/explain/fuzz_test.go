package explain_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	storagehelpers "k8s.io/component-helpers/storage/volume"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/explain"
	"github.com/volplane/volplane/internal/fuzzing"
)

// fuzzFacts decodes a claim and the cluster around it; whatever a
// namespace user writes (the claim's annotations, pods, events in the
// namespace) may be any bytes.
func fuzzFacts(data []byte) (*v1.PersistentVolumeClaim, *explain.Facts) {
	in := fuzzing.New(data)
	names := []string{"pv-0", "pv-1", "pv-2"}
	f := &explain.Facts{Now: time.Unix(1e9, 0)}
	for _, name := range names[:in.Intn(4)] {
		f.Volumes = append(f.Volumes, in.Volume(name))
	}
	claim := in.Claim(names)
	f.Claims = append(f.Claims, claim)
	if in.Bool() {
		provisioner := in.Word("csi.example.com", "kubernetes.io/no-provisioner")
		f.Classes = append(f.Classes, &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: in.Word("gold", "")},
			Provisioner: provisioner, VolumeBindingMode: ptr.To(fuzzing.Pick(in, storagev1.VolumeBindingImmediate, storagev1.VolumeBindingWaitForFirstConsumer))})
		f.Provisioners = map[string]explain.Provisioner{provisioner: {Serving: in.Bool(), Note: in.Word("served by node-1"), Nodes: []string{in.Word("node-1")}}}
	}
	for n := in.Intn(3); n > 0; n-- {
		f.Pods = append(f.Pods, &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: claim.Namespace, Name: in.Word("web", "db")},
			Spec: v1.PodSpec{NodeName: in.Word("node-1", ""), Volumes: []v1.Volume{{Name: "v", VolumeSource: v1.VolumeSource{
				PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: claim.Name}}}}}})
	}
	for n := in.Intn(3); n > 0; n-- {
		f.Events = append(f.Events, &v1.Event{InvolvedObject: v1.ObjectReference{UID: claim.UID},
			Reason: fuzzing.Pick(in, "ProvisioningFailed", "Provisioning", "FailedMount"), Message: in.Raw(300), Count: int32(in.Intn(4))})
	}
	metav1.SetMetaDataAnnotation(&claim.ObjectMeta, storagehelpers.AnnStorageProvisioner, in.Word("csi.example.com"))
	return claim, f
}

// keyLine is a line that starts at column 0: a key of ours, padded.
var keyLine = regexp.MustCompile(`^[A-Z][a-z]+( [a-z]+)?:( |$)`)

// checkTable is what any report must look like, whatever it quotes: valid
// UTF-8 without control characters (an ESC sequence from an annotation
// must not reach the terminal), lines that start with one of our keys or
// are indented under one, and no line wider than Width unless it is one
// word too long to wrap, after a prefix of at most half the width.
func checkTable(out string) error {
	if !utf8.ValidString(out) {
		return fmt.Errorf("invalid UTF-8 in %q", out)
	}
	for _, r := range out {
		if r != '\n' && (unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r)) {
			return fmt.Errorf("control character %U in %q", r, out)
		}
	}
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if line != "" && line[0] != ' ' && !keyLine.MatchString(line) {
			return fmt.Errorf("line %q starts at column 0 without a key", line)
		}
		if utf8.RuneCountInString(line) <= explain.Width {
			continue
		}
		prefix := line[:strings.LastIndexByte(line, ' ')+1]
		if utf8.RuneCountInString(prefix) > explain.Width/2 {
			return fmt.Errorf("line of %d runes: %q", utf8.RuneCountInString(line), line)
		}
	}
	return nil
}

func checkJSON(report any) error {
	var b bytes.Buffer
	if err := explain.JSON(&b, report); err != nil {
		return err
	}
	if !json.Valid(b.Bytes()) {
		return fmt.Errorf("invalid JSON %q", b.String())
	}
	return nil
}

var fuzzSeeds = [][]byte{
	{},
	[]byte("\x02\x00\x00\x01\x00\x05\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"),
}

// FuzzClaimTable: explaining any claim never panics, and its table and
// JSON keep their shape (checkTable, json.Valid).
func FuzzClaimTable(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		claim, facts := fuzzFacts(data)
		r := explain.Claim(claim, facts)
		var b bytes.Buffer
		if err := r.Table(&b); err != nil {
			t.Fatal(err)
		}
		if err := checkTable(b.String()); err != nil {
			t.Fatalf("claim table: %v\n%s", err, b.String())
		}
		if err := checkJSON(r); err != nil {
			t.Fatal(err)
		}
	})
}

// FuzzVolumeTable: the same for every volume of the snapshot, whose
// report quotes the claims (and their annotations) it was checked against.
func FuzzVolumeTable(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		_, facts := fuzzFacts(data)
		for _, pv := range facts.Volumes {
			r := explain.Volume(pv, facts)
			var b bytes.Buffer
			if err := r.Table(&b); err != nil {
				t.Fatal(err)
			}
			if err := checkTable(b.String()); err != nil {
				t.Fatalf("volume %s table: %v\n%s", pv.Name, err, b.String())
			}
			if err := checkJSON(r); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// FuzzSentence: Sentence keeps valid text valid, upper-cases the first
// letter (not the first byte) and ends it with one full stop.
func FuzzSentence(f *testing.F) {
	for _, s := range []string{"", "waiting: x", "done.", "ok!", "  spaced  "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := explain.Sentence(s)
		trimmed := strings.TrimSpace(s)
		if trimmed == "" {
			if got != "" {
				t.Fatalf("Sentence(%q) = %q", s, got)
			}
			return
		}
		if utf8.ValidString(s) && !utf8.ValidString(got) {
			t.Fatalf("Sentence(%q) = %q, invalid UTF-8", s, got)
		}
		first, _ := utf8.DecodeRuneInString(trimmed)
		if first != utf8.RuneError && !strings.HasPrefix(got, string(unicode.ToUpper(first))) {
			t.Fatalf("Sentence(%q) = %q: first letter not upper-cased", s, got)
		}
		if !strings.HasSuffix(got, ".") && !strings.HasSuffix(got, "!") {
			t.Fatalf("Sentence(%q) = %q: no full stop", s, got)
		}
	})
}

// FuzzWrap: Wrap keeps every word, in order, and only a word longer than
// its line makes a line wider than asked.
func FuzzWrap(f *testing.F) {
	f.Add("a bb ccc", 3, 2)
	f.Add("longerthanthewidth x", 5, 5)
	f.Fuzz(func(t *testing.T, text string, first, rest int) {
		if first < 1 || rest < 1 || first > 200 || rest > 200 {
			return
		}
		words := strings.Fields(text)
		lines := explain.Wrap(words, first, rest)
		if got := strings.Fields(strings.Join(lines, " ")); strings.Join(got, " ") != strings.Join(words, " ") {
			t.Fatalf("Wrap(%q) lost words: %q", words, lines)
		}
		for i, line := range lines {
			width := rest
			if i == 0 {
				width = first
			}
			if utf8.RuneCountInString(line) > width && strings.Contains(line, " ") {
				t.Fatalf("line %d %q wider than %d", i, line, width)
			}
		}
	})
}
