package queueapi

import (
	"context"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	"github.com/vestibule-dev/vestibule/internal/api/httpapi"
)

// LoadHeader is the header in which the origin reports its load, 0 (idle) to
// 1 (at capacity), on consume and complete: the pace of a room with
// admitPerMinuteMin follows it (docs/ENGINE.md, "Steering"; docs/API.md).
const LoadHeader = "Vestibule-Load"

var errBadLoad = &httpapi.Error{Status: http.StatusBadRequest, Code: "bad_load",
	Message: LoadHeader + " must be a decimal number from 0 to 1"}

// originLoad reads the request's LoadHeader: the load and true, false when
// there is none, errBadLoad when it is not a number in 0..1.
func originLoad(r *httpapi.Request) (float64, bool, error) {
	s := strings.TrimSpace(r.Header(strings.ToLower(LoadHeader)))
	if s == "" {
		return 0, false, nil
	}
	// Plain decimals only: ParseFloat also takes "Inf", "1e0" and hex.
	if len(s) > 16 || strings.Trim(s, "0123456789.") != "" {
		return 0, false, errBadLoad
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v < 0 || v > 1 {
		return 0, false, errBadLoad
	}
	return v, true, nil
}

// reportLoad records the origin's load after the consume or complete it came
// with succeeded; a failure is logged, the answer stands.
func (h *API) reportLoad(ctx context.Context, roomID string, load float64) {
	if err := h.o.Queue.ReportLoad(context.WithoutCancel(ctx), roomID, load); err != nil && h.o.Logger != nil {
		h.o.Logger.LogAttrs(ctx, slog.LevelWarn, "origin load not recorded", slog.String("room", roomID), slog.String("error", err.Error()))
	}
}
