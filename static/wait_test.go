package static

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/vestibule-dev/vestibule/internal/room"
)

// TestWaitText holds the console's rounding and text of a wait
// (js/console-sale.js waitSeconds, waitText) to room.WaitSeconds and
// room.WaitText, which the report's JSON and `vestibule report` use: one
// rule for a wait everywhere. The cases are the halves and the values just
// beside them, the units' edges, and the report's own figures.
func TestWaitText(t *testing.T) {
	var cases [][3]any
	for _, s := range []float64{0, -3, math.NaN(), 0.49, 0.5, 0.51, 4.98, 5.612, 10.5, 10.4999, 59.5, 60, 89.5,
		599.49, 610.2, 3599.5, 3600, 3661.7, 86399.5, 0.49999999999999994} {
		js := s
		if math.IsNaN(s) {
			js = 0 // JSON has no NaN; the console reads a missing wait as 0 too
		}
		cases = append(cases, [3]any{js, room.WaitSeconds(s), room.WaitText(s)})
	}
	b, err := json.Marshal(cases)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("WAITS", string(b))
	nodeTest(t, "console-sale.test.js", "console-sale.js")
}
