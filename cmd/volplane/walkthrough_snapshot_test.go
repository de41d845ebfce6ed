package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// snapshotWalkthrough is the README's snapshot walkthrough against `volplane
// up`: a snapshot of claim "data" turns ready, a larger claim restores from
// it, a group snapshot takes both claims of one pod at once with a member
// snapshot each, and deleting the group and the snapshot leaves nothing held.
func snapshotWalkthrough(t *testing.T, dir string) {
	t.Helper()
	apply := func(example string) {
		t.Helper()
		path := filepath.Join("..", "..", "examples", example)
		if out, err := kubectl(t, dir, "apply", "-f", path); err != nil {
			t.Fatalf("volplane kubectl apply -f %s: %v\n%s", path, err, out)
		}
	}
	apply("snapshot.yaml")
	waitKubectl(t, dir, "true", "get", "volumesnapshot", "data-snap", "-o", "jsonpath={.status.readyToUse}")
	apply("restore.yaml")
	waitClaimBound(t, clientFor(t, dir), "default", "restored")
	waitKubectl(t, dir, "2Gi", "get", "pvc", "restored", "-o", "jsonpath={.status.capacity.storage}")

	apply("group-snapshot.yaml")
	waitKubectl(t, dir, "true", "get", "volumegroupsnapshot", "db", "-o", "jsonpath={.status.readyToUse}")
	waitKubectl(t, dir, "db db", "get", "volumesnapshot", "-o",
		`jsonpath={range .items[?(@.status.volumeGroupSnapshotName)]}{.status.volumeGroupSnapshotName}{" "}{end}`)

	for _, obj := range [][]string{{"volumegroupsnapshot", "db"}, {"volumesnapshot", "data-snap"}} {
		if out, err := kubectl(t, dir, "delete", obj[0], obj[1], "--timeout=60s"); err != nil {
			t.Fatalf("volplane kubectl delete %s %s: %v\n%s", obj[0], obj[1], err, out)
		}
	}
	waitKubectl(t, dir, "", "get", "volumesnapshot,volumesnapshotcontent,volumegroupsnapshot,volumegroupsnapshotcontent", "-A",
		"-o", "jsonpath={.items[*].metadata.name}")
}

// waitKubectl runs `volplane kubectl args...` until it prints want (spaces
// around it trimmed), for at most a minute.
func waitKubectl(t *testing.T, dir, want string, args ...string) {
	t.Helper()
	var out string
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		got, err := kubectl(t, dir, args...)
		if out = strings.TrimSpace(got); err == nil && out == want {
			return
		}
	}
	t.Fatalf("volplane kubectl %s printed %q for a minute, want %q", strings.Join(args, " "), out, want)
}
