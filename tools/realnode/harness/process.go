package harness

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Process is a program the harness started, its output in a log file.
type Process struct {
	Name string
	Log  string
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// start runs argv with stdout and stderr to work/<name>.log; in a network
// namespace when ns is set, through nsenter, which execs the program, so
// the pid is the program's own.
func start(work, ns, name string, argv ...string) (*Process, error) {
	if ns != "" {
		argv = append([]string{"nsenter", "--net=" + netnsPath(ns)}, argv...)
	}
	p := &Process{Name: name, Log: work + "/" + strings.ReplaceAll(name, "/", "-") + ".log", done: make(chan struct{})}
	f, err := os.Create(p.Log)
	if err != nil {
		return nil, err
	}
	p.cmd = exec.Command(argv[0], argv[1:]...)
	p.cmd.Stdout, p.cmd.Stderr = f, f
	// Its own process group: a ^C of the test run does not reach it before
	// the cleanups stop it in order.
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := p.cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		f.Close()
		close(p.done)
	}()
	return p, nil
}

// Exited says whether the process ended, and how.
func (p *Process) Exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.err
	default:
		return false, nil
	}
}

// Stop sends SIGTERM, then SIGKILL after grace, and waits.
func (p *Process) Stop(grace time.Duration) {
	if ok, _ := p.Exited(); ok {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return
	case <-time.After(grace):
	}
	_ = p.cmd.Process.Kill()
	<-p.done
}

// Tail is the end of the process's log, for a failure message.
func (p *Process) Tail(lines int) string {
	b, _ := os.ReadFile(p.Log)
	all := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}

// run runs a short command and fails the test on error.
func run(t *testing.T, argv ...string) string {
	t.Helper()
	out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(argv, " "), err, out)
	}
	return string(out)
}

// WaitFor polls cond every 200ms until it holds or timeout passes; it
// returns the last error cond gave.
func WaitFor(timeout time.Duration, cond func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("after %s: %w", timeout, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// runErr runs a short command and returns its output and error.
func runErr(argv ...string) (string, error) {
	out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
	return string(out), err
}
