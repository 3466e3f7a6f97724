package bookingdb_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/vestibule-dev/vestibule/internal/booking"
	"github.com/vestibule-dev/vestibule/internal/redistest"
)

// 100 sessions race for one seat: exactly one holds it, every other is told
// it is taken, and the seat is marked with the winner's token.
func TestConcurrentHoldOfOneSeat(t *testing.T) {
	const sessions = 100
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		e := newEnv(t, rdb, booking.Inventory{Seats: seats(10), SessionLimit: 1})
		var mu sync.Mutex
		var won []booking.Hold
		var taken int
		var other []error
		together(sessions, func(i int) {
			h, err := e.eng.Hold(e.ctx, e.event, "room:"+strconv.Itoa(i), booking.Request{Seats: []string{"S7"}})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				won = append(won, h)
			case errors.Is(err, booking.ErrSeatTaken):
				taken++
			default:
				other = append(other, err)
			}
		})
		if len(won) != 1 || taken != sessions-1 || len(other) != 0 {
			t.Fatalf("%d holds, %d taken, other errors %v; want 1, %d, none", len(won), taken, other, sessions-1)
		}
		mark, err := rdb.HGet(e.ctx, e.keys.Seats, "S7").Result()
		if err != nil || mark != "h"+strconv.FormatInt(won[0].Token, 10) {
			t.Fatalf("seat S7 is %q (%v), want the winner's h%d", mark, err, won[0].Token)
		}
		v := e.view()
		if v.Holds != 1 || v.Fence != won[0].Token {
			t.Fatalf("after the race: holds %d, fence %d; want 1 and the winner's token %d", v.Holds, v.Fence, won[0].Token)
		}
		// Only the winner can confirm it.
		if _, err := e.eng.Confirm(e.ctx, e.event, won[0].Session, won[0].Token, "k"); err != nil {
			t.Fatalf("winner's confirm: %v", err)
		}
	})
}

// 1,000 buyers, 100 units: exactly 100 holds and 100 confirmed orders, 900
// sold out, and a sampler reading the stock during the race never sees it
// below zero.
func TestConcurrentBuyersForStock(t *testing.T) {
	const buyers, units = 1000, 100
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		e := newEnv(t, rdb, booking.Inventory{Stock: map[string]int64{"ga": units}, SessionLimit: 2})

		ctx, cancel := context.WithCancel(e.ctx)
		var low atomic.Int64
		low.Store(units)
		var samples atomic.Int64
		sampled := make(chan struct{})
		go func() {
			defer close(sampled)
			for ctx.Err() == nil {
				n, err := rdb.HGet(ctx, e.keys.Stock, "ga").Int64()
				if err != nil {
					continue
				}
				samples.Add(1)
				for {
					l := low.Load()
					if n >= l || low.CompareAndSwap(l, n) {
						break
					}
				}
			}
		}()

		var confirmed, soldOut atomic.Int64
		var mu sync.Mutex
		var other []error
		orders := map[string]bool{}
		sem := make(chan struct{}, 200) // at most 200 in flight: the client's pool, not the race, is the limit
		together(buyers, func(i int) {
			sem <- struct{}{}
			defer func() { <-sem }()
			session := "room:" + strconv.Itoa(i)
			h, err := e.eng.Hold(e.ctx, e.event, session, booking.Request{Units: map[string]int64{"ga": 1}})
			if errors.Is(err, booking.ErrSoldOut) {
				soldOut.Add(1)
				return
			}
			if err == nil {
				var o booking.OrderEvent
				o, err = e.eng.Confirm(e.ctx, e.event, session, h.Token, "pay-"+session)
				if err == nil {
					confirmed.Add(1)
					mu.Lock()
					orders[o.Order] = true
					mu.Unlock()
					return
				}
			}
			mu.Lock()
			other = append(other, err)
			mu.Unlock()
		})
		cancel()
		<-sampled
		if confirmed.Load() != units || soldOut.Load() != buyers-units || len(other) != 0 || len(orders) != units {
			t.Fatalf("%d confirmed (%d orders), %d sold out, other errors %v; want %d, %d, none",
				confirmed.Load(), len(orders), soldOut.Load(), other, units, buyers-units)
		}
		if low.Load() < 0 {
			t.Fatalf("stock seen at %d during the race", low.Load())
		}
		if samples.Load() == 0 {
			t.Log("the sampler read nothing during the race")
		}
		if got := e.stock("ga"); got != 0 {
			t.Fatalf("stock after the race: %d, want 0", got)
		}
		if v := e.view(); v.Confirmed != units || v.Live != units || v.Holds != units {
			t.Fatalf("counters: %+v", v)
		}
	})
}
