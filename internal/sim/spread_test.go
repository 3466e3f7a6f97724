package sim

import (
	"context"
	"testing"
	"time"

	"github.com/vestibule-dev/vestibule/internal/redistest"
	"github.com/vestibule-dev/vestibule/internal/room"
)

// A crowd whose joins spread over arrival shards (joinShards) keeps every
// invariant the simulator checks, FIFO order first, on the single node and on
// the cluster, where the shards' slots live on other nodes than the room's.
func TestVirtualCrowdSpreadJoins(t *testing.T) {
	for name, rdb := range redistest.Clients(t) {
		t.Run(name, func(t *testing.T) {
			d, cfg := virtualRoom(t, rdb, 20, 600)
			cfg.JoinShards = 3
			c := Config{
				Visitors: 300, Shape: Burst, Seed: 5,
				CloseTab: 0.1, NoConsume: 0.05, Leave: 0.05,
				ThinkMin: 5 * time.Second, ThinkMax: 15 * time.Second,
				Room: redistest.Room(t), RoomConfig: cfg, MaxDuration: time.Hour,
			}
			res, err := Run(context.Background(), d, d.AdminKey, c)
			if err != nil {
				t.Fatal(err)
			}
			s := res.Summarize()
			if s.Stopped || s.Outcomes["pending"] != 0 || s.Outcomes["failed"] != 0 {
				for _, v := range res.Visitors {
					if v.LastError != "" {
						t.Logf("visitor %d: %s", v.ID, v.LastError)
						break
					}
				}
				t.Fatalf("run did not finish cleanly: %v", s.Outcomes)
			}
			bySeq := map[int64][]int{}
			for _, v := range res.Visitors {
				bySeq[v.Seq] = append(bySeq[v.Seq], v.ID)
				if v.Errors > 0 {
					t.Logf("visitor %d (%s): %s", v.ID, v.Behavior, v.LastError)
				}
			}
			for seq, ids := range bySeq {
				if len(ids) > 1 {
					t.Errorf("visitors %v share sequence %d", ids, seq)
				}
			}
			if s.NotAdmitted != 0 || s.DoubleConsumes != 0 || s.ReplaysAllowed != 0 || s.Inversions != 0 || s.Errors != 0 {
				t.Errorf("invariants: notAdmitted=%d doubleConsumes=%d replaysAllowed=%d inversions=%d errors=%d",
					s.NotAdmitted, s.DoubleConsumes, s.ReplaysAllowed, s.Inversions, s.Errors)
			}
			if s.MaxInUse > cfg.MaxActive || s.MaxInUse == 0 || s.Outcomes["completed"] == 0 {
				t.Errorf("in use %d of %d, outcomes %v", s.MaxInUse, cfg.MaxActive, s.Outcomes)
			}
			// The joins did go through the shards: most sequences are not the room's own residue.
			shard := 0
			for _, v := range res.Visitors {
				if v.Seq%room.SeqResidues != 0 {
					shard++
				}
			}
			if shard < len(res.Visitors)/2 {
				t.Errorf("%d of %d joins went through an arrival shard", shard, len(res.Visitors))
			}
		})
	}
}
