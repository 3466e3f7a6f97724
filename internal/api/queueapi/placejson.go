package queueapi

import (
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/vestibule-dev/vestibule/internal/api/httpapi"
	"github.com/vestibule-dev/vestibule/internal/notice"
)

// The answer of enqueue and poll is written by hand: it is the body of every
// poll, and encoding/json's reflection was a visible share of the route's
// time. The bytes are exactly json.Marshal's (TestPlaceJSONIsEncodingJSONs,
// FuzzPlaceJSON); anything the fast path does not cover (a string that needs
// escaping, a time outside years 0–9999) falls back to json.Marshal.

// placeJSONResponse is httpapi.JSON(http.StatusOK, out) without reflection.
func placeJSONResponse(out *placeResponse) events.APIGatewayV2HTTPResponse {
	b, ok := appendPlaceJSON(make([]byte, 0, 512), out)
	if !ok {
		return httpapi.JSON(http.StatusOK, out)
	}
	return httpapi.JSONBytes(http.StatusOK, b)
}

// appendPlaceJSON appends out as json.Marshal writes it; false when a value
// needs what only json.Marshal does.
func appendPlaceJSON(b []byte, out *placeResponse) ([]byte, bool) {
	ok := true
	str := func(name, v string, omitEmpty bool) {
		if omitEmpty && v == "" {
			return
		}
		b = append(b, name...)
		if !plainJSONString(v) {
			ok = false
			return
		}
		b = append(b, '"')
		b = append(b, v...)
		b = append(b, '"')
	}
	tm := func(name string, t *time.Time) {
		if t == nil {
			return
		}
		if y := t.Year(); y < 0 || y > 9999 {
			ok = false
			return
		}
		b = append(b, name...)
		b = append(b, '"')
		b = t.AppendFormat(b, time.RFC3339Nano)
		b = append(b, '"')
	}
	str(`{"room":`, out.Room, false)
	str(`,"ticket":`, out.Ticket, true)
	str(`,"state":`, string(out.State), false)
	b = append(b, `,"position":`...)
	b = strconv.AppendInt(b, out.Position, 10)
	b = append(b, `,"waiting":`...)
	b = strconv.AppendInt(b, out.Waiting, 10)
	b = append(b, `,"etaSeconds":`...)
	if out.EtaSeconds == nil {
		b = append(b, "null"...)
	} else {
		b = strconv.AppendInt(b, *out.EtaSeconds, 10)
	}
	b = append(b, `,"pollAfterMs":`...)
	b = strconv.AppendInt(b, out.PollAfterMs, 10)
	flt := func(name string, v *float64) {
		if v == nil {
			return
		}
		// encoding/json's form for the numbers these fields hold: the
		// shortest decimal, without an exponent in [1e-6, 1e21).
		if f := math.Abs(*v); f != 0 && (f < 1e-6 || f >= 1e21) || math.IsNaN(f) || math.IsInf(f, 0) {
			ok = false
			return
		}
		b = append(b, name...)
		b = strconv.AppendFloat(b, *v, 'f', -1, 64)
	}
	flt(`,"ratePerMinute":`, out.RatePerMinute)
	tm(`,"opensAt":`, out.OpensAt)
	flt(`,"draw":`, out.Draw)
	str(`,"entryToken":`, out.EntryToken, true)
	str(`,"originUrl":`, out.OriginURL, true)
	tm(`,"grantExpiresAt":`, out.GrantExpiresAt)
	if out.Active {
		b = append(b, `,"active":true`...)
	}
	str(`,"pageVersion":`, out.PageVersion, true)
	str(`,"enterUrl":`, out.EnterURL, true)
	if out.Notices != nil {
		var plain bool
		if b, plain = appendOffer(b, out.Notices); !plain {
			ok = false
		}
	}
	if out.Notify != nil {
		b = append(b, `,"notify":`...)
		b = strconv.AppendBool(b, *out.Notify)
	}
	b = append(b, '}')
	return b, ok
}

// appendOffer appends the notices' offer as json.Marshal writes it (each
// field left out when empty); false when a string needs json.Marshal.
func appendOffer(b []byte, n *notice.Offer) ([]byte, bool) {
	b = append(b, `,"notices":{`...)
	open := len(b)
	field := func(name string) {
		if len(b) > open {
			b = append(b, ',')
		}
		b = append(b, name...)
	}
	for _, f := range [][2]string{{`"push":`, n.Push}, {`"vapid":`, n.VAPID}} {
		if f[1] == "" {
			continue
		}
		if !plainJSONString(f[1]) {
			return b, false
		}
		field(f[0])
		b = append(append(append(b, '"'), f[1]...), '"')
	}
	if n.Email {
		field(`"email":true`)
	}
	if n.KeepSeconds != 0 {
		field(`"keepSeconds":`)
		b = strconv.AppendInt(b, n.KeepSeconds, 10)
	}
	return append(b, '}'), true
}

// plainJSONString reports whether json.Marshal writes s as it is, between
// quotes: printable ASCII without '"', '\\' and the HTML characters it escapes.
func plainJSONString(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20 || c > 0x7e, c == '"', c == '\\', c == '<', c == '>', c == '&':
			return false
		}
	}
	return true
}
