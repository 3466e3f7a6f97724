package bookingdb_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vestibule-dev/vestibule/internal/booking"
	"github.com/vestibule-dev/vestibule/internal/bookingdb"
	"github.com/vestibule-dev/vestibule/internal/redistest"
)

// seatStore is an origin's own record of who booked a seat, fenced: a write
// whose token is not larger than the last one written for the seat is
// refused (in SQL: UPDATE seats SET holder = ?, token = ? WHERE id = ? AND token < ?).
type seatStore map[string]int64

func (s seatStore) write(seat string, token int64) error {
	if token <= s[seat] {
		return fmt.Errorf("seat %s: token %d is stale (last %d)", seat, token, s[seat])
	}
	s[seat] = token
	return nil
}

// A hold, a confirm retried with its idempotency key, a payment that fails
// (the order is cancelled), the seat sold again, and the first buyer's late
// write refused by its fencing token in the origin's own store.
func Example() {
	// Here redistest starts a Redis Cluster; an origin passes its own client.
	addrs, err := redistest.ClusterAddrs()
	if err != nil {
		panic(err)
	}
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
	defer rdb.Close()
	ctx := context.Background()
	clock := time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC)
	eng := bookingdb.New(rdb, bookingdb.WithClock(func() time.Time { return clock }))
	event := "example-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	if err := eng.Define(ctx, event, booking.Inventory{Seats: []string{"A12", "A13"}, SessionLimit: 2}); err != nil {
		panic(err)
	}
	store := seatStore{}

	a, _ := eng.Hold(ctx, event, "concert:41", booking.Request{Seats: []string{"A12"}})
	o, _ := eng.Confirm(ctx, event, "concert:41", a.Token, "pi_1")
	again, _ := eng.Confirm(ctx, event, "concert:41", a.Token, "pi_1") // a retry
	fmt.Println(o.Type, again.Order == o.Order, again.Replayed)

	// Buyer A's process pauses before writing; its payment fails: compensation.
	c, _ := eng.Cancel(ctx, event, o.Order, "payment failed")
	fmt.Println(c.Type, c.Reason)

	b, _ := eng.Hold(ctx, event, "concert:42", booking.Request{Seats: []string{"A12"}})
	eng.Confirm(ctx, event, "concert:42", b.Token, "pi_2")
	fmt.Println("B's write:", store.write("A12", b.Token))

	// A wakes up and writes with its old token: refused.
	err = store.write("A12", a.Token)
	fmt.Println("A's late write refused:", err != nil)
	_, err = eng.Confirm(ctx, event, "concert:41", a.Token, "pi_1")
	fmt.Println("A's confirm retry:", errors.Is(err, booking.ErrOrderCancelled))
	// Output:
	// booking.order.confirmed true true
	// booking.order.cancelled payment failed
	// B's write: <nil>
	// A's late write refused: true
	// A's confirm retry: true
}
