#!/usr/bin/env bash
# Runs csi-sanity v5.6.0, built from this tools module (its own go.mod, so
# the CSI spec 1.13 it needs never reaches volplane's module), against the
# bundled driver started with `volplane driver` on a unix socket: once per
# access type given (default: mount block). The driver uses the kernel's bind
# mounts and loop devices, so this needs root and /dev/loop*.
#
#   tools/sanity.sh [mount|block ...]
#
# Environment: VOLPLANE_BIN, CSI_SANITY_BIN use prebuilt binaries instead of
# building them; SANITY_ARGS adds csi-sanity flags (e.g. -ginkgo.v).
# Prints one line per access type: "<type>: <passed> passed, <failed> failed,
# <skipped> skipped, <pending> pending (<ran> of <total> specs)" and exits
# non-zero if any spec failed or the driver left a mount behind.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
types=("$@")
[ ${#types[@]} -eq 0 ] && types=(mount block)

work=$(mktemp -d /tmp/vp-sanity.XXXXXX)
driver_pid=""
cleanup() {
	if [ -n "$driver_pid" ]; then
		kill "$driver_pid" 2>/dev/null || true
		wait "$driver_pid" 2>/dev/null || true
	fi
	if grep -q " $work" /proc/mounts; then
		echo "sanity.sh: mounts left under $work, not removing it:" >&2
		grep " $work" /proc/mounts >&2
		exit 1
	fi
	rm -rf "$work"
}
trap cleanup EXIT

volplane=${VOLPLANE_BIN:-}
if [ -z "$volplane" ]; then
	volplane=$work/bin/volplane
	(cd "$root" && go build -o "$volplane" ./cmd/volplane)
fi
sanity=${CSI_SANITY_BIN:-}
if [ -z "$sanity" ]; then
	sanity=$work/bin/csi-sanity
	(cd "$root/tools" && go build -o "$sanity" github.com/kubernetes-csi/csi-test/v5/cmd/csi-sanity)
fi

printf 'iops: "3000"\n' >"$work/mutable.yaml"
status=0
for type in "${types[@]}"; do
	dir=$work/$type
	mkdir -p "$dir"
	socket=$dir/csi.sock
	"$volplane" driver --endpoint "unix://$socket" --node-id sanity-node --data-dir "$dir/data" \
		--capacity 1Ti --attach-required --max-volumes-per-node 3 >"$dir/driver.log" 2>&1 &
	driver_pid=$!
	for _ in $(seq 100); do
		[ -S "$socket" ] && break
		kill -0 "$driver_pid" 2>/dev/null || { cat "$dir/driver.log" >&2; exit 1; }
		sleep 0.1
	done
	set +e
	# shellcheck disable=SC2086
	"$sanity" -csi.endpoint "unix://$socket" \
		-csi.mountdir "$dir/target" -csi.stagingdir "$dir/staging" \
		-csi.testvolumeaccesstype "$type" -csi.testvolumesize $((1 << 30)) -csi.testvolumeexpandsize $((3 << 30)) \
		-csi.testnodevolumeattachlimit -csi.testvolumemutableparameters "$work/mutable.yaml" \
		-ginkgo.no-color ${SANITY_ARGS:-} >"$dir/sanity.log" 2>&1
	rc=$?
	set -e
	kill "$driver_pid"
	wait "$driver_pid" || true
	driver_pid=""
	summary=$(grep -E '^Ran [0-9]+ of [0-9]+ Specs' "$dir/sanity.log" || true)
	counts=$(grep -E '[0-9]+ Passed \| [0-9]+ Failed' "$dir/sanity.log" || true)
	if [ -z "$counts" ]; then
		cat "$dir/sanity.log" >&2
		echo "$type: csi-sanity did not report (exit $rc)"
		status=1
		continue
	fi
	passed=$(grep -oE '[0-9]+ Passed' <<<"$counts" | grep -oE '[0-9]+')
	failed=$(grep -oE '[0-9]+ Failed' <<<"$counts" | grep -oE '[0-9]+')
	pending=$(grep -oE '[0-9]+ Pending' <<<"$counts" | grep -oE '[0-9]+')
	skipped=$(grep -oE '[0-9]+ Skipped' <<<"$counts" | grep -oE '[0-9]+')
	ran=$(grep -oE 'Ran [0-9]+ of [0-9]+' <<<"$summary")
	echo "$type: $passed passed, $failed failed, $skipped skipped, $pending pending (${ran#Ran } specs)"
	if [ "$rc" -ne 0 ] || [ "$failed" -ne 0 ]; then
		grep -E '^\s*\[FAIL\]' "$dir/sanity.log" >&2 || true
		status=1
	fi
	if grep -q " $dir" /proc/mounts; then
		echo "$type: the driver left mounts behind" >&2
		status=1
	fi
done
exit $status
