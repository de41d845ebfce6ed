#!/usr/bin/env bash
# Builds the third-party CSI drivers of the module tools/drivers into
# ${OUT:-/tmp/volplane-drivers}, one at a time (`nice`, the machine has 2
# cores), printing the wall time of each. A binary already in OUT is kept
# unless REBUILD=1.
#
#   tools/drivers/build.sh                 # all
#   tools/drivers/build.sh k8s-mock-csi    # some, by name
#
# k8s-mock-csi: ./k8smock, a main around the mock CSI driver of the
# Kubernetes e2e framework (k8s.io/kubernetes v1.37.2,
# test/e2e/storage/drivers/csi-test/mock/service); README.md has its flags
# and limits.
#
# gce-pd-fake-csi: ./gcepdfake, a main around the Compute Engine persistent
# disk CSI driver (sigs.k8s.io/gcp-compute-persistent-disk-csi-driver
# v1.28.1) with upstream's in-memory fake cloud, metadata and mounter; 6 s
# warm, about 290 s with none of its packages in the build cache.
#
# No -trimpath: without it the k8s.io/* and gRPC packages come from the build
# cache volplane's own build filled (go.mod pins the gRPC volplane uses).
# CGO_ENABLED=0: a static binary that also runs inside an image; 11 s warm,
# 44 s with an empty build cache on this machine.
#
# The gocsi mock driver is not here: the Go module proxy serves neither
# github.com/dell/gocsi nor github.com/rexray/gocsi (403 "This module version
# is not available" for the version list of each).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-/tmp/volplane-drivers}
mkdir -p "$out"

# name package
targets=(
	"k8s-mock-csi ./k8smock"
	"gce-pd-fake-csi ./gcepdfake"
)

want=("$@")
for w in "${want[@]}"; do
	found=0
	for t in "${targets[@]}"; do
		[ "${t%% *}" = "$w" ] && found=1
	done
	if [ $found = 0 ]; then
		echo "unknown binary: $w" >&2
		exit 2
	fi
done
for t in "${targets[@]}"; do
	read -r name pkg <<<"$t"
	if [ ${#want[@]} -gt 0 ] && ! printf '%s\n' "${want[@]}" | grep -qx "$name"; then
		continue
	fi
	if [ -x "$out/$name" ] && [ "${REBUILD:-0}" != 1 ]; then
		echo "$name: kept $out/$name"
		continue
	fi
	start=$(date +%s)
	(cd "$here" && CGO_ENABLED=0 nice -n 15 go build -o "$out/$name" "$pkg")
	echo "$name: built in $(($(date +%s) - start))s"
done
