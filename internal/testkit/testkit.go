// Package testkit holds what the tests, the simulator and the bench would
// otherwise each write again: one settable clock, a free loopback port, a
// wait for a condition, and a buffer safe for concurrent writes.
package testkit

import (
	"bytes"
	"net"
	"sync"
	"time"
)

// Clock is a settable clock, safe for concurrent use. Fixed clocks stand
// still until moved; skewed clocks follow real time plus an offset.
type Clock struct {
	mu     sync.Mutex
	real   bool
	at     time.Time
	offset time.Duration
}

// FixedClock returns a clock standing at t.
func FixedClock(t time.Time) *Clock { return &Clock{at: t} }

// EngineClock returns a fixed clock at the current time rounded down to a
// whole second: an engine's clock in tests, whose times survive the trip
// through Redis as milliseconds and compare equal to times a test computes.
func EngineClock() *Clock { return FixedClock(time.Now().UTC().Truncate(time.Second)) }

// SkewedClock returns a clock that follows real time; Advance moves it ahead.
func SkewedClock() *Clock { return &Clock{real: true} }

// Now is the clock's time (it fits room.Clock and every Clock option).
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.real {
		return time.Now().Add(c.offset)
	}
	return c.at.Add(c.offset)
}

// Advance moves the clock by d (back when d is negative).
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.offset += d
	c.mu.Unlock()
}

// Set stops the clock at t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	c.real, c.at, c.offset = false, t, 0
	c.mu.Unlock()
}

// FreePort returns a loopback TCP port that was free a moment ago.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// WaitFor calls ok every 20 ms until it holds or limit passes, and reports
// whether it held.
func WaitFor(limit time.Duration, ok func() bool) bool {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if ok() {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return ok()
}

// Buffer is a bytes.Buffer safe for concurrent use: a log sink or a running
// command's output that a test reads while it is written.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
