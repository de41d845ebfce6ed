package hostpath

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
)

// records is what a snapshot holds whole and a journal entry holds the
// changed part of: records by ID, where a journal entry's null is a
// deleted record.
type records struct {
	Volumes        map[string]*volume          `json:"volumes,omitempty"`
	Snapshots      map[string]*snapshot        `json:"snapshots,omitempty"`
	GroupSnapshots map[string]*groupSnapshot   `json:"groupSnapshots,omitempty"`
	Ephemeral      map[string]*ephemeralVolume `json:"ephemeralVolumes,omitempty"`
}

// diskState is a snapshot file as read, or the header of a journal (which
// has no records).
type diskState struct {
	Version int    `json:"version"`
	Journal string `json:"journal,omitempty"`
	records
}

// journalPathOf is where the journal of the state file at path lives.
func journalPathOf(path string) string {
	return filepath.Join(filepath.Dir(path), "state.journal")
}

// A journal is a sequence of lines, one a frame: the CRC-32C of the
// payload in 8 hex digits, a space, the payload (JSON, which never holds a
// newline), a newline. The first frame is the header (a diskState without
// records: the version and the journal's name); each later one is one
// update's changed records. A crash during an append leaves at most one
// line without its newline, or a last line whose checksum is wrong (a part
// of it not on disk): the torn tail. A wrong line followed by a right one
// is damage, not a crash.
const frameOverhead = 10

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func appendFrame(buf []byte, payload []byte) []byte {
	buf = fmt.Appendf(buf, "%08x ", crc32.Checksum(payload, castagnoli))
	buf = append(buf, payload...)
	return append(buf, '\n')
}

// nextFrame splits the frame at the start of data off. ok is false when
// what is there is not a whole, right frame; rest is then what follows
// the first newline (nil if there is none).
func nextFrame(data []byte) (payload, rest []byte, ok bool) {
	line, rest, found := bytes.Cut(data, []byte{'\n'})
	if !found {
		return nil, nil, false
	}
	if len(line) < frameOverhead || line[8] != ' ' {
		return nil, rest, false
	}
	sum, err := strconv.ParseUint(string(line[:8]), 16, 32)
	payload = line[9:]
	if err != nil || crc32.Checksum(payload, castagnoli) != uint32(sum) {
		return nil, rest, false
	}
	return payload, rest, true
}

// rightFrameIn reports whether a whole, right frame is anywhere in data.
func rightFrameIn(data []byte) bool {
	for len(data) > 0 {
		_, rest, ok := nextFrame(data)
		if ok {
			return true
		}
		if rest == nil {
			return false
		}
		data = rest
	}
	return false
}

// newJournalName names a new journal: random, so a journal never passes
// for that of another snapshot, even one of a data dir started anew.
func newJournalName() string {
	return rand.Text()
}

// journalRead is what reading a journal found.
type journalRead struct {
	// name is the header's journal name; "" when there is no journal.
	name    string
	entries []records
	// good is the length of the header and whole entries; anything after
	// it is a torn tail.
	good, size int64
}

func readJournal(path string) (journalRead, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return journalRead{}, nil
	}
	if err != nil {
		return journalRead{}, fmt.Errorf("read state journal: %w", err)
	}
	// The header is written whole before the journal gets its name, so a
	// header that does not read is damage, not a crash.
	payload, rest, ok := nextFrame(data)
	var header diskState
	if !ok || json.Unmarshal(payload, &header) != nil || header.Journal == "" {
		return journalRead{}, fmt.Errorf("state journal %s is damaged: its header does not read; %s", path, damagedStateAdvice(path))
	}
	if header.Version > stateVersion {
		return journalRead{}, fmt.Errorf("state journal %s has version %d; this driver reads up to %d", path, header.Version, stateVersion)
	}
	j := journalRead{name: header.Journal, size: int64(len(data))}
	for len(rest) > 0 {
		payload, next, ok := nextFrame(rest)
		if !ok {
			if rightFrameIn(next) {
				return journalRead{}, fmt.Errorf("state journal %s is damaged at byte %d: a wrong entry before right ones; %s",
					path, len(data)-len(rest), damagedStateAdvice(path))
			}
			break
		}
		var e records
		if err := json.Unmarshal(payload, &e); err != nil {
			// A whole frame with its checksum right was written so: not a
			// torn tail, and what follows it was acknowledged.
			return journalRead{}, fmt.Errorf("state journal %s is damaged at byte %d: %w; %s",
				path, len(data)-len(rest), err, damagedStateAdvice(path))
		}
		j.entries = append(j.entries, e)
		rest = next
	}
	j.good = int64(len(data) - len(rest))
	return j, nil
}

// stateOnDisk is the state a data dir holds: its snapshot, continued by
// its journal when the journal is the snapshot's own.
type stateOnDisk struct {
	st *state
	// found is false when there is no state file.
	found        bool
	snapshotSize int64
	// journal is the journal file as read; journalOwn says it continues
	// the snapshot (otherwise its changes are already in the snapshot, or
	// it is of a state that is gone).
	journal    journalRead
	journalOwn bool
}

func readStateFiles(path string) (stateOnDisk, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		j, err := readJournal(journalPathOf(path))
		return stateOnDisk{st: emptyState(), journal: j}, err
	}
	if err != nil {
		return stateOnDisk{}, fmt.Errorf("read state: %w", err)
	}
	var snap diskState
	if err := json.Unmarshal(data, &snap); err != nil {
		return stateOnDisk{}, fmt.Errorf("state file %s is damaged: %w; %s", path, err, damagedStateAdvice(path))
	}
	if snap.Version > stateVersion {
		return stateOnDisk{}, fmt.Errorf("state file %s has version %d; this driver reads up to %d", path, snap.Version, stateVersion)
	}
	on := stateOnDisk{found: true, snapshotSize: int64(len(data))}
	if on.journal, err = readJournal(journalPathOf(path)); err != nil {
		return stateOnDisk{}, err
	}
	on.journalOwn = snap.Journal != "" && on.journal.name == snap.Journal
	if on.journalOwn {
		for _, e := range on.journal.entries {
			snap.apply(e)
		}
	}
	on.st = snap.state()
	return on, nil
}

// apply makes the changes of a journal entry.
func (d *diskState) apply(e records) {
	applyRecords(&d.Volumes, e.Volumes)
	applyRecords(&d.Snapshots, e.Snapshots)
	applyRecords(&d.GroupSnapshots, e.GroupSnapshots)
	applyRecords(&d.Ephemeral, e.Ephemeral)
}

func applyRecords[T any](m *map[string]*T, changes map[string]*T) {
	if *m == nil {
		*m = map[string]*T{}
	}
	for id, r := range changes {
		if r == nil {
			delete(*m, id)
		} else {
			(*m)[id] = r
		}
	}
}

// state is the snapshot and journal read, brought up to this version.
func (d *diskState) state() *state {
	for _, v := range d.Volumes {
		if v != nil {
			v.migrate()
		}
	}
	st := &state{Version: stateVersion, Journal: d.Journal,
		Volumes: tableOf(d.Volumes), Snapshots: tableOf(d.Snapshots),
		GroupSnapshots: tableOf(d.GroupSnapshots), Ephemeral: tableOf(d.Ephemeral)}
	st.buildIndexes()
	return st
}

// readState reads the state a data dir holds, as a driver would start
// with it, while a driver may be writing it: a snapshot and a journal read
// across a compaction do not match, and are read again.
func readState(path string) (st *state, found bool, err error) {
	var on stateOnDisk
	for range 5 {
		if on, err = readStateFiles(path); err != nil {
			return nil, false, err
		}
		if !on.found || on.journalOwn || on.journal.name == "" {
			break
		}
	}
	return on.st, on.found, nil
}

// changes are the records an update changed: those of the tables'
// changed keys, nil for the deleted; nil when nothing changed.
func (s *state) changes() *records {
	e := records{Volumes: changed(&s.Volumes), Snapshots: changed(&s.Snapshots),
		GroupSnapshots: changed(&s.GroupSnapshots), Ephemeral: changed(&s.Ephemeral)}
	if e.Volumes == nil && e.Snapshots == nil && e.GroupSnapshots == nil && e.Ephemeral == nil {
		return nil
	}
	return &e
}

func changed[T any](t *table[T]) map[string]*T {
	if len(t.changed) == 0 {
		return nil
	}
	m := make(map[string]*T, len(t.changed))
	for id := range t.changed {
		m[id] = t.Get(id)
	}
	return m
}

// settle marks every change of s as persisted.
func (s *state) settle() {
	s.Volumes.changed, s.Snapshots.changed, s.GroupSnapshots.changed, s.Ephemeral.changed = nil, nil, nil, nil
	s.paths.changed, s.attached.changed = nil, nil
}

// encodeSnapshot writes st as a snapshot file: the records one a line, by
// ID, so a person can read and grep it.
func encodeSnapshot(w io.Writer, st *state) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	head, err := json.Marshal(diskState{Version: st.Version, Journal: st.Journal})
	if err != nil {
		return err
	}
	bw.Write(head[:len(head)-1])
	tables := []func() error{
		func() error { return encodeTable(bw, "volumes", &st.Volumes, true) },
		func() error { return encodeTable(bw, "snapshots", &st.Snapshots, true) },
		func() error { return encodeTable(bw, "groupSnapshots", &st.GroupSnapshots, false) },
		func() error { return encodeTable(bw, "ephemeralVolumes", &st.Ephemeral, false) },
	}
	for _, encode := range tables {
		if err := encode(); err != nil {
			return err
		}
	}
	bw.WriteString("\n}\n")
	return bw.Flush()
}

// encodeTable writes ,"name":{...} with one record a line; an empty table
// only if always.
func encodeTable[T any](w *bufio.Writer, name string, t *table[T], always bool) error {
	if t.Len() == 0 && !always {
		return nil
	}
	fmt.Fprintf(w, ",\n%s: {", jsonString(name))
	ids := t.Keys()
	slices.Sort(ids)
	for i, id := range ids {
		rec, err := json.Marshal(t.Get(id))
		if err != nil {
			return fmt.Errorf("encode %s %s: %w", name, id, err)
		}
		if i > 0 {
			w.WriteByte(',')
		}
		fmt.Fprintf(w, "\n  %s: ", jsonString(id))
		w.Write(rec)
	}
	w.WriteString("\n}")
	return nil
}

func jsonString(s string) []byte {
	b, _ := json.Marshal(s) // a string always encodes
	return b
}
