// Package quota is the arithmetic of docs/DEPLOY.md's "Quotas": how many requests a second a
// crowd sends at its busiest, and what each AWS quota the stack runs within must be to serve
// it. It is plain Go, shared by the stack (the expectedVisitors setting sizes the stage's
// throttle and the cache alarm from it), `vestibule preflight` (which checks the account
// against it) and the bench (whose row holds the peak against the quota asked for), so the
// three cannot drift apart.
package quota

import (
	"math"

	"github.com/vestibule-dev/vestibule/internal/cadence"
	"github.com/vestibule-dev/vestibule/internal/pollpolicy"
	"github.com/vestibule-dev/vestibule/internal/room"
)

// The on-sale crowd docs/DEPLOY.md sizes the quotas for, scaled to its visitors:
// OnSaleFirstMinute of them join in the first minute, the rest evenly over the next
// OnSaleJoinMinutes − 1; the room admits OnSaleAdmitPerMinute a minute from the first second.
const (
	OnSaleFirstMinute    = 0.2
	OnSaleJoinMinutes    = 10
	OnSaleAdmitPerMinute = 50_000
)

// The requests of a waiting visitor and of an admission.
var (
	// FarPollSeconds is the mean interval between a far visitor's polls within 10 minutes
	// of their turn: the 5-minute budget (room.MaxPollAfter) less half of
	// pollpolicy.FarSpread, where the jitter puts it on average (a reply to a join: anywhere
	// in that interval). Every waiting visitor is counted at this rate, so the visitors
	// farther back, whose budget is longer (room.PollBudget, up to room.FarPollAfter), are
	// counted at more polls than they make: the quotas keep that margin. The descent to the
	// front is DescentPolls more.
	FarPollSeconds = room.MaxPollAfter.Seconds() * (1 - pollpolicy.FarSpread/2)
)

const (
	// DescentPolls are the polls of the descent to the front beyond the far ones: one planned
	// from the ETA, one aimed just after the admitting tick (docs/ENGINE.md, "Polling").
	DescentPolls = 2
	// OriginCalls are the calls of the booking site per admission: a consume and a complete.
	OriginCalls = 2
	// PageObjects are the page's files a joining visitor loads through CloudFront
	// (index.html, waiting.css, waiting.js: the bench's measured page weight).
	PageObjects = 3
	// ECPUPerCall is the ElastiCache ECPUs of one API call, as the cost model counts them
	// (a script of a few commands and a few hundred bytes each way).
	ECPUPerCall = 4
	// EventsPerAdmission are the admission events of an admission (the consume and the
	// complete); each room's tick adds one a second while it admits.
	EventsPerAdmission = 2
	// LogSample is the share of successful polls that log their request line (LOG_SAMPLE).
	LogSample = 0.01
)

// The pre-queue of a million, measured: `make bench BENCH_MILLION=1`
// (docs/BENCHMARKS.md) found its busiest API second after the opening 1.83 times the default
// stage throttle of 5,000. Of that, the admissions' calls (OnSaleAdmitPerMinute a minute, each
// DescentPolls polls and OriginCalls calls) do not grow with the crowd; the rest is taken to
// grow with the visitors waiting at the opening.
const (
	PrequeueMeasuredVisitors = 1_000_000
	PrequeueMeasuredPeak     = 1.83 * 5_000
)

// The rules that turn a peak into a quota to ask for.
const (
	// Headroom: a quota is asked for so that the peak is at most this share of it.
	Headroom = 0.8
	// APIStep and CloudFrontStep: the quotas asked for are rounded up to these.
	APIStep        = 5_000
	CloudFrontStep = 50_000
	// LambdaRPSPerUnit: Lambda answers at most 10 requests a second for each unit of a
	// function's concurrency, however short its calls.
	LambdaRPSPerUnit = 10
	// LambdaMinUnreserved: Lambda keeps at least this much of the account's concurrency
	// unreserved.
	LambdaMinUnreserved = 100
	// LambdaScaleStep and LambdaScaleSeconds: each function adds at most LambdaScaleStep
	// execution environments every LambdaScaleSeconds.
	LambdaScaleStep    = 1_000
	LambdaScaleSeconds = 10
)

// AWS's defaults (per account and Region unless said otherwise).
const (
	DefaultAPIAccountRPS     = 10_000  // API Gateway, all APIs (L-8A5B8E43)
	DefaultLambdaConcurrency = 1_000   // Lambda, all functions (L-B99A9384)
	DefaultCloudFrontRPS     = 250_000 // CloudFront, per distribution (a Support case, not Service Quotas)
	DefaultPutEventsTPS      = 10_000  // EventBridge PutEvents in us-east-1, us-west-2, eu-west-1 (L-9B653E91); less elsewhere
	DefaultPutLogEventsTPS   = 5_000   // CloudWatch Logs PutLogEvents (L-7E1FAE88)
	DefaultStageRPS          = 5_000   // the stack's own apiRateLimit without expectedVisitors
)

// Crowd is the shape of a crowd: when its visitors join and how fast the room admits them.
type Crowd struct {
	Visitors int
	// FirstMinute is the share of the visitors who join in the first minute; the rest join
	// evenly over the next JoinMinutes − 1.
	FirstMinute float64
	JoinMinutes int
	// AdmitPerMinute is the room's admission rate, from the first second.
	AdmitPerMinute float64
}

// OnSale is the on-sale crowd with this many visitors.
func OnSale(visitors int) Crowd {
	return Crowd{Visitors: visitors, FirstMinute: OnSaleFirstMinute, JoinMinutes: OnSaleJoinMinutes, AdmitPerMinute: OnSaleAdmitPerMinute}
}

// Second is what the crowd sends in one second.
type Second struct {
	Joins, Polls, OriginCalls, Admitted float64
	// Waiting is the visitors waiting at the second's start.
	Waiting float64
	// StatusReads are the page's reads of the status through CloudFront, every waiting
	// page visible and reading at the page's cadence (cadence.LineReads): a hidden tab
	// reads once a minute, so this is the most they read.
	StatusReads float64
}

// API is the second's API Gateway requests.
func (s Second) API() float64 { return s.Joins + s.Polls + s.OriginCalls }

// joinsBy is the visitors who joined by second t.
func (c Crowd) joinsBy(t float64) float64 {
	n := float64(c.Visitors)
	first := n * c.FirstMinute
	switch {
	case t <= 0:
		return 0
	case t <= 60:
		return first * t / 60
	case c.JoinMinutes <= 1:
		return n
	default:
		rest := float64(c.JoinMinutes-1) * 60
		return math.Min(n, first+(n-first)*(t-60)/rest)
	}
}

// Seconds is the crowd second by second, from the first join to the last admission: every
// waiting visitor polls every FarPollSeconds, each admission adds DescentPolls polls and
// OriginCalls calls.
func (c Crowd) Seconds() []Second {
	if c.Visitors <= 0 || c.AdmitPerMinute <= 0 {
		return nil
	}
	perSecond := c.AdmitPerMinute / 60
	var out []Second
	admitted := 0.0
	for t := 0; ; t++ {
		joined := c.joinsBy(float64(t))
		waiting := joined - admitted
		if t > 0 && waiting <= 0 && joined >= float64(c.Visitors) {
			return out
		}
		adm := math.Min(perSecond, math.Max(c.joinsBy(float64(t+1))-admitted, 0))
		s := Second{
			Joins:       c.joinsBy(float64(t+1)) - joined,
			Polls:       waiting/FarPollSeconds + adm*DescentPolls,
			OriginCalls: adm * OriginCalls,
			Admitted:    adm,
			Waiting:     waiting,
			StatusReads: cadence.LineReads(waiting, perSecond),
		}
		out = append(out, s)
		admitted += adm
	}
}

// Load is a crowd's busiest second against its mean.
type Load struct {
	Peak   Second  // the second with the most API requests
	PeakAt int     // its second from the first join
	Mean   float64 // API requests a second over the whole crowd
	// CloudFrontPeak is the busiest second at the edge: API requests, status reads and the
	// page's files of each join.
	CloudFrontPeak float64
	Seconds        int
}

// Load is the crowd's busiest second and its mean.
func (c Crowd) Load() Load {
	var l Load
	total := 0.0
	for t, s := range c.Seconds() {
		total += s.API()
		if s.API() > l.Peak.API() {
			l.Peak, l.PeakAt = s, t
		}
		l.CloudFrontPeak = math.Max(l.CloudFrontPeak, s.API()+s.StatusReads+s.Joins*PageObjects)
		l.Seconds = t + 1
	}
	if l.Seconds > 0 {
		l.Mean = total / float64(l.Seconds)
	}
	return l
}

// PrequeuePeak is the busiest API second after the opening of a pre-queue of visitors admitted
// OnSaleAdmitPerMinute a minute: the measured million's, with its waiting part scaled.
func PrequeuePeak(visitors int) float64 {
	fixed := OnSaleAdmitPerMinute / 60.0 * (DescentPolls + OriginCalls)
	perVisitor := (PrequeueMeasuredPeak - fixed) / PrequeueMeasuredVisitors
	return fixed + perVisitor*float64(visitors)
}

// Needs are the quotas a crowd of visitors needs, whether it comes as OnSale's burst or as a
// pre-queue that opens: each is asked for so that the busier of the two peaks is at most
// Headroom of it.
type Needs struct {
	Visitors int
	OnSale   Load
	// PeakAPI is the busier peak, requests a second: OnSale's, or a pre-queue's (PrequeuePeak).
	PeakAPI float64
	// APIRequest is what to ask of API Gateway's account throttle, and what the stage's
	// throttle (apiRateLimit and apiBurstLimit) is set to: PeakAPI ÷ Headroom, rounded up to
	// APIStep, at least the default stage's.
	APIRequest float64
	// LambdaConcurrency is the account's concurrent executions the API functions need at
	// APIRequest (LambdaRPSPerUnit a unit), with the LambdaMinUnreserved Lambda keeps; add
	// what the stack reserves.
	LambdaConcurrency float64
	// LambdaRampSeconds is how long the busiest function takes to scale from nothing to
	// the units the on-sale's first minute of joins needs (LambdaScaleStep every
	// LambdaScaleSeconds).
	LambdaRampSeconds float64
	// CloudFrontPeak and CloudFrontRequest: the distribution's busiest second, and what to
	// ask for: ÷ Headroom, rounded up to CloudFrontStep, at least the default.
	CloudFrontPeak, CloudFrontRequest float64
	// CacheECPU is the ECPUs a second of the API's peak (ECPUPerCall a call); the stack's
	// CacheECPU alarm fires at CacheECPU ÷ Headroom.
	CacheECPU float64
	// EventEntries is the admission events a second (each room's tick adds one): the
	// forwarder puts up to ten a call, one a call at worst.
	EventEntries float64
	// LogLines is the log lines a second at the peak: the API's access log line of every
	// request, the functions' line of each request but the unsampled polls, the events.
	LogLines float64
}

// For is the quotas a crowd of visitors needs.
func For(visitors int) Needs {
	n := Needs{Visitors: visitors, OnSale: OnSale(visitors).Load()}
	n.PeakAPI = math.Max(n.OnSale.Peak.API(), PrequeuePeak(visitors))
	n.APIRequest = math.Max(roundUp(n.PeakAPI/Headroom, APIStep), DefaultStageRPS)
	n.LambdaConcurrency = math.Ceil(n.APIRequest/LambdaRPSPerUnit) + LambdaMinUnreserved
	joinUnits := math.Ceil(float64(visitors) * OnSaleFirstMinute / 60 / LambdaRPSPerUnit)
	n.LambdaRampSeconds = math.Ceil(joinUnits/LambdaScaleStep) * LambdaScaleSeconds
	n.CloudFrontPeak = n.OnSale.CloudFrontPeak
	n.CloudFrontRequest = math.Max(roundUp(n.CloudFrontPeak/Headroom, CloudFrontStep), DefaultCloudFrontRPS)
	n.CacheECPU = n.PeakAPI * ECPUPerCall
	p := n.OnSale.Peak
	n.EventEntries = p.Admitted*EventsPerAdmission + 1
	n.LogLines = p.API() + p.Joins + p.OriginCalls + p.Polls*LogSample + n.EventEntries
	return n
}

// roundUp rounds x up to a multiple of step.
func roundUp(x, step float64) float64 { return math.Ceil(x/step) * step }
