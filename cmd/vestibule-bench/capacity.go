package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/redis/go-redis/v9"

	"github.com/vestibule-dev/vestibule/internal/api"
	"github.com/vestibule-dev/vestibule/internal/app"
	"github.com/vestibule-dev/vestibule/internal/app/apiapp"
	"github.com/vestibule-dev/vestibule/internal/redistest"
	"github.com/vestibule-dev/vestibule/internal/room"
	"github.com/vestibule-dev/vestibule/internal/roomdb"
)

// The capacity figures: how many polls a second the one Redis of a
// room with 1,000,000 waiting serves, against the polls 1,000,000 visitors make
// under the poll policy; and how many joins a second (the per-client limit
// check and the enqueue, as the enqueue route makes them) against a burst of
// 1,000,000 in a minute.
const (
	// roomWaiting is the room the capacity figures are about.
	roomWaiting = 1_000_000
	// burstJoinsPerSecond is 1,000,000 joins in 60 s.
	burstJoinsPerSecond = 1_000_000.0 / 60
	// capacityGoal: each capacity is at least this many times the demand.
	capacityGoal = 2.0
	// capacityTickets are the visitors polled in turn, each once per virtual
	// second (the clock moves one second per round), so no visitor polls faster
	// than the engine's minimum interval whatever rate this machine reaches.
	capacityTickets = 30_000
)

// timesBaseline is the goal "value ≥ k × baseline".
func timesBaseline(k float64) func(r *Row) {
	return func(r *Row) {
		r.Goal = fmt.Sprintf("≥ %s× baseline", num(k))
		ok := r.Ratio >= k
		r.Met = &ok
	}
}

// route is the API's Lambda handler called in-process with the API Gateway v2
// events a Lambda receives (no HTTP, no copies of the route code), on a clock
// the bench owns.
type route struct {
	h        *api.Handler
	admin    string
	nowNanos atomic.Int64
	clock    func() time.Time // the engine's and the handler's: nowNanos
	// What the requests cost besides Redis: the function's log (the JSON
	// request line at the default level) and the response bodies.
	requests, logBytes, bodyBytes atomic.Int64
}

// Write counts the handler's log output.
func (r *route) Write(p []byte) (int, error) {
	r.logBytes.Add(int64(len(p)))
	return len(p), nil
}

// perRequest returns the log and body bytes per request since the last call,
// and resets the counters.
func (r *route) perRequest() (logB, bodyB float64) {
	n := float64(max(r.requests.Swap(0), 1))
	return float64(r.logBytes.Swap(0)) / n, float64(r.bodyBytes.Swap(0)) / n
}

func newRoute(rdb redis.UniversalClient, start time.Time) (*route, error) {
	cfg, keys, err := apiapp.Ephemeral("vestibule-bench")
	if err != nil {
		return nil, err
	}
	r := &route{admin: cfg.AdminKey}
	r.nowNanos.Store(start.UnixNano())
	r.clock = func() time.Time { return time.Unix(0, r.nowNanos.Load()) }
	r.h = apiapp.NewHandler(app.NewEngine(rdb, r.clock), keys, cfg, apiapp.Options{Clock: r.clock, Logger: app.NewLogger(cfg, r)})
	return r, nil
}

func (r *route) do(ctx context.Context, method, path, bearer, sourceIP string, body []byte) (int, string, error) {
	ev := events.APIGatewayV2HTTPRequest{
		Version: "2.0", RouteKey: "$default", RawPath: path,
		Headers: map[string]string{"content-type": "application/json"}, Body: string(body),
	}
	if bearer != "" {
		ev.Headers["authorization"] = "Bearer " + bearer
	}
	ev.RequestContext.HTTP.Method, ev.RequestContext.HTTP.Path, ev.RequestContext.HTTP.SourceIP = method, path, sourceIP
	resp, err := r.h.Handle(ctx, ev)
	if err != nil {
		return 0, "", err
	}
	r.requests.Add(1)
	r.bodyBytes.Add(int64(len(resp.Body)))
	return resp.StatusCode, resp.Body, nil
}

// advance moves the clock forward to t, never back.
func (r *route) advance(t time.Time) {
	for {
		cur := r.nowNanos.Load()
		if t.UnixNano() <= cur || r.nowNanos.CompareAndSwap(cur, t.UnixNano()) {
			return
		}
	}
}

// put creates the room through the admin route.
func (r *route) put(ctx context.Context, roomID string, c room.Config) error {
	b, _ := json.Marshal(c)
	status, body, err := r.do(ctx, "PUT", "/api/admin/rooms/"+roomID, r.admin, "127.0.0.1", b)
	if err == nil && status != http.StatusOK {
		err = fmt.Errorf("PUT room: %d %s", status, body)
	}
	return err
}

// join enqueues one visitor through the enqueue route from address ip and
// returns the ticket.
func (r *route) join(ctx context.Context, roomID, ip string) (string, error) {
	status, body, err := r.do(ctx, "POST", "/api/rooms/"+roomID+"/enqueue", "", ip, nil)
	if err != nil {
		return "", err
	}
	var p struct{ Ticket string }
	if status != http.StatusOK || json.Unmarshal([]byte(body), &p) != nil || p.Ticket == "" {
		return "", fmt.Errorf("enqueue: %d %s", status, body)
	}
	return p.Ticket, nil
}

// clientIP is the i-th of distinct addresses (10.0.0.0/8 and on), one per
// joining visitor as in a real burst, so the per-client limit lets each in.
func clientIP(i int64) string {
	return fmt.Sprintf("%d.%d.%d.%d", 10+(i>>24)%200, (i>>16)&255, (i>>8)&255, i&255)
}

// redisCPU is the CPU time the Redis server's main thread has used, in
// seconds (INFO cpu; the process's total when the server does not split it).
func redisCPU(ctx context.Context, rdb *redis.Client) (float64, error) {
	info, err := rdb.Info(ctx, "cpu").Result()
	if err != nil {
		return 0, err
	}
	f := map[string]float64{}
	for _, l := range strings.Split(info, "\r\n") {
		if k, v, ok := strings.Cut(l, ":"); ok {
			f[k], _ = strconv.ParseFloat(v, 64)
		}
	}
	if _, ok := f["used_cpu_user_main_thread"]; ok {
		return f["used_cpu_user_main_thread"] + f["used_cpu_sys_main_thread"], nil
	}
	if _, ok := f["used_cpu_user"]; !ok {
		return 0, fmt.Errorf("no used_cpu_user in INFO cpu")
	}
	return f["used_cpu_user"] + f["used_cpu_sys"], nil
}

// evalshaMicros is the time Redis has spent running EVALSHA calls, the
// scripts themselves (INFO commandstats, µs), and how many there were.
func evalshaMicros(ctx context.Context, rdb *redis.Client) (usec float64, calls int64, err error) {
	info, err := rdb.Info(ctx, "commandstats").Result()
	if err != nil {
		return 0, 0, err
	}
	for _, l := range strings.Split(info, "\r\n") {
		rest, ok := strings.CutPrefix(l, "cmdstat_evalsha:")
		if !ok {
			continue
		}
		for _, kv := range strings.Split(rest, ",") {
			k, v, _ := strings.Cut(kv, "=")
			switch k {
			case "usec":
				usec, _ = strconv.ParseFloat(v, 64)
			case "calls":
				calls, _ = strconv.ParseInt(v, 10, 64)
			}
		}
	}
	return usec, calls, nil
}

// split is where a capacity's Redis CPU goes, per operation (µs): the
// scripts (EVALSHA's own time) and the rest, reading the requests from the
// connections and writing the answers.
type split struct{ total, script float64 }

func (s split) String() string {
	return fmt.Sprintf("%.1f µs of Redis CPU each: %.1f µs in the script, %.1f µs reading and answering the connection", s.total, s.script, s.total-s.script)
}

// capacity runs op from the bench's workers for d and returns the measured
// rate (ops per second of wall time, handler and Redis sharing this machine)
// and the Redis-bound capacity: ops per second of the Redis main thread's CPU,
// with the split of that CPU per operation. Redis executes commands on one
// thread, so a room's shard serves at most that many a second however many
// Lambdas call it; the functions scale out.
func capacity(ctx context.Context, rdb *redis.Client, d time.Duration, op func(ctx context.Context, i int64) error) (wall, bound float64, where split, err error) {
	cpu0, err := redisCPU(ctx, rdb)
	if err != nil {
		return 0, 0, where, err
	}
	script0, _, err := evalshaMicros(ctx, rdb)
	if err != nil {
		return 0, 0, where, err
	}
	var next, done atomic.Int64
	wall, err = throughput(ctx, d, func(ctx context.Context) error {
		if err := op(ctx, next.Add(1)-1); err != nil {
			return err
		}
		done.Add(1)
		return nil
	})
	if err != nil {
		return 0, 0, where, err
	}
	cpu1, err := redisCPU(ctx, rdb)
	if err != nil {
		return 0, 0, where, err
	}
	script1, _, err := evalshaMicros(ctx, rdb)
	if err != nil {
		return 0, 0, where, err
	}
	n := float64(done.Load())
	if cpu1 <= cpu0 || n == 0 {
		return wall, 0, where, fmt.Errorf("no Redis CPU used over %d operations", done.Load())
	}
	where = split{total: (cpu1 - cpu0) * 1e6 / n, script: (script1 - script0) / n}
	return wall, n / (cpu1 - cpu0), where, nil
}

// pollDemand is the poll rate 1,000,000 waiting visitors make under the
// policy: the long crowd's measured polls per visitor-minute (its joins are
// the join capacity's; a leave is rarer than either), or the target 0.7
// requests when the crowd did not run in this invocation.
func pollDemand() (perSecond float64, source string) {
	perMinute, source := measured.LongPollsPerMinute, "measured"
	if perMinute <= 0 {
		perMinute, source = 0.7, "target 0.7, crowd not run"
	}
	return roomWaiting * perMinute / 60, source
}

// benchCapacity measures the poll and join capacities through the real routes.
func benchCapacity(ctx context.Context, d time.Duration) ([]Row, error) {
	polls, err := pollCapacity(ctx, d)
	if err != nil {
		return polls, fmt.Errorf("poll capacity: %w", err)
	}
	joins, err := joinCapacity(ctx, d)
	if err != nil {
		return append(polls, joins...), err
	}
	spread, err := joinCapacitySpread(ctx, d)
	rows := append(append(polls, joins...), spread...)
	if err != nil {
		return rows, err
	}
	ten, err := tenMillionPolls(ctx, d)
	return append(rows, ten...), err
}

// capacityRoom starts a Redis of its own, the routes over it at the clock t0
// (now, whole seconds) and the room id with cfg; stop ends the Redis.
func capacityRoom(ctx context.Context, id string, cfg room.Config) (rdb *redis.Client, rt *route, t0 time.Time, stop func(), err error) {
	rdb, stop, err = benchRedis(workers)
	if err != nil {
		return nil, nil, t0, nil, err
	}
	t0 = time.Now().Truncate(time.Second)
	if rt, err = newRoute(rdb, t0); err == nil {
		err = rt.put(ctx, id, cfg)
	}
	if err != nil {
		stop()
		return nil, nil, t0, nil, err
	}
	return rdb, rt, t0, stop, nil
}

// pollCapacity fills a room with 1,000,000 waiting (the engine's enqueue
// script, pipelined, as the scale figure does) and 30,000 more through the
// enqueue route, interleaved, so the polled visitors stand all along the
// queue; then polls them in turn through the poll route.
func pollCapacity(ctx context.Context, d time.Duration) ([]Row, error) {
	const roomID = "bench-poll-million"
	cfg := benchRoomConfig()
	cfg.AdmitPerMinute = 50_000 // 20 minutes for the last of a million
	rdb, rt, t0, stop, err := capacityRoom(ctx, roomID, cfg)
	if err != nil {
		return nil, err
	}
	defer stop()
	const chunks = 10
	start := time.Now()
	tickets := make([]string, 0, capacityTickets)
	for c := range chunks {
		if err := fillRange(ctx, rdb, roomID, c*roomWaiting/chunks, roomWaiting/chunks, t0.UnixMilli()); err != nil {
			return nil, err
		}
		for i := range capacityTickets / chunks {
			t, err := rt.join(ctx, roomID, clientIP(int64(c*capacityTickets/chunks+i)))
			if err != nil {
				return nil, err
			}
			tickets = append(tickets, t)
		}
	}
	// At least that many wait (a pipeline go-redis retried after a timeout
	// on a loaded machine enqueues its visitors twice: harmless here).
	st, err := rt.h.Handle(ctx, adminGet(roomID, rt.admin))
	var ar struct{ Stats room.Stats }
	if err != nil || json.Unmarshal([]byte(st.Body), &ar) != nil || ar.Stats.Waiting < roomWaiting+capacityTickets {
		return nil, fmt.Errorf("room not filled: %v %.300s", err, st.Body)
	}
	logf("room holds %d waiting (filled in %s)", ar.Stats.Waiting, time.Since(start).Round(time.Second))

	n := int64(len(tickets))
	path := "/api/rooms/" + roomID + "/poll"
	rt.perRequest()
	wall, bound, where, err := capacity(ctx, rdb, d, func(ctx context.Context, i int64) error {
		// One virtual second per round of the tickets.
		rt.advance(t0.Add(time.Duration(i) * time.Second / time.Duration(n)).Add(time.Second))
		status, body, err := rt.do(ctx, "GET", path, tickets[i%n], clientIP(i%n), nil)
		if err == nil && (status != http.StatusOK || !strings.Contains(body, `"state":"waiting"`)) {
			err = fmt.Errorf("poll: %d %.200s", status, body)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	measured.PollLogBytes, measured.PollBodyBytes = rt.perRequest()
	demand, source := pollDemand()
	logf("poll route, %d waiting: %.0f/s in-process (handler and Redis on this machine), %.0f/s of Redis CPU; demand %.0f/s (%s); %s",
		roomWaiting, wall, bound, demand, source, where)
	return []Row{
		row("poll capacity, 1,000,000 waiting (Redis CPU) ÷ their poll rate", bound, "polls/s", demand, timesBaseline(capacityGoal)),
		row("poll route in-process, 1,000,000 waiting (this machine)", wall, "polls/s", demand, nil),
	}, nil
}

// spreadShards is the joinShards of the spread join capacity: the most, so
// the shards' hash slots fall about evenly on the three nodes.
const spreadShards = room.MaxJoinShards

// spreadNodes are the clusters the spread join figure is measured on: the
// tests' three primaries, and five.
var spreadNodes = []int{3, 5}

// joinCapacitySpread measures the enqueue route as joinCapacity does, in a
// room whose joins spread over arrival shards (joinShards, docs/ENGINE.md
// "Arrival shards") on a cluster of 3, then 5, primaries, ticks merging them
// four times a second. A room's joins are bound by its busiest node: the
// capacity is the joins over the most CPU any one node's main thread used,
// the merges on the room's own node included.
func joinCapacitySpread(ctx context.Context, d time.Duration) ([]Row, error) {
	var rows []Row
	for _, n := range spreadNodes {
		r, err := joinCapacitySpreadOn(ctx, d, n)
		rows = append(rows, r...)
		if err != nil {
			return rows, err
		}
	}
	return rows, nil
}

// joinCapacitySpreadOn is joinCapacitySpread on a cluster of that many primaries.
func joinCapacitySpreadOn(ctx context.Context, d time.Duration, spreadNodes int) ([]Row, error) {
	const roomID = "bench-join-spread"
	cl, err := startCluster(ctx, spreadNodes)
	if err != nil {
		return nil, err
	}
	defer cl.stop()
	addrs, per := cl.addrs, cl.per
	rdb := cl.client(workers)
	defer func() { _ = rdb.Close() }()
	t0 := time.Now().Truncate(time.Second)
	rt, err := newRoute(rdb, t0)
	if err != nil {
		return nil, err
	}
	cfg := benchRoomConfig()
	cfg.ClientEnqueuePerMinute = 10
	if err := rt.put(ctx, roomID, cfg); err != nil {
		return nil, err
	}
	// Half the burst waiting first (filled on the room's shard), then the joins spread.
	if err := fillRange(ctx, rdb, roomID, 0, roomWaiting/2, t0.UnixMilli()); err != nil {
		return nil, err
	}
	cfg.JoinShards = spreadShards
	if err := rt.put(ctx, roomID, cfg); err != nil {
		return nil, err
	}
	// The ticks have a client of their own, as the admit function has: on the
	// joins' client they wait behind its 64 workers for a connection. They run
	// on the route's clock, which stands still so that the bucket admits
	// nobody (and a merge held back after a failed read stays held).
	tc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
	defer func() { _ = tc.Close() }()
	ticker := app.NewEngine(tc, rt.clock)
	// A merge that fails (a shard's read over its budget, docs/ENGINE.md)
	// fails the part: the merges held back after it would leave their work
	// out of the figure.
	stopTicks := tickEvery(ctx, ticker, roomID, 250*time.Millisecond)
	cpu0, err := cl.cpu(ctx)
	if err != nil {
		_ = stopTicks()
		return nil, err
	}
	var next, done atomic.Int64
	next.Store(1 << 20) // addresses other than the fill's
	wall, err := throughput(ctx, d, func(ctx context.Context) error {
		if _, err := rt.join(ctx, roomID, clientIP(next.Add(1))); err != nil {
			return err
		}
		done.Add(1)
		return nil
	})
	if terr := stopTicks(); err == nil {
		err = terr
	}
	if err != nil {
		return nil, err
	}
	// The last merge: what the joins left on the shards goes into the queue too.
	if r, err := ticker.Tick(ctx, roomID); err != nil || r.MergeErr != nil {
		return nil, fmt.Errorf("last merge: %v %v", err, r.MergeErr)
	}
	cpu1, err := cl.cpu(ctx)
	if err != nil {
		return nil, err
	}
	// Which node holds the room and how many shards each holds.
	holds := make([]string, len(per))
	shardsOn := make([]int, len(per))
	for i := range spreadShards {
		if o := cl.owner(ctx, rdb, roomdb.ArrivalKeysFor(roomID, i).Arrivals); o >= 0 {
			shardsOn[o]++
		}
	}
	roomOn := cl.owner(ctx, rdb, roomdb.KeysFor(roomID).Queue)
	busiest, used := 0.0, make([]string, len(per))
	for i := range per {
		busiest = max(busiest, cpu1[i]-cpu0[i])
		holds[i] = fmt.Sprintf("%d shards", shardsOn[i])
		if i == roomOn {
			holds[i] += " and the room"
		}
		used[i] = fmt.Sprintf("%.2f s (%s)", cpu1[i]-cpu0[i], holds[i])
	}
	n := float64(done.Load())
	if busiest <= 0 || n == 0 {
		return nil, fmt.Errorf("spread joins: %v joins, busiest node %v s", n, busiest)
	}
	st, err := rt.h.Handle(ctx, adminGet(roomID, rt.admin))
	var ar struct{ Stats room.Stats }
	if err != nil || json.Unmarshal([]byte(st.Body), &ar) != nil || ar.Stats.Waiting < roomWaiting/2+int64(n) {
		return nil, fmt.Errorf("spread joins not all queued: %v %.300s", err, st.Body)
	}
	bound := n / busiest
	logf("enqueue route, joins spread over %d arrival shards on %d nodes: %.0f joins, %.0f/s in-process; CPU of each node %s; %.0f joins per CPU-second of the busiest",
		spreadShards, spreadNodes, n, wall, strings.Join(used, ", "), bound)
	rows := []Row{
		row(fmt.Sprintf("join capacity, joins spread over %d arrival shards (busiest of %d nodes) ÷ 1,000,000 in 60 s", spreadShards, spreadNodes), bound, "joins/s", burstJoinsPerSecond, timesBaseline(capacityGoal)),
	}
	if spreadNodes == 5 {
		// The same run against the first minute of a 10,000,000 on-sale.
		rows = append(rows, row("join capacity, 10,000,000 on-sale (busiest of 5 nodes) ÷ 2,000,000 joins in the first minute", bound, "joins/s", tenMillionBurst, timesBaseline(capacityGoal)))
	}
	return rows, nil
}

// joinCapacity measures the enqueue route, per-client limit on, each join from
// its own address, into a room already holding half the burst.
func joinCapacity(ctx context.Context, d time.Duration) ([]Row, error) {
	const roomID = "bench-join"
	cfg := benchRoomConfig()
	cfg.ClientEnqueuePerMinute = 10 // the limit is checked (and counted) on every join
	rdb, rt, t0, stop, err := capacityRoom(ctx, roomID, cfg)
	if err != nil {
		return nil, err
	}
	defer stop()
	if err := fillRange(ctx, rdb, roomID, 0, roomWaiting/2, t0.UnixMilli()); err != nil {
		return nil, err
	}
	rt.perRequest()
	wall, bound, where, err := capacity(ctx, rdb, d, func(ctx context.Context, i int64) error {
		_, err := rt.join(ctx, roomID, clientIP(i))
		return err
	})
	if err != nil {
		return nil, err
	}
	measured.JoinLogBytes, measured.JoinBodyBytes = rt.perRequest()
	logf("enqueue route (limit + enqueue): %.0f/s in-process, %.0f/s of Redis CPU; burst %.0f/s; %s", wall, bound, burstJoinsPerSecond, where)
	return []Row{
		row("join capacity (limit + enqueue, Redis CPU) ÷ 1,000,000 in 60 s", bound, "joins/s", burstJoinsPerSecond, timesBaseline(capacityGoal)),
		row("enqueue route in-process (this machine)", wall, "joins/s", burstJoinsPerSecond, nil),
	}, nil
}

// adminGet is GET /api/admin/rooms/{room}.
func adminGet(roomID, key string) events.APIGatewayV2HTTPRequest {
	ev := events.APIGatewayV2HTTPRequest{Version: "2.0", RouteKey: "$default", RawPath: "/api/admin/rooms/" + roomID,
		Headers: map[string]string{"authorization": "Bearer " + key}}
	ev.RequestContext.HTTP.Method, ev.RequestContext.HTTP.Path, ev.RequestContext.HTTP.SourceIP = "GET", ev.RawPath, "127.0.0.1"
	return ev
}

// cluster is a cluster of redis-server primaries a part starts for itself:
// their addresses and a client to each node (for its CPU time).
type cluster struct {
	nodes []*redistest.Server
	addrs []string
	per   []*redis.Client
}

// startCluster starts n primaries (with the redis-server settings given) and
// waits until every node says the cluster is ok (clusterReady). A node holds
// another failed only after a minute without its answers (the tests' 1 s
// would do): a node busy with a fill's pipelines or a long script on a
// loaded machine misses the cluster bus's pings for seconds, and a cluster
// that marks it failed answers CLUSTERDOWN to every command of its slots.
func startCluster(ctx context.Context, n int, settings ...string) (*cluster, error) {
	nodes, err := redistest.StartClusterWith(n, 0, append([]string{"cluster-node-timeout", "60000"}, settings...)...)
	if err != nil {
		return nil, err
	}
	c := &cluster{nodes: nodes, addrs: make([]string, n), per: make([]*redis.Client, n)}
	for i, node := range nodes {
		c.addrs[i] = node.Addr
		c.per[i] = redis.NewClient(&redis.Options{Addr: node.Addr})
	}
	if err := clusterReady(ctx, c.per); err != nil {
		c.stop()
		return nil, err
	}
	return c, nil
}

// client is a cluster client of pool connections. Its read timeout is long:
// a fill's pipelines outlast the default 3 s on a loaded machine.
func (c *cluster) client(pool int) *redis.ClusterClient {
	return redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.addrs, PoolSize: pool, ReadTimeout: 30 * time.Second})
}

// stop closes the clients and stops the nodes.
func (c *cluster) stop() {
	for i, n := range c.nodes {
		_ = c.per[i].Close()
		n.Stop()
	}
}

// cpu is the CPU time (s) each node's main thread has used (redisCPU).
func (c *cluster) cpu(ctx context.Context) ([]float64, error) {
	out := make([]float64, len(c.per))
	for i, p := range c.per {
		v, err := redisCPU(ctx, p)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

// usedMemory is the sum of the nodes' used_memory less their clients'
// buffers (mem_clients_normal), in bytes: a fill's pipelines leave query
// buffers of up to a megabyte on each of the client's connections to each
// node, which the server trims only once they are idle, some 4 bytes a
// visitor of 10,000,000 that the data does not hold.
func (c *cluster) usedMemory(ctx context.Context) (float64, error) {
	sum := 0.0
	for _, p := range c.per {
		info, err := p.Info(ctx, "memory").Result()
		if err != nil {
			return 0, err
		}
		var used, clients float64
		for _, l := range strings.Split(info, "\r\n") {
			if v, ok := strings.CutPrefix(l, "used_memory:"); ok {
				used, err = strconv.ParseFloat(v, 64)
			} else if v, ok := strings.CutPrefix(l, "mem_clients_normal:"); ok {
				clients, err = strconv.ParseFloat(v, 64)
			}
			if err != nil {
				return 0, err
			}
		}
		if used == 0 {
			return 0, fmt.Errorf("no used_memory in INFO")
		}
		sum += used - clients
	}
	return sum, nil
}

// cmdStat is one command's line of INFO commandstats: calls and µs.
type cmdStat struct {
	calls int64
	usec  float64
}

// cmdStats is a node's INFO commandstats, by command.
type cmdStats map[string]cmdStat

// commandStats reads each node's INFO commandstats. Commands a script runs
// are counted there too, inside the script's own (evalsha) time.
func (c *cluster) commandStats(ctx context.Context) ([]cmdStats, error) {
	out := make([]cmdStats, len(c.per))
	for i, p := range c.per {
		info, err := p.Info(ctx, "commandstats").Result()
		if err != nil {
			return nil, err
		}
		out[i] = cmdStats{}
		for _, l := range strings.Split(info, "\r\n") {
			rest, ok := strings.CutPrefix(l, "cmdstat_")
			if !ok {
				continue
			}
			name, fields, _ := strings.Cut(rest, ":")
			var st cmdStat
			for _, f := range strings.Split(fields, ",") {
				k, v, _ := strings.Cut(f, "=")
				switch k {
				case "calls":
					st.calls, _ = strconv.ParseInt(v, 10, 64)
				case "usec":
					st.usec, _ = strconv.ParseFloat(v, 64)
				}
			}
			out[i][name] = st
		}
	}
	return out, nil
}

// since is what the node ran after s0, the commands by time, most first:
// name calls×µs each; the commands a script ran are inside evalsha's time.
func (s cmdStats) since(s0 cmdStats) string {
	type line struct {
		name string
		d    cmdStat
	}
	var ls []line
	for name, st := range s {
		d := cmdStat{st.calls - s0[name].calls, st.usec - s0[name].usec}
		if d.calls > 0 && name != "info" {
			ls = append(ls, line{name, d})
		}
	}
	slices.SortFunc(ls, func(a, b line) int { return int(b.d.usec - a.d.usec) })
	parts := make([]string, 0, len(ls))
	for _, l := range ls {
		parts = append(parts, fmt.Sprintf("%s %d×%.1f µs (%.1f ms)", l.name, l.d.calls, l.d.usec/float64(l.d.calls), l.d.usec/1000))
	}
	return strings.Join(parts, ", ")
}

// owner is the index of the node rdb sends key to (-1 when it cannot say).
func (c *cluster) owner(ctx context.Context, rdb *redis.ClusterClient, key string) int {
	m, err := rdb.MasterForKey(ctx, key)
	if err != nil {
		return -1
	}
	return slices.Index(c.addrs, m.Options().Addr)
}

// roomTicker is what tickEvery needs of an engine.
type roomTicker interface {
	Tick(ctx context.Context, roomID string) (room.TickResult, error)
}

// tickEveryLenient is tickEvery for a part with nothing to merge: a tick
// whose merge or shard sweep failed (r.MergeErr) is counted and logged at
// the stop, and the ticking goes on; only a failed tick script stops it.
func tickEveryLenient(ctx context.Context, e roomTicker, roomID string, period time.Duration) (stop func() error) {
	var failed atomic.Int64
	var first atomic.Value
	stopTicks := tickEvery(ctx, lenientTicker{e, &failed, &first}, roomID, period)
	return func() error {
		err := stopTicks()
		if n := failed.Load(); n > 0 {
			logf("%d ticks of %s held their merges or sweeps: %v", n, roomID, first.Load())
		}
		return err
	}
}

// lenientTicker counts a tick's MergeErr and answers the tick without it.
type lenientTicker struct {
	e      roomTicker
	failed *atomic.Int64
	first  *atomic.Value
}

func (l lenientTicker) Tick(ctx context.Context, roomID string) (room.TickResult, error) {
	r, err := l.e.Tick(ctx, roomID)
	if err == nil && r.MergeErr != nil {
		if l.failed.Add(1) == 1 {
			l.first.Store(r.MergeErr.Error())
		}
		r.MergeErr = nil
	}
	return r, err
}

// tickEvery ticks the room every period on its own goroutine, as the
// admission loop does, until the returned stop is called; stop returns the
// first failure, a merge's (r.MergeErr) included, after which it ticked no
// more.
func tickEvery(ctx context.Context, e roomTicker, roomID string, period time.Duration) (stop func() error) {
	ticks, done := make(chan error, 1), make(chan struct{})
	go func() {
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			select {
			case <-done:
				ticks <- nil
				return
			case <-t.C:
				r, err := e.Tick(ctx, roomID)
				if err == nil && r.MergeErr != nil {
					err = fmt.Errorf("merge: %w", r.MergeErr)
				}
				if err != nil {
					<-done
					ticks <- err
					return
				}
			}
		}
	}()
	return func() error {
		close(done)
		return <-ticks
	}
}
