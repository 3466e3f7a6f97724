package queueapi_test

import (
	"fmt"
	"github.com/vestibule-dev/vestibule/internal/apitest"
	"testing"
	"time"

	"github.com/vestibule-dev/vestibule/internal/redistest"
	"github.com/vestibule-dev/vestibule/internal/room"
)

// Is a per-network join limit safe as a default for pre-queue rooms? Behind
// carrier-grade NAT many subscribers share one public IPv4 address, which is
// all the limit sees (clientIPv4Prefix 32, its default). This plays, through
// the real handler and engine, a pre-queue crowd whose visitors each join
// once, k of them behind each public address within one minute (evenly
// spread), at limits L a minute, and counts the honest joins refused. The
// figures are in docs/SECURITY.md, "The lottery"; the verdict is the default
// of 0 (no limit), which this test holds: with it nobody behind a shared
// address is refused, where a limit a bot would notice refuses honest
// visitors as soon as a carrier puts more of them behind an address.
func TestJoinLimitBehindCarrierNAT(t *testing.T) {
	if got := room.DefaultConfig().ClientEnqueuePerMinute; got != 0 {
		t.Fatalf("clientEnqueuePerMinute defaults to %d: a shared address's honest joins are refused (below)", got)
	}
	f := apitest.NewFixture(t, redistest.Single(t))
	const addresses = 20
	refused := func(limit, k int) (int, int) {
		opens := f.Clock.Now().Add(time.Hour).UTC().Format(time.RFC3339)
		id := f.Room(fmt.Sprintf(`{"clientEnqueuePerMinute":%d,"opensAt":%q,"originUrl":"https://origin.example/"}`, limit, opens))
		n, no := 0, 0
		for range k { // k joins a minute behind each address, the addresses interleaved
			for a := range addresses {
				ev := apitest.Event("POST", "/api/rooms/"+id+"/enqueue", "", nil)
				ev.RequestContext.HTTP.SourceIP = fmt.Sprintf("198.51.100.%d", a+1)
				r := f.Send(ev)
				n++
				switch r.StatusCode {
				case 200:
				case 429:
					no++
				default:
					t.Fatalf("join %d: %d %s", n, r.StatusCode, r.Body)
				}
			}
			f.Clock.Advance(time.Minute / time.Duration(k))
		}
		return no, n
	}
	for _, limit := range []int{0, 10, 60, 600} {
		for _, k := range []int{5, 30, 120} {
			no, n := refused(limit, k)
			t.Logf("limit %4d/min, %3d visitors behind each address in a minute: %4d of %5d honest joins refused (%.0f %%)",
				limit, k, no, n, 100*float64(no)/float64(n))
			if limit == 0 && no != 0 {
				t.Errorf("without a limit %d joins were refused", no)
			}
			if limit > 0 && k > limit && no == 0 {
				t.Errorf("limit %d a minute with %d behind an address refused nobody", limit, k)
			}
		}
	}
}
