// Module for the upstream binaries of a real node (issue 26): kubelet,
// containerd and its runc shim, runc, CNI plugins, node-driver-registrar and
// an image assembler. A module of its own (not tools/go.mod) because the
// kubelet needs the k8s.io/* replace block and pulls a large graph that
// must not change csi-sanity's build; volplane never imports it.
module github.com/volplane/volplane/tools/realnode

go 1.26
