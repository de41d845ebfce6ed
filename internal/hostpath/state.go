package hostpath

import (
	"fmt"
	"maps"
	"slices"
	"time"
)

// stateVersion is written into the state file; a driver refuses a file
// written by a newer one rather than losing what it does not understand.
// Version 2 records stagings per node (version 1 had one staging per
// volume, on the volume's node); a version 1 file is read and migrated.
// Version 3 adds the sizes network volumes have on each node (NodeSizes),
// which a version 2 driver would drop on its next write; a version 2 file
// reads as is (no node sizes recorded yet). Version 4 adds group snapshots
// (GroupSnapshots, and the group of each member snapshot), which an older
// driver would drop, letting a member be deleted alone; a version 3 file
// reads as is (no groups). Version 5 adds inline ephemeral volumes
// (Ephemeral), which an older driver would drop with their data left
// behind; a version 4 file reads as is (none). Version 6 keeps the state
// as a snapshot continued by a journal (store.go), whose changes an older
// driver would not see; a version 5 file reads as is, and the first write
// replaces it with a version 6 snapshot.
const stateVersion = 6

type accessType string

const (
	accessMount accessType = "mount"
	accessBlock accessType = "block"
)

// volume is one volume and everything done with it.
type volume struct {
	ID            string     `json:"id"`
	Name          string     `json:"name"`
	CapacityBytes int64      `json:"capacityBytes"`
	AccessType    accessType `json:"accessType"`
	// NodeID is the node a node-local volume lives on; "" for a network
	// volume, reachable from every node.
	NodeID    string        `json:"nodeID"`
	Source    contentSource `json:"source,omitzero"`
	CreatedAt time.Time     `json:"createdAt"`
	// MutableParameters are those of CreateVolume, changed by
	// ControllerModifyVolume (modify.go).
	MutableParameters map[string]string `json:"mutableParameters,omitempty"`
	// Attachments are the nodes ControllerPublishVolume attached it to.
	Attachments map[string]attachment `json:"attachments,omitempty"`
	// Stagings are keyed by node: one is set while the volume is staged on
	// that node, from before the driver mounts anything: the node calls
	// undo only what is recorded. A node-local volume has at most one, on
	// its own node; a network volume one per node it is staged on.
	Stagings map[string]staging `json:"stagings,omitempty"`
	// LegacyStaging is the one staging a version 1 state recorded; readState
	// moves it into Stagings, so it is never set otherwise.
	LegacyStaging *staging `json:"staging,omitempty"`
	// Publications are keyed by target path as the CO gave it (a path of
	// this host, so unique across the nodes served); each is recorded before
	// its mount, like a staging.
	Publications map[string]publication `json:"publications,omitempty"`
	// NodeSizes (network volumes only) is, per node, the size of the
	// volume's filesystem as that node has it: the volume's size when the
	// node first staged it, raised to the volume's size by NodeExpandVolume.
	// A network filesystem is grown on the node that mounts it, so after
	// ControllerExpandVolume a node sees the old size until it expands.
	// Records outlive unstaging (the filesystem keeps its size) and go with
	// the volume.
	NodeSizes map[string]int64 `json:"nodeSizes,omitempty"`
}

// nodeSize is the size node sees the volume at: its NodeSizes record, or
// the volume's size where there is none (node-local volumes, and nodes that
// never staged the volume).
func (v *volume) nodeSize(node string) int64 {
	if n, ok := v.NodeSizes[node]; ok {
		return n
	}
	return v.CapacityBytes
}

// staging returns the staging of the volume on node, or nil.
func (v *volume) staging(node string) *staging {
	s, ok := v.Stagings[node]
	if !ok {
		return nil
	}
	return &s
}

// publishedOn reports whether a publication of the volume is on node.
func (v *volume) publishedOn(node string) bool {
	for _, p := range v.Publications {
		if p.Node == node {
			return true
		}
	}
	return false
}

// migrate brings a volume read from an older state up to this version: the
// legacy staging and the publications without a node were on the volume's
// node, the only one a version 1 driver served.
func (v *volume) migrate() {
	if v.LegacyStaging != nil {
		put(&v.Stagings, v.NodeID, v.LegacyStaging)
		v.LegacyStaging = nil
	}
	for target, p := range v.Publications {
		if p.Node == "" {
			p.Node = v.NodeID
			v.Publications[target] = p
		}
	}
}

// contentSource is what a volume was created from; at most one field is set.
type contentSource struct {
	SnapshotID string `json:"snapshotID,omitempty"`
	VolumeID   string `json:"volumeID,omitempty"`
}

type attachment struct {
	ReadOnly bool `json:"readOnly"`
	// Mode is the access mode the volume was attached with ("" in a
	// version 1 state, whose volumes were all single-node).
	Mode string `json:"mode,omitempty"`
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
	// Node is the node whose node service published it.
	Node     string `json:"node,omitempty"`
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
	case len(v.Stagings) > 0:
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
	// GroupSnapshotID is the group snapshot this one is a member of, or "":
	// a member is deleted with its group only (groups.go).
	GroupSnapshotID string `json:"groupSnapshotID,omitempty"`
}

// groupSnapshot is a group of snapshots taken together (groups.go): one
// member per source volume, recorded together with its members in one
// write of the state.
type groupSnapshot struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// SourceVolumeIDs are sorted; SnapshotIDs[i] is the member taken of
	// SourceVolumeIDs[i].
	SourceVolumeIDs []string  `json:"sourceVolumeIDs"`
	SnapshotIDs     []string  `json:"snapshotIDs"`
	CreatedAt       time.Time `json:"createdAt"`
}

// state is the driver's whole record: what the state file's snapshot and
// journal hold together (store.go).
type state struct {
	Version int `json:"version"`
	// Journal names the journal that continues this state on disk: the
	// journal file holds changes to it only while its header carries this
	// name (store.go). "" in a state from before journals (version 5 and
	// older).
	Journal   string          `json:"journal,omitempty"`
	Volumes   table[volume]   `json:"volumes"`
	Snapshots table[snapshot] `json:"snapshots"`
	// GroupSnapshots are keyed by group snapshot ID.
	GroupSnapshots table[groupSnapshot] `json:"groupSnapshots,omitzero"`
	// Ephemeral are the inline ephemeral volumes (ephemeral.go), keyed by
	// the volume ID the CO gave.
	Ephemeral table[ephemeralVolume] `json:"ephemeralVolumes,omitzero"`
	// claimed is claimedBytes, kept by the store through each update from
	// the records it changed, so a reservation does not sum every record.
	claimed int64
	// paths and attached index the records by real path (otherClaim) and
	// count attachments by node (attachedTo), kept like claimed, so a
	// node call does not scan every volume.
	paths    table[pathClaims]
	attached table[int64]
}

// clone is a deep copy of the volume, for a writer to change and put back
// (editVolume). Every map of a volume holds plain values, so cloning the
// maps is deep.
func (v *volume) clone() *volume {
	c := *v
	c.Attachments, c.Stagings, c.Publications = maps.Clone(v.Attachments), maps.Clone(v.Stagings), maps.Clone(v.Publications)
	c.NodeSizes = maps.Clone(v.NodeSizes)
	c.MutableParameters = maps.Clone(v.MutableParameters)
	if v.LegacyStaging != nil {
		legacy := *v.LegacyStaging
		c.LegacyStaging = &legacy
	}
	return &c
}

// editVolume is the volume id of a state being updated, copied so the
// caller may change it (the states readers hold keep the old one), or nil.
func (s *state) editVolume(id string) *volume {
	v := s.Volumes.Get(id)
	if v == nil {
		return nil
	}
	c := v.clone()
	s.Volumes.Put(id, c)
	return c
}

// next is the state an update starts from: a copy of s that shares every
// record and node with it, so it costs O(1); its changes copy what they
// touch.
func (s *state) next() *state {
	c := *s
	c.settle()
	return &c
}

func emptyState() *state {
	return &state{Version: stateVersion}
}

// claimedBytes is what volumes and snapshots take from Config.Capacity,
// summed over every record (see claimed).
func (s *state) claimedBytes() int64 {
	var n int64
	for _, v := range s.Volumes.All() {
		n += v.CapacityBytes
	}
	for _, snap := range s.Snapshots.All() {
		n += snap.SizeBytes
	}
	for _, e := range s.Ephemeral.All() {
		n += e.CapacityBytes
	}
	return n
}

// claimedChange is what the changes of next, an update of prev, add to
// the bytes claimed.
func claimedChange(prev, next *state) int64 {
	return sizeChange(&prev.Volumes, &next.Volumes, func(v *volume) int64 { return v.CapacityBytes }) +
		sizeChange(&prev.Snapshots, &next.Snapshots, func(s *snapshot) int64 { return s.SizeBytes }) +
		sizeChange(&prev.Ephemeral, &next.Ephemeral, func(e *ephemeralVolume) int64 { return e.CapacityBytes })
}

func sizeChange[T any](prev, next *table[T], size func(*T) int64) int64 {
	var n int64
	for id := range next.changed {
		if r := next.Get(id); r != nil {
			n += size(r)
		}
		if r := prev.Get(id); r != nil {
			n -= size(r)
		}
	}
	return n
}

// foreignVolume returns a volume that belongs to a node other than node;
// for a network driver (node ""), a volume of any node.
func (s *state) foreignVolume(node string) *volume {
	for _, v := range s.Volumes.All() {
		if v.NodeID != node {
			return v
		}
	}
	return nil
}

// foreignProblem says why a driver configured as cfg must not serve the
// volumes of st, or "": the data dir of a node-local driver holds that
// node's volumes only, a network driver's network volumes only.
func foreignProblem(st *state, cfg Config) string {
	v := st.foreignVolume(cfg.NodeID)
	switch {
	case v == nil:
		return ""
	case cfg.Network:
		return fmt.Sprintf("data dir %s holds volume %s of node %q, but this driver serves network volumes: "+
			"a node-local volume cannot become a network one", cfg.DataDir, v.ID, v.NodeID)
	case v.NodeID == "":
		return fmt.Sprintf("data dir %s holds network volume %s, but this driver is node %q: "+
			"network volumes are served by a network driver only", cfg.DataDir, v.ID, cfg.NodeID)
	}
	return fmt.Sprintf("data dir %s holds volume %s of node %q, but this driver is node %q: volumes cannot move between nodes",
		cfg.DataDir, v.ID, v.NodeID, cfg.NodeID)
}

// attachedTo is how many volumes are attached to node.
func (s *state) attachedTo(node string) int64 {
	if n := s.attached.Get(node); n != nil {
		return *n
	}
	return 0
}

// pathClaim is one record's claim on a real path (otherClaim).
type pathClaim struct {
	ref  claimRef
	kind claimKind
}

type claimKind int

const (
	claimStaging claimKind = iota
	claimPublication
	claimInline
)

// pathClaims are the claims on one real path: one, as otherClaim keeps
// it, unless a state written before otherClaim existed recorded more.
type pathClaims struct{ claims []pathClaim }

// volumeClaims yields the real paths the records of v claim.
func volumeClaims(v *volume, yield func(string, pathClaim)) {
	for node, s := range v.Stagings {
		yield(s.realPath(), pathClaim{claimRef{volumeID: v.ID, node: node}, claimStaging})
	}
	for target, p := range v.Publications {
		yield(p.realPath(target), pathClaim{claimRef{volumeID: v.ID, target: target}, claimPublication})
	}
}

func inlineClaim(e *ephemeralVolume, yield func(string, pathClaim)) {
	yield(e.RealPath, pathClaim{claimRef{volumeID: e.ID, target: e.Target}, claimInline})
}

// buildIndexes computes claimed, paths and attached from every record, as
// a start does.
func (s *state) buildIndexes() {
	s.claimed = s.claimedBytes()
	paths, attached := map[string]*pathClaims{}, map[string]*int64{}
	add := func(real string, c pathClaim) {
		if paths[real] == nil {
			paths[real] = &pathClaims{}
		}
		paths[real].claims = append(paths[real].claims, c)
	}
	for _, v := range s.Volumes.All() {
		volumeClaims(v, add)
		for node := range v.Attachments {
			if attached[node] == nil {
				attached[node] = new(int64(0))
			}
			*attached[node]++
		}
	}
	for _, e := range s.Ephemeral.All() {
		inlineClaim(e, add)
	}
	s.paths, s.attached = tableOf(paths), tableOf(attached)
}

// updateIndexes brings the indexes of next, an update of prev, up to date
// with the records it changed.
func updateIndexes(prev, next *state) {
	next.claimed += claimedChange(prev, next)
	for id := range next.Volumes.changed {
		if v := prev.Volumes.Get(id); v != nil {
			volumeClaims(v, next.unclaim)
			next.countAttachments(v, -1)
		}
		if v := next.Volumes.Get(id); v != nil {
			volumeClaims(v, next.claim)
			next.countAttachments(v, 1)
		}
	}
	for id := range next.Ephemeral.changed {
		if e := prev.Ephemeral.Get(id); e != nil {
			inlineClaim(e, next.unclaim)
		}
		if e := next.Ephemeral.Get(id); e != nil {
			inlineClaim(e, next.claim)
		}
	}
}

func (s *state) claim(real string, c pathClaim) {
	var claims []pathClaim
	if old := s.paths.Get(real); old != nil {
		claims = slices.Clone(old.claims)
	}
	s.paths.Put(real, &pathClaims{append(claims, c)})
}

func (s *state) unclaim(real string, c pathClaim) {
	old := s.paths.Get(real)
	if old == nil {
		return
	}
	claims := slices.DeleteFunc(slices.Clone(old.claims), func(o pathClaim) bool { return o == c })
	if len(claims) == 0 {
		s.paths.Delete(real)
		return
	}
	s.paths.Put(real, &pathClaims{claims})
}

func (s *state) countAttachments(v *volume, by int64) {
	for node := range v.Attachments {
		n := s.attachedTo(node) + by
		if n == 0 {
			s.attached.Delete(node)
		} else {
			s.attached.Put(node, &n)
		}
	}
}

// put records *v under key in the state map *m, making the map on first
// use, or forgets key when v is nil.
func put[V any](m *map[string]V, key string, v *V) {
	if v == nil {
		delete(*m, key)
		return
	}
	if *m == nil {
		*m = map[string]V{}
	}
	(*m)[key] = *v
}
