package room

import "time"

// PublicStatus is a room's public status (GET /api/rooms/{room}/status,
// docs/API.md): what the waiting page reads, with no credentials. The API
// writes it, the operator's client and the simulator read it.
type PublicStatus struct {
	Room           string `json:"room"`
	Mode           Mode   `json:"mode"`
	Waiting        int64  `json:"waiting"`
	Active         int64  `json:"active"`
	Admitted       int64  `json:"admitted"`
	MaxActive      int64  `json:"maxActive"`
	AdmitPerMinute int64  `json:"admitPerMinute"`
	// ClaimTTLSeconds is the claim window: the page keeps the poll it plans
	// at a pre-queue's opening within it (docs/PAGE.md).
	ClaimTTLSeconds int64 `json:"claimTTLSeconds"`
	// RatePerMinute is the pace for someone joining now (Stats.PacePerMinute):
	// what enqueue would tell them; the page counts down at it (docs/PAGE.md).
	RatePerMinute float64 `json:"ratePerMinute"`
	// Climb is the steered pace on its way up, in places (Stats.Climb):
	// each place is told its own pace on it, and the page counts its place
	// down on it (docs/PAGE.md). Absent when the pace does not climb.
	Climb      *Climb `json:"climb,omitempty"`
	EtaSeconds *int64 `json:"etaSeconds"` // for someone joining now; null when unknown
	// OpensAt is the opening of a pre-queue, when the room has one.
	OpensAt *time.Time `json:"opensAt,omitempty"`
	// Page is how the waiting page presents the room; absent: its own texts.
	Page *Page `json:"page,omitempty"`
	// PageVersion is PageVersion of Page, as poll replies carry it.
	PageVersion string `json:"pageVersion"`
	// DrawCommitment is DrawCommitment of the pre-queue lottery's seed,
	// for a room with an opening time; DrawSeed is the seed, once it opened
	// (docs/ENGINE.md, "Auditable lottery").
	DrawCommitment string `json:"drawCommitment,omitempty"`
	DrawSeed       string `json:"drawSeed,omitempty"`
	// Net is an auto room's safety net, "on" or "off", and NetWhy why it last
	// switched; PaceWhy is why a pace that follows the origin is where it is
	// (Stats; docs/ENGINE.md, "Steering").
	Net     string `json:"net,omitempty"`
	NetWhy  string `json:"netWhy,omitempty"`
	PaceWhy string `json:"paceWhy,omitempty"`
}
