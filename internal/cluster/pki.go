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

// serviceAccountPub is separate because --service-account-key-file only
// accepts public keys (or PKCS#1/SEC1 private keys), not PKCS#8.
func (p pki) serviceAccountPub() string { return p.path("service-account.pub") }

// certValidity is long because a local control plane's data dir may be reused
// for years; nothing here leaves the machine.
const certValidity = 10 * 365 * 24 * time.Hour

// ensure creates every missing certificate and key. Existing files are kept,
// so a restarted control plane keeps its identity and issued tokens stay valid.
func (p pki) ensure() error {
	if err := os.MkdirAll(p.dir, 0o700); err != nil {
		return fmt.Errorf("create pki dir: %w", err)
	}
	if !exists(p.caCert()) || !exists(p.caKey()) {
		if err := p.writeCA(); err != nil {
			return err
		}
	}
	ca, caKey, err := p.loadCA()
	if err != nil {
		return err
	}
	if !exists(p.servingCert()) {
		tmpl := leafTemplate("volplane-apiserver", nil)
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP(serviceIP)}
		tmpl.DNSNames = []string{"localhost", "kubernetes", "kubernetes.default",
			"kubernetes.default.svc", "kubernetes.default.svc.cluster.local"}
		if err := p.writeLeaf(tmpl, ca, caKey, p.servingCert(), p.servingKey()); err != nil {
			return err
		}
	}
	if !exists(p.adminCert()) {
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

func (p pki) writeCA() error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("generate ca key: %w", err)
	}
	tmpl := leafTemplate("volplane-ca", nil)
	tmpl.IsCA = true
	tmpl.BasicConstraintsValid = true
	tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageCRLSign
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return fmt.Errorf("self-sign ca: %w", err)
	}
	if err := writeKey(p.caKey(), key); err != nil {
		return err
	}
	return writePEM(p.caCert(), "CERTIFICATE", der, 0o644)
}

func (p pki) loadCA() (*x509.Certificate, crypto.Signer, error) {
	certPEM, err := os.ReadFile(p.caCert())
	if err != nil {
		return nil, nil, fmt.Errorf("read ca: %w", err)
	}
	keyPEM, err := os.ReadFile(p.caKey())
	if err != nil {
		return nil, nil, fmt.Errorf("read ca key: %w", err)
	}
	cb, _ := pem.Decode(certPEM)
	kb, _ := pem.Decode(keyPEM)
	if cb == nil || kb == nil {
		return nil, nil, errors.New("ca files are not PEM")
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("parse ca: %w", err)
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
