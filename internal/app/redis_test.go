package app_test

import (
	"context"
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
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vestibule-dev/vestibule/internal/app"
	"github.com/vestibule-dev/vestibule/internal/config"
	"github.com/vestibule-dev/vestibule/internal/redistest"
	"github.com/vestibule-dev/vestibule/internal/room"
	"github.com/vestibule-dev/vestibule/internal/roomdb"
	"github.com/vestibule-dev/vestibule/internal/testkit"
)

func TestMain(m *testing.M) { os.Exit(redistest.Main(m)) }

func getenv(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

// redisOf builds the client exactly as every function does.
func redisOf(t *testing.T, env map[string]string) redis.UniversalClient {
	t.Helper()
	c, err := config.Load(getenv(env))
	if err != nil {
		t.Fatal(err)
	}
	core, err := app.New(c, app.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { core.Close() })
	return core.Redis
}

// engineJourney runs enqueue → tick → consume on a room through a client made
// by the configuration path the functions use.
func engineJourney(t *testing.T, rdb redis.UniversalClient) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	now := time.Now()
	q := roomdb.New(rdb, roomdb.WithClock(func() time.Time { return now }))
	id := redistest.Room(t)
	cfg := room.DefaultConfig()
	cfg.OriginURL = "https://origin.example/"
	if _, err := q.PutConfig(ctx, id, cfg); err != nil {
		t.Fatal(err)
	}
	p, err := q.Enqueue(ctx, id, "visitor")
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ { // the first tick starts the admission bucket
		if _, err := q.Tick(ctx, id); err != nil {
			t.Fatal(err)
		}
		now = now.Add(time.Second)
	}
	if p, err = q.Poll(ctx, p.Ticket); err != nil || p.State != room.StateAdmitted {
		t.Fatalf("poll after tick: %+v %v", p, err)
	}
	if _, err := q.Consume(ctx, id, p.Ticket.Seq, cfg.OriginURL); err != nil {
		t.Fatal(err)
	}
}

// REDIS_URL + REDIS_CLUSTER=true reach the 3-node cluster and every script runs on it.
func TestClusterFromEnv(t *testing.T) {
	addrs, err := redistest.ClusterAddrs()
	if err != nil {
		t.Fatal(err)
	}
	rdb := redisOf(t, map[string]string{"REDIS_URL": "redis://" + addrs[1], "REDIS_CLUSTER": "true"})
	if _, ok := rdb.(*redis.ClusterClient); !ok {
		t.Fatalf("REDIS_CLUSTER=true gave a %T", rdb)
	}
	engineJourney(t, rdb)
}

// rediss:// with a CA file reaches a TLS-only redis-server whose certificate a
// test CA signed; without the CA the server is refused (no silent skip of
// verification).
func TestTLS(t *testing.T) {
	dir := t.TempDir()
	caFile := writeCerts(t, dir)
	port, err := testkit.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	srv, err := redistest.Start(
		"tls-port", strconv.Itoa(port),
		"tls-cert-file", filepath.Join(dir, "server.pem"),
		"tls-key-file", filepath.Join(dir, "server-key.pem"),
		"tls-ca-cert-file", caFile,
		"tls-auth-clients", "no",
	)
	if err != nil {
		t.Fatalf("TLS redis-server: %v", err)
	}
	defer srv.Stop()
	url := fmt.Sprintf("rediss://localhost:%d", port)

	rdb := redisOf(t, map[string]string{"REDIS_URL": url, "REDIS_CA_FILE": caFile})
	engineJourney(t, rdb)

	// Without the CA, the system roots do not trust the server: refused.
	untrusted, err := app.NewRedis(url, false, "")
	if err != nil {
		t.Fatal(err)
	}
	defer untrusted.Close()
	if err := untrusted.Ping(context.Background()).Err(); err == nil {
		t.Fatal("a server signed by an unknown CA was trusted")
	}
	if _, err := app.NewRedis(url, false, filepath.Join(dir, "missing.pem")); !errors.Is(err, config.ErrConfig) {
		t.Fatalf("missing CA file: %v", err)
	}
}

// writeCerts makes a CA and a server certificate for localhost/127.0.0.1 and
// returns the CA file.
func writeCerts(t *testing.T, dir string) string {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "vestibule test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	srvKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	srvTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "localhost"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	srvDER, err := x509.CreateCertificate(rand.Reader, srvTmpl, ca, &srvKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, _ := x509.MarshalECPrivateKey(srvKey)
	write := func(name, typ string, der []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("server.pem", "CERTIFICATE", srvDER)
	write("server-key.pem", "EC PRIVATE KEY", keyDER)
	return write("ca.pem", "CERTIFICATE", caDER)
}

// The cluster client sends a script once: when its node is busy past the
// client's timeout (a long script here; a slow or stalled node in the field),
// the call fails at that timeout and is not sent again, so a script whose reply
// was only late does not run twice (a join queued twice, a consume reporting
// its own success as a replay).
func TestClusterClientSendsAScriptOnce(t *testing.T) {
	nodes, err := redistest.StartCluster(3, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, n := range nodes {
			n.Stop()
		}
	})
	rdb, err := app.NewRedis("redis://"+nodes[0].Addr, true, "")
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	ctx := context.Background()
	const key = "{send-once}:n"
	if err := rdb.Set(ctx, key, 0, 0).Err(); err != nil { // the client learns the slot map
		t.Fatal(err)
	}
	// StartCluster gives node i the i-th third of the slots.
	owner := redis.NewClient(&redis.Options{Addr: nodes[min(2, roomdb.Slot("send-once")*3/16384)].Addr, ReadTimeout: 5 * time.Second})
	defer owner.Close()
	// On a loaded machine the call sometimes never reaches the node (n = 0: it
	// waited past its deadline before it was written, "context deadline
	// exceeded"); that attempt proves nothing, so it is tried again. A second
	// run (n = 2) fails at once.
	for attempt := 1; ; attempt++ {
		if err := rdb.Set(ctx, key, 0, 0).Err(); err != nil {
			t.Fatal(err)
		}
		busy := make(chan error, 1)
		go func() {
			// The node runs nothing else for 1.5 s: what is sent to it meanwhile waits in its socket.
			busy <- owner.Eval(ctx, `local t = redis.call('TIME')
local stop = t[1] * 1000000 + t[2] + 1500000
repeat t = redis.call('TIME') until t[1] * 1000000 + t[2] >= stop
return 0`, nil).Err()
		}()
		time.Sleep(100 * time.Millisecond)
		start := time.Now()
		callErr := rdb.Eval(ctx, "return redis.call('INCR', KEYS[1])", []string{key}).Err()
		took := time.Since(start)
		err := callErr
		if err == nil {
			t.Errorf("the call succeeded after %s, through the busy script", took)
		} else if took > 2*app.RedisIOTimeout {
			t.Errorf("the call failed after %s, not at the client's timeout (%s): %v", took, app.RedisIOTimeout, err)
		}
		if err := <-busy; err != nil {
			t.Fatal(err)
		}
		n, err := owner.Get(ctx, key).Int()
		switch {
		case err != nil:
			t.Fatal(err)
		case n > 1:
			t.Fatalf("the script ran %d times: the client sent it again after its timeout", n)
		case n == 1:
			return
		case attempt == 5:
			t.Skipf("in %d attempts the call never reached the busy node: the machine is too loaded to stage the case", attempt)
		}
		t.Logf("attempt %d: the call never reached the busy node (%s: %v)", attempt, took, callErr)
	}
}
