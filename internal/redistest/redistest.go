// Package redistest gives tests a real Redis: a single node and a 3-node
// cluster. Single and Cluster use REDIS_URL and REDIS_CLUSTER_ADDRS when they
// are set (one server that every test binary of a run shares); when they are
// not, it starts redis-server processes on free loopback ports, in a
// temporary folder, and stops them when the test binary ends (call Main from
// TestMain).
//
// What Single and Cluster return may be shared with other test binaries, so a
// test on them keeps to keys of its own (Room) and counts only those. A test
// that needs the whole server (it flushes it, kills, pauses or reconfigures
// it, reads INFO or DBSIZE, or runs a loop over every room it holds) takes a
// server of its own with Own or OwnCluster, which ignore REDIS_URL.
package redistest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vestibule-dev/vestibule/internal/testkit"
)

var (
	mu       sync.Mutex
	started  []*Server
	single   *Server
	cluster  []*Server
	baseDir  string
	setupErr error
)

// Main runs the tests and then stops every server this package started.
// Use it as: func TestMain(m *testing.M) { os.Exit(redistest.Main(m)) }.
func Main(m *testing.M) int {
	code := m.Run()
	StopAll()
	return code
}

// StopAll stops every server started by this package.
func StopAll() {
	mu.Lock()
	defer mu.Unlock()
	for _, s := range started {
		s.Stop()
	}
	started = nil
	single, cluster = nil, nil
	if baseDir != "" {
		_ = os.RemoveAll(baseDir)
		baseDir = ""
	}
}

// Server is one redis-server process started by this package.
type Server struct {
	Addr string
	Dir  string
	Args []string
	cmd  *exec.Cmd
	done chan struct{}
}

func dir() (string, error) {
	if baseDir == "" {
		d, err := os.MkdirTemp("", "vestibule-redis-")
		if err != nil {
			return "", err
		}
		baseDir = d
	}
	return baseDir, nil
}

// Start starts a redis-server on a free loopback port with the extra
// configuration directives given (for example "appendonly", "yes").
// The caller stops it (or StopAll does).
func Start(extra ...string) (*Server, error) {
	mu.Lock()
	defer mu.Unlock()
	return startLocked(extra...)
}

func startLocked(extra ...string) (*Server, error) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		return nil, fmt.Errorf("redis-server not found on PATH (make test installs it): %w", err)
	}
	base, err := dir()
	if err != nil {
		return nil, err
	}
	// A free port can be taken by another process (another test binary's
	// server) between FreePort and the server's bind: then try another.
	for range 5 {
		port, err := testkit.FreePort()
		if err != nil {
			return nil, err
		}
		s, err := startOn(base, port, extra)
		if !errors.Is(err, errPortTaken) {
			return s, err
		}
	}
	return nil, fmt.Errorf("redistest: %w five times", errPortTaken)
}

// errPortTaken is a start whose port another process took first.
var errPortTaken = errors.New("the port was taken by another process")

// startOn starts a server on port in a directory of its own. A port comes
// free again when a test stops its server, and a directory named by the port
// alone would hand the next server on it the last one's files: a cluster
// node's nodes.conf, which has its own slots before it is asked to
// ("ERR Slot 0 is already busy").
func startOn(base string, port int, extra []string) (*Server, error) {
	d, err := os.MkdirTemp(base, strconv.Itoa(port)+"-")
	if err != nil {
		return nil, err
	}
	args := []string{
		"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", d,
		"--save", "", "--appendonly", "no", "--daemonize", "no", "--loglevel", "warning",
		"--logfile", filepath.Join(d, "redis.log"),
	}
	for i := 0; i+1 < len(extra); i += 2 {
		args = append(args, "--"+strings.TrimPrefix(extra[i], "--"), extra[i+1])
	}
	s := &Server{Addr: fmt.Sprintf("127.0.0.1:%d", port), Dir: d, Args: args}
	if err := s.run(); err != nil {
		return nil, err
	}
	started = append(started, s)
	return s, nil
}

func (s *Server) run() error {
	s.cmd = exec.Command("redis-server", s.Args...)
	s.cmd.Dir = s.Dir
	if err := s.cmd.Start(); err != nil {
		return err
	}
	s.done = make(chan struct{})
	go func(c *exec.Cmd, done chan struct{}) { _ = c.Wait(); close(done) }(s.cmd, s.done)
	return s.waitReady(10 * time.Second)
}

func (s *Server) waitReady(limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		select {
		case <-s.done:
			log, _ := os.ReadFile(filepath.Join(s.Dir, "redis.log"))
			if strings.Contains(string(log), "Address already in use") {
				return fmt.Errorf("redis-server on %s: %w", s.Addr, errPortTaken)
			}
			return fmt.Errorf("redis-server on %s exited: %s", s.Addr, log)
		default:
		}
		c, err := net.DialTimeout("tcp", s.Addr, 200*time.Millisecond)
		if err == nil {
			_ = c.Close()
			// The server answering must be this process's: another test
			// binary's may hold the port (ours then fails to bind), and its
			// flushes and its stop would be this binary's faults.
			return s.ours()
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("redis-server on %s did not start in %s", s.Addr, limit)
}

// ours checks that the server on s.Addr is s's process (INFO's
// process_id); errPortTaken, with s's process stopped, when it is another's.
func (s *Server) ours() error {
	c := redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1})
	defer func() { _ = c.Close() }()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	info, err := c.Info(ctx, "server").Result()
	if err != nil {
		return fmt.Errorf("redis-server on %s: %w", s.Addr, err)
	}
	want := "process_id:" + strconv.Itoa(s.cmd.Process.Pid)
	for _, l := range strings.Split(info, "\n") {
		if strings.TrimSpace(l) == want {
			return nil
		}
	}
	s.Stop()
	return fmt.Errorf("redis-server on %s: %w", s.Addr, errPortTaken)
}

// Stop kills the server (SIGKILL: as abrupt as a crash) and waits for it.
func (s *Server) Stop() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	<-s.done
	s.cmd = nil
}

// Pause freezes the server (SIGSTOP), as a stalled host or a network
// partition would: the kernel still accepts connections, but nothing answers
// until Resume. Stop works on a paused server.
func (s *Server) Pause() error {
	if s.cmd == nil || s.cmd.Process == nil {
		return fmt.Errorf("redistest: server on %s is not running", s.Addr)
	}
	return s.cmd.Process.Signal(syscall.SIGSTOP)
}

// Resume lets a paused server go on (SIGCONT).
func (s *Server) Resume() error {
	if s.cmd == nil || s.cmd.Process == nil {
		return fmt.Errorf("redistest: server on %s is not running", s.Addr)
	}
	return s.cmd.Process.Signal(syscall.SIGCONT)
}

// Restart stops the server and starts it again on the same port and folder,
// so a server with append-only persistence comes back with its data.
func (s *Server) Restart() error {
	s.Stop()
	return s.run()
}

// Single returns a client of a single-node Redis: REDIS_URL, or a server
// started once per test binary.
func Single(tb testing.TB) *redis.Client {
	tb.Helper()
	if u := os.Getenv("REDIS_URL"); u != "" {
		opt, err := redis.ParseURL(u)
		if err != nil {
			tb.Fatalf("REDIS_URL: %v", err)
		}
		c := redis.NewClient(opt)
		tb.Cleanup(func() { _ = c.Close() })
		return c
	}
	mu.Lock()
	if single == nil && setupErr == nil {
		single, setupErr = startLocked()
	}
	s, err := single, setupErr
	mu.Unlock()
	if err != nil {
		tb.Fatalf("redistest: %v", err)
	}
	c := redis.NewClient(&redis.Options{Addr: s.Addr})
	tb.Cleanup(func() { _ = c.Close() })
	return c
}

// Cluster returns a client of a 3-node Redis Cluster: REDIS_CLUSTER_ADDRS
// (comma separated), or a cluster started once per test binary.
func Cluster(tb testing.TB) *redis.ClusterClient {
	tb.Helper()
	addrs, err := ClusterAddrs()
	if err != nil {
		tb.Fatalf("redistest: %v", err)
	}
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
	tb.Cleanup(func() { _ = c.Close() })
	return c
}

// ClusterAddrs returns the seed addresses of the test cluster, starting it if needed.
func ClusterAddrs() ([]string, error) {
	if a := os.Getenv("REDIS_CLUSTER_ADDRS"); a != "" {
		return strings.Split(a, ","), nil
	}
	mu.Lock()
	defer mu.Unlock()
	if cluster == nil {
		nodes, err := startClusterLocked(3, 0)
		if err != nil {
			return nil, err
		}
		cluster = nodes
	}
	addrs := make([]string, len(cluster))
	for i, s := range cluster {
		addrs[i] = s.Addr
	}
	return addrs, nil
}

// StartCluster starts a new cluster of masters primaries, each with replicas
// replicas, and waits until it is healthy. The caller may stop nodes of it.
func StartCluster(masters, replicas int) ([]*Server, error) {
	mu.Lock()
	defer mu.Unlock()
	return startClusterLocked(masters, replicas)
}

// StartClusterWith is StartCluster with extra configuration directives for
// every node (for example "repl-diskless-sync-delay", "0", so replicas sync at
// once instead of after Redis's default 5 s). Replicas may still be syncing
// when it returns: a test that kills a primary waits for ROLE to say connected.
func StartClusterWith(masters, replicas int, extra ...string) ([]*Server, error) {
	mu.Lock()
	defer mu.Unlock()
	return startClusterLocked(masters, replicas, extra...)
}

func startClusterLocked(masters, replicas int, extra ...string) ([]*Server, error) {
	var nodes []*Server
	for i := 0; i < masters*(1+replicas); i++ {
		s, err := startLocked(append([]string{"cluster-enabled", "yes", "cluster-config-file", "nodes.conf",
			"cluster-node-timeout", "1000", "cluster-require-full-coverage", "no"}, extra...)...)
		if err != nil {
			return nil, err
		}
		nodes = append(nodes, s)
	}
	ctx := context.Background()
	clients := make([]*redis.Client, len(nodes))
	for i, n := range nodes {
		clients[i] = redis.NewClient(&redis.Options{Addr: n.Addr})
		defer func() { _ = clients[i].Close() }()
	}
	const slots = 16384
	for i := 0; i < masters; i++ {
		lo, hi := i*slots/masters, (i+1)*slots/masters-1
		if err := clients[i].Do(ctx, "CLUSTER", "ADDSLOTSRANGE", lo, hi).Err(); err != nil {
			return nil, fmt.Errorf("addslotsrange: %w", err)
		}
	}
	host, port0, _ := net.SplitHostPort(nodes[0].Addr)
	for i := 1; i < len(nodes); i++ {
		if err := clients[i].ClusterMeet(ctx, host, port0).Err(); err != nil {
			return nil, fmt.Errorf("cluster meet: %w", err)
		}
	}
	if err := meetAndReplicate(ctx, clients, masters, replicas); err != nil {
		return nil, err
	}
	if err := waitSettled(ctx, clients); err != nil {
		return nil, err
	}
	return nodes, nil
}

// meetAndReplicate waits until every node knows every other, then makes the
// nodes after the masters their replicas, r-th replica of master m at
// masters + r*masters + m.
func meetAndReplicate(ctx context.Context, clients []*redis.Client, masters, replicas int) error {
	// Wait until every node knows every other, then attach replicas.
	if err := waitFor(15*time.Second, func() bool {
		for _, c := range clients {
			ns, err := c.ClusterNodes(ctx).Result()
			if err != nil || strings.Count(strings.TrimSpace(ns), "\n")+1 != len(clients) {
				return false
			}
		}
		return true
	}); err != nil {
		return fmt.Errorf("cluster nodes did not meet: %w", err)
	}
	for r := 0; r < replicas; r++ {
		for m := 0; m < masters; m++ {
			id, err := clients[m].Do(ctx, "CLUSTER", "MYID").Text()
			if err != nil {
				return err
			}
			rep := clients[masters+r*masters+m]
			if err := rep.Do(ctx, "CLUSTER", "REPLICATE", id).Err(); err != nil {
				return fmt.Errorf("cluster replicate: %w", err)
			}
		}
	}
	return nil
}

// waitSettled waits until every node reports the cluster ok and every node
// agrees on who serves which slot.
func waitSettled(ctx context.Context, clients []*redis.Client) error {
	if err := waitFor(20*time.Second, func() bool {
		for _, c := range clients {
			info, err := c.ClusterInfo(ctx).Result()
			if err != nil || !strings.Contains(info, "cluster_state:ok") {
				return false
			}
		}
		return true
	}); err != nil {
		return fmt.Errorf("cluster not healthy: %w", err)
	}
	// Every node reporting ok is not every node agreeing on who serves which
	// slot: a client that loads a node's view before the others' gossip lands
	// can be sent MOVED in a loop. Wait until every view is the same.
	if err := waitFor(20*time.Second, func() bool {
		var first string
		for i, c := range clients {
			v, err := slotView(ctx, c)
			if err != nil || v == "" || (i > 0 && v != first) {
				return false
			}
			if i == 0 {
				first = v
			}
		}
		return true
	}); err != nil {
		return fmt.Errorf("cluster nodes disagree on the slots: %w", err)
	}
	return nil
}

// slotView is a node's CLUSTER SHARDS as text: each slot range and the id of
// the online primary serving it, in slot order ("" while a range has none).
func slotView(ctx context.Context, c *redis.Client) (string, error) {
	shards, err := c.ClusterShards(ctx).Result()
	if err != nil {
		return "", err
	}
	type owned struct {
		start, end int64
		id         string
	}
	var ranges []owned
	for _, sh := range shards {
		primary := ""
		for _, n := range sh.Nodes {
			if n.Role == "master" && n.Health == "online" {
				primary = n.ID
			}
		}
		for _, r := range sh.Slots {
			if primary == "" {
				return "", nil
			}
			ranges = append(ranges, owned{r.Start, r.End, primary})
		}
	}
	sort.Slice(ranges, func(i, j int) bool { return ranges[i].start < ranges[j].start })
	var b strings.Builder
	for _, r := range ranges {
		fmt.Fprintf(&b, "%d-%d:%s;", r.start, r.end, r.id)
	}
	return b.String(), nil
}

func waitFor(limit time.Duration, ok func() bool) error {
	if !testkit.WaitFor(limit, ok) {
		return fmt.Errorf("timed out after %s", limit)
	}
	return nil
}

// OwnServer starts a redis-server for this test alone, whatever REDIS_URL
// says, with the extra configuration directives given, and stops it when the
// test ends: for a test that stops, pauses or restarts it.
func OwnServer(tb testing.TB, extra ...string) *Server {
	tb.Helper()
	s, err := Start(extra...)
	if err != nil {
		tb.Fatalf("redistest: %v", err)
	}
	tb.Cleanup(s.Stop)
	return s
}

// Own returns a client of a redis-server of this test's own (OwnServer),
// whatever REDIS_URL says: for a test that needs the whole server.
func Own(tb testing.TB, extra ...string) *redis.Client {
	tb.Helper()
	c := redis.NewClient(&redis.Options{Addr: OwnServer(tb, extra...).Addr})
	tb.Cleanup(func() { _ = c.Close() })
	return c
}

// OwnCluster returns a client of a 3-node cluster of this test's own,
// whatever REDIS_CLUSTER_ADDRS says, stopped when the test ends.
func OwnCluster(tb testing.TB) *redis.ClusterClient {
	tb.Helper()
	nodes, err := StartCluster(3, 0)
	for _, n := range nodes {
		tb.Cleanup(n.Stop)
	}
	if err != nil {
		tb.Fatalf("redistest: %v", err)
	}
	addrs := make([]string, len(nodes))
	for i, n := range nodes {
		addrs[i] = n.Addr
	}
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
	tb.Cleanup(func() { _ = c.Close() })
	return c
}

// OwnEach is ForEach on a single node and a cluster of the test's own (Own,
// OwnCluster).
func OwnEach(t *testing.T, f func(t *testing.T, c redis.UniversalClient)) {
	t.Run("single", func(t *testing.T) { f(t, Own(t)) })
	t.Run("cluster", func(t *testing.T) { f(t, OwnCluster(t)) })
}

// Clients returns the single node and the cluster, named, so a suite can run
// against both: for name, c := range redistest.Clients(t) { t.Run(name, ...) }.
func Clients(tb testing.TB) map[string]redis.UniversalClient {
	tb.Helper()
	return map[string]redis.UniversalClient{
		"single":  Single(tb),
		"cluster": Cluster(tb),
	}
}

// ForEach runs f as a subtest against the single node ("single") and against
// the cluster ("cluster").
func ForEach(t *testing.T, f func(t *testing.T, c redis.UniversalClient)) {
	for name, c := range Clients(t) {
		t.Run(name, func(t *testing.T) { f(t, c) })
	}
}

// Room returns a fresh room id, unique in this process, so tests need no flush.
func Room(tb testing.TB) string {
	b := make([]byte, 6)
	rand.Read(b)
	name := strings.Map(func(r rune) rune {
		if r == '-' || r == '_' || ('a' <= r && r <= 'z') || ('A' <= r && r <= 'Z') || ('0' <= r && r <= '9') {
			return r
		}
		return '_'
	}, tb.Name())
	if len(name) > 40 {
		name = name[len(name)-40:]
	}
	return strings.Trim(name, "-_") + "-" + hex.EncodeToString(b)
}

// FlushAll empties every node the client reaches (every primary of a
// cluster). It refuses a server that Single or Cluster hand out, which other
// tests (and, with REDIS_URL, other test binaries) share: a test that flushes
// takes a server of its own (Own, OwnCluster).
func FlushAll(ctx context.Context, c redis.UniversalClient) error {
	cc, ok := c.(*redis.ClusterClient)
	if !ok {
		rc, _ := c.(*redis.Client)
		if rc == nil || !owned(rc.Options().Addr) {
			return errShared
		}
		return c.FlushAll(ctx).Err()
	}
	for _, a := range cc.Options().Addrs {
		if !owned(a) {
			return errShared
		}
	}
	// The client's view of the cluster can be older than the cluster (a node
	// it has not met yet flushes nothing): reload it, flush every primary,
	// and check that nothing is left, a few times if need be.
	var left atomic.Int64
	for range 20 {
		cc.ReloadState(ctx)
		left.Store(0)
		err := cc.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
			if err := n.FlushAll(ctx).Err(); err != nil {
				return err
			}
			size, err := n.DBSize(ctx).Result()
			left.Add(size)
			return err
		})
		if err == nil && left.Load() == 0 {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("redistest: %d keys left after FLUSHALL on every primary", left.Load())
}

// errShared is a flush of a server that other tests share.
var errShared = errors.New("redistest: FlushAll of a server other tests share (Single, Cluster, REDIS_URL): " +
	"a test that flushes takes a server of its own (Own, OwnCluster)")

// owned reports whether addr is a server this package started for one test
// (Start, Own, StartCluster), not the shared single node or cluster.
func owned(addr string) bool {
	mu.Lock()
	defer mu.Unlock()
	if single != nil && single.Addr == addr {
		return false
	}
	for _, s := range cluster {
		if s.Addr == addr {
			return false
		}
	}
	for _, s := range started {
		if s.Addr == addr {
			return true
		}
	}
	return false
}
