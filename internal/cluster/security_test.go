package cluster_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/volplane/volplane/internal/cluster"
	"github.com/volplane/volplane/internal/stacktest"
)

// etcd holds every Secret of the cluster and listens on 127.0.0.1, where
// every local user can reach it: only the API server's client certificate
// (signed by etcd's own CA) opens it. Plain HTTP, TLS without a client
// certificate, and a certificate of the cluster CA (the admin's) are refused.
func TestEtcdServesOnlyTheAPIServer(t *testing.T) {
	cp := stacktest.ControlPlane(t)
	dir := filepath.Dir(cp.Kubeconfig)
	addr := cluster.EtcdClientAddr(cp)
	caFile, certFile, keyFile := cluster.EtcdClientFiles(dir)
	adminCert, adminKey := cluster.AdminCertFiles(dir)
	roots := x509.NewCertPool()
	ca, err := os.ReadFile(caFile)
	if err != nil || !roots.AppendCertsFromPEM(ca) {
		t.Fatalf("etcd CA %s: %v", caFile, err)
	}
	// The certificate is sent whoever signed it (Go would send none that the
	// server's CA list does not name), so etcd itself must refuse it.
	withCert := func(cert, key string) *tls.Config {
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			t.Fatal(err)
		}
		return &tls.Config{RootCAs: roots, GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			return &pair, nil
		}}
	}
	cases := []struct {
		name   string
		scheme string
		tls    *tls.Config
		opens  bool
	}{
		{"plain HTTP", "http", nil, false},
		{"TLS without a client certificate", "https", &tls.Config{RootCAs: roots}, false},
		{"TLS with the admin's certificate of the cluster CA", "https", withCert(adminCert, adminKey), false},
		{"TLS with the API server's etcd client certificate", "https", withCert(certFile, keyFile), true},
	}
	for _, c := range cases {
		err := etcdGet(c.scheme+"://"+addr, c.tls)
		switch {
		case c.opens && err != nil:
			t.Errorf("%s: refused (%v), want served", c.name, err)
		case !c.opens && err == nil:
			t.Errorf("%s: served, want refused", c.name)
		}
	}
}

// etcdGet reads one key the API server wrote, failing after a few seconds.
func etcdGet(endpoint string, tlsCfg *tls.Config) error {
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, TLS: tlsCfg, DialTimeout: 3 * time.Second})
	if err != nil {
		return err
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	_, err = cli.Get(ctx, "/registry/namespaces/default")
	return err
}

// With anonymous auth off, a request without credentials gets 401, even for
// /readyz; the admin kubeconfig still gets in.
func TestAPIServerRefusesAnonymousRequests(t *testing.T) {
	cp := stacktest.ControlPlane(t)
	anonymous, err := kubernetes.NewForConfig(rest.AnonymousClientConfig(cp.RESTConfig))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, path := range []string{"/readyz", "/version", "/api/v1/namespaces"} {
		_, err := anonymous.Discovery().RESTClient().Get().AbsPath(path).DoRaw(ctx)
		if !apierrors.IsUnauthorized(err) {
			t.Errorf("anonymous GET %s: %v, want 401 Unauthorized", path, err)
		}
	}
	body, err := cp.Client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
	if err != nil || string(body) != "ok" {
		t.Errorf("admin GET /readyz: %q, %v", body, err)
	}
}

// Keys and the admin kubeconfig are readable by their owner only, inside
// directories only the owner can enter.
func TestKeysAndKubeconfigAreOwnerOnly(t *testing.T) {
	cp := stacktest.ControlPlane(t)
	dir := filepath.Dir(cp.Kubeconfig)
	want := map[string]fs.FileMode{dir: 0o700, filepath.Join(dir, "pki"): 0o700, cp.Kubeconfig: 0o600}
	keys := 0
	err := filepath.WalkDir(filepath.Join(dir, "pki"), func(path string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(path, ".key") {
			want[path] = 0o600
			keys++
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if keys < 7 { // ca, apiserver, admin, service-account, etcd-ca, etcd-server, apiserver-etcd-client
		t.Errorf("found %d keys under pki, want every private key", keys)
	}
	for path, mode := range want {
		info, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := info.Mode().Perm(); got != mode {
			t.Errorf("%s has mode %o, want %o", path, got, mode)
		}
	}
}
