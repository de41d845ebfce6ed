package attachdetach

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	storagev1 "k8s.io/api/storage/v1"
)

// Every attach is exactly one VolumeAttachment create at the API server:
// n pods, each with its own claim, over the nodes, make n POSTs of
// volumeattachments (counted by the API server itself, whatever answered:
// a second create answered AlreadyExists counts too).
func TestOneVolumeAttachmentCreatePerAttach(t *testing.T) {
	const n = 40
	e := newEnv(t)
	before := e.attachmentCreates()
	type attach struct {
		v          volume
		node, name string
	}
	var all []attach
	for i := range n {
		claim := fmt.Sprintf("data-%d", i)
		v := e.boundClaim(claim)
		node := e.nodes[i%len(e.nodes)]
		e.pod(fmt.Sprintf("app-%d", i), node, claim)
		all = append(all, attach{v: v, node: node, name: e.vaName(v, node)})
	}
	// The attacher answers each as it appears, so the nodes' syncs (for
	// the attached report) run while later creates are still in flight.
	for _, a := range all {
		e.waitAttachment(a.name)
		e.attacherSays(a.name, storagev1.VolumeAttachmentStatus{Attached: true})
	}
	for _, a := range all {
		e.waitReported(a.node, e.unique(a.v), true)
	}
	if got := e.attachmentCreates() - before; got != n {
		t.Errorf("%d VolumeAttachment creates for %d attaches, want exactly one each", got, n)
	}
}

// attachmentCreates is the API server's count of VolumeAttachment creates
// (POSTs of any outcome) since it started.
func (e *env) attachmentCreates() int {
	e.t.Helper()
	raw, err := e.client.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(e.ctx)
	e.must(err, "read the API server's metrics")
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(raw))
	e.must(err, "parse the API server's metrics")
	total := 0.0
	for _, m := range families["apiserver_request_total"].GetMetric() {
		if hasLabel(m, "verb", "POST") && hasLabel(m, "resource", "volumeattachments") &&
			!hasLabel(m, "subresource", "status") {
			total += m.GetCounter().GetValue()
		}
	}
	return int(total)
}
