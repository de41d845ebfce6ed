// Package reflog configures klog for the reference controllers the bench
// runs as processes of their own (the reference binder, the snapshot
// controllers, the reference attacher): thousands of objects must not flood
// their logs. It imports nothing of Kubernetes but klog, so the reference
// attacher, which cannot link k8s.io/kubernetes, uses it too.
package reflog

import (
	"flag"
	"fmt"
	"strconv"

	"k8s.io/klog/v2"
)

// Configure sends klog to stderr: at verbosity 0 or less only errors, above
// 0 every line up to v.
func Configure(v int) error {
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	threshold := "INFO"
	if v <= 0 {
		v, threshold = 0, "ERROR"
	}
	for _, kv := range [][2]string{
		{"v", strconv.Itoa(v)},
		{"logtostderr", "true"},
		{"legacy_stderr_threshold_behavior", "false"},
		{"stderrthreshold", threshold},
	} {
		if err := fs.Set(kv[0], kv[1]); err != nil {
			return fmt.Errorf("klog flag %s: %w", kv[0], err)
		}
	}
	return nil
}
