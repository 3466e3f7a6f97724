package app_test

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
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

// The cluster client sends a script once: when its node holds the call past
// the client's timeout (a long script, a slow or stalled node in the field),
// the call fails at that timeout and is not sent again, so a script whose
// reply was only late does not run twice (a join queued twice, a consume
// reporting its own success as a replay). The node is a stand-in that counts
// the scripts it receives and never answers one: the count is read once the
// client is closed and the node has read every byte sent, so it does not
// depend on how fast the machine is.
func TestClusterClientSendsAScriptOnce(t *testing.T) {
	node := startHoldingNode(t)
	rdb, err := app.NewRedis("redis://"+node.addr(), true, "")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := rdb.Get(ctx, "{send-once}:n").Err(); !errors.Is(err, redis.Nil) { // the client learns the slot map
		t.Fatalf("GET through the stand-in: %v", err)
	}
	err = rdb.Eval(ctx, "return redis.call('INCR', KEYS[1])", []string{"{send-once}:n"}).Err()
	var netErr net.Error
	if !errors.Is(err, context.DeadlineExceeded) && !(errors.As(err, &netErr) && netErr.Timeout()) {
		t.Errorf("the call through a node that never answers gave %v, want a timeout", err)
	}
	if err := rdb.Close(); err != nil {
		t.Fatal(err)
	}
	if n := node.close(); n != 1 {
		t.Fatalf("the node received the script %d times, want once: the client sent it again after its timeout", n)
	}
}

// holdingNode is a stand-in Redis cluster of one node: it owns every slot,
// answers the client's handshake, CLUSTER SLOTS, COMMAND and GET, and holds
// every EVAL without an answer, counting them.
type holdingNode struct {
	ln    net.Listener
	evals atomic.Int64
	conns sync.WaitGroup
	mu    sync.Mutex
	open  []net.Conn
}

func startHoldingNode(t *testing.T) *holdingNode {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	n := &holdingNode{ln: ln}
	n.conns.Add(1)
	go func() {
		defer n.conns.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			n.mu.Lock()
			n.open = append(n.open, c)
			n.mu.Unlock()
			n.conns.Add(1)
			go n.serve(c)
		}
	}()
	t.Cleanup(func() { n.close() })
	return n
}

func (n *holdingNode) addr() string { return n.ln.Addr().String() }

// close waits until every connection the client closed is read to its end,
// then returns the number of EVALs received.
func (n *holdingNode) close() int64 {
	n.ln.Close()
	n.conns.Wait()
	return n.evals.Load()
}

// serve answers one connection's commands until the client closes it.
func (n *holdingNode) serve(c net.Conn) {
	defer n.conns.Done()
	defer c.Close()
	r := bufio.NewReader(c)
	_, port, _ := net.SplitHostPort(n.addr())
	for {
		args, err := readCommand(r)
		if err != nil {
			return
		}
		var reply string
		switch cmd := strings.ToUpper(strings.Join(args[:min(2, len(args))], " ")); {
		case strings.HasPrefix(cmd, "EVAL"):
			n.evals.Add(1)
			continue // held: no answer
		case cmd == "CLUSTER SLOTS":
			reply = fmt.Sprintf("*1\r\n*3\r\n:0\r\n:16383\r\n*3\r\n$9\r\n127.0.0.1\r\n:%s\r\n$40\r\n%s\r\n", port, strings.Repeat("a", 40))
		case cmd == "COMMAND":
			reply = "*0\r\n"
		case strings.HasPrefix(cmd, "GET "):
			reply = "$-1\r\n"
		case strings.HasPrefix(cmd, "CLIENT "):
			reply = "+OK\r\n"
		default: // HELLO too: the client falls back to RESP2
			reply = "-ERR unknown command '" + args[0] + "'\r\n"
		}
		if _, err := io.WriteString(c, reply); err != nil {
			return
		}
	}
}

// readCommand reads one command as a client sends it: an array of bulk strings.
func readCommand(r *bufio.Reader) ([]string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	if !strings.HasPrefix(line, "*") {
		return nil, fmt.Errorf("not an array: %q", line)
	}
	count, err := strconv.Atoi(strings.TrimSpace(line[1:]))
	if err != nil || count < 1 {
		return nil, fmt.Errorf("array length %q", line)
	}
	args := make([]string, count)
	for i := range args {
		line, err := r.ReadString('\n')
		if err != nil {
			return nil, err
		}
		size, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "$")))
		if err != nil || size < 0 {
			return nil, fmt.Errorf("bulk length %q", line)
		}
		b := make([]byte, size+2)
		if _, err := io.ReadFull(r, b); err != nil {
			return nil, err
		}
		args[i] = string(b[:size])
	}
	return args, nil
}
