package explain

import (
	"io"
	"strings"
)

// Table writes the volume report for people, in Width columns.
func (r VolumeReport) Table(w io.Writer) error {
	t := &table{w: w}
	t.field("Volume", r.Name)
	t.field("Phase", orNone(r.Phase))
	t.field("Why", r.Summary)
	t.field("Capacity", r.Capacity+", "+strings.Join(r.AccessModes, ",")+", "+r.VolumeMode)
	t.field("Class", orNone(r.Class))
	t.field("Reclaim", r.ReclaimPolicy)
	if r.Driver != "" {
		t.field("Backend", r.Driver+" "+r.Handle)
	}
	if r.ClaimRef != "" {
		t.field("Claim", r.ClaimRef+" ("+r.ClaimState+")")
	}
	if r.Provisioner != nil {
		t.field("Provisioner", r.Provisioner.Note)
	}
	if r.Claims != nil {
		t.field("Claims", r.Claims.Summary)
		t.verdicts(r.Claims)
	}
	t.nodes(r.Nodes)
	if r.Deletion != nil {
		t.field("Finalizers", strings.Join(r.Deletion.Finalizers, ", "))
	}
	return t.err
}
