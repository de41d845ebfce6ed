// Package userdriver runs a user's CSI driver on the simulated nodes of
// `volplane up` and `volplane conformance`, in place of the bundled drivers.
//
// Its nouns:
//
//   - Spec: one driver as the flags describe it, either a command volplane
//     starts (--driver NAME='CMD ARGS': once as the controller service and
//     once per simulated node as its node service, or per node only with
//     --driver-per-node) or sockets the user serves (--driver-endpoint).
//     Parsing is pure and refuses what could only fail later.
//   - Placeholders: {endpoint} (the unix:// address the process must
//     serve), {node} (the node it serves, "controller" for the controller
//     process), {dir} (a private directory of that process, kept across
//     restarts) and {role} ("controller" or "node"), substituted in each
//     word of the command, which is split as a POSIX shell would (quotes,
//     no expansion).
//   - Processes: the started commands, each in its own process group, with
//     its output in the data dir's logs; Restart kills one with SIGKILL and
//     starts it again (the conformance kill scenarios); Stop ends them with
//     SIGTERM, then SIGKILL.
//   - FaultProxy: a socket in front of a driver's that forwards every CSI
//     call and, while on, injects the bundled driver's seeded faults
//     (hostpath.Faults) into the controller calls: the conformance fault
//     scenario meets any driver with them.
//   - Objects: what the driver's identity and capabilities say to register
//     (its CSIDriver, StorageClasses, snapshot classes, secrets), decided
//     purely from the probe and the flags.
package userdriver
