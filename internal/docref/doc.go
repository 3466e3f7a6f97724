// Package docref holds the test that resolves every Go name the prose
// cites: a `pkg.Name` in README.md, docs/, the Lua scripts' headers or a Go
// comment must name something pkg declares, so a rename or a move that
// leaves a stale reference fails `make test` instead of misleading a reader.
package docref
