package operator_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/vestibule-dev/vestibule/internal/operator"
)

// clientPair writes a self-signed client certificate and its key as PEM files and returns
// their paths and the certificate.
func clientPair(t *testing.T) (certFile, keyFile string, cert *x509.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "vestibule operator"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		BasicConstraintsValid: true, IsCA: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ = x509.ParseCertificate(der)
	kder, _ := x509.MarshalECPrivateKey(key)
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "client.pem"), filepath.Join(dir, "client.key")
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600)
	return certFile, keyFile, cert
}

func TestClientCertificateReachesAnMTLSDomain(t *testing.T) {
	// GIVEN an API that requires a client certificate its truststore signed (origin mTLS)
	certFile, keyFile, cert := clientPair(t)
	trust := x509.NewCertPool()
	trust.AddCert(cert)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"rooms":[]}`))
	}))
	srv.TLS = &tls.Config{ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: trust}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())

	// WHEN the admin client presents the certificate
	hc, err := operator.ClientCertificateHTTP(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	hc.Transport.(*http.Transport).TLSClientConfig.RootCAs = roots // trust the test server
	c := &operator.Client{Endpoint: srv.URL, Auth: operator.BearerKey("k"), HTTP: hc}
	// THEN the call goes through
	if _, err := c.ListRooms(t.Context()); err != nil {
		t.Errorf("with the client certificate: %v", err)
	}
	// and without it the handshake refuses it
	plain := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
	c = &operator.Client{Endpoint: srv.URL, Auth: operator.BearerKey("k"), HTTP: plain}
	if _, err := c.ListRooms(t.Context()); err == nil {
		t.Error("without a client certificate the call went through")
	}
	// and a missing file is a clear error
	if _, err := operator.ClientCertificateHTTP(filepath.Join(t.TempDir(), "none.pem"), keyFile); err == nil {
		t.Error("a missing certificate file loaded")
	}
}
