package explain

import (
	"fmt"
	"io"
	"strings"

	"github.com/volplane/volplane/internal/snapshotapi"
)

// Table writes the claim report for people, in Width columns.
func (r ClaimReport) Table(w io.Writer) error {
	t := &table{w: w}
	t.field("Claim", r.Namespace+"/"+r.Name)
	t.field("Phase", r.Phase)
	t.field("Why", r.Summary)
	t.field("Request", r.Request.String())
	t.field("Class", r.Class.String())
	if r.Class != nil && r.Class.Serving != nil {
		t.field("Provisioner", r.Class.Serving.Note)
	}
	if p := r.Provisioning; p != nil && (p.Attempts > 0 || p.Failures > 0) {
		s := fmt.Sprintf("%s, %d failed", plural(p.Attempts, "attempt"), p.Failures)
		if p.LastError != "" {
			s += "; last error: " + p.LastError
		}
		t.field("Provisioning", s)
	}
	t.field("Selected node", r.SelectedNode)
	if len(r.WaitingForPods) > 0 {
		t.field("Waiting for", "pods "+strings.Join(r.WaitingForPods, ", "))
	}
	for _, p := range r.PlacedDirectly {
		t.field("Placed", p.String())
	}
	t.capacity(r.Capacity)
	if r.Volumes != nil {
		t.field("Volumes", r.Volumes.Summary)
		t.verdicts(r.Volumes)
	}
	if v := r.Volume; v != nil {
		t.field("Volume", v.String())
	}
	t.nodes(r.Nodes)
	if r.Expansion != nil {
		t.field("Expansion", r.Expansion.Summary)
	}
	if r.Modification != nil {
		t.field("Modification", r.Modification.Summary)
	}
	if h := r.Health; h != nil && h.Abnormal {
		t.field("Health", "abnormal: "+h.Summary+" (from the claim's "+h.Source+")")
	}
	if r.Deletion != nil {
		t.field("Finalizers", strings.Join(r.Deletion.Finalizers, ", "))
	}
	t.restore(r.RestoresFrom)
	return t.err
}

// restore writes the "Restores from" section: the source, the verdict and
// the facts the provisioner checks.
func (t *table) restore(r *Restore) {
	if r == nil {
		return
	}
	t.printf("Restores from:\n")
	t.field("  Source", r.String())
	t.field("  Verdict", r.Summary)
	if r.Bound != nil && !*r.Bound {
		t.field("  Content", "none: the snapshot is not bound to a content yet")
	}
	if r.Content != "" {
		c := r.Content
		if r.ContentSnapshot != "" {
			c += " (names " + r.ContentSnapshot + ")"
		}
		t.field("  Content", c)
	}
	if r.ContentDriver != "" || r.ClassDriver != "" {
		t.field("  Driver", fmt.Sprintf("%s; the claim's class: %s", orNone(r.ContentDriver), orNone(r.ClassDriver)))
	}
	if r.Ready != nil {
		t.field("  Ready", yesNo(*r.Ready))
	}
	if r.RestoreSize != "" {
		t.field("  Size", fmt.Sprintf("restore size %s, request %s", r.RestoreSize, r.Request))
	}
	if r.SourceMode != "" && r.SourceMode != r.ClaimMode {
		allow := "the content does not allow it"
		if r.AllowModeChange != "" {
			allow = fmt.Sprintf("the content's %s: %q", snapshotapi.AllowVolumeModeChange, r.AllowModeChange)
		}
		t.field("  Volume mode", fmt.Sprintf("%s to %s; %s", r.SourceMode, r.ClaimMode, allow))
	}
	t.field("  Volume", r.SourceVolume)
}

func (r Request) String() string {
	parts := []string{r.Storage, strings.Join(r.AccessModes, ","), r.VolumeMode}
	if r.VolumeName != "" {
		parts = append(parts, "volume "+r.VolumeName)
	}
	if r.Selector != "" {
		parts = append(parts, "selector "+r.Selector)
	}
	if r.AttributesClass != "" {
		parts = append(parts, "attributes class "+r.AttributesClass)
	}
	return strings.Join(parts, ", ")
}

func (c *Class) String() string {
	switch {
	case c == nil:
		return "(none)"
	case !c.Exists:
		return c.Name + " (does not exist)"
	}
	return fmt.Sprintf("%s (%s, provisioner %s)", c.Name, c.BindingMode, c.Provisioner)
}

func (v *BoundVolume) String() string {
	s := fmt.Sprintf("%s, %s, %s, %s", v.Name, orNone(v.Phase), v.Capacity, v.ReclaimPolicy)
	if v.Driver != "" {
		s += ", " + v.Driver + " " + v.Handle
	}
	return s
}

// plural is "1 attempt", "2 attempts".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
