package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vestibule-dev/vestibule/internal/room"
	"github.com/vestibule-dev/vestibule/internal/roomdb"
	"github.com/vestibule-dev/vestibule/internal/testkit"
)

// workers is the parallelism of every throughput figure; the Redis client pool
// has exactly that many connections, shared by the figure and its baseline.
const workers = 64

// errDone ends a measurement early (the prepared work ran out).
var errDone = errors.New("done")

// throughput runs op from workers goroutines for d (or until op returns
// errDone) and returns operations per second.
func throughput(ctx context.Context, d time.Duration, op func(ctx context.Context) error) (float64, error) {
	var n atomic.Int64
	var firstErr atomic.Value
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	start := time.Now()
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				err := op(ctx)
				if errors.Is(err, errDone) {
					cancel()
					return
				}
				if err != nil {
					if ctx.Err() == nil {
						firstErr.CompareAndSwap(nil, err)
						cancel()
					}
					return
				}
				n.Add(1)
			}
		}()
	}
	wg.Wait()
	el := time.Since(start).Seconds()
	if e, ok := firstErr.Load().(error); ok {
		return 0, e
	}
	return float64(n.Load()) / el, nil
}

// The clock is real time plus an offset the bench can push forward, so that
// ticks find their bucket refilled without waiting.

func benchRoomConfig() room.Config {
	c := room.DefaultConfig()
	c.MaxActive, c.AdmitPerMinute = 1_000_000, 1_000_000
	c.SessionTTLSeconds, c.ClaimTTLSeconds, c.HeartbeatTTLSeconds = 86_400, 3_600, 3_600
	c.OriginURL, c.ClientEnqueuePerMinute = "http://127.0.0.1:9/", 0
	return c
}

// enqueueMany enqueues n visitors in parallel and returns their tickets.
func enqueueMany(ctx context.Context, e *roomdb.Engine, roomID string, n int) ([]room.Ticket, error) {
	out := make([]room.Ticket, n)
	var next atomic.Int64
	_, err := throughput(ctx, time.Hour, func(ctx context.Context) error {
		i := int(next.Add(1)) - 1
		if i >= n {
			return errDone
		}
		p, err := e.Enqueue(ctx, roomID, "v"+strconv.Itoa(i))
		out[i] = p.Ticket
		return err
	})
	return out, err
}

// benchScripts measures each Lua script's operations per second through the
// engine against raw GET with the same client pool.
func benchScripts(ctx context.Context, d time.Duration) ([]Row, error) {
	rdb, stop, err := benchRedis(workers)
	if err != nil {
		return nil, err
	}
	defer stop()
	clk := testkit.SkewedClock()
	e := roomdb.New(rdb, roomdb.WithClock(clk.Now))
	if err := rdb.Set(ctx, "bench:get", "x", 0).Err(); err != nil {
		return nil, err
	}
	get, err := throughput(ctx, d, func(ctx context.Context) error { return rdb.Get(ctx, "bench:get").Err() })
	if err != nil {
		return nil, err
	}
	logf("raw GET: %.0f ops/s", get)

	cfg := benchRoomConfig()
	const main = "bench-scripts"
	if _, err := e.PutConfig(ctx, main, cfg); err != nil {
		return nil, err
	}
	var rows []Row
	add := func(name string, ops float64, goal func(*Row)) {
		logf("%s: %.0f ops/s", name, ops)
		rows = append(rows, row("script "+name, ops, "ops/s", get, goal))
	}

	// enqueue: fresh visitors; the queue grows as it would in a crowd.
	var seqs []room.Ticket
	var mu sync.Mutex
	var vid atomic.Int64
	ops, err := throughput(ctx, d, func(ctx context.Context) error {
		p, err := e.Enqueue(ctx, main, "e"+strconv.FormatInt(vid.Add(1), 10))
		if err == nil {
			mu.Lock()
			seqs = append(seqs, p.Ticket)
			mu.Unlock()
		}
		return err
	})
	if err != nil {
		return rows, fmt.Errorf("enqueue: %w", err)
	}
	add("enqueue", ops, nil) // a figure beside the raw GET, without a goal
	logf("queue holds %d", len(seqs))

	// poll: random waiting visitors of that queue.
	ops, err = throughput(ctx, d, func(ctx context.Context) error {
		_, err := e.Poll(ctx, seqs[rand.IntN(len(seqs))])
		return err
	})
	if err != nil {
		return rows, fmt.Errorf("poll: %w", err)
	}
	add("poll", ops, nil)

	// stats: the admin and status routes' read.
	ops, err = throughput(ctx, d, func(ctx context.Context) error {
		_, err := e.Stats(ctx, main)
		return err
	})
	if err != nil {
		return rows, fmt.Errorf("stats: %w", err)
	}
	add("stats", ops, nil)

	// leave: half the queue leaves, one each.
	var li atomic.Int64
	ops, err = throughput(ctx, d, func(ctx context.Context) error {
		i := int(li.Add(1)) - 1
		if i >= len(seqs)/2 {
			return errDone
		}
		return e.Leave(ctx, seqs[i])
	})
	if err != nil {
		return rows, fmt.Errorf("leave: %w", err)
	}
	add("leave", ops, nil)

	// tick: the steady cost of one room's tick when the room is full (the
	// common case during an on-sale: nothing to admit, grants and sessions to check).
	full := cfg
	full.MaxActive = 1
	const tickRoom = "bench-tick"
	if _, err := e.PutConfig(ctx, tickRoom, full); err != nil {
		return rows, err
	}
	if _, err := enqueueMany(ctx, e, tickRoom, 1000); err != nil {
		return rows, err
	}
	ops, err = throughput(ctx, d, func(ctx context.Context) error {
		_, err := e.Tick(ctx, tickRoom)
		return err
	})
	if err != nil {
		return rows, fmt.Errorf("tick: %w", err)
	}
	add("tick (full room)", ops, nil)

	// consume and complete: grants made by ticks first, each consumed once.
	const grantRoom = "bench-grants"
	if _, err := e.PutConfig(ctx, grantRoom, cfg); err != nil {
		return rows, err
	}
	n := int(get * d.Seconds() / 2)
	n = max(min(n, 120_000), 10_000)
	tickets, err := enqueueMany(ctx, e, grantRoom, n)
	if err != nil {
		return rows, err
	}
	for admitted := 0; admitted < n; {
		clk.Advance(2 * time.Second) // a full bucket: two seconds of the rate
		r, err := e.Tick(ctx, grantRoom)
		if err != nil {
			return rows, err
		}
		if r.Admitted == 0 {
			return rows, fmt.Errorf("consume setup: tick admitted nothing at %d/%d", admitted, n)
		}
		admitted += int(r.Admitted)
	}
	var ci atomic.Int64
	ops, err = throughput(ctx, d, func(ctx context.Context) error {
		i := int(ci.Add(1)) - 1
		if i >= n {
			return errDone
		}
		_, err := e.Consume(ctx, grantRoom, tickets[i].Seq, cfg.OriginURL)
		return err
	})
	if err != nil {
		return rows, fmt.Errorf("consume: %w", err)
	}
	add("consume", ops, nil)
	consumed := min(int(ci.Load()), n)
	var di atomic.Int64
	ops, err = throughput(ctx, d, func(ctx context.Context) error {
		i := int(di.Add(1)) - 1
		if i >= consumed {
			return errDone
		}
		return e.Complete(ctx, grantRoom, tickets[i].Seq, cfg.OriginURL)
	})
	if err != nil {
		return rows, fmt.Errorf("complete: %w", err)
	}
	add("complete", ops, nil)
	return rows, nil
}
