// Package chaos is Vestibule's fault-injection suite. Its tests drive the room
// engine against real redis-server processes they start, kill, freeze, slow
// down and fail over, with crowds of visitors polling, admit loops ticking and
// an origin consuming, and check the invariants of docs/ENGINE.md (I1 capacity,
// I2 one-time, I3 order, I4 durable places) all along.
//
// `go test ./internal/chaos/` runs the short form (seconds); CHAOS=long scales crowds
// and fault windows up (`make chaos`). Recovery times go to the test log.
package chaos
