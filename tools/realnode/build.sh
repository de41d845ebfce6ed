#!/usr/bin/env bash
# Builds the upstream binaries of a real node (issue 26 spike) from the
# pinned Go modules of tools/realnode (kubelet) and tools/realnode/runtime
# (containerd, its runc shim, ctr, runc, CNI plugins, pause, mkimage), and
# volplane itself (run.sh runs `volplane kubectl` and `volplane driver`), into
# ${OUT:-/tmp/realnode-bin}, one at a time (`nice`, the machine has 2 cores),
# printing the wall time of each. A binary already in OUT is kept unless
# REBUILD=1.
#
#   tools/realnode/build.sh            # all
#   tools/realnode/build.sh kubelet    # some, by name
#
# No -trimpath: without it the kubelet's k8s.io/* packages (v1.37.2, the
# versions volplane embeds) come from the build cache volplane's own build
# filled (kubelet 117 s warm, 877 s cold with -trimpath on this machine).
#
# runc is built with cgo (its nsenter is C) and the seccomp tag, so it needs
# Debian's libseccomp-dev (apt-get install libseccomp-dev). Without the tag
# runc builds but every pod fails: containerd gives each sandbox the default
# seccomp profile and runc answers "seccomp: config provided but seccomp not
# supported".
#
# csi-node-driver-registrar: upstream's module path has no /v2 although its
# tags are v2.x, and the Go module proxy serves no version of it at all: 403
# "This module version is not available" for @v2.17.0, for @latest and the
# version list, for the tag's commit (c5794c45f34c) and its pseudo-versions
# (v0.0.0-20260521145649-c5794c45f34c, v1.3.1-0.20260521145649-c5794c45f34c),
# even for its last v1 tag (v1.3.0). With REGISTRAR_SRC naming a checkout of
# its v2.17.0 tag, upstream's is built (the repository vendors its
# dependencies: go build -mod=vendor, no network); without it, the stand-in
# ./registrar of this module (volplane's own; README.md says what it lacks).
# `csi-node-driver-registrar --version` tells them apart.
#
# helm: helm.sh/helm/v4 v4.2.0's cmd/helm (a tool of this module's go.mod),
# for the README commands TestRealNode runs.
#
# images: `mkimage images` (tools/realnode/runtime/mkimage) writes the real
# node's images into OUT/images and, with CONTAINERD_ADDRESS set, imports
# them into that containerd: localhost/volplane/volplane:dev (rebuilt from the
# Dockerfile: it runs the Dockerfile's own go build into OUT/volplane-image),
# localhost/volplane/pause:dev, localhost/volplane/busybox:dev (Debian's
# busybox-static) and localhost/volplane/csi-node-driver-registrar:v2.17.0
# when OUT has the registrar. It needs pause built first (mkimage is rebuilt), and the
# host's util-linux (mount, umount, losetup: copied with their libraries).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-/tmp/realnode-bin}
mkdir -p "$out/cni"

# name dir cgo tags package
targets=(
	"kubelet         .       0 -                                     k8s.io/kubernetes/cmd/kubelet"
	"kube-proxy      .       0 -                                     k8s.io/kubernetes/cmd/kube-proxy"
	"containerd      runtime 0 no_btrfs,no_devmapper,no_zfs          github.com/containerd/containerd/v2/cmd/containerd"
	"containerd-shim-runc-v2 runtime 0 -                             github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2"
	"ctr             runtime 0 -                                     github.com/containerd/containerd/v2/cmd/ctr"
	"runc            runtime 1 seccomp                                   github.com/opencontainers/runc"
	"cni/bridge      runtime 0 -                                     github.com/containernetworking/plugins/plugins/main/bridge"
	"cni/host-local  runtime 0 -                                     github.com/containernetworking/plugins/plugins/ipam/host-local"
	"cni/loopback    runtime 0 -                                     github.com/containernetworking/plugins/plugins/main/loopback"
	"pause           runtime 0 -                                     ./pause"
	"mkimage         runtime 0 -                                     ./mkimage"
	"csicreate       runtime 0 -                                     ./csicreate"
	"helm            .       0 -                                     helm.sh/helm/v4/cmd/helm"
	"volplane        ../..   1 -                                     ./cmd/volplane"
	"volplane-static ../..   0 -                                     ./cmd/volplane"
)

want=("$@")
if [ -n "${REGISTRAR_SRC:-}" ] && { [ ${#want[@]} -eq 0 ] || printf '%s\n' "${want[@]}" | grep -qx csi-node-driver-registrar; }; then
	if [ -x "$out/csi-node-driver-registrar" ] && [ "${REBUILD:-0}" != 1 ]; then
		echo "csi-node-driver-registrar: kept"
	else
		start=$(date +%s)
		(cd "$REGISTRAR_SRC" && CGO_ENABLED=0 nice -n 15 go build -mod=vendor -ldflags "-X main.version=v2.17.0" \
			-o "$out/csi-node-driver-registrar" ./cmd/csi-node-driver-registrar)
		echo "csi-node-driver-registrar: built in $(($(date +%s) - start))s (upstream v2.17.0 from $REGISTRAR_SRC)"
	fi
elif [ ${#want[@]} -eq 0 ] || printf '%s\n' "${want[@]}" | grep -qx csi-node-driver-registrar; then
	if [ -x "$out/csi-node-driver-registrar" ] && [ "${REBUILD:-0}" != 1 ]; then
		echo "csi-node-driver-registrar: kept"
	else
		start=$(date +%s)
		(cd "$here" && CGO_ENABLED=0 nice -n 15 go build -o "$out/csi-node-driver-registrar" ./registrar)
		echo "csi-node-driver-registrar: built in $(($(date +%s) - start))s (the stand-in ./registrar: no REGISTRAR_SRC)"
	fi
fi
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
	helm) ldflags="-X helm.sh/helm/v4/internal/version.version=v4.2.0" ;;
	kubelet | kube-proxy) ldflags="-X k8s.io/component-base/version.gitVersion=v1.37.2 -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=37 -X k8s.io/component-base/version.gitTreeState=clean" ;;
	containerd | containerd-shim-runc-v2 | ctr) ldflags="-X github.com/containerd/containerd/v2/version.Version=v2.4.2" ;;
	esac
	start=$(date +%s)
	(cd "$here/$dir" && CGO_ENABLED=$cgo nice -n 15 go build -tags "$tags" -ldflags "$ldflags" -o "$out/$name" "$pkg")
	echo "$name: built in $(($(date +%s) - start))s"
done
if [ ${#want[@]} -eq 0 ] || printf '%s\n' "${want[@]}" | grep -qx images; then
	start=$(date +%s)
	# Always this tree's mkimage: one kept from an older tree may lack `images`.
	(cd "$here/runtime" && nice -n 15 go build -o "$out/mkimage" ./mkimage)
	rebuild=()
	[ "${REBUILD:-0}" = 1 ] && rebuild=(-rebuild)
	nice -n 15 "$out/mkimage" images -repo "$here/../.." -bin "$out" -out "$out/images" "${rebuild[@]}" \
		${CONTAINERD_ADDRESS:+-address "$CONTAINERD_ADDRESS"}
	echo "images: made in $(($(date +%s) - start))s"
fi
