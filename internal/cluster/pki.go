package cluster

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// pki names the files of the control plane's certificates under DIR/pki.
type pki struct{ dir string }

func (p pki) path(name string) string { return filepath.Join(p.dir, name) }

func (p pki) caCert() string         { return p.path("ca.crt") }
func (p pki) caKey() string          { return p.path("ca.key") }
func (p pki) servingCert() string    { return p.path("apiserver.crt") }
func (p pki) servingKey() string     { return p.path("apiserver.key") }
func (p pki) adminCert() string      { return p.path("admin.crt") }
func (p pki) adminKey() string       { return p.path("admin.key") }
func (p pki) serviceAccount() string { return p.path("service-account.key") }

// etcd has a CA of its own, as kubeadm sets it up: etcd trusts every client
// certificate its CA signed, and the cluster CA also signs certificates for
// anyone whose CertificateSigningRequest is approved; those must not open
// etcd.
func (p pki) etcdCACert() string     { return p.path("etcd-ca.crt") }
func (p pki) etcdCAKey() string      { return p.path("etcd-ca.key") }
func (p pki) etcdServerCert() string { return p.path("etcd-server.crt") }
func (p pki) etcdServerKey() string  { return p.path("etcd-server.key") }

// etcdClientCert is the API server's identity towards etcd: the only client
// certificate the etcd CA signs.
func (p pki) etcdClientCert() string { return p.path("apiserver-etcd-client.crt") }
func (p pki) etcdClientKey() string  { return p.path("apiserver-etcd-client.key") }

// serviceAccountPub is separate because --service-account-key-file only
// accepts public keys (or PKCS#1/SEC1 private keys), not PKCS#8.
func (p pki) serviceAccountPub() string { return p.path("service-account.pub") }

// certValidity is long because a local control plane's data dir may be reused
// for years; nothing here leaves the machine.
const certValidity = 10 * 365 * 24 * time.Hour

// ensure creates every missing certificate and key, and reissues every
// certificate its CA did not sign (the CA was made anew). Other files are
// kept, so a restarted control plane keeps its identity and issued tokens
// stay valid; a data dir from a version without etcd TLS gets its etcd
// certificates on its next start. The directory and the keys end up
// owner-only, also when they were not.
func (p pki) ensure() error {
	if err := os.MkdirAll(p.dir, 0o700); err != nil {
		return fmt.Errorf("create pki dir: %w", err)
	}
	// MkdirAll keeps the mode of a directory that exists.
	if err := os.Chmod(p.dir, 0o700); err != nil {
		return fmt.Errorf("tighten pki dir: %w", err)
	}
	if err := p.ensureCluster(); err != nil {
		return err
	}
	if err := p.ensureEtcd(); err != nil {
		return err
	}
	return p.tightenKeys()
}

// tightenKeys makes every private key owner-only: new ones are written so,
// but a key kept from before may not be.
func (p pki) tightenKeys() error {
	for _, key := range []string{p.caKey(), p.servingKey(), p.adminKey(), p.serviceAccount(),
		p.etcdCAKey(), p.etcdServerKey(), p.etcdClientKey()} {
		if err := os.Chmod(key, 0o600); err != nil {
			return fmt.Errorf("tighten %s: %w", key, err)
		}
	}
	return nil
}

func (p pki) ensureCluster() error {
	ca, caKey, err := p.ensureCA("volplane-ca", p.caCert(), p.caKey())
	if err != nil {
		return err
	}
	if !issuedBy(ca, p.servingCert(), p.servingKey()) {
		if err := p.writeLeaf(servingTemplate(), ca, caKey, p.servingCert(), p.servingKey()); err != nil {
			return err
		}
	}
	if !issuedBy(ca, p.adminCert(), p.adminKey()) {
		tmpl := leafTemplate("volplane-admin", []string{"system:masters"})
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
		if err := p.writeLeaf(tmpl, ca, caKey, p.adminCert(), p.adminKey()); err != nil {
			return err
		}
	}
	if !exists(p.serviceAccount()) || !exists(p.serviceAccountPub()) {
		return p.writeServiceAccountKeys()
	}
	return nil
}

// servingTemplate is the API server's serving certificate: loopback, the
// `kubernetes` Service's address and names, and any extra address (the
// advertise address of a control plane whose nodes reach it elsewhere).
func servingTemplate(extra ...net.IP) *x509.Certificate {
	tmpl := leafTemplate("volplane-apiserver", nil)
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	tmpl.IPAddresses = append([]net.IP{net.ParseIP("127.0.0.1"), net.ParseIP(serviceIP)}, extra...)
	tmpl.DNSNames = []string{"localhost", "kubernetes", "kubernetes.default",
		"kubernetes.default.svc", "kubernetes.default.svc.cluster.local"}
	return tmpl
}

// ensureServes reissues the serving certificate, keeping the addresses it
// already has, when it is not valid for ip: clients that dial the advertise
// address (the kubelet, kube-proxy's DNAT of the `kubernetes` Service) check
// it against the certificate.
func (p pki) ensureServes(ip net.IP) error {
	cert, err := readCert(p.servingCert())
	if err != nil {
		return fmt.Errorf("serving certificate: %w", err)
	}
	if cert.VerifyHostname(ip.String()) == nil {
		return nil
	}
	ca, caKey, err := loadCA(p.caCert(), p.caKey())
	if err != nil {
		return err
	}
	var extra []net.IP
	for _, have := range cert.IPAddresses {
		if !have.Equal(net.ParseIP("127.0.0.1")) && !have.Equal(net.ParseIP(serviceIP)) {
			extra = append(extra, have)
		}
	}
	return p.writeLeaf(servingTemplate(append(extra, ip)...), ca, caKey, p.servingCert(), p.servingKey())
}

func (p pki) writeServiceAccountKeys() error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("generate service account key: %w", err)
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return fmt.Errorf("marshal service account public key: %w", err)
	}
	// The public half first: a crash in between leaves the private key
	// missing, so the next start regenerates both rather than mismatching.
	if err := writePEM(p.serviceAccountPub(), "PUBLIC KEY", pub, 0o644); err != nil {
		return err
	}
	return writeKey(p.serviceAccount(), key)
}

// ensureEtcd creates etcd's CA, its serving certificate (also its peer
// identity, hence client auth too) and the API server's client certificate.
func (p pki) ensureEtcd() error {
	ca, caKey, err := p.ensureCA("volplane-etcd-ca", p.etcdCACert(), p.etcdCAKey())
	if err != nil {
		return err
	}
	if !issuedBy(ca, p.etcdServerCert(), p.etcdServerKey()) {
		tmpl := leafTemplate("volplane-etcd", nil)
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
		tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
		tmpl.DNSNames = []string{"localhost"}
		if err := p.writeLeaf(tmpl, ca, caKey, p.etcdServerCert(), p.etcdServerKey()); err != nil {
			return err
		}
	}
	if !issuedBy(ca, p.etcdClientCert(), p.etcdClientKey()) {
		tmpl := leafTemplate("volplane-apiserver-etcd-client", nil)
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
		if err := p.writeLeaf(tmpl, ca, caKey, p.etcdClientCert(), p.etcdClientKey()); err != nil {
			return err
		}
	}
	return nil
}

// ensureCA loads the CA at certPath/keyPath, creating it first if missing.
func (p pki) ensureCA(cn, certPath, keyPath string) (*x509.Certificate, crypto.Signer, error) {
	if !exists(certPath) || !exists(keyPath) {
		if err := writeCA(cn, certPath, keyPath); err != nil {
			return nil, nil, err
		}
	}
	return loadCA(certPath, keyPath)
}

// issuedBy says whether the certificate at certPath and its key are there
// and ca signed the certificate. One signed by a CA since made anew (its
// files were lost, or removed to rotate it) must be issued again: nothing
// that trusts the new CA accepts it, and whoever holds the old admin
// certificate must not keep its power past the rotation where the old CA
// is still trusted.
func issuedBy(ca *x509.Certificate, certPath, keyPath string) bool {
	if !exists(keyPath) {
		return false
	}
	cert, err := readCert(certPath)
	return err == nil && cert.CheckSignatureFrom(ca) == nil
}

func writeCA(cn, certPath, keyPath string) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("generate %s key: %w", cn, err)
	}
	tmpl := leafTemplate(cn, nil)
	tmpl.IsCA = true
	tmpl.BasicConstraintsValid = true
	tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageCRLSign
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return fmt.Errorf("self-sign %s: %w", cn, err)
	}
	if err := writeKey(keyPath, key); err != nil {
		return err
	}
	return writePEM(certPath, "CERTIFICATE", der, 0o644)
}

func loadCA(certPath, keyPath string) (*x509.Certificate, crypto.Signer, error) {
	cert, err := readCert(certPath)
	if err != nil {
		return nil, nil, fmt.Errorf("ca: %w", err)
	}
	keyPEM, err := os.ReadFile(keyPath)
	if err != nil {
		return nil, nil, fmt.Errorf("read ca key: %w", err)
	}
	kb, _ := pem.Decode(keyPEM)
	if kb == nil {
		return nil, nil, errors.New("ca key is not PEM")
	}
	key, err := x509.ParsePKCS8PrivateKey(kb.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("parse ca key: %w", err)
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, nil, errors.New("ca key cannot sign")
	}
	return cert, signer, nil
}

// readCert reads one PEM certificate.
func readCert(path string) (*x509.Certificate, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, fmt.Errorf("%s is not PEM", path)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", path, err)
	}
	return cert, nil
}

func (p pki) writeLeaf(tmpl, ca *x509.Certificate, caKey crypto.Signer, certPath, keyPath string) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("generate key for %s: %w", tmpl.Subject.CommonName, err)
	}
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return fmt.Errorf("sign %s: %w", tmpl.Subject.CommonName, err)
	}
	if err := writeKey(keyPath, key); err != nil {
		return err
	}
	return writePEM(certPath, "CERTIFICATE", der, 0o644)
}

func leafTemplate(cn string, orgs []string) *x509.Certificate {
	serial, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	now := time.Now()
	return &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: cn, Organization: orgs},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(certValidity),
	}
}

func writeKey(path string, key *ecdsa.PrivateKey) error {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return fmt.Errorf("marshal key %s: %w", path, err)
	}
	return writePEM(path, "PRIVATE KEY", der, 0o600)
}

// writePEM writes atomically (temp file, fsync, rename) so a crash never
// leaves a half-written certificate that would block every later start.
func writePEM(path, kind string, der []byte, mode os.FileMode) error {
	return writeFileAtomic(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), mode)
}

func writeFileAtomic(path string, data []byte, mode os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return fmt.Errorf("chmod %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("sync %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("close %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("rename %s: %w", path, err)
	}
	return nil
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
