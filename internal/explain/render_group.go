package explain

import (
	"io"
	"strings"
)

// Table writes the group snapshot report for people, in Width columns.
func (r GroupReport) Table(w io.Writer) error {
	t := &table{w: w}
	t.field("Group", r.Namespace+"/"+r.Name)
	t.field("Ready", yesNo(r.Ready))
	t.field("Why", r.Summary)
	t.field("Source", r.Source)
	t.field("Class", r.Class.String())
	if len(r.Claims) > 0 {
		t.printf("Claims:\n")
		width := 0
		for _, c := range r.Claims {
			width = max(width, len(c.Name))
		}
		for _, c := range r.Claims {
			text := "volume " + orNone(c.Volume)
			if c.Problem != "" {
				text = c.Problem
			}
			t.item(2, c.Name, width, text)
		}
	}
	if c := r.Content; c != nil {
		t.field("Content", c.String())
	}
	t.members(r.Members)
	t.field("Created", r.Created)
	t.field("Error", r.Error)
	if r.Snapshotter != nil {
		t.field("Snapshotter", r.Snapshotter.Note)
	}
	t.finalizers(r.Finalizers)
	return t.err
}

// Table writes the group content report for people, in Width columns.
func (r GroupContentReport) Table(w io.Writer) error {
	t := &table{w: w}
	t.field("Content", r.Name)
	t.field("Ready", yesNo(r.Ready))
	t.field("Why", r.Summary)
	t.field("Driver", r.Driver)
	t.field("Policy", r.DeletionPolicy)
	t.field("Handle", r.Handle)
	t.field("Volumes", strings.Join(r.Volumes, ", "))
	if r.Group != "" {
		t.field("Group", r.Group+" ("+r.GroupState+")")
	}
	t.members(r.Members)
	t.field("Error", r.Error)
	if r.Snapshotter != nil {
		t.field("Snapshotter", r.Snapshotter.Note)
	}
	t.finalizers(r.Finalizers)
	return t.err
}

func (c *GroupContentReport) String() string {
	return contentLine(c.Exists, c.Name, c.DeletionPolicy, c.Driver, c.Handle, "group snapshot", c.Group, c.GroupState)
}

// members lists a group's members, each on lines of its own (their
// names are 64 hex digits long): the snapshot, its state and claim, its
// content, its backend snapshot.
func (t *table) members(ms []GroupMember) {
	if len(ms) == 0 {
		return
	}
	t.printf("Members:\n")
	for _, m := range ms {
		state := "ready"
		switch {
		case !m.Exists:
			state = "not made yet"
		case m.Deleting:
			state = "being deleted"
		case !m.Ready:
			state = "not ready"
		}
		if m.Claim != "" {
			state += ", of pvc " + m.Claim
		}
		if m.Handle != "" {
			state += ", backend " + m.Handle
		}
		for _, l := range []string{oneLine(m.Snapshot), "  " + oneLine(state), "  " + oneLine(m.Content)} {
			if strings.TrimSpace(l) != "" {
				t.printf("%s%s\n", indentFor(l, 2), l)
			}
		}
	}
}
