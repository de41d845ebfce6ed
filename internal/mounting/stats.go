package mounting

import (
	"errors"
	"slices"
	"strings"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
)

// StatsTarget is a claim's volume published on the node, whose usage the
// kubelet reports as kubelet_volume_stats_*: once per claim, asked with
// NodeGetVolumeStats at one of its publications (the target path, no
// staging path).
type StatsTarget struct {
	Namespace, Claim string
	Driver, Handle   string
	// Path is the publication's target path.
	Path string
}

// StatsTargets lists the claims whose volumes are published here (the
// publication done) on a node service with GET_VOLUME_STATS, one
// publication each, sorted by namespace and claim.
func (w World) StatsTargets(l Layout) []StatsTarget {
	seen := map[[2]string]bool{}
	var out []StatsTarget
	for _, p := range w.Published {
		pv, drv := w.Volumes[p.PV], w.Drivers[p.Driver]
		if !p.Done || !drv.Stats || pv == nil || pv.Spec.ClaimRef == nil {
			continue
		}
		key := [2]string{pv.Spec.ClaimRef.Namespace, pv.Spec.ClaimRef.Name}
		if seen[key] {
			continue
		}
		seen[key] = true
		_, path := l.PublishPaths(p.Block, p.PodUID, p.PV)
		out = append(out, StatsTarget{Namespace: key[0], Claim: key[1], Driver: p.Driver, Handle: p.Handle, Path: path})
	}
	slices.SortFunc(out, func(a, b StatsTarget) int {
		return strings.Compare(a.Namespace+"/"+a.Claim, b.Namespace+"/"+b.Claim)
	})
	return out
}

// Usage is a volume's usage as the kubelet reads a NodeGetVolumeStats
// answer: bytes and inodes (zero when not reported).
type Usage struct {
	CapacityBytes, AvailableBytes, UsedBytes int64
	Inodes, InodesFree, InodesUsed           int64
}

// UsageOf reads an answer as the kubelet does: an answer with no usage is
// an error.
func UsageOf(resp *csipb.NodeGetVolumeStatsResponse) (Usage, error) {
	var u Usage
	if resp.GetUsage() == nil {
		return u, errors.New("failed to get usage from response. usage is nil")
	}
	for _, usage := range resp.GetUsage() {
		switch usage.GetUnit() {
		case csipb.VolumeUsage_BYTES:
			u.CapacityBytes, u.AvailableBytes, u.UsedBytes = usage.GetTotal(), usage.GetAvailable(), usage.GetUsed()
		case csipb.VolumeUsage_INODES:
			u.Inodes, u.InodesFree, u.InodesUsed = usage.GetTotal(), usage.GetAvailable(), usage.GetUsed()
		}
	}
	return u, nil
}
