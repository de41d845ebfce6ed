package stacktest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// binaryStopGrace is how long a child component has to stop after SIGTERM
// before it is killed.
const binaryStopGrace = 10 * time.Second

// binariesIn is a cluster.Config.RunComponent that runs dir/name with args
// as a child process until ctx is cancelled: SIGTERM then, SIGKILL after
// binaryStopGrace. Its output goes to logDir/name.log.
func binariesIn(dir string) func(ctx context.Context, name, logDir string, args []string) error {
	return func(ctx context.Context, name, logDir string, args []string) error {
		return runBinary(ctx, filepath.Join(dir, name), name, logDir, args)
	}
}

func runBinary(ctx context.Context, path, name, logDir string, args []string) error {
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("%s: %w", BinariesEnv, err)
	}
	log, err := os.OpenFile(filepath.Join(logDir, name+".log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("open %s log: %w", name, err)
	}
	defer log.Close()
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = binaryStopGrace
	if err := cmd.Run(); err != nil && ctx.Err() == nil {
		return fmt.Errorf("%s (log %s): %w", path, log.Name(), err)
	}
	return nil
}
