package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// controllerProcess is a controller under test, run as a child process of
// the volplane binary, so its CPU time and peak memory are its own and not
// the embedded control plane's.
type controllerProcess struct {
	name     string
	cmd      *exec.Cmd
	log      string
	done     chan struct{}
	err      error
	measured bool // counted in the side's CPU and RSS
	// awaited: waited for ready before the clock starts, measured or not.
	awaited bool
	// program names the binary in the report when it is not volplane.
	program string
	last    procStats
}

// startProcess runs exe with args and, on top of this process's
// environment, env; its output goes to a log file in dir.
func startProcess(ctx context.Context, exe, dir, name string, measured bool, env []string, args ...string) (*controllerProcess, error) {
	log := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".log")
	f, err := os.Create(log)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &controllerProcess{name: name, cmd: cmd, log: log, done: make(chan struct{}), measured: measured}
	go func() {
		p.err = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	go func() {
		select {
		case <-ctx.Done():
			p.stop()
		case <-p.done:
		}
	}()
	return p, nil
}

// sample reads the process's CPU and peak RSS while it still runs.
func (p *controllerProcess) sample() error {
	s, err := readProcStats(p.cmd.Process.Pid)
	if err != nil {
		return fmt.Errorf("measuring %s: %w", p.name, err)
	}
	p.last = s
	return nil
}

// exited reports an early exit as an error carrying the log's tail.
func (p *controllerProcess) exited() error {
	select {
	case <-p.done:
		return fmt.Errorf("%s exited early (%v); its log %s ends with:\n%s", p.name, p.err, p.log, logTail(p.log, 15))
	default:
		return nil
	}
}

// stop asks the process to end (SIGTERM), then kills it after 10 s.
func (p *controllerProcess) stop() { interrupt(p.cmd, syscall.SIGTERM, p.done, 10*time.Second) }

// interrupt sends a child process sig and waits for done (closed once it
// exited), killing it if it is still there after grace; nothing if it
// exited already.
func interrupt(cmd *exec.Cmd, sig os.Signal, done <-chan struct{}, grace time.Duration) {
	select {
	case <-done:
		return
	default:
	}
	_ = cmd.Process.Signal(sig)
	select {
	case <-done:
	case <-time.After(grace):
		_ = cmd.Process.Kill()
		<-done
	}
}

// logTail is the end of a log file, for an error message.
func logTail(path string, lines int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	return lastLines(string(data), lines)
}

func lastLines(s string, n int) string {
	all := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(all) > n {
		all = all[len(all)-n:]
	}
	return strings.Join(all, "\n")
}

// sampleAll samples every measured process and sums their figures.
func sampleAll(ps []*controllerProcess) (procStats, error) {
	var sum procStats
	var errs []error
	for _, p := range ps {
		if !p.measured {
			continue
		}
		if err := p.sample(); err != nil {
			errs = append(errs, err)
			continue
		}
		sum.CPUSeconds += p.last.CPUSeconds
		sum.PeakRSS += p.last.PeakRSS
	}
	return sum, errors.Join(errs...)
}
