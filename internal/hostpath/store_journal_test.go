package hostpath

import (
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// The store as a whole: a model of the records is kept beside it through
// random updates of one or several records, with compactions on the way,
// and every reload (a restart) finds exactly the model; the indexes kept
// through the updates (bytes claimed, paths, attachments per node) stay
// what the records make.
func TestStoreReloadsWhatItAcknowledged(t *testing.T) {
	dir := t.TempDir()
	s := openTestStore(t, dir)
	s.journalLimit = 4 << 10
	model := map[string]string{}
	rng := rand.New(rand.NewPCG(3, 4))
	snapshots := 0
	for i := range 400 {
		journal := s.journal
		err := s.update(func(st *state) error {
			for range 1 + rng.IntN(3) {
				id := fmt.Sprintf("vol-%d", rng.IntN(40))
				if rng.IntN(3) == 0 {
					st.Volumes.Delete(id)
					delete(model, id)
					continue
				}
				name := fmt.Sprintf("n%d", i)
				v := st.editVolume(id)
				if v == nil {
					v = &volume{ID: id}
					st.Volumes.Put(id, v)
				}
				v.Name, v.CapacityBytes = name, int64(rng.IntN(100))
				node, path := fmt.Sprintf("node-%d", rng.IntN(3)), fmt.Sprintf("/p/%d", rng.IntN(20))
				switch rng.IntN(4) {
				case 0:
					put(&v.Stagings, node, &staging{Path: path})
				case 1:
					put(&v.Publications, path, &publication{Node: node})
				case 2:
					put(&v.Attachments, node, &attachment{})
				default:
					v.Stagings, v.Publications, v.Attachments = nil, nil, nil
				}
				model[id] = name
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if s.journal != journal {
			snapshots++
		}
		if st := s.current(); st.claimed != st.claimedBytes() {
			t.Fatalf("after update %d, claimed = %d, want the sum of the records, %d", i, st.claimed, st.claimedBytes())
		}
		wantIndexesOfTheRecords(t, s.current())
		if i%50 == 49 {
			s.close()
			s = openTestStore(t, dir)
			s.journalLimit = 4 << 10
			if got := volumeNames(s.current()); !maps.Equal(got, model) {
				t.Fatalf("after update %d, a reload holds %v, want %v", i, got, model)
			}
		}
	}
	s.close()
	if snapshots < 3 {
		t.Errorf("%d snapshots written; want the journal compacted a few times", snapshots)
	}
}

// A crash in the middle of an append leaves a prefix of its frame at the
// end of the journal (or, on some filesystems, zeros): wherever it is cut,
// the next start finds the state before that update, whole, drops the torn
// tail, and updates after it are kept. The update changes three records,
// so this is also the atomicity of updates of several records.
func TestTornJournalTailLeavesThePreviousState(t *testing.T) {
	dir := t.TempDir()
	s := openTestStore(t, dir)
	putVolumes(t, s, "vol-a", "vol-b")
	before := stateJSON(t, s.current())
	journal := journalPathOf(s.path)
	good := readFile(t, journal)
	err := s.update(func(st *state) error {
		st.Volumes.Delete("vol-a")
		st.editVolume("vol-b").Name = "changed"
		st.Snapshots.Put("snap-c", &snapshot{ID: "snap-c", SourceVolumeID: "vol-b"})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	s.close()
	full := readFile(t, journal)
	if !strings.HasPrefix(string(full), string(good)) || len(full) <= len(good)+frameOverhead {
		t.Fatalf("the update did not append one frame to the journal (%d bytes, then %d)", len(good), len(full))
	}
	tails := map[string][]byte{}
	for cut := len(good) + 1; cut < len(full); cut++ {
		tails[fmt.Sprintf("cut at %d", cut)] = full[:cut]
	}
	tails["zeros"] = append(slices0(good), make([]byte, len(full)-len(good))...)
	flipped := slices0(full)
	flipped[len(flipped)-2] ^= 0xff
	tails["last byte of the payload not written"] = flipped
	firstPage := slices0(full)
	clear(firstPage[len(good) : len(full)-3])
	tails["the entry's start not written, its end written"] = firstPage
	for name, content := range tails {
		if err := os.WriteFile(journal, content, 0o600); err != nil {
			t.Fatal(err)
		}
		s := openTestStore(t, dir)
		if got := stateJSON(t, s.current()); got != before {
			t.Fatalf("%s: state after the restart\n%s\nwant the state before the update\n%s", name, got, before)
		}
		putVolumes(t, s, "vol-after")
		s.close()
		s = openTestStore(t, dir)
		if s.current().Volumes.Get("vol-after") == nil || s.current().Volumes.Get("vol-b").Name == "changed" {
			t.Fatalf("%s: an update after the torn tail was lost, or the torn update came back", name)
		}
		s.close()
	}
}

func slices0(b []byte) []byte { return append([]byte(nil), b...) }

// A crash while the journal is compacted into a new snapshot leaves one of
// these disks; each starts with the state of the update that compacted, or
// the one before it (when the new snapshot never got its name), never a
// mix, and each goes on taking updates.
func TestCrashDuringCompactionLeavesOneState(t *testing.T) {
	dir := t.TempDir()
	s := openTestStore(t, dir)
	putVolumes(t, s, "vol-a", "vol-b")
	statePath, journal := s.path, journalPathOf(s.path)
	old := map[string][]byte{"state.json": readFile(t, statePath), "state.journal": readFile(t, journal)}
	previous := stateJSON(t, s.current())
	s.journalLimit, s.snapshotSize = 0, 0 // the next update compacts
	snapshotJournal := s.journal
	putVolumes(t, s, "vol-c")
	if s.journal == snapshotJournal {
		t.Fatal("the update did not compact")
	}
	compacted := stateJSON(t, s.current())
	s.close()
	fresh := map[string][]byte{"state.json": readFile(t, statePath), "state.journal": readFile(t, journal)}
	if strings.Contains(string(fresh["state.journal"]), "vol-") {
		t.Fatalf("the new journal holds records: %q", fresh["state.journal"])
	}

	disks := []struct {
		name  string
		files map[string][]byte
		want  string
	}{
		{"new snapshot written, not renamed", map[string][]byte{
			"state.json": old["state.json"], "state.journal": old["state.journal"], ".state.json.tmp-1": fresh["state.json"]}, previous},
		{"new snapshot renamed, old journal in place", map[string][]byte{
			"state.json": fresh["state.json"], "state.journal": old["state.journal"]}, compacted},
		{"new journal written, not renamed", map[string][]byte{
			"state.json": fresh["state.json"], "state.journal": old["state.journal"], ".state.journal.tmp-1": fresh["state.journal"]}, compacted},
		{"new snapshot renamed, no journal yet", map[string][]byte{"state.json": fresh["state.json"]}, compacted},
		{"done", fresh, compacted},
	}
	for _, d := range disks {
		image := t.TempDir()
		for name, content := range d.files {
			if err := os.WriteFile(filepath.Join(image, name), content, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		s := openTestStore(t, image)
		if got := stateJSON(t, s.current()); got != d.want {
			t.Fatalf("%s: state after the restart\n%s\nwant\n%s", d.name, got, d.want)
		}
		putVolumes(t, s, "vol-after")
		s.close()
		s = openTestStore(t, image)
		if s.current().Volumes.Get("vol-after") == nil || s.current().Volumes.Len() != strings.Count(d.want, `"id":"vol-`)+1 {
			t.Errorf("%s: after one more update and a restart, volumes %v", d.name, volumeNames(s.current()))
		}
		s.close()
		if leftovers, _ := filepath.Glob(filepath.Join(image, ".state.*.tmp-*")); len(leftovers) != 0 {
			t.Errorf("%s: crashed writes left after the restart: %v", d.name, leftovers)
		}
	}
}

// A failed journal write changes nothing: not the state readers see, not
// the state a restart finds; and the store goes on, writing a snapshot
// next as it could not cut the journal back.
func TestFailedJournalWriteChangesNothing(t *testing.T) {
	dir := t.TempDir()
	s := openTestStore(t, dir)
	putVolumes(t, s, "vol-a")
	before := stateJSON(t, s.current())
	readOnly, err := os.Open(journalPathOf(s.path))
	if err != nil {
		t.Fatal(err)
	}
	s.journal.Close()
	s.journal = readOnly // every write and truncate of it fails
	err = s.update(func(st *state) error { st.Volumes.Put("vol-b", &volume{ID: "vol-b"}); return nil })
	if err == nil {
		t.Fatal("an update whose journal write failed succeeded")
	}
	if got := stateJSON(t, s.current()); got != before {
		t.Fatalf("state after a failed update\n%s\nwant\n%s", got, before)
	}
	if st, _, err := readState(s.path); err != nil || stateJSON(t, st) != before {
		t.Fatalf("disk after a failed update: %v\n%s\nwant\n%s", err, stateJSON(t, st), before)
	}
	putVolumes(t, s, "vol-c")
	s.close()
	s = openTestStore(t, dir)
	defer s.close()
	if got := volumeNames(s.current()); len(got) != 2 || got["vol-c"] == "" || got["vol-b"] != "" {
		t.Errorf("after the failure, one more update and a restart: %v, want vol-a and vol-c", got)
	}
}

// A data dir of the previous version (one state file, version 5, no
// journal) loads as is; the first write replaces the file with a version 6
// snapshot, which a version 5 driver refuses (its rule: a version above its
// own), rather than reading it without the journal's changes.
func TestVersion5StateMigratesOnFirstWrite(t *testing.T) {
	dir := t.TempDir()
	v5 := `{
  "version": 5,
  "volumes": {
    "vol-a": {"id": "vol-a", "name": "a", "capacityBytes": 1, "accessType": "mount", "nodeID": "node-1",
      "createdAt": "2026-01-01T00:00:00Z", "stagings": {"node-1": {"path": "/s"}}}
  },
  "snapshots": {},
  "ephemeralVolumes": {"eph-1": {"id": "eph-1", "capacityBytes": 2, "node": "node-1", "target": "/t", "realPath": "/t",
    "readOnly": false, "createdAt": "2026-01-01T00:00:00Z"}}
}`
	statePath := filepath.Join(dir, "state.json")
	if err := os.WriteFile(statePath, []byte(v5), 0o600); err != nil {
		t.Fatal(err)
	}
	s := openTestStore(t, dir)
	if v := s.current().Volumes.Get("vol-a"); v == nil || v.Stagings["node-1"].Path != "/s" || s.current().Ephemeral.Get("eph-1") == nil {
		t.Fatalf("version 5 state read as %s", stateJSON(t, s.current()))
	}
	if _, err := os.Stat(journalPathOf(statePath)); err == nil {
		t.Fatal("loading a version 5 state wrote a journal")
	}
	putVolumes(t, s, "vol-b")
	s.close()
	var onDisk diskState
	if err := json.Unmarshal(readFile(t, statePath), &onDisk); err != nil {
		t.Fatal(err)
	}
	const previousVersion = 5
	if onDisk.Version <= previousVersion || onDisk.Journal == "" || onDisk.Volumes["vol-b"] == nil {
		t.Errorf("state file after the first write: version %d, journal %q, volumes %v; want a version %d snapshot with both volumes",
			onDisk.Version, onDisk.Journal, onDisk.Volumes, stateVersion)
	}
	s = openTestStore(t, dir)
	defer s.close()
	if s.current().Volumes.Len() != 2 || s.current().Ephemeral.Len() != 1 {
		t.Errorf("after migrating and a restart: %s", stateJSON(t, s.current()))
	}
}

// A state file or journal of a newer version is refused, with the version
// in the error, rather than read without what this driver does not know.
func TestNewerStateIsRefused(t *testing.T) {
	for name, files := range map[string]map[string]string{
		"state file": {"state.json": `{"version": 99, "volumes": {}, "snapshots": {}}`},
		"journal": {"state.json": `{"version": 6, "journal": "J", "volumes": {}, "snapshots": {}}`,
			"state.journal": string(appendFrame(nil, []byte(`{"version": 99, "journal": "J"}`)))},
	} {
		dir := t.TempDir()
		for f, content := range files {
			if err := os.WriteFile(filepath.Join(dir, f), []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		_, _, err := loadStore(filepath.Join(dir, "state.json"))
		if err == nil || !strings.Contains(err.Error(), "version 99; this driver reads up to 6") {
			t.Errorf("%s of version 99: %v, want a refusal naming both versions", name, err)
		}
	}
}

// A journal whose header does not read, or with an entry that has a right
// checksum but does not decode, is damage (not a torn tail, which is only
// ever at the end): the driver refuses to start rather than drop
// acknowledged changes.
func TestDamagedJournalIsRefused(t *testing.T) {
	header := appendFrame(nil, []byte(`{"version": 6, "journal": "J"}`))
	for name, journal := range map[string][]byte{
		"header":                      []byte("garbage"),
		"an entry":                    appendFrame(slices0(header), []byte(`{"volumes": [`)),
		"an entry before a right one": appendFrame(append(slices0(header), "00000000 {}\n"...), []byte(`{"volumes": {}}`)),
		"no header":                   nil,
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "state.json"), []byte(`{"version": 6, "journal": "J", "volumes": {}, "snapshots": {}}`), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "state.journal"), journal, 0o600); err != nil {
			t.Fatal(err)
		}
		_, _, err := loadStore(filepath.Join(dir, "state.json"))
		if err == nil || !strings.Contains(err.Error(), "is damaged") || !strings.Contains(err.Error(), "restore it from a backup") {
			t.Errorf("journal with a damaged %s: %v, want a refusal with advice", name, err)
		}
	}
}

func openTestStore(t *testing.T, dir string) *store {
	t.Helper()
	s, _, err := loadStore(filepath.Join(dir, "state.json"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.close)
	return s
}

func putVolumes(t *testing.T, s *store, ids ...string) {
	t.Helper()
	err := s.update(func(st *state) error {
		for _, id := range ids {
			st.Volumes.Put(id, &volume{ID: id, Name: id, AccessType: accessMount, CreatedAt: time.Unix(1, 0).UTC()})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func volumeNames(st *state) map[string]string {
	m := map[string]string{}
	for id, v := range st.Volumes.All() {
		m[id] = v.Name
	}
	return m
}

// stateJSON is the records of st, for comparing states; the journal's
// name is left out, as compaction changes it and nothing else.
func stateJSON(t *testing.T, st *state) string {
	t.Helper()
	c := *st
	c.Journal = ""
	return mustJSON(t, &c)
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// wantIndexesOfTheRecords checks the indexes an update kept against those
// built anew from every record.
func wantIndexesOfTheRecords(t *testing.T, st *state) {
	t.Helper()
	fresh := *st
	fresh.buildIndexes()
	if st.claimed != fresh.claimed {
		t.Fatalf("claimed = %d, want the sum of the records, %d", st.claimed, fresh.claimed)
	}
	flat := func(tab *table[pathClaims]) map[string][]pathClaim {
		m := map[string][]pathClaim{}
		for real, c := range tab.All() {
			m[real] = slices.SortedFunc(slices.Values(c.claims), func(a, b pathClaim) int {
				return strings.Compare(fmt.Sprint(a), fmt.Sprint(b))
			})
		}
		return m
	}
	if got, want := flat(&st.paths), flat(&fresh.paths); !reflect.DeepEqual(got, want) {
		t.Fatalf("paths index = %v, want %v", got, want)
	}
	counts := func(tab *table[int64]) map[string]int64 {
		m := map[string]int64{}
		for node, n := range tab.All() {
			m[node] = *n
		}
		return m
	}
	if got, want := counts(&st.attached), counts(&fresh.attached); !maps.Equal(got, want) {
		t.Fatalf("attachments per node = %v, want %v", got, want)
	}
}
