// Package e2e drives the waiting page in headless Chromium against the local
// stack (the same API handlers as in AWS, the admission ticks, the demo
// origin) backed by a real redis-server. The tests are the proof that the page
// in static/ does what a visitor needs: joins, keeps its place across a refresh
// and across tabs, follows the room's state, survives a Redis outage and lands
// on the origin with a one-time entry token.
package e2e
