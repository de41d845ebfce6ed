package hostpath

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// stateVersion is written into the state file; a driver refuses a file
// written by a newer one rather than losing what it does not understand.
const stateVersion = 1

type accessType string

const (
	accessMount accessType = "mount"
	accessBlock accessType = "block"
)

// volume is one volume and everything done with it.
type volume struct {
	ID            string        `json:"id"`
	Name          string        `json:"name"`
	CapacityBytes int64         `json:"capacityBytes"`
	AccessType    accessType    `json:"accessType"`
	NodeID        string        `json:"nodeID"`
	Source        contentSource `json:"source,omitzero"`
	CreatedAt     time.Time     `json:"createdAt"`
	// Attachments are the nodes ControllerPublishVolume attached it to.
	Attachments map[string]attachment `json:"attachments,omitempty"`
	// Staging is set while the volume is staged on this node, from before
	// the driver mounts anything: the node calls undo only what is recorded.
	Staging *staging `json:"staging,omitempty"`
	// Publications are keyed by target path as the CO gave it; each is
	// recorded before its mount, like Staging.
	Publications map[string]publication `json:"publications,omitempty"`
}

// contentSource is what a volume was created from; at most one field is set.
type contentSource struct {
	SnapshotID string `json:"snapshotID,omitempty"`
	VolumeID   string `json:"volumeID,omitempty"`
}

type attachment struct {
	ReadOnly bool `json:"readOnly"`
}

type staging struct {
	// Path is the staging path as the CO gave it.
	Path string `json:"path"`
	// RealPath is Path with its symlinks resolved: where the driver mounted.
	RealPath string `json:"realPath,omitempty"`
	// Device is the loop device of a staged block volume.
	Device string `json:"device,omitempty"`
}

// realPath is where the staging is; a state written before RealPath
// existed mounted at Path itself.
func (s *staging) realPath() string {
	if s.RealPath == "" {
		return s.Path
	}
	return s.RealPath
}

type publication struct {
	ReadOnly bool   `json:"readOnly"`
	Mode     string `json:"mode"`
	// RealPath is the target path with its symlinks resolved: where the
	// driver mounted.
	RealPath string `json:"realPath,omitempty"`
}

// realPath is where the publication at target is (see staging.realPath).
func (p publication) realPath(target string) string {
	if p.RealPath == "" {
		return target
	}
	return p.RealPath
}

// inUse says why the volume cannot be deleted now, or "".
func (v *volume) inUse() string {
	switch {
	case len(v.Publications) > 0:
		return "it is published on the node"
	case v.Staging != nil:
		return "it is staged on the node"
	case len(v.Attachments) > 0:
		return "it is attached to a node"
	}
	return ""
}

type snapshot struct {
	ID             string     `json:"id"`
	Name           string     `json:"name"`
	SourceVolumeID string     `json:"sourceVolumeID"`
	SizeBytes      int64      `json:"sizeBytes"`
	AccessType     accessType `json:"accessType"`
	CreatedAt      time.Time  `json:"createdAt"`
}

// state is the content of the state file.
type state struct {
	Version   int                  `json:"version"`
	Volumes   map[string]*volume   `json:"volumes"`
	Snapshots map[string]*snapshot `json:"snapshots"`
}

func emptyState() *state {
	return &state{Version: stateVersion, Volumes: map[string]*volume{}, Snapshots: map[string]*snapshot{}}
}

// claimedBytes is what volumes and snapshots take from Config.Capacity.
func (s *state) claimedBytes() int64 {
	var n int64
	for _, v := range s.Volumes {
		n += v.CapacityBytes
	}
	for _, snap := range s.Snapshots {
		n += snap.SizeBytes
	}
	return n
}

// foreignVolume returns a volume that belongs to a node other than node.
func (s *state) foreignVolume(node string) *volume {
	for _, v := range s.Volumes {
		if v.NodeID != node {
			return v
		}
	}
	return nil
}

func (s *state) attachedTo(node string) int64 {
	var n int64
	for _, v := range s.Volumes {
		if _, ok := v.Attachments[node]; ok {
			n++
		}
	}
	return n
}

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

// loadStore reads the state file at path. found is false when there is no
// file, which open must tell apart from a data dir that never had one.
func loadStore(path string) (st *store, found bool, err error) {
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
	data, err := json.Marshal(s.cur)
	if err != nil {
		return fmt.Errorf("encode state: %w", err)
	}
	next := emptyState()
	if err := json.Unmarshal(data, next); err != nil {
		return fmt.Errorf("copy state: %w", err)
	}
	if err := fn(next); err != nil {
		return err
	}
	if data, err = json.MarshalIndent(next, "", "  "); err != nil {
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
// holds either the old or the new content, never a mix.
func writeFileAtomic(path string, data []byte) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
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

// syncDir makes a rename or removal in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
