package hostpath

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// store holds the state and writes it through to the state file.
//
// Its contract: a *state returned by current is never modified again, by
// anyone. update works on a deep copy and swaps it in only once the file is
// on disk, so readers need no lock and a failed write changes nothing.
type store struct {
	path string
	mu   sync.Mutex
	cur  *state
	// reserved holds bytes claimed by creations still copying data, so two
	// concurrent creations cannot both take the last free bytes.
	reserved map[string]int64
}

var errNoCapacity = errors.New("not enough capacity")

// loadStore reads the state file at path, after removing what writes of it
// left when the driver died during them. found is false when there is no
// file, which open must tell apart from a data dir that never had one. The
// caller holds the data dir's lock: no write of this state is under way.
func loadStore(path string) (st *store, found bool, err error) {
	if err := removeCrashedWrites(path); err != nil {
		return nil, false, err
	}
	cur, found, err := readState(path)
	if err != nil {
		return nil, false, err
	}
	return &store{path: path, cur: cur, reserved: map[string]int64{}}, found, nil
}

func readState(path string) (st *state, found bool, err error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return emptyState(), false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("read state: %w", err)
	}
	st = emptyState()
	if err := json.Unmarshal(data, st); err != nil {
		return nil, false, fmt.Errorf("state file %s is damaged: %w; %s", path, err, damagedStateAdvice(path))
	}
	if st.Version > stateVersion {
		return nil, false, fmt.Errorf("state file %s has version %d; this driver reads up to %d", path, st.Version, stateVersion)
	}
	st.Version = stateVersion
	if st.GroupSnapshots == nil {
		st.GroupSnapshots = map[string]*groupSnapshot{}
	}
	if st.Ephemeral == nil {
		st.Ephemeral = map[string]*ephemeralVolume{}
	}
	for _, v := range st.Volumes {
		if v != nil {
			v.migrate()
		}
	}
	return st, true, nil
}

// damagedStateAdvice says what to do about an unreadable state file. Moving
// the file alone is never the advice: the volumes it records would then be
// data without a record, which open refuses to start with.
func damagedStateAdvice(path string) string {
	dir := filepath.Dir(path)
	return fmt.Sprintf("the driver does not start without it, as it is the only record of the volumes under %s: "+
		"restore it from a backup, or, to start with no volumes, move it together with the volumes and snapshots "+
		"directories out of %s (their data stays wherever you move it)", dir, dir)
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
	next := s.cur.clone()
	if err := fn(next); err != nil {
		return err
	}
	data, err := json.MarshalIndent(next, "", "  ")
	if err != nil {
		return fmt.Errorf("encode state: %w", err)
	}
	if err := writeFileAtomic(s.path, data); err != nil {
		return fmt.Errorf("save state: %w", err)
	}
	s.cur = next
	return nil
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
	claimed := s.cur.claimedBytes()
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
func writeFileAtomic(path string, data []byte) (err error) {
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
	if _, err := f.Write(data); err != nil {
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
