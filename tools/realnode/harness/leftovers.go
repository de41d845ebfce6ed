package harness

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// hostSysctls are the host-wide settings the kubelet writes (protectKernelDefaults
// false); they are put back.
var hostSysctls = []string{"vm/overcommit_memory", "kernel/panic", "kernel/panic_on_oops"}

// KubeletRoot and DriverData are the host dirs deploy/ names: the kubelet's
// default root dir (its pods, plugins, plugins_registry, pki and the device
// manager's socket) and the bundled driver's data dir. The run makes them
// and removes them; it refuses to start when either exists.
const (
	KubeletRoot = "/var/lib/kubelet"
	DriverData  = "/var/lib/volplane"
)

// hostWatch remembers what the run may change on the host.
type hostWatch struct {
	n       *Node
	sysctls map[string]string
}

// snapshotHost refuses a host where the kubelet's or the driver's dir
// already exists (another kubelet's, or a run's leftover: remove it by hand
// once nothing uses it), and remembers the sysctls the kubelet changes.
func snapshotHost(n *Node) (*hostWatch, error) {
	for _, d := range []string{n.KubeletRoot, n.DriverData} {
		if _, err := os.Lstat(d); err == nil {
			return nil, fmt.Errorf("%s exists: another kubelet's, or a run's leftover; the real node makes it and removes it, so it refuses to start", d)
		}
	}
	w := &hostWatch{n: n, sysctls: map[string]string{}}
	for _, s := range hostSysctls {
		b, _ := os.ReadFile("/proc/sys/" + s)
		w.sysctls[s] = strings.TrimSpace(string(b))
	}
	return w, nil
}

// verify puts the sysctls back, then fails the test for every process,
// mount, network namespace or cgroup of the run still there; the work dir
// goes only when nothing is (KEEP=1 keeps it for its logs).
func (w *hostWatch) verify(t *testing.T) {
	n := w.n
	for s, v := range w.sysctls {
		if err := os.WriteFile("/proc/sys/"+s, []byte(v), 0o644); err != nil {
			t.Errorf("restore %s=%s: %v", s, v, err)
		}
	}
	var left []string
	for _, d := range []string{n.KubeletRoot, n.DriverData} {
		// Removed only when nothing is mounted under it any more: never
		// through a mount into a volume.
		if ms := mountsUnder(d); len(ms) > 0 {
			left = append(left, fmt.Sprintf("%s (still mounted: %v)", d, ms))
		} else if err := os.RemoveAll(d); err != nil {
			left = append(left, fmt.Sprintf("%s: %v", d, err))
		}
	}
	for s, v := range w.sysctls {
		b, _ := os.ReadFile("/proc/sys/" + s)
		if got := strings.TrimSpace(string(b)); got != v {
			left = append(left, fmt.Sprintf("sysctl %s=%s, was %s", s, got, v))
		}
	}
	for _, pid := range pidsMentioning(n.Work) {
		left = append(left, fmt.Sprintf("process %d: %s", pid, cmdline(pid)))
	}
	for _, d := range []string{n.Work, n.KubeletRoot, n.DriverData} {
		for _, m := range mountsUnder(d) {
			left = append(left, "mount "+m)
		}
	}
	if _, err := os.Stat(netnsPath(n.Netns)); err == nil {
		left = append(left, "netns "+n.Netns)
	}
	for _, d := range cgroupDirs(n.cgroupRoot) {
		left = append(left, "cgroup "+d)
	}
	if len(left) > 0 {
		t.Errorf("the run left behind (work dir %s kept):\n%s", n.Work, strings.Join(left, "\n"))
		return
	}
	if os.Getenv("KEEP") == "1" {
		t.Logf("logs kept in %s", n.Work)
		return
	}
	if err := os.RemoveAll(n.Work); err != nil {
		t.Errorf("remove work dir: %v", err)
	}
}

// makeCgroups makes the run's cgroup root in every v1 hierarchy (the
// kubelet's cgroupRoot); its cleanup kills whatever is still in it and
// removes it deepest first.
func (n *Node) makeCgroups(t *testing.T) {
	for _, h := range cgroupHierarchies(false) {
		if err := os.MkdirAll(filepath.Join(h, n.cgroupRoot), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		killUnder(t, n.Work, n.cgroupRoot)
		for _, d := range cgroupDirs(n.cgroupRoot) {
			var all []string
			_ = filepath.WalkDir(d, func(p string, e os.DirEntry, err error) error {
				if err == nil && e.IsDir() {
					all = append(all, p)
				}
				return nil
			})
			sort.Sort(sort.Reverse(sort.StringSlice(all)))
			for _, p := range all {
				_ = os.Remove(p)
			}
		}
	})
}

// cgroupHierarchies are the mounted cgroup hierarchies; the v2 one of the
// hybrid layout ("unified") only when asked: the kubelet makes its pod
// cgroups there too, but its root need not be made there first.
func cgroupHierarchies(unified bool) []string {
	var hs []string
	entries, _ := os.ReadDir("/sys/fs/cgroup")
	for _, e := range entries {
		if e.IsDir() && (unified || e.Name() != "unified") {
			hs = append(hs, filepath.Join("/sys/fs/cgroup", e.Name()))
		}
	}
	return hs
}

func cgroupDirs(root string) []string {
	var ds []string
	for _, h := range cgroupHierarchies(true) {
		if _, err := os.Stat(filepath.Join(h, root)); err == nil {
			ds = append(ds, filepath.Join(h, root))
		}
	}
	return ds
}

// killUnder SIGKILLs every process in the run's cgroups (containers the
// kubelet or containerd could not stop) and every process whose command
// line names the work dir (the runc shims), and waits for them to go.
func killUnder(t *testing.T, work, cgroupRoot string) {
	targets := map[int]bool{}
	for _, d := range cgroupDirs(cgroupRoot) {
		_ = filepath.WalkDir(d, func(p string, e os.DirEntry, err error) error {
			if err != nil || e.Name() != "cgroup.procs" {
				return nil
			}
			b, _ := os.ReadFile(p)
			for _, f := range strings.Fields(string(b)) {
				if pid, err := strconv.Atoi(f); err == nil {
					targets[pid] = true
				}
			}
			return nil
		})
	}
	for _, pid := range pidsMentioning(work) {
		targets[pid] = true
	}
	for pid := range targets {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	err := WaitFor(10*time.Second, func() error {
		for pid := range targets {
			if syscall.Kill(pid, 0) == nil && !zombie(pid) {
				return fmt.Errorf("process %d still running", pid)
			}
		}
		return nil
	})
	if err != nil {
		t.Errorf("kill: %v", err)
	}
}

func zombie(pid int) bool {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && len(s) > i+2 && s[i+2] == 'Z'
}

// pidsMentioning lists the processes, other than this one, whose command
// line contains s.
func pidsMentioning(s string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() || zombie(pid) {
			continue
		}
		if strings.Contains(cmdline(pid), s) {
			pids = append(pids, pid)
		}
	}
	return pids
}

func cmdline(pid int) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return strings.ReplaceAll(strings.TrimRight(string(b), "\x00"), "\x00", " ")
}

// mountsUnder lists the mount points at or under dir, deepest first.
func mountsUnder(dir string) []string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	defer f.Close()
	var ms []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		m := strings.ReplaceAll(fields[4], `\040`, " ")
		if m == dir || strings.HasPrefix(m, dir+"/") {
			ms = append(ms, m)
		}
	}
	sort.Slice(ms, func(i, j int) bool { return len(ms[i]) > len(ms[j]) })
	return ms
}

// unmountUnder unmounts everything at or under dir, deepest first, lazily
// where a mount is busy; a mount stacked twice is unmounted twice.
func unmountUnder(t *testing.T, dir string) {
	for round := 0; round < 5; round++ {
		ms := mountsUnder(dir)
		if len(ms) == 0 {
			return
		}
		for _, m := range ms {
			if err := syscall.Unmount(m, 0); err != nil {
				_ = syscall.Unmount(m, syscall.MNT_DETACH)
			}
		}
	}
	if ms := mountsUnder(dir); len(ms) > 0 {
		t.Errorf("still mounted under %s: %v", dir, ms)
	}
}
