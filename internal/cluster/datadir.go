package cluster

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// ErrDataDirInUse is returned by Start when another control plane holds the
// data directory.
var ErrDataDirInUse = errors.New("data dir is in use")

// dataDir names what a control plane keeps in its directory.
type dataDir string

func (d dataDir) pki() pki           { return pki{dir: filepath.Join(string(d), "pki")} }
func (d dataDir) kubeconfig() string { return filepath.Join(string(d), "kubeconfig") }
func (d dataDir) lockFile() string   { return filepath.Join(string(d), "volplane.lock") }
func (d dataDir) logDir() string     { return filepath.Join(string(d), "logs") }

// lock takes an exclusive, non-blocking flock on DIR/volplane.lock. The kernel
// drops it when the process dies, so a crashed `up` never leaves a stale lock.
func (d dataDir) lock() (*os.File, error) {
	f, err := os.OpenFile(d.lockFile(), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open lock file: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder, _ := os.ReadFile(d.lockFile())
		f.Close()
		return nil, fmt.Errorf("%w: %s is used by another volplane (pid %s); stop it or choose another --data-dir",
			ErrDataDirInUse, string(d), strings.TrimSpace(string(holder)))
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return f, nil
}

// writeKubeconfig writes an admin kubeconfig for the API server at host.
func (d dataDir) writeKubeconfig(host string) error {
	p := d.pki()
	ca, err := os.ReadFile(p.caCert())
	if err != nil {
		return fmt.Errorf("read ca: %w", err)
	}
	cert, err := os.ReadFile(p.adminCert())
	if err != nil {
		return fmt.Errorf("read admin cert: %w", err)
	}
	key, err := os.ReadFile(p.adminKey())
	if err != nil {
		return fmt.Errorf("read admin key: %w", err)
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["volplane"] = &clientcmdapi.Cluster{Server: host, CertificateAuthorityData: ca}
	cfg.AuthInfos["volplane-admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: cert, ClientKeyData: key}
	cfg.Contexts["volplane"] = &clientcmdapi.Context{Cluster: "volplane", AuthInfo: "volplane-admin"}
	cfg.CurrentContext = "volplane"
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		return fmt.Errorf("encode kubeconfig: %w", err)
	}
	return writeFileAtomic(d.kubeconfig(), data, 0o600)
}

// restConfig loads the admin kubeconfig written by writeKubeconfig.
func (d dataDir) restConfig() (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", d.kubeconfig())
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig: %w", err)
	}
	return cfg, nil
}

// freePort asks the kernel for a free port on 127.0.0.1.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// prepare creates the data dir, or tightens an existing one, to the
// owner alone: it holds etcd's data (every Secret) and the CA's keys.
// MkdirAll keeps the mode of a directory that exists (an earlier
// version's, a restored backup's, a wide umask's), so every start sets it.
func (d dataDir) prepare() error {
	if err := os.MkdirAll(string(d), 0o700); err != nil {
		return fmt.Errorf("create data dir: %w", err)
	}
	if err := os.Chmod(string(d), 0o700); err != nil {
		return fmt.Errorf("tighten data dir: %w", err)
	}
	return nil
}
