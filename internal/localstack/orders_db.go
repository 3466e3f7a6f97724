package localstack

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	_ "modernc.org/sqlite" // the pure-Go SQLite driver, "sqlite"

	"github.com/vestibule-dev/vestibule/internal/booking"
)

// The refusals of orderDB.Record.
var (
	// ErrStaleWrite: the seat already carries a fencing token at least as
	// large: the write is of an order the seat has since gone past (a late,
	// paused or retried writer).
	ErrStaleWrite = errors.New("stale fencing token: the seat has a newer order")
	// ErrSeatSold: the seat belongs to another order that was not cancelled,
	// whatever the tokens say (after a total loss of Redis the kit's tokens
	// start above every earlier one).
	ErrSeatSold = errors.New("the seat belongs to another order, not cancelled")
)

// orderDB is the demo origin's own store of confirmed orders: an embedded
// SQLite file, one row per seat with the largest fencing token written for
// it, its order, and whether that order was cancelled. It is the origin-side
// guard docs/BOOKING.md asks for: a write whose token is not larger than the
// seat's last is refused, and a confirmed order is never replaced by another
// unless it was cancelled, whatever Redis said before.
type orderDB struct {
	db *sql.DB
}

// openOrderDB opens (or creates) the SQLite file at path.
func openOrderDB(ctx context.Context, path string) (*orderDB, error) {
	// WAL and a busy timeout: several demo stacks (tests) may share a file.
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)")
	if err != nil {
		return nil, fmt.Errorf("orders db: %w", err)
	}
	const schema = `CREATE TABLE IF NOT EXISTS seats (
		id        TEXT PRIMARY KEY,           -- event "/" seat
		token     INTEGER NOT NULL,           -- the largest fencing token written
		order_id  TEXT NOT NULL,
		cancelled INTEGER NOT NULL DEFAULT 0  -- 1: the order was cancelled, the seat may be sold again
	)`
	if _, err := db.ExecContext(ctx, schema); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("orders db %s: %w", path, err)
	}
	// A file of an earlier run has no cancelled column: add it.
	if _, err := db.ExecContext(ctx, `SELECT cancelled FROM seats LIMIT 0`); err != nil {
		if _, err := db.ExecContext(ctx, `ALTER TABLE seats ADD COLUMN cancelled INTEGER NOT NULL DEFAULT 0`); err != nil {
			_ = db.Close()
			return nil, fmt.Errorf("orders db %s: %w", path, err)
		}
	}
	return &orderDB{db: db}, nil
}

// Record writes that seat of event now belongs to order, under its fencing
// token. It is one statement, so atomic: a row is inserted, or updated only
// when token is larger than the one it holds and the order it holds was
// cancelled. Otherwise nothing changes: ErrStaleWrite when the seat's token
// is at least token (the same order written again included: see Seat),
// ErrSeatSold when it belongs to another order, not cancelled.
func (o *orderDB) Record(ctx context.Context, event, seat string, token int64, order string) error {
	res, err := o.db.ExecContext(ctx, `INSERT INTO seats (id, token, order_id, cancelled) VALUES (?1, ?2, ?3, 0)
		ON CONFLICT (id) DO UPDATE SET token = excluded.token, order_id = excluded.order_id, cancelled = 0
		WHERE seats.token < excluded.token AND seats.cancelled = 1`, event+"/"+seat, token, order)
	if err != nil {
		return fmt.Errorf("orders db: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("orders db: %w", err)
	}
	if n > 0 {
		return nil
	}
	_, cur, cancelled, err := o.seat(ctx, event, seat)
	if err != nil {
		return err
	}
	if cur >= token || cancelled {
		return ErrStaleWrite
	}
	return ErrSeatSold
}

// Cancel records that order of event was cancelled (in the kit: its seats
// returned): its seats may be sold again, to a later token. It returns how
// many seats it marked; a second cancel marks none.
func (o *orderDB) Cancel(ctx context.Context, event, order string) (int64, error) {
	prefix := event + "/"
	res, err := o.db.ExecContext(ctx, `UPDATE seats SET cancelled = 1 WHERE order_id = ?1 AND substr(id, 1, ?2) = ?3 AND cancelled = 0`,
		order, len(prefix), prefix)
	if err != nil {
		return 0, fmt.Errorf("orders db: %w", err)
	}
	return res.RowsAffected()
}

// Seat returns the order and token last recorded for a seat ("" and 0 if
// none), whether cancelled or not.
func (o *orderDB) Seat(ctx context.Context, event, seat string) (order string, token int64, err error) {
	order, token, _, err = o.seat(ctx, event, seat)
	return order, token, err
}

func (o *orderDB) seat(ctx context.Context, event, seat string) (order string, token int64, cancelled bool, err error) {
	err = o.db.QueryRowContext(ctx, `SELECT order_id, token, cancelled FROM seats WHERE id = ?`, event+"/"+seat).Scan(&order, &token, &cancelled)
	if errors.Is(err, sql.ErrNoRows) {
		return "", 0, false, nil
	}
	if err != nil {
		return "", 0, false, fmt.Errorf("orders db: %w", err)
	}
	return order, token, cancelled, nil
}

// ExportLine is one line of an origin's record of what it sold, the JSON
// lines `vestibule booking reconcile` reads (docs/BOOKING.md,
// "Reconciliation"): a seat, or units of a sku, and the order.
type ExportLine struct {
	Event        string `json:"event"`
	Seat         string `json:"seat,omitempty"`
	SKU          string `json:"sku,omitempty"`
	Units        int64  `json:"units,omitempty"`
	Order        string `json:"order"`
	FencingToken int64  `json:"fencingToken,omitempty"`
}

// Export writes event's sold seats (not those of cancelled orders) as JSON
// lines (ExportLine), in seat order.
func (o *orderDB) Export(ctx context.Context, w io.Writer, event string) error {
	enc := json.NewEncoder(w)
	return o.sold(ctx, event, func(seat, order string, token int64) error {
		return enc.Encode(ExportLine{Event: event, Seat: seat, Order: order, FencingToken: token})
	})
}

// Sold returns event's sold seats by order: what the kit rebuilds after a
// total loss (docs/BOOKING.md, "After a total loss").
func (o *orderDB) Sold(ctx context.Context, event string) ([]booking.SoldOrder, error) {
	by := map[string]int{}
	var out []booking.SoldOrder
	err := o.sold(ctx, event, func(seat, order string, _ int64) error {
		i, ok := by[order]
		if !ok {
			i = len(out)
			by[order] = i
			out = append(out, booking.SoldOrder{Order: order})
		}
		out[i].Seats = append(out[i].Seats, seat)
		return nil
	})
	return out, err
}

// sold calls f with each sold seat of event (its order not cancelled), in seat order.
func (o *orderDB) sold(ctx context.Context, event string, f func(seat, order string, token int64) error) error {
	prefix := event + "/"
	rows, err := o.db.QueryContext(ctx, `SELECT id, token, order_id FROM seats WHERE substr(id, 1, ?1) = ?2 AND cancelled = 0 ORDER BY id`,
		len(prefix), prefix)
	if err != nil {
		return fmt.Errorf("orders db: %w", err)
	}
	defer func() { _ = rows.Close() }()
	for rows.Next() {
		var id, order string
		var token int64
		if err := rows.Scan(&id, &token, &order); err != nil {
			return fmt.Errorf("orders db: %w", err)
		}
		if err := f(strings.TrimPrefix(id, prefix), order, token); err != nil {
			return err
		}
	}
	return rows.Err()
}

// Close closes the file.
func (o *orderDB) Close() error { return o.db.Close() }
