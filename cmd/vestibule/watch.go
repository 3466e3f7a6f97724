package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
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
	tty := isTerminal(c.stdout)
	var waiting, admitted, active, lastMinute series
	var lastErr error
	t := time.NewTicker(c.interval)
	defer t.Stop()
	for n := 1; ; n++ {
		if lastErr == nil {
			waiting.add(r.Stats.Waiting)
			admitted.add(r.Stats.Admitted)
			active.add(r.Stats.Active)
			lastMinute.add(r.Stats.AdmittedLastMinute)
		}
		var b strings.Builder
		if tty {
			b.WriteString("\x1b[H\x1b[2J")
		} else if n > 1 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "vestibule watch %s — %s — %s (every %s; Ctrl-C stops)\n", id, cl.Endpoint, time.Now().Format("15:04:05"), c.interval)
		fmt.Fprintf(&b, "mode %s   maxActive %s   admitPerMinute %s\n\n", r.Config.Mode, num(r.Config.MaxActive), num(r.Config.AdmitPerMinute))
		pct := ""
		if r.Config.MaxActive > 0 {
			pct = fmt.Sprintf(" (%d%%)", (r.Stats.Active+r.Stats.Admitted)*100/r.Config.MaxActive)
		}
		row := func(name, value string, s series) {
			fmt.Fprintf(&b, "  %-20s %18s  %s\n", name, value, operator.Sparkline(s, historyLen))
		}
		row("waiting", num(r.Stats.Waiting), waiting)
		row("admitted", num(r.Stats.Admitted), admitted)
		row("active / maxActive", num(r.Stats.Active)+" / "+num(r.Config.MaxActive)+pct, active)
		row("admitted last min", num(r.Stats.AdmittedLastMinute)+" / "+num(r.Config.AdmitPerMinute), lastMinute)
		if lastErr != nil {
			fmt.Fprintf(&b, "\n  last refresh failed (%s); showing the figures of the one before\n", firstLine(lastErr))
		}
		if _, err := io.WriteString(c.stdout, b.String()); err != nil {
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
		}
	}
}

func firstLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}
