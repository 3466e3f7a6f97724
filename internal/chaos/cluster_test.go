package chaos

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vestibule-dev/vestibule/internal/redistest"
	"github.com/vestibule-dev/vestibule/internal/room"
	"github.com/vestibule-dev/vestibule/internal/roomdb"
	"github.com/vestibule-dev/vestibule/internal/testkit"
)

// TestChaosClusterFailover kills a primary of a 3-primary, 3-replica cluster
// mid-crowd, with rooms on every primary. The replica is promoted, the same
// cluster client finds it, and the crowd goes on: places lost with writes the
// failover dropped are restored from tickets, and the invariants hold.
func TestChaosClusterFailover(t *testing.T) {
	skipShort(t)
	nodes, err := redistest.StartClusterWith(3, 1, "repl-diskless-sync-delay", "0")
	if err != nil {
		t.Fatalf("start cluster: %v", err)
	}
	t.Cleanup(func() {
		for _, n := range nodes {
			n.Stop()
		}
	})
	var addrs []string
	for _, n := range nodes {
		addrs = append(addrs, n.Addr)
	}
	cc := prodCluster(t, addrs)
	bg := context.Background()
	eng := roomdb.New(cc)
	cfg := chaosConfig(10, 3000)

	// Two rooms on each primary. StartCluster gives primary i the i-th third
	// of the slots; node 3+i replicates primary i.
	const slots = 16384
	perPrimary := make([][]string, 3)
	var rooms []string
	for len(rooms) < 6 {
		id := newRoom(t)
		slot, err := cc.ClusterKeySlot(bg, roomdb.KeysFor(id).Config).Result()
		if err != nil {
			t.Fatal(err)
		}
		p := 0
		for p < 2 && slot >= int64((p+1)*slots/3) {
			p++
		}
		if len(perPrimary[p]) < 2 {
			perPrimary[p] = append(perPrimary[p], id)
			rooms = append(rooms, id)
		}
	}
	for _, id := range rooms {
		put(t, eng, id, cfg)
	}
	// A replica that never finished its first sync cannot be promoted.
	for _, r := range nodes[3:] {
		c := redis.NewClient(&redis.Options{Addr: r.Addr})
		synced := testkit.WaitFor(30*time.Second, func() bool {
			role, err := c.Do(bg, "ROLE").Slice()
			return err == nil && len(role) > 3 && role[3] == "connected"
		})
		c.Close()
		if !synced {
			t.Fatalf("replica %s did not sync with its primary", r.Addr)
		}
	}

	ctx, stop := context.WithCancel(bg)
	defer stop()
	var samplers []*sampler
	for _, id := range rooms {
		samplers = append(samplers, watch(cc, id, cfg.MaxActive, true))
	}
	n := scale(240, 1500)
	poll := pace(n, 150*time.Millisecond)
	adm := startAdmitter(ctx, eng, rooms, cfg, 50*time.Millisecond, graceAfterLoss(poll))
	led := newLedger()
	cr := startCrowd(crowdOpts{engines: []*roomdb.Engine{eng}, rooms: rooms, n: n,
		poll: poll, hold: 60 * time.Millisecond, ledger: led, arrive: 500 * time.Millisecond})
	if !testkit.WaitFor(30*time.Second, func() bool { return cr.served.Load() >= int64(n/3) }) {
		t.Fatalf("crowd did not get going: %d served", cr.served.Load())
	}

	victim, replica := nodes[0], nodes[3]
	rep := redis.NewClient(&redis.Options{Addr: replica.Addr})
	defer rep.Close()
	killAt := time.Now()
	victim.Stop()
	promoted := testkit.WaitFor(30*time.Second, func() bool {
		role, err := rep.Do(bg, "ROLE").Slice()
		if err != nil || len(role) == 0 || role[0] != "master" {
			return false
		}
		info, err := rep.ClusterInfo(bg).Result()
		return err == nil && strings.Contains(info, "cluster_state:ok")
	})
	promotedAt := time.Now()
	if !promoted {
		t.Fatalf("the replica of the killed primary was not promoted in 30 s")
	}
	// The first call that works on a room of the dead primary.
	var serviceAt time.Time
	if testkit.WaitFor(30*time.Second, func() bool {
		cctx, cancel := context.WithTimeout(bg, callBudget)
		defer cancel()
		_, err := eng.Stats(cctx, perPrimary[0][0])
		return err == nil
	}) {
		serviceAt = time.Now()
	}
	finished := cr.wait(crowdLimit())
	stop()
	adm.wg.Wait()

	if serviceAt.IsZero() {
		t.Errorf("rooms of the killed primary did not answer again within 30 s of the promotion")
	} else {
		t.Logf("RECOVERY failover: replica promoted %s after the kill; rooms of the dead primary answer again %s after the kill",
			promotedAt.Sub(killAt).Round(time.Millisecond), serviceAt.Sub(killAt).Round(time.Millisecond))
	}
	var restored int64
	for _, id := range rooms {
		r, _ := cc.HGet(bg, roomdb.KeysFor(id).State, "restored").Int64()
		restored += r
	}
	t.Logf("%d places restored from tickets; room re-seeded %d times; %d ticks failed", restored, adm.reseeded.Load(), adm.failed.Load())
	for _, s := range samplers {
		s.finish(t)
	}
	led.check(t)
	cr.check(t, finished)
}

// TestChaosArrivalShardStalled stalls (SIGSTOP) a primary holding some of a
// spread room's arrival shards, not the room, while a crowd joins: joins routed
// there fail and are retried, every tick's merge is held back (a shard that
// cannot be read holds it back, so no later join is queued ahead of one it
// holds), and once the node is back the crowd is served in ticket order,
// every grant consumed once, no place lost.
func TestChaosArrivalShardStalled(t *testing.T) {
	skipShort(t)
	nodes, err := redistest.StartClusterWith(3, 0)
	if err != nil {
		t.Fatalf("start cluster: %v", err)
	}
	t.Cleanup(func() {
		for _, n := range nodes {
			n.Resume()
			n.Stop()
		}
	})
	var addrs []string
	for _, n := range nodes {
		addrs = append(addrs, n.Addr)
	}
	cc := prodCluster(t, addrs)
	engines := []*roomdb.Engine{roomdb.New(cc), roomdb.New(cc)}
	cfg := chaosConfig(10, 3000)
	cfg.JoinShards = room.MaxJoinShards

	// A room on the first primary (StartCluster gives primary i the i-th third
	// of the slots); the victim is the second, with the shards it holds.
	const slots = 16384
	primary := func(slot int) int { return min(2, slot*3/slots) }
	id := newRoom(t)
	for primary(roomdb.Slot(id)) != 0 {
		id = newRoom(t)
	}
	var stalled []int
	for i := range room.MaxJoinShards {
		if primary(roomdb.Slot(roomdb.ArrivalTag(id, i))) == 1 {
			stalled = append(stalled, i)
		}
	}
	if len(stalled) == 0 {
		t.Fatalf("room %s has no arrival shard on the second primary", id)
	}
	put(t, engines[0], id, cfg)

	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	s := watch(cc, id, cfg.MaxActive, true)
	n := scale(240, 1500)
	poll := pace(n, 150*time.Millisecond)
	adm := startAdmitter(ctx, engines[0], []string{id}, cfg, 50*time.Millisecond, 0)
	led := newLedger()
	cr := startCrowd(crowdOpts{engines: engines, rooms: []string{id}, n: n,
		poll: poll, hold: 60 * time.Millisecond, ledger: led, arrive: scale(4*time.Second, 10*time.Second)})

	time.Sleep(scale(1500*time.Millisecond, 3*time.Second))
	victim := nodes[1]
	if err := victim.Pause(); err != nil {
		t.Fatal(err)
	}
	// Longer than two of the client's timeouts: a tick's merge waits for one.
	stall := scale(5*time.Second, 8*time.Second)
	time.Sleep(stall)
	if err := victim.Resume(); err != nil {
		t.Fatal(err)
	}
	finished := cr.wait(crowdLimit())
	stop()
	adm.wg.Wait()

	failed, held := adm.mergeFailed.Load(), adm.mergeHeld.Load()
	t.Logf("room %s, shards %v on the stalled primary: %d merges failed, %d held back, %d admitted, %d ticks failed",
		id, stalled, failed, held, adm.admitted.Load(), adm.failed.Load())
	// Each failed read waits out the shards' budget (250 ms); after one,
	// merges are held back 250 ms, then twice as long after each failure up
	// to 2 s: 5 reads in the first 5 s, one more about every 2.25 s after, where
	// every tick used to try one (11–18 in 5 s, each 400 ms long).
	if failed == 0 || held == 0 {
		t.Errorf("shards %v stopped: %d merges failed and %d held back, want some of each", stalled, failed, held)
	}
	if most := int64(stall/(2*time.Second)) + 5; failed > most {
		t.Errorf("shards %v stopped for %v: %d merges failed, want at most %d (held back between tries)", stalled, stall, failed, most)
	}
	s.finish(t)
	led.check(t)
	cr.check(t, finished)
}
