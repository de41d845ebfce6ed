package hostpath

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// store holds the state and writes it through to the data dir.
//
// Its contract: a *state returned by current is never modified again, by
// anyone. update works on a copy and swaps it in only once the change is
// on disk, so readers need no lock and a failed write changes nothing.
//
// On disk the state is a snapshot (state.json, written whole and
// atomically) continued by a journal (state.journal): after the snapshot,
// each update appends one entry of the records it changed and fsyncs it,
// so a change costs O(changed records), not O(state). An entry is one
// checksummed line (journal.go): a crash in the middle of an append leaves
// a torn last line, which is discarded at start, so an update is on disk
// whole or not at all, however many records it changes. When the journal
// outgrows half the snapshot, the next update writes a new snapshot
// instead (O(state), once per O(state) bytes of journal, so O(changed)
// amortized) and starts a new, empty journal. Half, because a start
// decodes a journal entry slower than the same bytes of snapshot: this
// keeps the longest start within about twice that of the snapshot alone. The journal's header names the snapshot it continues, and
// the snapshot names its journal, so a crash between writing the two
// leaves a new snapshot with the old journal, which is then ignored: every
// change in it is in the snapshot.
//
// One corner is weaker than "a failed write changes nothing": when an
// append fails and cutting the journal back fails too, the failed entry
// may be on disk, and a crash before the next update (which writes a
// snapshot, leaving that journal behind) would bring it back. The whole
// file rewrite had the same corner, a rename done whose directory fsync
// failed.
//
// In memory, the tables of the state are persistent maps (table.go): an
// update copies the paths to the records it changes, and the unchanged
// rest is shared with the state readers hold.
//
// (Another design keeps one file per record plus an intent log for
// updates of several records; it makes every change a create or rename
// plus an fsync of the directory, and a start read one file per record:
// 100,000 opens where the journal needs two files.)
type store struct {
	path string
	mu   sync.Mutex
	cur  *state
	// reserved holds bytes claimed by creations still copying data, so two
	// concurrent creations cannot both take the last free bytes.
	reserved map[string]int64

	// journal is the journal of cur's snapshot, open to append; nil when
	// there is none to append to, and the next write writes a snapshot.
	journal *os.File
	// journalSize is what the journal holds that was acknowledged;
	// snapshotSize the size of the snapshot file.
	journalSize, snapshotSize int64
	// journalLimit is the least journal size at which the next update
	// writes a snapshot instead: the journal grows to half the size of
	// the snapshot, and never compacts below this, where replay costs
	// nothing.
	journalLimit int64
	// orphanJournal is set when loadStore found a journal but no state
	// file (see orphanJournalProblem).
	orphanJournal bool
}

// defaultJournalLimit is 1 MiB: a few thousand updates, read in
// milliseconds at start.
const defaultJournalLimit = 1 << 20

var errNoCapacity = errors.New("not enough capacity")

// loadStore reads the state at path (its snapshot and journal), after
// removing what writes of them left when the driver died during them, and
// cuts the journal's torn tail, if any. found is false when there is no
// state file, which open must tell apart from a data dir that never had
// one. The caller holds the data dir's lock: no write of this state is
// under way.
func loadStore(path string) (st *store, found bool, err error) {
	for _, p := range []string{path, journalPathOf(path)} {
		if err := removeCrashedWrites(p); err != nil {
			return nil, false, err
		}
	}
	on, err := readStateFiles(path)
	if err != nil {
		return nil, false, err
	}
	s := &store{path: path, cur: on.st, reserved: map[string]int64{}, snapshotSize: on.snapshotSize,
		journalLimit: defaultJournalLimit, orphanJournal: !on.found && on.journal.name != ""}
	if on.journalOwn {
		if s.journal, err = openJournal(journalPathOf(path), on.journal.good); err != nil {
			return nil, false, err
		}
		s.journalSize = on.journal.good
	}
	return s, on.found, nil
}

// openJournal opens the journal at path to append after its first good
// bytes, cutting off (durably) a torn tail beyond them.
func openJournal(path string, good int64) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return nil, fmt.Errorf("open state journal: %w", err)
	}
	fi, err := f.Stat()
	if err == nil && fi.Size() != good {
		if err = f.Truncate(good); err == nil {
			err = f.Sync()
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("cut the torn tail of the state journal: %w", err)
	}
	return f, nil
}

// orphanJournalProblem says why a driver must not start with a journal
// but no state file, or "". The journal is only the changes since a
// snapshot that is gone (moved away, or lost): starting anew would
// overwrite it, losing the tail of a state someone may restore.
func (s *store) orphanJournalProblem() string {
	if !s.orphanJournal {
		return ""
	}
	dir := filepath.Dir(s.path)
	return fmt.Sprintf("data dir %s holds a state journal (%s) but no state file (%s): the journal only continues "+
		"that file. Restore the state file beside it; or, to start with no volumes, move the journal out of %s too",
		dir, journalPathOf(s.path), s.path, dir)
}

// damagedStateAdvice says what to do about an unreadable state file or
// journal. Moving the file alone is never the advice: the volumes it
// records would then be data without a record, which open refuses to
// start with.
func damagedStateAdvice(path string) string {
	dir := filepath.Dir(path)
	return fmt.Sprintf("the driver does not start without it, as state.json and state.journal are together the only record "+
		"of the volumes under %s: restore it from a backup (both files, taken together), or, to start with no volumes, move "+
		"both files together with the volumes and snapshots directories out of %s (their data stays wherever you move it)",
		dir, dir)
}

// saveInitial writes the current state when there is no state file yet, so
// a later start can tell a data dir that lost its state from a new one.
func (s *store) saveInitial() error {
	return s.update(func(*state) error { return nil })
}

func (s *store) current() *state {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cur
}

// update applies fn to a copy of the state, persists it and makes it current.
// If fn or the write fails, nothing changes.
func (s *store) update(fn func(*state) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.updateLocked(fn)
}

func (s *store) updateLocked(fn func(*state) error) error {
	next := s.cur.next()
	if err := fn(next); err != nil {
		return err
	}
	if err := s.persist(next); err != nil {
		return fmt.Errorf("save state: %w", err)
	}
	updateIndexes(s.cur, next)
	next.settle()
	s.cur = next
	return nil
}

// persist writes what next changed: one journal entry, or a new snapshot
// when there is no journal to append to or the entry would make the
// journal outgrow half the snapshot.
func (s *store) persist(next *state) error {
	changes := next.changes()
	if changes == nil && s.journal != nil {
		return nil
	}
	var frame []byte
	if changes != nil {
		payload, err := json.Marshal(changes)
		if err != nil {
			return fmt.Errorf("encode state change: %w", err)
		}
		frame = appendFrame(nil, payload)
	}
	if s.journal == nil || s.journalSize+int64(len(frame)) > max(s.snapshotSize/2, s.journalLimit) {
		return s.writeSnapshot(next)
	}
	return s.appendJournal(frame)
}

// appendJournal appends frame to the journal and makes it durable. If that
// fails, it cuts the journal back to what was acknowledged, so that a
// crash after the failure leaves the previous state too; if even that
// fails, the journal is dropped and the next update writes a snapshot,
// which the journal does not continue.
func (s *store) appendJournal(frame []byte) error {
	_, err := s.journal.Write(frame)
	if err == nil {
		err = unix.Fdatasync(int(s.journal.Fd()))
	}
	if err == nil {
		s.journalSize += int64(len(frame))
		return nil
	}
	if s.journal.Truncate(s.journalSize) != nil || s.journal.Sync() != nil {
		s.dropJournal()
	}
	return fmt.Errorf("append to the state journal: %w", err)
}

func (s *store) dropJournal() {
	if s.journal != nil {
		s.journal.Close()
		s.journal = nil
	}
}

// writeSnapshot writes next whole, as a snapshot naming a new journal,
// then that journal, empty. Once the snapshot is in place the update is
// done: if the new journal cannot be made, the next update writes a
// snapshot again.
func (s *store) writeSnapshot(next *state) error {
	next.Journal = newJournalName()
	var size int64
	err := writeFileAtomic(s.path, func(w io.Writer) error {
		cw := &countingWriter{w: w}
		err := encodeSnapshot(cw, next)
		size = cw.n
		return err
	})
	if err != nil {
		return err
	}
	s.dropJournal()
	s.snapshotSize, s.journalSize = size, 0
	header, err := json.Marshal(diskState{Version: stateVersion, Journal: next.Journal})
	if err != nil {
		return nil
	}
	frame := appendFrame(nil, header)
	path := journalPathOf(s.path)
	if writeFileAtomic(path, func(w io.Writer) error { _, err := w.Write(frame); return err }) != nil {
		return nil
	}
	if s.journal, err = os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0); err == nil {
		s.journalSize = int64(len(frame))
	}
	return nil
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// close closes the journal; the store must not be written after.
func (s *store) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dropJournal()
}

// reserve claims bytes under key until release or commit.
func (s *store) reserve(key string, bytes, capacity int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if free := s.freeLocked(capacity); bytes > free {
		return fmt.Errorf("%w: %d bytes requested, %d of %d free", errNoCapacity, bytes, free, capacity)
	}
	s.reserved[key] = bytes
	return nil
}

// free is the part of capacity neither recorded nor reserved.
func (s *store) free(capacity int64) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.freeLocked(capacity)
}

func (s *store) freeLocked(capacity int64) int64 {
	claimed := s.cur.claimed
	for _, n := range s.reserved {
		claimed += n
	}
	return max(capacity-claimed, 0)
}

func (s *store) release(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.reserved, key)
}

// commit is update that also ends the reservation under key, in the same
// step, so the bytes are never counted twice or not at all.
func (s *store) commit(key string, fn func(*state) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.updateLocked(fn); err != nil {
		return err
	}
	delete(s.reserved, key)
	return nil
}

// writeFileAtomic replaces path with data so that after a crash the file
// holds either the old or the new content, never a mix. A crash may leave
// the new content in a temporary file beside path (named by tempPrefix);
// removeCrashedWrites removes those.
func writeFileAtomic(path string, write func(io.Writer) error) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, tempPrefix(path)+"*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			os.Remove(f.Name())
		}
	}()
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return err
	}
	return syncDir(dir)
}

// tempPrefix begins the name of every temporary file writeFileAtomic
// writes for path.
func tempPrefix(path string) string {
	return "." + filepath.Base(path) + ".tmp-"
}

// removeCrashedWrites removes the temporary files that writes of path by
// writeFileAtomic left when the process died before renaming them: they
// never became path, so the change each held was never acknowledged. Only regular
// files of exactly that shape go; the caller must know that no write of
// path is under way.
func removeCrashedWrites(path string) error {
	dir := filepath.Dir(path)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("remove crashed state writes: %w", err)
	}
	removed := false
	for _, e := range entries {
		if !e.Type().IsRegular() || !strings.HasPrefix(e.Name(), tempPrefix(path)) {
			continue
		}
		if err := os.Remove(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove crashed state write: %w", err)
		}
		removed = true
	}
	if !removed {
		return nil
	}
	return syncDir(dir)
}

// syncDir makes a rename or removal in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
