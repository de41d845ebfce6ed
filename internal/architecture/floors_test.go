package architecture

import (
	"strings"
	"testing"
)

// floor is where a package sits in the import picture, lowest first. An
// import goes to the same floor or a lower one, never a higher one.
type floor int

const (
	unknown      floor = iota
	leaf               // the smallest shared meanings: import no volplane package
	pure               // decisions: facts in, plan out
	ioHalf             // the I/O halves beside pure cores: csi (gRPC), inspect and checkup (the CLI's reads)
	machinery          // what every loop shares: runner, retry, event memory, indexes, Secret reads
	loop               // one control loop each: read, decide, apply
	manager            // builds and runs the loops of one process
	driver             // what is shipped beside the loops: the bundled CSI driver, what `up` serves, the manifests
	controlPlane       // the embedded kube-apiserver, etcd, scheduler, controller-manager
	harness            // whole-stack test harness and test support
	command            // cmd/volplane and `volplane bench`
	test               // packages that hold only tests
)

var floorNames = map[floor]string{
	unknown: "no floor", leaf: "leaf", pure: "pure core", ioHalf: "I/O half",
	machinery: "loop machinery", loop: "loop", manager: "manager", driver: "driver",
	controlPlane: "control plane", harness: "harness", command: "command", test: "test",
}

func (f floor) String() string { return floorNames[f] }

// floors places every package of the module. A package not named here is
// placed by the patterns of floorOf; one that fits none fails
// TestEveryPackageHasAFloor: place it here and in docs/architecture.md.
var floors = map[string]floor{
	"internal/csierror":        leaf,
	"internal/quantity":        leaf,
	"internal/resourceversion": leaf,
	"internal/metriclabel":     leaf,
	"internal/keyedmutex":      leaf, // a lock, not a decision: see notDecisions
	"internal/endpoint":        leaf,
	"internal/snapshotapi":     leaf,
	"internal/features":        leaf, // the feature-gate registry: names and defaults

	"internal/binding":      pure,
	"internal/index":        pure,
	"internal/provisioning": pure,
	"internal/protection":   pure,
	"internal/attachment":   pure,
	"internal/publication":  pure,
	"internal/mounting":     pure,
	"internal/expansion":    pure,
	"internal/modification": pure,
	"internal/claimstatus":  pure,
	"internal/heartbeat":    pure,
	"internal/explain":      pure,
	"internal/doctor":       pure,
	"internal/invariants":   pure,
	"internal/snapshotting": pure,

	"internal/snapshotbinding": pure,
	"internal/grouping":        pure,
	"internal/ephemeral":       pure,
	"internal/capacity":        pure,
	"internal/health":          pure,

	"internal/csi":     ioHalf,
	"internal/inspect": ioHalf,
	"internal/checkup": ioHalf,

	"internal/controller/loop":     machinery,
	"internal/controller/resizing": machinery,
	"internal/controller/secrets":  machinery,
	"internal/informerindex":       machinery,
	"internal/controller/inflight": machinery,

	"internal/nodeagent": loop, // the node agent is a loop: internal/mounting decides

	"internal/controller/manager": manager,

	"internal/hostpath": driver,
	"internal/bundle":   driver,
	// A user's CSI driver in the bundled drivers' place: what `up` serves.
	"internal/userdriver": driver,
	// The lifecycle scenarios `volplane conformance` runs on a lab: they
	// ship in the binary, beside the drivers they test.
	"internal/conformance": driver,

	"internal/cluster": controlPlane,

	"internal/stacktest":             harness,
	"internal/hostpath/hostpathtest": harness,
	"internal/fuzzing":               harness,
	"test/e2e/support":               harness,

	"deploy":                                driver, // the manifests, embedded: what is shipped, like the driver
	"deploy/crd":                            driver, // the snapshot API's definitions, as deploy/ applies them
	"cmd/volplane":                          command,
	"bench":                                 command,
	"bench/cmd/volplane-reference-attacher": command,
	"bench/cmd/volplane-reference-resizer":  command,
	"bench/cmd/volplane-reference-provisioner": command,
	"bench/reflog":          command,
	"bench/refproc":         command,
	"internal/architecture": test,
}

// floorOf is the floor of a package path relative to the module.
func floorOf(path string) floor {
	if f, ok := floors[path]; ok {
		return f
	}
	switch {
	case strings.HasPrefix(path, "internal/controller/") && strings.Count(path, "/") == 2:
		return loop
	case path == "test" || strings.HasPrefix(path, "test/"):
		return test
	case strings.HasPrefix(path, "cmd/"):
		return command
	}
	return unknown
}

// ours says whether an import path is a package of the module.
func ours(path string) bool { return path == module || strings.HasPrefix(path, module+"/") }

func TestEveryPackageHasAFloor(t *testing.T) {
	for _, p := range packages(t) {
		if r := rel(p.ImportPath); floorOf(r) == unknown {
			t.Errorf("%s has no floor: name it in floors (internal/architecture/floors_test.go) and in docs/architecture.md", r)
		}
	}
}

func TestFloorsNameNoMissingPackage(t *testing.T) {
	have := map[string]bool{}
	for _, p := range packages(t) {
		have[rel(p.ImportPath)] = true
	}
	for path := range floors {
		if !have[path] {
			t.Errorf("floors names %s, which is no package of the module: drop it", path)
		}
	}
}

// notDecisions are the leaves that decide nothing, so the purity rules
// skip them (and only them), each with why.
var notDecisions = map[string]string{
	"internal/keyedmutex": "a lock per key, shared by the binder and the bundled driver: it holds its state by design",
}
