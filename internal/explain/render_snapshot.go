package explain

import (
	"fmt"
	"io"
	"strings"
)

// Table writes the snapshot report for people, in Width columns.
func (r SnapshotReport) Table(w io.Writer) error {
	t := &table{w: w}
	t.field("Snapshot", r.Namespace+"/"+r.Name)
	t.field("Ready", yesNo(r.Ready))
	t.field("Why", r.Summary)
	t.field("Source", r.Source)
	t.field("Class", r.Class.String())
	if c := r.Content; c != nil {
		t.field("Content", c.String())
	}
	t.field("Restore size", r.RestoreSize)
	t.field("Created", r.Created)
	t.field("Group", r.Group)
	if r.Snapshotter != nil {
		t.field("Snapshotter", r.Snapshotter.Note)
	}
	if len(r.RestoredBy) > 0 {
		t.field("Restored by", strings.Join(r.RestoredBy, ", "))
	}
	t.finalizers(r.Finalizers)
	return t.err
}

// Table writes the content report for people, in Width columns.
func (r ContentReport) Table(w io.Writer) error {
	t := &table{w: w}
	t.field("Content", r.Name)
	t.field("Ready", yesNo(r.Ready))
	t.field("Why", r.Summary)
	t.field("Driver", r.Driver)
	t.field("Policy", r.DeletionPolicy)
	t.field("Handle", r.Handle)
	t.field("Source volume", r.SourceVolume)
	t.field("Restore size", r.RestoreSize)
	if r.Snapshot != "" {
		t.field("Snapshot", r.Snapshot+" ("+r.SnapshotState+")")
	}
	t.field("Group handle", r.GroupHandle)
	if r.Snapshotter != nil {
		t.field("Snapshotter", r.Snapshotter.Note)
	}
	t.finalizers(r.Finalizers)
	return t.err
}

func (c *SnapshotClass) String() string {
	switch {
	case c == nil:
		return ""
	case !c.Exists:
		return c.Name + " (does not exist)"
	}
	s := fmt.Sprintf("%s (driver %s, %s)", c.Name, c.Driver, c.DeletionPolicy)
	if c.Default {
		s += ", its driver's default"
	}
	return s
}

func (c *ContentReport) String() string {
	return contentLine(c.Exists, c.Name, c.DeletionPolicy, c.Driver, c.Handle, "snapshot", c.Snapshot, c.SnapshotState)
}

// contentLine is a (group) snapshot content in one line: name, deletion
// policy, driver and backend handle (or that there is none yet, of kind),
// and the object it is for unless it is bound to it.
func contentLine(exists bool, name, policy, driver, handle, kind, of, state string) string {
	if !exists {
		return name + " (does not exist)"
	}
	parts := []string{name, policy}
	if handle != "" {
		parts = append(parts, driver+" "+handle)
	} else {
		parts = append(parts, driver+", no backend "+kind+" yet")
	}
	if of != "" && state != "Bound" {
		parts = append(parts, "for "+of+" ("+state+")")
	}
	return strings.Join(parts, ", ")
}

// finalizers lists each finalizer by the object it is on, with what it
// protects and who removes it.
func (t *table) finalizers(fs []FinalizerOn) {
	if len(fs) == 0 {
		return
	}
	t.printf("Finalizers:\n")
	object := ""
	for _, f := range fs {
		if f.Object != object {
			object = f.Object
			on := "on " + oneLine(object) + ":"
			t.printf("%s%s\n", indentFor(on, 2), on)
		}
		name := oneLine(f.Name)
		t.printf("%s%s\n", indentFor(name, 4), name)
		for _, l := range wrap(f.Meaning+"; removed by "+f.RemovedBy+".", Width-8) {
			t.printf("        %s\n", l)
		}
	}
}

// oneLine is s as Printable makes it, its whitespace runs made one space:
// for a line printed as is, not wrapped.
func oneLine(s string) string { return strings.Join(strings.Fields(Printable(s)), " ") }

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
