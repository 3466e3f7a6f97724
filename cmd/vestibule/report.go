package main

import (
	"context"
	"encoding/csv"
	"strconv"
	"time"

	"github.com/vestibule-dev/vestibule/internal/operator"
	"github.com/vestibule-dev/vestibule/internal/printer"
	"github.com/vestibule-dev/vestibule/internal/room"
)

// reportColumns are the CSV's columns, a row a minute: every figure of
// room.ReportMinute, in the JSON's names.
var reportColumns = []string{"minute", "waiting", "admitted", "active", "admittedPerMinute", "evictedPerMinute",
	"leftPerMinute", "abandonedPerMinute", "lapsedPerMinute", "joinsPerMinute", "waitsMeasured", "waitP50Seconds",
	"waitP95Seconds", "ordersConfirmed", "ordersCancelled", "noticesSent", "noticesFailed", "turnsSaved", "peakWaiting"}

// report prints a room's sale: the totals, or with --csv a row a minute
// (--json: the API's JSON).
func (c *command) report(ctx context.Context, pos []string) error {
	id, cl, err := c.roomClient(ctx, pos, "report")
	if err != nil {
		return err
	}
	rep, err := cl.Report(ctx, id)
	if err != nil {
		return err
	}
	switch {
	case c.g.json:
		return c.printJSON(rep)
	case c.csv:
		return writeReportCSV(c, rep)
	}
	t := rep.Totals
	if t.Minutes == 0 {
		c.out.Printf("%s: no minutes recorded yet (the admission ticks record one a minute)\n", id)
		return nil
	}
	tw := printer.NewTable(c.stdout, 0)
	tw.Printf("room\t%s\n", id)
	tw.Printf("from\t%s\n", t.From.Local().Format("2006-01-02 15:04"))
	tw.Printf("to\t%s\t(%s minutes recorded)\n", t.To.Local().Format("2006-01-02 15:04"), num(int64(t.Minutes)))
	tw.Printf("visitors\t%s\t(waiting at the start, and every join that stayed)\n", num(t.Visitors))
	tw.Printf("peak joins a minute\t%s\n", num(t.PeakJoins))
	tw.Printf("peak waiting\t%s\t(the most waiting at any admission tick)\n", num(t.PeakWaiting))
	tw.Printf("admitted\t%s\n", num(t.Admitted))
	tw.Printf("abandoned\t%s\t(waited, never admitted: %s left, %s evicted, silent past their deadline)\n",
		num(t.Abandoned), num(t.Left), num(t.Evicted))
	tw.Printf("lapsed\t%s\t(admitted, the grant never redeemed)\n", num(t.Lapsed))
	tw.Printf("wait p50 / p95\t%s / %s\t(measured, %s waits, within a bucket's width: about 19 %%)\n",
		room.WaitText(t.WaitP50Seconds), room.WaitText(t.WaitP95Seconds), num(t.WaitsMeasured))
	if t.OrdersConfirmed+t.OrdersCancelled > 0 {
		tw.Printf("orders\t%s confirmed, %s cancelled\t(the booking kit's, of the room's events)\n", num(t.OrdersConfirmed), num(t.OrdersCancelled))
	}
	if t.NoticesSent+t.NoticesFailed+t.TurnsSaved > 0 {
		tw.Printf("notices\t%s sent, %s failed\t(of visitors' turns, by push or email)\n", num(t.NoticesSent), num(t.NoticesFailed))
		tw.Printf("turns saved\t%s\t(notified turns claimed after the claim window they would have had without one)\n", num(t.TurnsSaved))
	}
	tw.Printf("consumed\t%s\t(entries redeemed at the origin, counted since the room was created or restored)\n", num(rep.Now.Consumed))
	tw.Printf("now\t%s waiting, %s admitted, %s active\n", num(rep.Now.Waiting), num(rep.Now.Admitted), num(rep.Now.Active))
	tw.Println("\n`vestibule report " + id + " --csv` gives the minutes.")
	return tw.Flush()
}

func writeReportCSV(c *command, rep operator.Report) error {
	w := csv.NewWriter(c.stdout)
	_ = w.Write(reportColumns) // errors surface at Flush
	for _, m := range rep.Minutes {
		_ = w.Write([]string{m.Minute.UTC().Format(time.RFC3339), i64(m.Waiting), i64(m.Admitted), i64(m.Active),
			i64(m.AdmittedPerMinute), i64(m.EvictedPerMinute), i64(m.LeftPerMinute), i64(m.AbandonedPerMinute),
			i64(m.LapsedPerMinute), i64(m.JoinsPerMinute), i64(m.WaitsMeasured), secs(m.WaitP50Seconds),
			secs(m.WaitP95Seconds), i64(m.OrdersConfirmed), i64(m.OrdersCancelled), i64(m.NoticesSent), i64(m.NoticesFailed),
			i64(m.TurnsSaved), i64(m.PeakWaiting)})
	}
	w.Flush()
	return w.Error()
}

func i64(n int64) string { return strconv.FormatInt(n, 10) }

// secs is a wait in the CSV: whole seconds (room.WaitSeconds).
func secs(s float64) string { return strconv.FormatFloat(room.WaitSeconds(s), 'f', 0, 64) }
