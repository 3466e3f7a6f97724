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
)

// ErrStaleWrite is returned by orderDB.Record when the seat already carries
// a fencing token at least as large: the write is of an order the seat has
// since gone past (a late, paused or retried writer).
var ErrStaleWrite = errors.New("stale fencing token: the seat has a newer order")

// orderDB is the demo origin's own store of confirmed orders: an embedded
// SQLite file, one row per seat with the largest fencing token written for
// it. It is the origin-side fencing check docs/BOOKING.md asks for: a write
// whose token is not larger than the seat's last is refused, whatever Redis
// said before.
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
		id       TEXT PRIMARY KEY,  -- event "/" seat
		token    INTEGER NOT NULL,  -- the largest fencing token written
		order_id TEXT NOT NULL
	)`
	if _, err := db.ExecContext(ctx, schema); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("orders db %s: %w", path, err)
	}
	return &orderDB{db: db}, nil
}

// Record writes that seat of event now belongs to order, under its fencing
// token. It is one statement, so atomic: a row is inserted, or updated only
// when token is larger than the one it holds; otherwise ErrStaleWrite.
func (o *orderDB) Record(ctx context.Context, event, seat string, token int64, order string) error {
	res, err := o.db.ExecContext(ctx, `INSERT INTO seats (id, token, order_id) VALUES (?1, ?2, ?3)
		ON CONFLICT (id) DO UPDATE SET token = excluded.token, order_id = excluded.order_id
		WHERE seats.token < excluded.token`, event+"/"+seat, token, order)
	if err != nil {
		return fmt.Errorf("orders db: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("orders db: %w", err)
	} else if n == 0 {
		return ErrStaleWrite
	}
	return nil
}

// Seat returns the order and token last recorded for a seat ("" and 0 if none).
func (o *orderDB) Seat(ctx context.Context, event, seat string) (order string, token int64, err error) {
	err = o.db.QueryRowContext(ctx, `SELECT order_id, token FROM seats WHERE id = ?`, event+"/"+seat).Scan(&order, &token)
	if errors.Is(err, sql.ErrNoRows) {
		return "", 0, nil
	}
	return order, token, err
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

// Export writes event's seats as JSON lines (ExportLine), in seat order.
func (o *orderDB) Export(ctx context.Context, w io.Writer, event string) error {
	prefix := event + "/"
	rows, err := o.db.QueryContext(ctx, `SELECT id, token, order_id FROM seats WHERE substr(id, 1, ?1) = ?2 ORDER BY id`,
		len(prefix), prefix)
	if err != nil {
		return fmt.Errorf("orders db: %w", err)
	}
	defer func() { _ = rows.Close() }()
	enc := json.NewEncoder(w)
	for rows.Next() {
		var id, order string
		var token int64
		if err := rows.Scan(&id, &token, &order); err != nil {
			return fmt.Errorf("orders db: %w", err)
		}
		if err := enc.Encode(ExportLine{Event: event, Seat: strings.TrimPrefix(id, prefix), Order: order, FencingToken: token}); err != nil {
			return err
		}
	}
	return rows.Err()
}

// Close closes the file.
func (o *orderDB) Close() error { return o.db.Close() }
