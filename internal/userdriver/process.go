package userdriver

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/volplane/volplane/internal/endpoint"
	"github.com/volplane/volplane/internal/hostpath"
)

// Config says which drivers to run for which nodes, and where.
type Config struct {
	// DataDir holds the sockets (DataDir/csi/drivers), each process's
	// {dir} (DataDir/drivers/<driver>/<node or controller>) and its output
	// (DataDir/logs/driver-<driver>-<node or controller>.log).
	DataDir string
	Nodes   []string
	Specs   []Spec
	// ServeWithin is how long a started process may take to create its
	// socket (default 30 s).
	ServeWithin time.Duration
}

// Drivers are the user's drivers of a set of simulated nodes: the
// processes volplane started and the sockets the user serves.
type Drivers struct {
	// Endpoints are what the loops dial: every driver's controller
	// endpoints (every node's, for a per-node driver).
	Endpoints []string
	// NodeEndpoints are, per node, the node services serving it.
	NodeEndpoints map[string][]string
	// Controllers are each driver's controller endpoints, by driver name;
	// Nodes its node endpoint on each node, by driver and node.
	Controllers map[string][]string
	Nodes       map[string]map[string]string

	procs  map[string]*process // by driver + "/" + role
	failed chan error
	within time.Duration
}

// Start starts every process of the specs and returns once each serves
// its socket; sockets the user serves are taken as given (the probe finds
// them missing). On an error nothing it started is left running.
func Start(cfg Config) (*Drivers, error) {
	if cfg.ServeWithin <= 0 {
		cfg.ServeWithin = 30 * time.Second
	}
	d := &Drivers{NodeEndpoints: map[string][]string{}, Controllers: map[string][]string{}, Nodes: map[string]map[string]string{},
		procs: map[string]*process{}, failed: make(chan error, 1), within: cfg.ServeWithin}
	sockets := filepath.Join(cfg.DataDir, "csi", "drivers")
	if err := hostpath.MkdirPrivate(sockets); err != nil {
		return nil, fmt.Errorf("driver sockets: %w", err)
	}
	if err := os.MkdirAll(filepath.Join(cfg.DataDir, "logs"), 0o750); err != nil {
		return nil, fmt.Errorf("driver logs: %w", err)
	}
	for _, s := range cfg.Specs {
		d.Nodes[s.Name] = map[string]string{}
		if !s.Started() {
			d.Controllers[s.Name] = []string{s.Controller}
			d.Endpoints = append(d.Endpoints, s.Controller)
			for _, n := range cfg.Nodes {
				d.NodeEndpoints[n] = append(d.NodeEndpoints[n], s.Nodes[n])
				d.Nodes[s.Name][n] = s.Nodes[n]
			}
			continue
		}
		roles := cfg.Nodes
		if !s.PerNode {
			roles = append([]string{ControllerRole}, cfg.Nodes...)
		}
		for _, role := range roles {
			p, err := d.add(cfg.DataDir, sockets, s, role)
			if err != nil {
				d.Stop()
				return nil, err
			}
			if role == ControllerRole || s.PerNode {
				d.Controllers[s.Name] = append(d.Controllers[s.Name], p.address())
				d.Endpoints = append(d.Endpoints, p.address())
			}
			if role != ControllerRole {
				d.NodeEndpoints[role] = append(d.NodeEndpoints[role], p.address())
				d.Nodes[s.Name][role] = p.address()
			}
		}
	}
	for _, p := range d.procs {
		if err := p.waitServing(d.within); err != nil {
			d.Stop()
			return nil, err
		}
	}
	return d, nil
}

// add makes a process's directory, socket path and log, and starts it.
func (d *Drivers) add(dataDir, sockets string, s Spec, role string) (*process, error) {
	dir := filepath.Join(dataDir, "drivers", s.Name, role)
	if err := hostpath.MkdirPrivate(dir); err != nil {
		return nil, fmt.Errorf("driver %s (%s): %w", s.Name, role, err)
	}
	socket := filepath.Join(sockets, s.Name+"-"+role+".sock")
	// A unix socket's path has room for 107 bytes.
	if len(socket) > 107 {
		return nil, fmt.Errorf("driver %s (%s): socket path %s is longer than a unix socket allows (107 bytes): use a shorter --data-dir", s.Name, role, socket)
	}
	nodeRole := NodeRole
	if role == ControllerRole {
		nodeRole = ControllerRole
	}
	p := &process{
		what:   fmt.Sprintf("driver %s (%s)", s.Name, role),
		argv:   Expand(s.Command, endpoint.Format(socket), role, dir, nodeRole),
		socket: socket,
		log:    filepath.Join(dataDir, "logs", "driver-"+s.Name+"-"+role+".log"),
		failed: d.failed,
	}
	d.procs[s.Name+"/"+role] = p
	return p, p.start()
}

// Failed carries the error of a started process that ended on its own.
func (d *Drivers) Failed() <-chan error { return d.failed }

// Started says whether volplane runs the named driver's processes.
func (d *Drivers) Started(driver string) bool {
	for key := range d.procs {
		if strings.HasPrefix(key, driver+"/") {
			return true
		}
	}
	return false
}

// Restart kills the driver's process serving role (ControllerRole or a
// node's name) with SIGKILL, as a crash would, and starts it again; it
// returns once the new one serves its socket.
func (d *Drivers) Restart(driver, role string) error {
	p, ok := d.procs[driver+"/"+role]
	if !ok {
		return fmt.Errorf("driver %s has no process for %s that volplane started", driver, role)
	}
	p.kill(syscall.SIGKILL, 0)
	if err := p.start(); err != nil {
		return err
	}
	return p.waitServing(d.within)
}

// Stop ends every started process: SIGTERM to its process group, SIGKILL
// after 10 s.
func (d *Drivers) Stop() {
	var wg sync.WaitGroup
	for _, p := range d.procs {
		wg.Go(func() { p.kill(syscall.SIGTERM, 10*time.Second) })
	}
	wg.Wait()
}

// process is one started driver process.
type process struct {
	what, socket, log string
	argv              []string
	failed            chan error

	mu       sync.Mutex
	cmd      *exec.Cmd
	done     chan struct{}
	stopping bool
}

func (p *process) address() string { return endpoint.Format(p.socket) }

// start runs the command in a process group of its own (a driver's
// children die with it), output appended to its log. A socket left by an
// earlier run is removed first: the path is volplane's.
func (p *process) start() error {
	if err := os.Remove(p.socket); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%s: stale socket: %w", p.what, err)
	}
	out, err := os.OpenFile(p.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o640)
	if err != nil {
		return fmt.Errorf("%s: log: %w", p.what, err)
	}
	fmt.Fprintf(out, "--- %s: %s\n", time.Now().Format(time.RFC3339), strings.Join(p.argv, " "))
	cmd := exec.Command(p.argv[0], p.argv[1:]...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		_ = out.Close()
		return fmt.Errorf("%s: start %s: %w", p.what, p.argv[0], err)
	}
	done := make(chan struct{})
	p.mu.Lock()
	p.cmd, p.done, p.stopping = cmd, done, false
	p.mu.Unlock()
	go func() {
		err := cmd.Wait()
		_ = out.Close()
		p.mu.Lock()
		stopping := p.stopping
		p.mu.Unlock()
		close(done)
		if !stopping {
			select {
			case p.failed <- fmt.Errorf("%s exited (%v); its output: %s", p.what, err, p.log):
			default:
			}
		}
	}()
	return nil
}

// waitServing returns once the socket exists, or an error with the end of
// the log if the process exits or takes longer than within.
func (p *process) waitServing(within time.Duration) error {
	p.mu.Lock()
	done := p.done
	p.mu.Unlock()
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if _, err := os.Stat(p.socket); err == nil {
			return nil
		}
		select {
		case <-done:
			return fmt.Errorf("%s exited before serving %s; the end of its output (%s):\n%s", p.what, p.socket, p.log, tail(p.log))
		case <-deadline.C:
			return fmt.Errorf("%s did not serve %s within %s; the end of its output (%s):\n%s", p.what, p.socket, within, p.log, tail(p.log))
		case <-tick.C:
		}
	}
}

// kill signals the process group and waits for the process to end,
// escalating to SIGKILL after grace (0: sig is already SIGKILL).
func (p *process) kill(sig syscall.Signal, grace time.Duration) {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.stopping = true
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, sig)
	if grace > 0 {
		select {
		case <-done:
			return
		case <-time.After(grace):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
	}
	<-done
}

// tail is the last lines of a log, for an error.
func tail(path string) string {
	raw, err := os.ReadFile(path)
	if err != nil {
		return "(" + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimRight(string(raw), "\n"), "\n")
	if len(lines) > 15 {
		lines = lines[len(lines)-15:]
	}
	return "  " + strings.Join(lines, "\n  ")
}
