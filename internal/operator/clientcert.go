package operator

import (
	"crypto/tls"
	"net/http"
	"time"
)

// ClientCertificateHTTP is an HTTP client that presents the client certificate in certFile and
// keyFile (PEM) to servers that ask for one: a stack deployed with origin mTLS on its API's
// domain (docs/DEPLOY.md, "Traffic comes through CloudFront") refuses any other at the TLS
// handshake, the admin calls too.
func ClientCertificateHTTP(certFile, keyFile string) (*http.Client, error) {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, &Error{Message: "loading the client certificate: " + err.Error(), Err: err,
			Hint: "--client-cert and --client-key name PEM files: a certificate the API's truststore trusts, and its key"}
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	return &http.Client{Timeout: 15 * time.Second, Transport: tr}, nil
}
