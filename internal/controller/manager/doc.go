// Package manager runs volplane's control loops against one cluster: the
// clients, the shared informers, the event recorder, leader election and the
// metrics/health endpoint that every loop shares.
//
// Nouns: Config (what `volplane controller` and `volplane up` pass in),
// Run (blocks until the context ends or leadership is lost), the table
// (loops.go: one row per loop, name → constructor) and the wiring every
// constructor takes (client, the one informer factory, the event
// broadcaster, the metrics registry, the CSI pool, the Config). A row is
// selected by --controllers or, for a loop that is not a controller of its
// own, by a field of Config or with another row (the group snapshot rows
// run with snapshot and snapshotter). Adding a loop is one row and one file,
// manager/<loop>.go, holding its constructor. The CSI endpoints are dialed
// before the loops start, and /readyz answers ok only once every selected
// loop has synced its caches.
//
// The node agent (internal/nodeagent) is such a row, selected by
// Config.NodeAgent: `volplane up` runs it beside the loops over the same
// informers and indexes (it writes through a client of its own, user agent
// volplane-node-agent); `up --without-loops` and the test harness run a
// manager with that row alone.
//
// The heartbeat: while the provisioner runs (on the leader only, with
// leader election), it keeps a heartbeat Lease (internal/heartbeat) for
// every driver name its CSI endpoints report, in LeaderElectNamespace
// (kube-system by default, also when election is off):
// volplane-provisioner-<driver>, or volplane-provisioner-<driver>--<node>
// in node deployment, where every node's provisioner keeps its own. The
// holder is the host name (the pod's), renewed every HeartbeatPeriod (10 s)
// for 40 s, labelled heartbeat.volplane.io/provisioner=<driver>; it is
// deleted when the loops stop (unless another process renewed it since),
// and expires on its own after a crash. The snapshotter row keeps the same
// for every driver it serves (those that take snapshots), as its role:
// volplane-snapshotter-<driver>[--<node>], labelled
// heartbeat.volplane.io/snapshotter=<driver>. `volplane explain` reads
// them (inspect reads them, heartbeat.Role.Find judges them) to say whether
// a claim's provisioner, or a snapshot's snapshotter, runs.
package manager
