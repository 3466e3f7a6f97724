package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/vestibule-dev/vestibule/internal/operator"
)

const (
	defaultInterval = 3 * time.Second
	historyLen      = 60 // samples kept for the sparklines
)

// series is the recent values of one figure.
type series []int64

func (s *series) add(v int64) {
	*s = append(*s, v)
	if len(*s) > historyLen {
		*s = (*s)[len(*s)-historyLen:]
	}
}

// isTerminal reports whether w is a terminal, where each frame redraws the
// screen; elsewhere frames follow one another.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

func (c *command) watch(ctx context.Context, pos []string) error {
	id, err := oneRoom(pos, "watch")
	if err != nil {
		return err
	}
	if c.interval < 100*time.Millisecond {
		return usageError("--interval must be at least 100ms")
	}
	cl, err := c.client(ctx)
	if err != nil {
		return err
	}
	// The first read must work: a wrong room or missing permission is an
	// error, not a screen of failures.
	r, err := cl.GetRoom(ctx, id)
	if err != nil {
		return err
	}
	v := &watchView{id: id, endpoint: cl.Endpoint, interval: c.interval, tty: isTerminal(c.stdout)}
	st := c.status(ctx, cl, id)
	var lastErr error
	t := time.NewTicker(c.interval)
	defer t.Stop()
	for n := 1; ; n++ {
		if lastErr == nil {
			v.history.add(r)
		}
		if _, err := io.WriteString(c.stdout, v.frame(n, r, st, lastErr, time.Now())); err != nil {
			return err
		}
		if c.count > 0 && n >= c.count {
			return nil
		}
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.Canceled) {
				return nil // Ctrl-C is how a watch ends
			}
			return ctx.Err()
		case <-t.C:
		}
		next, err := cl.GetRoom(ctx, id)
		if err != nil && ctx.Err() != nil {
			return nil
		}
		lastErr = err
		if err == nil {
			r = next
			st = c.status(ctx, cl, id)
		}
	}
}

// watchHistory is the recent figures of a watched room, for the sparklines.
type watchHistory struct {
	waiting, admitted, active, held, lastMinute series
}

// add adds one reading of the room's figures.
func (h *watchHistory) add(r operator.RoomInfo) {
	h.waiting.add(r.Stats.Waiting)
	h.admitted.add(r.Stats.Admitted)
	h.active.add(r.Stats.Active)
	h.held.add(r.Stats.Active + r.Stats.Admitted)
	h.lastMinute.add(r.Stats.AdmittedLastMinute)
}

// watchView draws the frames of one watch.
type watchView struct {
	id, endpoint string
	interval     time.Duration
	tty          bool // each frame redraws the screen
	history      watchHistory
}

// frame is the n-th frame: the room r and its status st (nil: unread), and
// lastErr when the last refresh failed and r is the reading before.
func (v *watchView) frame(n int, r operator.RoomInfo, st *operator.Status, lastErr error, now time.Time) string {
	var b strings.Builder
	if v.tty {
		b.WriteString("\x1b[H\x1b[2J")
	} else if n > 1 {
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "vestibule watch %s — %s — %s (every %s; Ctrl-C stops)\n", v.id, v.endpoint, now.Format("15:04:05"), v.interval)
	fmt.Fprintf(&b, "mode %s   maxActive %s   admitPerMinute %s", r.Config.Mode, num(r.Config.MaxActive), num(r.Config.AdmitPerMinute))
	if st != nil {
		fmt.Fprintf(&b, "   pace %s/min", strconv.FormatFloat(st.RatePerMinute, 'f', -1, 64))
		if st.EtaSeconds != nil {
			fmt.Fprintf(&b, "   wait if joining now ~%s", (time.Duration(*st.EtaSeconds) * time.Second).String())
		}
	}
	b.WriteString("\n")
	if line := steerLine(r); line != "" {
		b.WriteString(line + "\n")
	}
	if line := prequeueLine(r, st, now); line != "" {
		b.WriteString(line + "\n")
	}
	b.WriteString("\n")
	v.figures(&b, r)
	if lastErr != nil {
		fmt.Fprintf(&b, "\n  last refresh failed (%s); showing the figures of the one before\n", firstLine(lastErr))
	}
	return b.String()
}

// figures writes the room's figures, one a row with its sparkline.
func (v *watchView) figures(b *strings.Builder, r operator.RoomInfo) {
	row := func(name, value string, s series) {
		fmt.Fprintf(b, "  %-30s %16s  %s\n", name, value, operator.Sparkline(s, historyLen))
	}
	h := &v.history
	// The engine holds a place of maxActive for each admitted visitor
	// until their token is redeemed or expires: both count, apart.
	pct := ""
	if r.Config.MaxActive > 0 {
		pct = fmt.Sprintf(" (%d%%)", (r.Stats.Active+r.Stats.Admitted)*100/r.Config.MaxActive)
	}
	row("waiting", num(r.Stats.Waiting), h.waiting)
	row("admitted (on their way)", num(r.Stats.Admitted), h.admitted)
	row("active (at the origin)", num(r.Stats.Active), h.active)
	row("admitted + active / maxActive", num(r.Stats.Active+r.Stats.Admitted)+" / "+num(r.Config.MaxActive)+pct, h.held)
	row("admitted last min", num(r.Stats.AdmittedLastMinute)+" / "+num(r.Config.AdmitPerMinute), h.lastMinute)
}

func firstLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}

// status is the room's public status, for what only it shows (the pace of
// a visitor joining now, the lottery's commitment and seed); nil when it
// cannot be read, and the watch goes on without it.
func (c *command) status(ctx context.Context, cl *operator.Client, id string) *operator.Status {
	st, err := cl.Status(ctx, id)
	if err != nil {
		return nil
	}
	return &st
}

// clock gives a time as the operator reads it: local time, with the date
// when it is not today.
func clock(t, now time.Time) string {
	t, now = t.Local(), now.Local()
	if t.Format("2006-01-02") != now.Format("2006-01-02") {
		return t.Format("2006-01-02 15:04:05 MST")
	}
	return t.Format("15:04:05 MST")
}

// prequeueLine says where a room with an opening time stands: before it,
// the countdown, the visitors pre-queued and the lottery's commitment;
// after it, the published seed that verify-draw checks tickets against.
func prequeueLine(r operator.RoomInfo, st *operator.Status, now time.Time) string {
	at := r.Config.OpensAt
	if at == nil {
		return ""
	}
	var b strings.Builder
	if now.Before(*at) {
		fmt.Fprintf(&b, "pre-queue: opens %s (in %s); %s pre-queued", clock(*at, now), at.Sub(now).Truncate(time.Second), num(r.Stats.Waiting))
		if st != nil && st.DrawCommitment != "" {
			fmt.Fprintf(&b, "; draw committed %s", st.DrawCommitment)
		}
		return b.String()
	}
	fmt.Fprintf(&b, "pre-queue: opened %s (%s ago)", clock(*at, now), now.Sub(*at).Truncate(time.Second))
	if st != nil && st.DrawSeed != "" {
		fmt.Fprintf(&b, "; draw seed published %s (vestibule verify-draw checks a ticket)", st.DrawSeed)
	}
	return b.String()
}

// netWhy and paceWhy say what each why of the room's steering means
// (room.NetChange, room.PaceChange).
var (
	netWhy = map[string]string{"arrivals": "arrivals above queueAbovePerMinute", "queue": "visitors waiting",
		"full": "every slot taken", "rate": "the admission bucket empty", "restored": "restored after a loss of Redis",
		"calm": "calm for calmSeconds"}
	paceWhy = map[string]string{"backoff": "backing off: the origin reports a load of 0.9 or more",
		"floor": "at admitPerMinuteMin: the origin reports a load of 0.9 or more", "hold": "holding: the origin reports 0.75-0.9",
		"climb": "climbing: the origin reports below 0.75", "quiet": "climbing: no report from the origin for 30 s",
		"top": "at admitPerMinute"}
)

// steerLine says how the room steers itself: an auto room's safety net, and
// the rate that follows the origin, each with why; "" when it does neither.
func steerLine(r operator.RoomInfo) string {
	var parts []string
	if n := r.Stats.Net; n != "" {
		parts = append(parts, "safety net "+n+" ("+cmp.Or(netWhy[r.Stats.NetWhy], r.Stats.NetWhy, "never switched")+")")
	}
	if w := r.Stats.PaceWhy; w != "" {
		// The rate the room admits at; the pace its ETAs are told at runs ahead
		// of it while it climbs (docs/ENGINE.md, "Steering"), shown when it differs.
		rate, told := strconv.FormatFloat(r.Stats.RatePerMinute, 'f', 1, 64), strconv.FormatFloat(r.Stats.PacePerMinute, 'f', 1, 64)
		rate, told = strings.TrimSuffix(rate, ".0"), strings.TrimSuffix(told, ".0")
		line := fmt.Sprintf("rate %s/min of %s..%s", rate, num(r.Config.AdmitPerMinuteMin), num(r.Config.AdmitPerMinute))
		if told != rate {
			line += " (ETAs told at " + told + "/min)"
		}
		parts = append(parts, line+", "+cmp.Or(paceWhy[w], w))
	}
	return strings.Join(parts, "   ")
}
