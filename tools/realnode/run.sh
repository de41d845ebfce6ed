#!/usr/bin/env bash
# Issue 26 spike, PARTIAL: joins a real kubelet + containerd 2.x + runc, built
# by build.sh, as an extra Node of a running API server (e.g. `volplane up`),
# waits for the Node to be Ready, then runs a pod of a locally assembled
# busybox image (pause image assembled the same way) to Running and reads
# its log; registers the bundled driver (a host process) through the real
# node-driver-registrar if build.sh built it; checks Bidirectional mount
# propagation with a privileged pod; writes into a volume of that driver
# (made with csicreate, static PV/PVC) from a real container and reads its
# kubelet_volume_stats_* from the kubelet. No deploy/,
# no volplane image, no provisioning by volplane's loops, no kube-proxy yet.
#
#   tools/realnode/run.sh DATA_DIR        # DATA_DIR of `volplane up`
#
# DATA_DIR/kubeconfig (admin) is used to sign the node's own client
# certificate (CN system:node:$NODE, O system:nodes) with DATA_DIR/pki/ca.key,
# to watch the Node and to create and delete the pod.
#
# Isolation: containerd and the kubelet run in a network namespace made here
# (realnode-<pid>: lo, a veth rn0/rn1 with the node IP 10.250.0.1, the pods'
# CNI bridge 10.251.0.0/24), entered with nsenter --net only, so they share
# the host's mount namespace (volume mounts the kubelet makes are the ones the
# runtime sees). The API server on the host's 127.0.0.1:PORT is reached from
# the namespace's 127.0.0.1:PORT through two socat relays joined by a unix
# socket. Cgroups go under /realnode in every v1 hierarchy. The kubelet
# sets vm.overcommit_memory, kernel.panic and kernel.panic_on_oops; their
# old values are put back. The EXIT trap deletes the pod and the Node, stops
# every process, unmounts everything under the work dir, deletes the netns
# (and CNI netns made during the run) and the cgroups.
#
# Environment: BIN (default /tmp/realnode-bin), NODE (default realnode-1),
# DRIVER_MODE=pod (driver + registrar as containers; default: host processes),
# KEEP=1 leaves the work dir (logs) in place after cleanup.
set -euo pipefail

data=${1:?usage: run.sh DATA_DIR}
data=$(cd "$data" && pwd)
bin=${BIN:-/tmp/realnode-bin}
node=${NODE:-realnode-1}
admin=$data/kubeconfig
export PATH=$bin:$PATH
kc() { "$bin/volplane" kubectl --kubeconfig "$admin" "$@"; }
log() { echo "run.sh: $(date -u +%T) $*" >&2; }

work=$(mktemp -d /tmp/realnode.XXXXXX)
ns=realnode-$$
pids=()
cgroot=realnode
sysctls=(vm.overcommit_memory kernel.panic kernel.panic_on_oops)
declare -A oldsysctl
for s in "${sysctls[@]}"; do oldsysctl[$s]=$(sysctl -n "$s"); done
netns_before=$(ls /run/netns 2>/dev/null || true)

kubelet_pid=""
containerd_pid=""
stop() {
	[ -n "$1" ] || return 0
	kill "$1" 2>/dev/null
	for _ in $(seq 100); do kill -0 "$1" 2>/dev/null || break; sleep 0.1; done
	kill -9 "$1" 2>/dev/null
	wait "$1" 2>/dev/null
	return 0
}

cleanup() {
	set +e
	log "cleanup"
	# One at a time (kubectl does not wait when one name is missing), while
	# the kubelet still runs to tear them down; the driver pod last.
	for p in realnode-hello realnode-propagation realnode-writer realnode-driver; do
		kc delete pod "$p" --ignore-not-found --wait=true --timeout=60s >/dev/null 2>&1
	done
	kc delete pvc realnode-pvc --wait=false >/dev/null 2>&1
	kc delete pv realnode-pv --wait=false >/dev/null 2>&1
	stop "$kubelet_pid"
	# The kubelet is gone: kill what it left in the runtime before stopping it.
	if [ -n "$kubelet_pid" ] || [ -n "$containerd_pid" ]; then
		for t in $(ctr --address "$work/containerd.sock" -n k8s.io tasks ls -q 2>/dev/null); do
			ctr --address "$work/containerd.sock" -n k8s.io tasks kill -s KILL "$t" >/dev/null 2>&1
			ctr --address "$work/containerd.sock" -n k8s.io tasks rm -f "$t" >/dev/null 2>&1
		done
	fi
	for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
		stop "${pids[i]}"
	done
	# Shims outlive containerd; each names our socket on its command line.
	for p in $(pgrep -x containerd-shim-runc-v2 2>/dev/null); do
		if tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | grep -qF -- "$work/containerd.sock"; then
			kill -9 "$p" 2>/dev/null
		fi
	done
	# Whatever the kubelet could not finish is gone with it.
	for p in realnode-hello realnode-propagation realnode-writer realnode-driver; do
		kc delete pod "$p" --ignore-not-found --grace-period=0 --force >/dev/null 2>&1
	done
	kc delete node "$node" --wait=false >/dev/null 2>&1
	# Unmount deepest first.
	grep -F " $work" /proc/mounts | awk '{print $2}' | sort -r | while read -r m; do
		umount "$m" 2>/dev/null || umount -l "$m"
	done
	for n in $(ls /run/netns 2>/dev/null); do
		case $n in cni-*) ;; *) continue ;; esac
		if ! grep -qx "$n" <<<"$netns_before"; then ip netns delete "$n"; fi
	done
	ip netns delete "$ns" 2>/dev/null
	for h in /sys/fs/cgroup/*/; do
		[ -d "$h$cgroot" ] || continue
		find "$h$cgroot" -depth -type d -exec rmdir {} \; 2>/dev/null
		[ -d "$h$cgroot" ] && log "cgroup left: $h$cgroot"
	done
	for s in "${sysctls[@]}"; do sysctl -qw "$s=${oldsysctl[$s]}"; done
	if grep -qF " $work" /proc/mounts; then
		log "mounts left under $work, not removing it"
	elif [ "${KEEP:-0}" = 1 ]; then
		log "logs kept in $work"
	else
		rm -rf "$work"
	fi
}
trap cleanup EXIT

server=$(grep -m1 'server:' "$admin" | awk '{print $2}')
port=${server##*:}
log "API server $server, work dir $work, netns $ns"

# --- the node's own credentials, signed by the cluster CA
openssl ecparam -name prime256v1 -genkey -noout -out "$work/node.key" 2>/dev/null
openssl req -new -key "$work/node.key" -subj "/O=system:nodes/CN=system:node:$node" -out "$work/node.csr"
openssl x509 -req -in "$work/node.csr" -CA "$data/pki/ca.crt" -CAkey "$data/pki/ca.key" \
	-CAcreateserial -CAserial "$work/ca.srl" -days 1 -out "$work/node.crt" 2>/dev/null
cat >"$work/kubelet.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "https://127.0.0.1:$port", certificate-authority: "$data/pki/ca.crt"}
users:
- name: u
  user: {client-certificate: "$work/node.crt", client-key: "$work/node.key"}
contexts:
- name: c
  context: {cluster: c, user: u}
current-context: c
EOF

# --- network namespace and the relay to the API server
ip netns add "$ns"
ip -n "$ns" link set lo up
# The kernel here has no dummy link type ("Unknown device type"): a veth
# pair, both ends in the namespace, carries the node IP instead.
ip -n "$ns" link add rn0 type veth peer name rn1
ip -n "$ns" addr add 10.250.0.1/32 dev rn0
ip -n "$ns" link set rn1 up
ip -n "$ns" link set rn0 up
# Background processes are started by nsenter itself (which execs them), not
# through a shell function, so that $! is the process to stop.
socat UNIX-LISTEN:"$work/api.sock",fork TCP:127.0.0.1:"$port" &
pids+=($!)
nsenter --net="/run/netns/$ns" socat TCP-LISTEN:"$port",bind=127.0.0.1,fork,reuseaddr UNIX-CONNECT:"$work/api.sock" &
pids+=($!)

# --- cgroups
for h in /sys/fs/cgroup/*/; do
	case $h in */unified/) continue ;; esac
	mkdir -p "$h$cgroot"
done

# --- CNI
mkdir -p "$work/net.d" "$work/cni-ipam"
cat >"$work/net.d/10-realnode.conflist" <<EOF
{"cniVersion": "1.0.0", "name": "realnode", "plugins": [
  {"type": "bridge", "bridge": "rnbr0", "isGateway": true, "ipMasq": false,
   "ipam": {"type": "host-local", "dataDir": "$work/cni-ipam",
            "ranges": [[{"subnet": "10.251.0.0/24"}]], "routes": [{"dst": "0.0.0.0/0"}]}}]}
EOF

# --- containerd
sock=$work/containerd.sock
cat >"$work/containerd.toml" <<EOF
version = 3
root = "$work/containerd/root"
state = "$work/containerd/state"
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.erofs", "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]
[grpc]
  address = "$sock"
[plugins.'io.containerd.cri.v1.images']
  snapshotter = "${SNAPSHOTTER:-overlayfs}"
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = "localhost/realnode/pause:1"
[plugins.'io.containerd.cri.v1.runtime']
  # root here lacks CAP_SYS_RESOURCE: runc init cannot lower a sandbox's
  # oom_score_adj to -998 ("failed to update /proc/self/oom_score_adj:
  # Permission denied"), so keep every container's at or above containerd's.
  restrict_oom_score_adj = true
  [plugins.'io.containerd.cri.v1.runtime'.containerd]
    default_runtime_name = "runc"
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
        BinaryName = "$bin/runc"
        Root = "$work/runc"
        SystemdCgroup = false
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = ["$bin/cni"]
    conf_dir = "$work/net.d"
[plugins.'io.containerd.grpc.v1.cri']
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
EOF
nsenter --net="/run/netns/$ns" containerd --config "$work/containerd.toml" >"$work/containerd.log" 2>&1 &
containerd_pid=$!
pids+=($containerd_pid)
for i in $(seq 100); do
	ctr --address "$sock" version >/dev/null 2>&1 && break
	kill -0 "${pids[-1]}" 2>/dev/null || { tail -20 "$work/containerd.log" >&2; exit 1; }
	sleep 0.2
done
log "containerd up: $(ctr --address "$sock" version | grep -m2 Version | tail -1)"

# --- images, assembled here (no registry is reachable)
mkimage -tag localhost/realnode/pause:1 -out "$work/pause.tar" -file "$bin/pause=/pause" -entrypoint /pause
links=()
for a in sh echo cat sleep ls mount umount mkdir df id; do links+=(-link "/bin/$a=busybox"); done
mkimage -tag localhost/realnode/busybox:1 -out "$work/busybox.tar" -file /bin/busybox=/bin/busybox "${links[@]}" -entrypoint /bin/sh
for t in pause busybox; do ctr --address "$sock" -n k8s.io images import "$work/$t.tar" >/dev/null; done
log "images: $(ctr --address "$sock" -n k8s.io images ls -q | tr '\n' ' ')"

# --- kubelet
mkdir -p "$work/kubelet" "$work/pod-logs"
# / is a private mount here; a driver's Bidirectional mounts need the kubelet
# root dir (and the driver's data dir) on a shared mount: the work dir.
mount --bind "$work" "$work"
mount --make-rshared "$work"
cat >"$work/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupRoot: /$cgroot
containerRuntimeEndpoint: unix://$sock
address: 127.0.0.1
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
  x509: {clientCAFile: "$data/pki/ca.crt"}
authorization: {mode: AlwaysAllow}
podLogsDir: $work/pod-logs
failSwapOn: false
evictionHard: {memory.available: "100Mi"}
imageGCHighThresholdPercent: 100
registerNode: true
volumeStatsAggPeriod: 2s
EOF
nsenter --net="/run/netns/$ns" kubelet --config "$work/kubelet.yaml" --kubeconfig "$work/kubelet.kubeconfig" \
	--root-dir "$work/kubelet" --hostname-override "$node" --node-ip 10.250.0.1 --v=2 \
	>"$work/kubelet.log" 2>&1 &
kubelet_pid=$!
log "kubelet started (pid $kubelet_pid), waiting for Node $node Ready"
ready=""
for i in $(seq 120); do
	kill -0 "$kubelet_pid" 2>/dev/null || { log "kubelet exited:"; tail -30 "$work/kubelet.log" >&2; exit 1; }
	ready=$(kc get node "$node" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null || true)
	[ "$ready" = True ] && break
	sleep 1
done
if [ "$ready" != True ]; then
	log "Node not Ready after 120s:"
	kc get node "$node" -o jsonpath='{range .status.conditions[*]}{.type}={.status} {.reason}: {.message}{"\n"}{end}' >&2 || true
	grep -E '^E' "$work/kubelet.log" | tail -20 >&2
	exit 1
fi
log "Node $node Ready"

# --- a pod of the local busybox image
kc apply -f - <<EOF
apiVersion: v1
kind: Pod
metadata: {name: realnode-hello, namespace: default}
spec:
  nodeName: $node
  terminationGracePeriodSeconds: 1
  containers:
  - name: c
    image: localhost/realnode/busybox:1
    imagePullPolicy: Never
    command: ["/bin/sh", "-c", "echo hello from the real node; id; df /; sleep 3600"]
EOF
phase=""
for i in $(seq 90); do
	phase=$(kc get pod realnode-hello -o jsonpath='{.status.phase}' 2>/dev/null || true)
	[ "$phase" = Running ] && break
	sleep 1
done
if [ "$phase" != Running ]; then
	log "pod not Running after 90s (phase $phase):"
	kc get pod realnode-hello -o jsonpath='{range .status.containerStatuses[*]}{.state}{"\n"}{end}' >&2 || true
	kc get events --field-selector involvedObject.name=realnode-hello >&2 || true
	exit 1
fi
log "pod Running on $node: IP $(kc get pod realnode-hello -o jsonpath='{.status.podIP}')"
for i in $(seq 20); do
	if grep -qs "hello from" "$work"/pod-logs/default_realnode-hello_*/c/0.log; then break; fi
	sleep 0.5
done
cat "$work"/pod-logs/default_realnode-hello_*/c/0.log >&2 || true

# --- the bundled CSI driver registered through the upstream registrar
# (only if build.sh built it: REGISTRAR_SRC). Both run as host processes in
# the namespace, not yet as deploy/'s DaemonSet.
# DRIVER_MODE=pod: driver and registrar as containers of one privileged pod,
# as deploy/node.yaml has them, but with this kubelet's root dir mounted at
# the same path inside (deploy/ assumes /var/lib/kubelet). The images are
# assembled here from the static binaries (volplane-static: CGO_ENABLED=0).
driver_pod() {
	local vl=()
	for a in sh mount umount losetup; do vl+=(-link "/bin/$a=busybox"); done
	mkimage -tag localhost/realnode/volplane:1 -out "$work/volplane.tar" \
		-file "$bin/volplane-static=/usr/local/bin/volplane" -file /bin/busybox=/bin/busybox "${vl[@]}" \
		-entrypoint /usr/local/bin/volplane
	mkimage -tag localhost/realnode/registrar:1 -out "$work/registrar.tar" \
		-file "$bin/csi-node-driver-registrar=/csi-node-driver-registrar" -entrypoint /csi-node-driver-registrar
	for t in volplane registrar; do ctr --address "$sock" -n k8s.io images import "$work/$t.tar" >/dev/null; done
	kc apply -f - <<EOF
apiVersion: v1
kind: Pod
metadata: {name: realnode-driver, namespace: default}
spec:
  nodeName: $node
  terminationGracePeriodSeconds: 2
  containers:
  - name: driver
    image: localhost/realnode/volplane:1
    imagePullPolicy: Never
    args: [driver, --endpoint=unix:///csi/csi.sock, --node-id=\$(NODE_NAME), --data-dir=$work/driver, --capacity=1Gi]
    env:
    - name: NODE_NAME
      valueFrom: {fieldRef: {fieldPath: spec.nodeName}}
    securityContext: {privileged: true, runAsUser: 0, readOnlyRootFilesystem: true}
    volumeMounts:
    - {name: socket-dir, mountPath: /csi}
    - {name: pods-dir, mountPath: $work/kubelet/pods, mountPropagation: Bidirectional}
    - {name: plugins-dir, mountPath: $work/kubelet/plugins, mountPropagation: Bidirectional}
    - {name: data-dir, mountPath: $work/driver, mountPropagation: Bidirectional}
    - {name: dev-dir, mountPath: /dev}
    - {name: libmount-dir, mountPath: /run/mount}
  - name: registrar
    image: localhost/realnode/registrar:1
    imagePullPolicy: Never
    args: [--csi-address=/csi/csi.sock, --kubelet-registration-path=$plug/csi.sock]
    securityContext: {allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: {drop: [ALL]}}
    volumeMounts:
    - {name: socket-dir, mountPath: /csi}
    - {name: registration-dir, mountPath: /registration}
  volumes:
  - {name: socket-dir, hostPath: {path: $plug, type: DirectoryOrCreate}}
  - {name: pods-dir, hostPath: {path: $work/kubelet/pods, type: DirectoryOrCreate}}
  - {name: plugins-dir, hostPath: {path: $work/kubelet/plugins, type: Directory}}
  - {name: registration-dir, hostPath: {path: $work/kubelet/plugins_registry, type: Directory}}
  - {name: data-dir, hostPath: {path: $work/driver, type: DirectoryOrCreate}}
  - {name: dev-dir, hostPath: {path: /dev, type: Directory}}
  - {name: libmount-dir, emptyDir: {medium: Memory}}
EOF
}

if [ -x "$bin/csi-node-driver-registrar" ]; then
	drv=hostpath.csi.volplane.io
	plug=$work/kubelet/plugins/$drv
	mkdir -p "$plug" "$work/driver"
	if [ "${DRIVER_MODE:-process}" = pod ]; then
		driver_pod
	else
		nsenter --net="/run/netns/$ns" volplane driver --endpoint "unix://$plug/csi.sock" \
			--node-id "$node" --data-dir "$work/driver" --capacity 1Gi >"$work/driver.log" 2>&1 &
		pids+=($!)
		nsenter --net="/run/netns/$ns" csi-node-driver-registrar --csi-address "$plug/csi.sock" \
			--kubelet-registration-path "$plug/csi.sock" \
			--plugin-registration-path "$work/kubelet/plugins_registry" \
			--http-endpoint 127.0.0.1:9809 >"$work/registrar.log" 2>&1 &
		pids+=($!)
	fi
	got=""
	for i in $(seq 60); do
		got=$(kc get csinode "$node" -o jsonpath='{.spec.drivers[*].name} {.spec.drivers[*].nodeID} {.spec.drivers[*].topologyKeys}' 2>/dev/null || true)
		case $got in "$drv "*) break ;; esac
		sleep 1
	done
	case $got in
	"$drv "*) log "CSINode $node: $got (registered by the kubelet through the registrar)" ;;
	*)
		log "driver not registered after 60s; registrar log:"
		tail -20 "$work/registrar.log" >&2 2>/dev/null
		kc get pod realnode-driver -o jsonpath='{range .status.containerStatuses[*]}{.name} {.state}{"\n"}{end}' >&2 2>/dev/null
		kc get events --field-selector involvedObject.name=realnode-driver >&2 2>/dev/null
		grep -i "csi\|plugin" "$work/kubelet.log" | grep -E '^E' | tail -10 >&2
		exit 1
		;;
	esac
	log "node labels: $(kc get node "$node" -o jsonpath='{.metadata.labels}')"

	# A volume made on this node's driver (the controllers of `up` only
	# talk to their own drivers), a static PV/PVC, and a pod writing into it:
	# the kubelet's own NodeStage/NodePublish.
	read -r vid ctxs <<<"$(csicreate -endpoint "$plug/csi.sock" -name realnode-vol \
		-topology-key topology.volplane.io/node -node "$node")"
	attrs=""
	for kv in $ctxs; do attrs="$attrs      ${kv%%=*}: \"${kv#*=}\"
"; done
	log "CreateVolume: $vid ${ctxs:-}"
	kc apply -f - <<EOF
apiVersion: v1
kind: PersistentVolume
metadata: {name: realnode-pv}
spec:
  capacity: {storage: 64Mi}
  accessModes: [ReadWriteOnce]
  persistentVolumeReclaimPolicy: Retain
  storageClassName: ""
  claimRef: {namespace: default, name: realnode-pvc}
  csi:
    driver: $drv
    volumeHandle: "$vid"
    volumeAttributes:
      realnode: "1"
${attrs}  nodeAffinity:
    required:
      nodeSelectorTerms:
      - matchExpressions:
        - {key: topology.volplane.io/node, operator: In, values: ["$node"]}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: realnode-pvc, namespace: default}
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: ""
  volumeName: realnode-pv
  resources: {requests: {storage: 64Mi}}
---
apiVersion: v1
kind: Pod
metadata: {name: realnode-writer, namespace: default}
spec:
  nodeName: $node
  terminationGracePeriodSeconds: 1
  containers:
  - name: c
    image: localhost/realnode/busybox:1
    imagePullPolicy: Never
    command: ["/bin/sh", "-c", "echo written-by-a-real-container > /data/hello && cat /data/hello && df /data && sleep 3600"]
    volumeMounts: [{name: d, mountPath: /data}]
  volumes:
  - name: d
    persistentVolumeClaim: {claimName: realnode-pvc}
EOF
	phase=""
	for i in $(seq 90); do
		phase=$(kc get pod realnode-writer -o jsonpath='{.status.phase}' 2>/dev/null || true)
		[ "$phase" = Running ] && break
		sleep 1
	done
	if [ "$phase" = Running ]; then
		sleep 1
		log "CSI volume: pod Running; file in the driver's data dir: $(grep -rl written-by-a-real-container "$work/driver" 2>/dev/null | head -1)"
		log "kubelet's mounts of it: $(grep -F "$work/kubelet" /proc/mounts | awk '{print $2}' | grep -v probe | tr '\n' ' ')"
		# NodeGetVolumeStats, as the kubelet's own metrics show it (read from
		# inside the namespace with the admin client certificate).
		stats=""
		for i in $(seq 30); do
			stats=$(nsenter --net="/run/netns/$ns" curl -sk --cert "$data/pki/admin.crt" --key "$data/pki/admin.key" \
				https://127.0.0.1:10250/metrics | grep '^kubelet_volume_stats_[a-z_]*bytes{.*realnode-pvc' || true)
			[ -n "$stats" ] && break
			sleep 1
		done
		if [ -n "$stats" ]; then
			log "kubelet volume stats:"
			echo "$stats" >&2
		else
			log "no kubelet_volume_stats_* for realnode-pvc after 30s"
		fi
	else
		log "CSI volume: pod not Running after 90s (phase $phase)"
		kc get events --field-selector involvedObject.name=realnode-writer >&2 || true
		grep -E '^E' "$work/kubelet.log" | grep -i "csi\|volume\|mount" | tail -10 | cut -c1-400 >&2
	fi
	kc delete pod realnode-writer --wait=true --timeout=60s >/dev/null
	kc delete pvc realnode-pvc --wait=true --timeout=30s >/dev/null
	kc delete pv realnode-pv --wait=true --timeout=30s >/dev/null
	kc delete pod realnode-driver --wait=true --timeout=60s >/dev/null 2>&1 || true
fi

# --- mount propagation: a privileged container mounts a tmpfs under a
# Bidirectional hostPath in the kubelet root dir; the host must see it.
probe=$work/kubelet/probe
kc apply -f - <<EOF
apiVersion: v1
kind: Pod
metadata: {name: realnode-propagation, namespace: default}
spec:
  nodeName: $node
  terminationGracePeriodSeconds: 1
  containers:
  - name: c
    image: localhost/realnode/busybox:1
    imagePullPolicy: Never
    securityContext: {privileged: true}
    command: ["/bin/sh", "-c", "mkdir -p /probe/inner && mount -t tmpfs tmpfs /probe/inner && echo mounted && sleep 3600"]
    volumeMounts:
    - {name: p, mountPath: /probe, mountPropagation: Bidirectional}
  volumes:
  - name: p
    hostPath: {path: "$probe", type: DirectoryOrCreate}
EOF
seen=""
for i in $(seq 60); do
	if grep -qF " $probe/inner tmpfs" /proc/mounts; then seen=1; break; fi
	sleep 1
done
if [ -n "$seen" ]; then
	log "Bidirectional propagation: the container's tmpfs at $probe/inner is seen on the host"
else
	log "Bidirectional propagation: no mount at $probe/inner after 60s"
	kc get events --field-selector involvedObject.name=realnode-propagation >&2 || true
fi
kc delete pod realnode-propagation --wait=true --timeout=60s >/dev/null
log "OK"
