package bookingdb_test

import (
	"context"
	"errors"
	"testing"

	"github.com/vestibule-dev/vestibule/internal/booking"
	"github.com/vestibule-dev/vestibule/internal/bookingdb"
	"github.com/vestibule-dev/vestibule/internal/redistest"
)

// A cancel reason is one line of text under the one rule every text field
// follows (package text): no C0 or C1 control, NEL (U+0085) included.
func TestCancelReasonText(t *testing.T) {
	eng := bookingdb.New(redistest.Single(t))
	ctx := context.Background()
	for _, bad := range []string{"paid\u0085", "a\nb", "tab\t", "esc\x1b", "csi\u009b", "del\x7f", "sep\u2028", "bad \xff"} {
		if _, err := eng.Cancel(ctx, "no-such-event", "1", bad); !errors.Is(err, booking.ErrInvalidRequest) {
			t.Errorf("cancel reason %q: %v, want ErrInvalidRequest", bad, err)
		}
	}
	if _, err := eng.Cancel(ctx, "no-such-event", "1", "payment failed — refund"); errors.Is(err, booking.ErrInvalidRequest) {
		t.Errorf("a plain reason refused: %v", err)
	}
}
