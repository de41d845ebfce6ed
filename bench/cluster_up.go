package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/volplane/volplane/internal/endpoint"
)

// clusterUp is the running `up` child.
type clusterUp struct {
	cmd     *exec.Cmd
	dir     string
	client  kubernetes.Interface
	started time.Time
	// metrics is where up serves /metrics (and, with --profiling, /debug/pprof).
	metrics string
	// done is closed once up exited, with waitErr its Wait's answer.
	done    chan struct{}
	waitErr error
}

// startUp runs `up` in a fresh data dir and returns once it said it is up
// and its loops serve (the "Metrics:" line).
func startUp(ctx context.Context, o ClusterOptions, prog *progress) (*clusterUp, float64, error) {
	dir, err := os.MkdirTemp("", "volplane-cluster-")
	if err != nil {
		return nil, 0, err
	}
	cmd := exec.Command(o.Executable, "up", "--nodes", fmt.Sprint(o.Nodes), "--data-dir", dir,
		"--apiserver-port", "0", "--etcd-client-port", "0", "--etcd-peer-port", "0", "--metrics-bind-address", "127.0.0.1:0",
		"--fake-mounts")
	if o.Profile != "" {
		cmd.Args = append(cmd.Args, "--profiling")
	}
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, 0, err
	}
	u := &clusterUp{cmd: cmd, dir: dir, started: time.Now(), done: make(chan struct{})}
	prog.phase(fmt.Sprintf("starting volplane up --nodes %d in %s", o.Nodes, dir))
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, 0, err
	}
	upLine, loopsLine := make(chan time.Time, 1), make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "volplane is up in"):
				upLine <- time.Now()
			case strings.HasPrefix(line, "Metrics: "):
				url, _, _ := strings.Cut(strings.TrimPrefix(line, "Metrics: "), " ")
				loopsLine <- strings.TrimSuffix(url, "/metrics")
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	go func() { u.waitErr = cmd.Wait(); close(u.done) }()
	var upAt time.Time
	for _, wait := range []string{"up", "loops"} {
		select {
		case upAt = <-upLine:
		case u.metrics = <-loopsLine:
		case <-u.done:
			os.RemoveAll(dir)
			return nil, 0, fmt.Errorf("volplane up exited before it was up: %v", u.waitErr)
		case <-ctx.Done():
			u.stop()
			return nil, 0, ctx.Err()
		case <-time.After(o.Timeout):
			u.stop()
			return nil, 0, fmt.Errorf("volplane up not %s after %s", wait, o.Timeout)
		}
	}
	rc, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dir, "kubeconfig"))
	if err != nil {
		u.stop()
		return nil, 0, err
	}
	rc.QPS, rc.Burst = 500, 1000
	rc.UserAgent = "volplane-bench-cluster"
	if u.client, err = kubernetes.NewForConfig(rc); err != nil {
		u.stop()
		return nil, 0, err
	}
	return u, upAt.Sub(u.started).Seconds(), nil
}

// profileEvery saves a 30 s CPU profile and a heap profile of up every
// period until ctx ends or up exits (numbered from 01); a profile that
// cannot be had is said on the progress line and the next is tried.
func (u *clusterUp) profileEvery(ctx context.Context, prefix string, period time.Duration, prog *progress) {
	t := time.NewTicker(period)
	defer t.Stop()
	for n := 1; ; n++ {
		select {
		case <-ctx.Done():
			return
		case <-u.done:
			return
		case <-t.C:
		}
		for _, p := range []struct{ path, file string }{
			{"/debug/pprof/profile?seconds=30", fmt.Sprintf("%s.%02d.cpu.pprof", prefix, n)},
			{"/debug/pprof/heap", fmt.Sprintf("%s.%02d.heap.pprof", prefix, n)},
		} {
			if err := saveURL(ctx, u.metrics+p.path, p.file); err != nil {
				prog.phase("profile: " + err.Error())
			}
		}
	}
}

// saveURL writes what a GET of url answers into file.
func saveURL(ctx context.Context, url, file string) error {
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if !httpOK(ctx, url, f) {
		f.Close()
		return fmt.Errorf("GET %s failed", url)
	}
	return f.Close()
}

// stop interrupts `up` (it unmounts and stops as on Ctrl-C), waits for it
// and removes its data dir.
func (u *clusterUp) stop() {
	interrupt(u.cmd, syscall.SIGINT, u.done, 2*time.Minute)
	os.RemoveAll(u.dir)
}

// endpoints are the drivers' controller sockets `up` serves (bundle.Start
// puts each node's and the network driver's in DataDir/csi).
func (u *clusterUp) endpoints() ([]string, error) {
	socks, err := filepath.Glob(filepath.Join(u.dir, "csi", "*.sock"))
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(socks))
	for _, s := range socks {
		out = append(out, endpoint.Format(s))
	}
	return out, nil
}
