#!/usr/bin/env bash
# Builds the upstream binaries of a real node (issue 26 spike) from the
# pinned Go modules of tools/realnode (kubelet) and tools/realnode/runtime
# (containerd, its runc shim, ctr, runc, CNI plugins, pause, mkimage) into
# ${OUT:-/tmp/realnode-bin}, one at a time (`nice`, the machine has 2 cores),
# printing the wall time of each. A binary already in OUT is kept unless
# REBUILD=1.
#
#   tools/realnode/build.sh            # all
#   tools/realnode/build.sh kubelet    # some, by name
#
# Not built: node-driver-registrar (github.com/kubernetes-csi/node-driver-
# registrar is not served by the Go module proxy here, any major version).
# runc is built with cgo (its nsenter is C) and WITHOUT the seccomp tag:
# libseccomp-dev is not installed, so pods' seccomp profiles are not
# enforced (RuntimeDefault is accepted by the kubelet, runc ignores it).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-/tmp/realnode-bin}
mkdir -p "$out/cni"

# name dir cgo tags package
targets=(
	"kubelet         .       0 -                                     k8s.io/kubernetes/cmd/kubelet"
	"containerd      runtime 0 no_btrfs,no_devmapper,no_zfs          github.com/containerd/containerd/v2/cmd/containerd"
	"containerd-shim-runc-v2 runtime 0 -                             github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2"
	"ctr             runtime 0 -                                     github.com/containerd/containerd/v2/cmd/ctr"
	"runc            runtime 1 seccomp                                   github.com/opencontainers/runc"
	"cni/bridge      runtime 0 -                                     github.com/containernetworking/plugins/plugins/main/bridge"
	"cni/host-local  runtime 0 -                                     github.com/containernetworking/plugins/plugins/ipam/host-local"
	"cni/loopback    runtime 0 -                                     github.com/containernetworking/plugins/plugins/main/loopback"
	"pause           runtime 0 -                                     ./pause"
	"mkimage         runtime 0 -                                     ./mkimage"
)

want=("$@")
for t in "${targets[@]}"; do
	read -r name dir cgo tags pkg <<<"$t"
	if [ ${#want[@]} -gt 0 ] && ! printf '%s\n' "${want[@]}" | grep -qx "$name"; then
		continue
	fi
	if [ -x "$out/$name" ] && [ "${REBUILD:-0}" != 1 ]; then
		echo "$name: kept $out/$name"
		continue
	fi
	[ "$tags" = - ] && tags=""
	ldflags=""
	case $name in
	kubelet) ldflags="-X k8s.io/component-base/version.gitVersion=v1.36.3 -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=36 -X k8s.io/component-base/version.gitTreeState=clean" ;;
	containerd | containerd-shim-runc-v2 | ctr) ldflags="-X github.com/containerd/containerd/v2/version.Version=v2.4.2" ;;
	esac
	start=$(date +%s)
	(cd "$here/$dir" && CGO_ENABLED=$cgo nice -n 15 go build -trimpath -tags "$tags" -ldflags "$ldflags" -o "$out/$name" "$pkg")
	echo "$name: built in $(($(date +%s) - start))s"
done
