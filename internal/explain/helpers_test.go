package explain_test

import (
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/explain"
)

func join(s []string) string { return strings.Join(s, " ") }

// event is an event on claim seen count times, last at now+minutes.
func event(claim *v1.PersistentVolumeClaim, reason, msg string, count int32, minutes int) *v1.Event {
	return &v1.Event{
		InvolvedObject: v1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: claim.Namespace, Name: claim.Name, UID: claim.UID},
		Reason:         reason, Message: msg, Count: count,
		LastTimestamp: metav1.Time{Time: now.Add(time.Duration(minutes) * time.Minute)},
	}
}

func attachmentOf(name, pv, node string, attached bool, attachErr string) *storagev1.VolumeAttachment {
	va := &storagev1.VolumeAttachment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: storagev1.VolumeAttachmentSpec{Attacher: "csi.example.com", NodeName: node,
			Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: ptr.To(pv)}},
		Status: storagev1.VolumeAttachmentStatus{Attached: attached},
	}
	if attachErr != "" {
		va.Status.AttachError = &storagev1.VolumeError{Message: attachErr}
	}
	return va
}

// Text users write reaches the reader's terminal only as text: no escape
// sequence, no bidi override, no invalid UTF-8.
func TestPrintable(t *testing.T) {
	for in, want := range map[string]string{
		"gold":            "gold",
		"\x1b[2Jgold":     "\ufffd[2Jgold",
		"a\u202eb":        "a\ufffdb",
		"bad\xffbyte":     "bad\ufffdbyte",
		"two\nlines\ttoo": "two\nlines\ttoo", // whitespace: wrapping makes it spaces
		"évidemment, 日本語": "évidemment, 日本語",
	} {
		if got := explain.Printable(in); got != want {
			t.Errorf("Printable(%q) = %q, want %q", in, got, want)
		}
	}
}
