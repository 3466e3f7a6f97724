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

	"github.com/vestibule-dev/vestibule/internal/room"
)

// ErrNotFound is a Store's answer for a room it holds nothing of.
var ErrNotFound = errors.New("durable: not in the store")

// ErrBadHead is a Store's answer for a head record that is not a finite
// score of 0 or more.
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
	// ErrBadHead for a record that is not a finite score of 0 or more.
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

// parseHead reads a head record: a finite score, 0 or more (a sequence or a
// pre-queue draw). Anything else (NaN, an infinity, a negative number, text)
// is ErrBadHead: a restore must not take it for a floor.
func parseHead(b []byte) (float64, error) {
	h, err := strconv.ParseFloat(strings.TrimSpace(string(b)), 64)
	if err != nil || math.IsNaN(h) || math.IsInf(h, 0) || h < 0 {
		return 0, fmt.Errorf("%w: %.40q", ErrBadHead, b)
	}
	return h, nil
}
