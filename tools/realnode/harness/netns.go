package harness

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

func netnsPath(ns string) string { return "/run/netns/" + ns }

// makeNetns creates the node's network namespace: loopback up and the node
// address on one end of a veth pair (the kernel here has no dummy link
// type), both ends inside. Deleting the namespace removes the pair, the
// CNI bridge and every iptables rule kube-proxy wrote.
func makeNetns(t *testing.T, ns, nodeIP string) {
	t.Helper()
	run(t, "ip", "netns", "add", ns)
	t.Cleanup(func() {
		if out, err := runErr("ip", "netns", "delete", ns); err != nil {
			t.Errorf("delete netns %s: %v %s", ns, err, out)
		}
	})
	run(t, "ip", "-n", ns, "link", "set", "lo", "up")
	run(t, "ip", "-n", ns, "link", "add", "rn0", "type", "veth", "peer", "name", "rn1")
	run(t, "ip", "-n", ns, "addr", "add", nodeIP+"/32", "dev", "rn0")
	run(t, "ip", "-n", ns, "link", "set", "rn1", "up")
	run(t, "ip", "-n", ns, "link", "set", "rn0", "up")
}

// listenIn opens a TCP listener inside the network namespace ns: one OS
// thread enters it, makes the socket (a socket belongs to the namespace it
// was made in) and goes back; the thread is dropped if it cannot.
func listenIn(ns, addr string) (net.Listener, error) {
	type result struct {
		l   net.Listener
		err error
	}
	res := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		host, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			res <- result{err: err}
			return
		}
		defer host.Close()
		target, err := os.Open(netnsPath(ns))
		if err != nil {
			runtime.UnlockOSThread()
			res <- result{err: err}
			return
		}
		defer target.Close()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			res <- result{err: fmt.Errorf("enter %s: %w", ns, err)}
			return
		}
		l, lerr := net.Listen("tcp", addr)
		if err := unix.Setns(int(host.Fd()), unix.CLONE_NEWNET); err != nil {
			// Still locked: the thread ends with this goroutine.
			res <- result{l: l, err: fmt.Errorf("leave %s: %w", ns, err)}
			return
		}
		runtime.UnlockOSThread()
		res <- result{l: l, err: lerr}
	}()
	r := <-res
	return r.l, r.err
}

// relay carries connections to nodeIP:port inside ns to 127.0.0.1:port on
// the host, where the API server listens: the address the `kubernetes`
// Service advertises, reachable from the node and, through kube-proxy's
// DNAT, from its pods.
func relay(t *testing.T, ns, nodeIP string, port int) {
	t.Helper()
	l, err := listenIn(ns, fmt.Sprintf("%s:%d", nodeIP, port))
	if err != nil {
		t.Fatalf("relay: %v", err)
	}
	var conns sync.WaitGroup
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop); l.Close(); conns.Wait() })
	go func() {
		for {
			in, err := l.Accept()
			if errors.Is(err, net.ErrClosed) {
				return
			} else if err != nil {
				continue
			}
			conns.Add(1)
			go func() {
				defer conns.Done()
				pipe(in, fmt.Sprintf("127.0.0.1:%d", port), stop)
			}()
		}
	}()
}

func pipe(in net.Conn, to string, stop <-chan struct{}) {
	defer in.Close()
	out, err := net.Dial("tcp", to)
	if err != nil {
		return
	}
	defer out.Close()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(out, in); done <- struct{}{} }()
	go func() { _, _ = io.Copy(in, out); done <- struct{}{} }()
	select {
	case <-done:
	case <-stop:
	}
}
