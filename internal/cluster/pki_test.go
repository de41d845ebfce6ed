package cluster

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
)

// A data dir made before etcd had TLS holds only the cluster's PKI. Its next
// start adds etcd's CA and certificates and keeps every existing file, so
// issued tokens and the admin kubeconfig stay valid.
func TestOldDataDirGetsEtcdCertificatesAndKeepsItsOwn(t *testing.T) {
	p := pki{dir: filepath.Join(t.TempDir(), "pki")}
	if err := os.MkdirAll(p.dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := p.ensureCluster(); err != nil { // what the previous version made
		t.Fatal(err)
	}
	old := map[string][]byte{}
	for _, f := range []string{p.caCert(), p.caKey(), p.servingCert(), p.adminCert(), p.adminKey(), p.serviceAccount()} {
		old[f] = readFile(t, f)
	}
	if err := p.ensure(); err != nil {
		t.Fatal(err)
	}
	for f, data := range old {
		if !bytes.Equal(readFile(t, f), data) {
			t.Errorf("%s changed on the upgrade", f)
		}
	}
	etcdCA, clusterCA := certPool(t, p.etcdCACert()), certPool(t, p.caCert())
	client := parseCert(t, p.etcdClientCert())
	opts := x509.VerifyOptions{KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	if opts.Roots = etcdCA; verify(client, opts) != nil {
		t.Error("the API server's etcd client certificate is not signed by the etcd CA")
	}
	if opts.Roots = clusterCA; verify(client, opts) == nil {
		t.Error("the API server's etcd client certificate is signed by the cluster CA; it must be etcd's alone")
	}
	server := parseCert(t, p.etcdServerCert())
	if err := server.VerifyHostname("127.0.0.1"); err != nil {
		t.Errorf("etcd serving certificate: %v", err)
	}
}

// An etcd data dir first served over plain HTTP (peer URL included)
// restarts with TLS and keeps its data.
func TestEtcdFirstServedOverHTTPRestartsWithTLS(t *testing.T) {
	dir := t.TempDir()
	p := dataDir(dir).pki()
	if err := p.ensure(); err != nil {
		t.Fatal(err)
	}
	clientPort, peerPort := mustFreePort(t), mustFreePort(t)
	plain := embed.NewConfig()
	plain.Name, plain.Dir, plain.LogLevel = "volplane", filepath.Join(dir, "etcd"), "error"
	plain.LogOutputs = []string{filepath.Join(dir, "old-etcd.log")}
	cu := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", clientPort)}
	pu := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", peerPort)}
	plain.ListenClientUrls, plain.AdvertiseClientUrls = []url.URL{cu}, []url.URL{cu}
	plain.ListenPeerUrls, plain.AdvertisePeerUrls = []url.URL{pu}, []url.URL{pu}
	plain.InitialCluster = plain.InitialClusterFromName(plain.Name)
	old, err := embed.StartEtcd(plain)
	if err != nil {
		t.Fatal(err)
	}
	<-old.Server.ReadyNotify()
	if err := etcdPut(cu.String(), nil, "survivor", "yes"); err != nil {
		t.Fatal(err)
	}
	old.Close()

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	e, err := startEtcd(ctx, dir, filepath.Join(dir, "etcd.log"), etcdTLS(p), mustFreePort(t), mustFreePort(t), true)
	if err != nil {
		t.Fatalf("restart with TLS: %v", err)
	}
	defer e.Close()
	pair, err := tls.LoadX509KeyPair(p.etcdClientCert(), p.etcdClientKey())
	if err != nil {
		t.Fatal(err)
	}
	tlsCfg := &tls.Config{RootCAs: certPool(t, p.etcdCACert()), Certificates: []tls.Certificate{pair}}
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{"https://" + e.Clients[0].Addr().String()}, TLS: tlsCfg})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	got, err := cli.Get(ctx, "survivor")
	if err != nil || len(got.Kvs) != 1 || string(got.Kvs[0].Value) != "yes" {
		t.Fatalf("after the restart with TLS: %v, %v; want the key written over HTTP", got, err)
	}
}

func etcdPut(endpoint string, tlsCfg *tls.Config, key, value string) error {
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, TLS: tlsCfg})
	if err != nil {
		return err
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = cli.Put(ctx, key, value)
	return err
}

func mustFreePort(t *testing.T) int {
	t.Helper()
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	return port
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func parseCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	block, _ := pem.Decode(readFile(t, path))
	if block == nil {
		t.Fatalf("%s is not PEM", path)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

func certPool(t *testing.T, path string) *x509.CertPool {
	t.Helper()
	pool := x509.NewCertPool()
	pool.AddCert(parseCert(t, path))
	return pool
}

func verify(cert *x509.Certificate, opts x509.VerifyOptions) error {
	_, err := cert.Verify(opts)
	return err
}

// A CA made anew (its files lost or removed to rotate it) reissues every
// certificate the old one signed: certificates kept from the old CA would
// no longer be trusted (the admin kubeconfig would carry a CA that does
// not sign the API server's certificate), or, worse, an old admin
// certificate stays valid wherever the old CA is still trusted.
func TestNewCAReissuesEveryCertificateItSigns(t *testing.T) {
	p := pki{dir: filepath.Join(t.TempDir(), "pki")}
	if err := p.ensure(); err != nil {
		t.Fatal(err)
	}
	signed := map[string][]string{
		p.caCert():     {p.servingCert(), p.adminCert()},
		p.etcdCACert(): {p.etcdServerCert(), p.etcdClientCert()},
	}
	keys := map[string]string{p.caCert(): p.caKey(), p.etcdCACert(): p.etcdCAKey()}
	for ca, leaves := range signed {
		old := map[string][]byte{}
		for _, leaf := range leaves {
			old[leaf] = readFile(t, leaf)
		}
		for _, f := range []string{ca, keys[ca]} {
			if err := os.Remove(f); err != nil {
				t.Fatal(err)
			}
		}
		if err := p.ensure(); err != nil {
			t.Fatal(err)
		}
		issuer := parseCert(t, ca)
		for _, leaf := range leaves {
			if bytes.Equal(readFile(t, leaf), old[leaf]) {
				t.Errorf("%s kept after %s was made anew", filepath.Base(leaf), filepath.Base(ca))
			}
			if err := parseCert(t, leaf).CheckSignatureFrom(issuer); err != nil {
				t.Errorf("%s is not signed by the new %s: %v", filepath.Base(leaf), filepath.Base(ca), err)
			}
		}
	}
}

// Every start tightens the data dir and pki/ to the owner alone, and the
// private keys to 0600, also when an earlier version, a restore from a
// backup or a umask left them open: the dir holds etcd's data (every
// Secret) and the keys of the cluster's CA.
func TestStartTightensAnExistingDataDir(t *testing.T) {
	dir := dataDir(filepath.Join(t.TempDir(), "data"))
	p := dir.pki()
	if err := os.MkdirAll(p.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := p.ensure(); err != nil {
		t.Fatal(err)
	}
	loose := map[string]os.FileMode{string(dir): 0o755, p.dir: 0o755, p.caKey(): 0o644, p.adminKey(): 0o640}
	for path, mode := range loose {
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
	}
	// What Start does first, in its order.
	if err := dir.prepare(); err != nil {
		t.Fatal(err)
	}
	if err := p.ensure(); err != nil {
		t.Fatal(err)
	}
	want := map[string]os.FileMode{string(dir): 0o700, p.dir: 0o700, p.caKey(): 0o600, p.adminKey(): 0o600}
	for path, mode := range want {
		info, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := info.Mode().Perm(); got != mode {
			t.Errorf("%s has mode %o after a start, want %o", path, got, mode)
		}
	}
}
