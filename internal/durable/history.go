package durable

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/vestibule-dev/vestibule/internal/room"
)

// A room's history for its whole life (docs/OPERATING.md, "A sale's
// report"): Redis keeps the last day, a point a minute (vst:{room}:hist);
// the admission loop copies each completed hour into the store, one object
// per room and hour (the JSON array of room.HistoryPoint), so a report reads
// the archived hours and Redis's last day together.

// HistoryStore is a Store that keeps rooms' archived history (Disk and S3 do).
type HistoryStore interface {
	PutHistory(ctx context.Context, room, hour string, b []byte) error
	// HistoryHour returns ErrNotFound for an hour never put.
	HistoryHour(ctx context.Context, room, hour string) ([]byte, error)
	// HistoryHours lists the room's archived hours, oldest first.
	HistoryHours(ctx context.Context, room string) ([]string, error)
}

var (
	_ HistoryStore = Disk{}
	_ HistoryStore = (*S3)(nil)
)

// HourFormat names an hour of history (UTC), e.g. 2026-12-01T10.
const HourFormat = "2006-01-02T15"

// validHour reports whether h is an hour as HourFormat writes it.
func validHour(h string) bool {
	t, err := time.Parse(HourFormat, h)
	return err == nil && t.Format(HourFormat) == h
}

func (d Disk) historyDir(id string) (Disk, error) {
	if !room.ValidRoomID(id) {
		return Disk{}, room.ErrInvalidRoom
	}
	return Disk{Dir: filepath.Join(d.Dir, id+".history")}, nil
}

// PutHistory writes <dir>/<room>.history/<hour>.
func (d Disk) PutHistory(_ context.Context, id, hour string, b []byte) error {
	h, err := d.historyDir(id)
	if err != nil || !validHour(hour) {
		return errors.Join(err, room.ErrInvalidRoom)
	}
	return h.write(hour, "", b)
}

// HistoryHour reads <dir>/<room>.history/<hour>.
func (d Disk) HistoryHour(_ context.Context, id, hour string) ([]byte, error) {
	h, err := d.historyDir(id)
	if err != nil || !validHour(hour) {
		return nil, errors.Join(err, room.ErrInvalidRoom)
	}
	return h.read(hour, "")
}

// HistoryHours lists <dir>/<room>.history/.
func (d Disk) HistoryHours(_ context.Context, id string) ([]string, error) {
	h, err := d.historyDir(id)
	if err != nil {
		return nil, err
	}
	ents, err := os.ReadDir(h.Dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("durable: %w", err)
	}
	var out []string
	for _, e := range ents {
		if validHour(e.Name()) {
			out = append(out, e.Name())
		}
	}
	slices.Sort(out)
	return out, nil
}

func (s *S3) historyPrefix(id string) string { return s.Prefix + "rooms/" + id + ".history/" }

// PutHistory writes <prefix>rooms/<room>.history/<hour>.
func (s *S3) PutHistory(ctx context.Context, id, hour string, b []byte) error {
	if !room.ValidRoomID(id) || !validHour(hour) {
		return room.ErrInvalidRoom
	}
	return s.put(ctx, s.historyPrefix(id)+hour, b, "application/json")
}

// HistoryHour reads <prefix>rooms/<room>.history/<hour>.
func (s *S3) HistoryHour(ctx context.Context, id, hour string) ([]byte, error) {
	if !room.ValidRoomID(id) || !validHour(hour) {
		return nil, room.ErrInvalidRoom
	}
	return s.get(ctx, s.historyPrefix(id)+hour)
}

// HistoryHours lists <prefix>rooms/<room>.history/, every page.
func (s *S3) HistoryHours(ctx context.Context, id string) ([]string, error) {
	if !room.ValidRoomID(id) {
		return nil, room.ErrInvalidRoom
	}
	p := s3.NewListObjectsV2Paginator(s.Client, &s3.ListObjectsV2Input{Bucket: aws.String(s.Bucket), Prefix: aws.String(s.historyPrefix(id))})
	var out []string
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("durable: list s3://%s/%s: %w", s.Bucket, s.historyPrefix(id), err)
		}
		for _, o := range page.Contents {
			if h := strings.TrimPrefix(aws.ToString(o.Key), s.historyPrefix(id)); validHour(h) {
				out = append(out, h)
			}
		}
	}
	slices.Sort(out)
	return out, nil
}

// ArchiveEvery is how often the loop looks for completed hours to archive,
// per room and process: a look is one read of Redis's last day.
const ArchiveEvery = time.Minute

// ArchiveHistory copies the room's completed hours of history that this
// process has not archived yet from Redis to the store, each merged with
// what the store holds of that hour (a minute already archived and gone
// from Redis stays). At most every ArchiveEvery per room; a no-op without a
// HistoryStore. An idle room's look is one HGETALL; an hour is one GET and
// one PUT, once.
func (q *Queue) ArchiveHistory(ctx context.Context, id string) error {
	hs, ok := q.o.Store.(HistoryStore)
	if !ok {
		return nil
	}
	now := q.o.Clock()
	q.mu.Lock()
	if q.archived == nil {
		q.archived = map[string]archive{}
	}
	a := q.archived[id]
	if !a.looked.IsZero() && now.Sub(a.looked) < ArchiveEvery && !now.Before(a.looked) {
		q.mu.Unlock()
		return nil
	}
	a.looked = now
	q.archived[id] = a
	q.mu.Unlock()
	pts, err := q.eng.History(ctx, id)
	if err != nil {
		return err
	}
	current := now.UTC().Format(HourFormat)
	hours := map[string][]room.HistoryPoint{}
	for _, p := range pts {
		h := p.Minute.UTC().Format(HourFormat)
		if h < current && h > a.upTo {
			hours[h] = append(hours[h], p)
		}
	}
	names := make([]string, 0, len(hours))
	for h := range hours {
		names = append(names, h)
	}
	slices.Sort(names)
	for _, h := range names {
		if err := q.archiveHour(ctx, hs, id, h, hours[h]); err != nil {
			return err
		}
		q.mu.Lock()
		a = q.archived[id]
		a.upTo = h
		q.archived[id] = a
		q.mu.Unlock()
	}
	return nil
}

// archive is what this process archived of a room: the last hour, and when
// it last looked.
type archive struct {
	upTo   string
	looked time.Time
}

func (q *Queue) archiveHour(ctx context.Context, hs HistoryStore, id, hour string, pts []room.HistoryPoint) error {
	old, err := readHour(ctx, hs, id, hour)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return err
	}
	merged := mergePoints(old, pts)
	b, err := json.Marshal(merged)
	if err == nil {
		err = hs.PutHistory(ctx, id, hour, b)
	}
	return err
}

func readHour(ctx context.Context, hs HistoryStore, id, hour string) ([]room.HistoryPoint, error) {
	b, err := hs.HistoryHour(ctx, id, hour)
	if err != nil {
		return nil, err
	}
	var pts []room.HistoryPoint
	if err := json.Unmarshal(b, &pts); err != nil {
		return nil, fmt.Errorf("durable: history %s %s: %w", id, hour, err)
	}
	return pts, nil
}

// mergePoints is both lists' points, one a minute (b's where both have
// one), by minute.
func mergePoints(a, b []room.HistoryPoint) []room.HistoryPoint {
	by := map[int64]room.HistoryPoint{}
	for _, p := range a {
		by[p.Minute.Unix()] = p
	}
	for _, p := range b {
		by[p.Minute.Unix()] = p
	}
	out := make([]room.HistoryPoint, 0, len(by))
	for _, p := range by {
		out = append(out, p)
	}
	slices.SortFunc(out, func(x, y room.HistoryPoint) int { return x.Minute.Compare(y.Minute) })
	return out
}

// LifeHistory is the room's history for its whole life, a point a minute:
// the archived hours and Redis's last day. A store hour that cannot be read
// is logged and left out (the report says what it has). Without a
// HistoryStore it is Redis's last day.
func (q *Queue) LifeHistory(ctx context.Context, id string) ([]room.HistoryPoint, error) {
	if _, err := q.GetConfig(ctx, id); err != nil {
		return nil, err
	}
	recent, err := q.eng.History(ctx, id)
	if err != nil {
		return nil, err
	}
	hs, ok := q.o.Store.(HistoryStore)
	if !ok {
		return recent, nil
	}
	hours, err := hs.HistoryHours(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", room.ErrUnavailable, err)
	}
	var old []room.HistoryPoint
	for _, h := range hours {
		pts, err := readHour(ctx, hs, id, h)
		if err != nil {
			q.o.Logger.LogAttrs(ctx, slog.LevelError, "history hour unreadable", slog.String("room", id), slog.String("hour", h), slog.String("error", err.Error()))
			continue
		}
		old = mergePoints(old, pts)
	}
	return mergePoints(old, recent), nil
}
