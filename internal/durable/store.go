// Package durable keeps what a total loss of Redis must not take: each room's
// settings and its admission head, in a Store (S3 when deployed, a folder for
// `make dev`). Queue wraps the engine (a decorator of its calls): an admin PUT
// writes the settings to the store as well; any call that finds a room
// missing in Redis restores it from the store, its recorded head as the
// floor (no consumed grant is granted again), and retries once; the admit
// loop's ticks record the head. It also lets visitors' requests drive a quiet
// room's first ticks (one per room per second, guarded in Redis) while the
// scheduled admit function is idle. docs/ENGINE.md, "What data loss costs".
package durable

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/vestibule-dev/vestibule/internal/room"
)

// ErrNotFound is a Store's answer for a room it holds nothing of.
var ErrNotFound = errors.New("durable: not in the store")

// ErrBadHead is a Store's answer for a head record that is not a plausible
// head (parseHead).
var ErrBadHead = errors.New("durable: bad head record")

// Store is durable storage of each room's settings (the JSON of room.Config)
// and admission head (the highest queue score admitted, a sequence or a
// pre-queue draw). Settings and head are separate records: the admin writes
// one, the admit loop the other, and neither reads before it writes.
type Store interface {
	PutSettings(ctx context.Context, room string, settings []byte) error
	// Settings returns ErrNotFound for a room never put.
	Settings(ctx context.Context, room string) ([]byte, error)
	// Rooms lists the rooms with settings.
	Rooms(ctx context.Context) ([]string, error)
	PutHead(ctx context.Context, room string, head float64) error
	// Head returns ErrNotFound for a room whose head was never recorded and
	// ErrBadHead for a record that is not a plausible head (parseHead).
	Head(ctx context.Context, room string) (float64, error)
}

// Disk is a Store in a folder: <dir>/<room>.json and <dir>/<room>.head, each
// written to a temporary file and renamed (a crash leaves the old record).
// `make dev` keeps it under .vestibule/rooms (git-ignored).
type Disk struct{ Dir string }

var _ Store = Disk{}

func (d Disk) path(id, ext string) (string, error) {
	if !room.ValidRoomID(id) {
		return "", room.ErrInvalidRoom
	}
	return filepath.Join(d.Dir, id+ext), nil
}

func (d Disk) write(id, ext string, b []byte) error {
	p, err := d.path(id, ext)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(d.Dir, 0o700); err != nil {
		return fmt.Errorf("durable: %w", err)
	}
	f, err := os.CreateTemp(d.Dir, "."+id+ext+".*")
	if err != nil {
		return fmt.Errorf("durable: %w", err)
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), p)
	}
	if err != nil {
		_ = os.Remove(f.Name()) // the write's error is the one to report
		return fmt.Errorf("durable: %w", err)
	}
	return nil
}

func (d Disk) read(id, ext string) ([]byte, error) {
	p, err := d.path(id, ext)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("durable: %w", err)
	}
	return b, nil
}

// PutSettings writes <dir>/<room>.json.
func (d Disk) PutSettings(_ context.Context, id string, b []byte) error {
	return d.write(id, ".json", b)
}

// Settings reads <dir>/<room>.json.
func (d Disk) Settings(_ context.Context, id string) ([]byte, error) { return d.read(id, ".json") }

// Rooms lists the rooms with a <room>.json.
func (d Disk) Rooms(context.Context) ([]string, error) {
	ents, err := os.ReadDir(d.Dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("durable: %w", err)
	}
	var ids []string
	for _, e := range ents {
		if id, ok := strings.CutSuffix(e.Name(), ".json"); ok && room.ValidRoomID(id) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids, nil
}

// PutHead writes <dir>/<room>.head.
func (d Disk) PutHead(_ context.Context, id string, head float64) error {
	return d.write(id, ".head", []byte(formatHead(head)))
}

// Head reads <dir>/<room>.head.
func (d Disk) Head(_ context.Context, id string) (float64, error) {
	b, err := d.read(id, ".head")
	if err != nil {
		return 0, err
	}
	return parseHead(b)
}

func formatHead(h float64) string { return strconv.FormatFloat(h, 'g', -1, 64) }

// The plausible head records (parseHead): what a head can be, as the engine
// makes its scores (lib.lua next_seq and the pre-queue draw).
const (
	// SeqMin is the least plausible sequence: 2020-01-01T00:00:00Z in
	// microseconds. A sequence is at least the Redis server's time in
	// microseconds when it was issued, so a smaller whole number (such as 1)
	// is no head the engine recorded.
	SeqMin = 1_577_836_800_000_000
	// SeqMax bounds sequences: they stay below 2^53, so each is an exact
	// float64 and an exact 7-byte heartbeat field.
	SeqMax = 1 << 53
	// drawUnit is the grain of a pre-queue draw: 13 hex digits of a SHA-1
	// over 2^52, so every draw is a whole multiple of 2^-52 in [0, 1).
	drawUnit = 1.0 / (1 << 52)
	// HeadAhead is how far past the store's clock a sequence may lie
	// (Queue.storedHead): the clocks of Redis and of the functions differ
	// by far less. A head further ahead would be a floor above every
	// ticket for years, the room dead until then.
	HeadAhead = 24 * time.Hour
)

// parseHead reads a head record and refuses (ErrBadHead) any that is not
// plausible: a restore must not take it for a floor. A plausible record is
// written exactly as formatHead writes its value, blanks around it aside (so
// "0x1p-2", "1e15" or "1.0" are refused: no code of ours wrote them), and its value is one of
//   - 0, a room that has admitted nobody (Queue.firstHead);
//   - a pre-queue draw: in (0, 1), a whole multiple of 2^-52;
//   - a sequence: a whole number in [SeqMin, SeqMax).
//
// NaN, infinities, negative numbers, text, and whole numbers below SeqMin
// (such as 1) are none of these. Queue.storedHead also refuses a sequence
// more than HeadAhead past its clock.
func parseHead(b []byte) (float64, error) {
	bad := fmt.Errorf("%w: %.40q", ErrBadHead, b)
	text := strings.TrimSpace(string(b))
	h, err := strconv.ParseFloat(text, 64)
	if err != nil || math.IsNaN(h) || math.IsInf(h, 0) || formatHead(h) != text {
		return 0, bad
	}
	switch {
	case h == 0:
	case h > 0 && h < 1 && math.Mod(h, drawUnit) == 0:
	case h >= SeqMin && h < SeqMax && h == math.Trunc(h):
	default:
		return 0, bad
	}
	return h, nil
}
