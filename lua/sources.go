package lua

// A Source is one script of this package as its file holds it: the
// operation, and the lib put in front of it (withLib), if any. Sources lists
// every script, so that each contract test (lua_test.go; roomdb's reply
// words) covers all of them: a script file without a row fails
// TestEveryScriptHasASource.
type Source struct {
	File string // the operation's file in lua/
	Lib  string // the lib: "lib.lua" (a room script: lib.lua and pace.lua), "booking_lib.lua", or "" (it stands alone)
	Op   string // the operation, as the file holds it
	Run  string // what is loaded: the lib's definitions it uses, then Op
}

// Room reports whether the source is a room script: it takes the room's KEYS
// (lib.lua) and answers in the room engine's reply words.
func (s Source) Room() bool { return s.Lib == "lib.lua" }

// Sources is every script of this package, in no particular order.
var Sources = []Source{
	{"enqueue.lua", "lib.lua", enqueue, Enqueue},
	{"poll.lua", "lib.lua", poll, Poll},
	{"tick.lua", "lib.lua", tick, Tick},
	{"consume.lua", "lib.lua", consume, Consume},
	{"complete.lua", "lib.lua", complete, Complete},
	{"renew.lua", "lib.lua", renew, Renew},
	{"leave.lua", "lib.lua", leave, Leave},
	{"config.lua", "lib.lua", config, Config},
	{"stats.lua", "lib.lua", stats, Stats},
	{"ratelimit.lua", "lib.lua", ratelimit, RateLimit},
	{"head.lua", "lib.lua", head, Head},
	{"drain.lua", "lib.lua", drain, Drain},
	{"arrive.lua", "lib.lua", arrive, Arrive},
	{"arrivals.lua", "lib.lua", arrivals, Arrivals},
	{"arrtrim.lua", "lib.lua", arrtrim, ArrTrim},
	{"merge.lua", "lib.lua", merge, Merge},
	{"arrdrop.lua", "lib.lua", arrdrop, ArrDrop},
	{"fence.lua", "lib.lua", fence, Fence},
	{"arrfence.lua", "lib.lua", arrfence, ArrFence},
	{"bury.lua", "lib.lua", bury, Bury},
	{"drop.lua", "lib.lua", drop, Drop},
	{"spoll.lua", "lib.lua", spoll, SPoll},
	{"ssweep.lua", "lib.lua", ssweep, SSweep},
	{"sevict.lua", "lib.lua", sevict, SEvict},
	{"sleave.lua", "lib.lua", sleave, SLeave},
	{"load.lua", "lib.lua", load, Load},
	{"notice.lua", "lib.lua", notice, Notice},
	{"notices.lua", "lib.lua", notices, Notices},
	{"noticeack.lua", "lib.lua", noticeack, NoticeAck},
	{"invite.lua", "lib.lua", invite, Invite},
	{"bypass.lua", "lib.lua", bypass, Bypass},
	{"visitor.lua", "lib.lua", visitor, Visitor},
	{"restore.lua", "lib.lua", restore, Restore},
	{"schedput.lua", "lib.lua", schedput, SchedPut},
	{"schedfree.lua", "lib.lua", schedfree, SchedFree},
	{"schedrefuse.lua", "lib.lua", schedrefuse, SchedRefuse},
	{"claim.lua", "lib.lua", claim, Claim},
	{"booking_define.lua", "booking_lib.lua", bookingDefine, BookingDefine},
	{"booking_hold.lua", "booking_lib.lua", bookingHold, BookingHold},
	{"booking_confirm.lua", "booking_lib.lua", bookingConfirm, BookingConfirm},
	{"booking_release.lua", "booking_lib.lua", bookingRelease, BookingRelease},
	{"booking_cancel.lua", "booking_lib.lua", bookingCancel, BookingCancel},
	{"booking_sweep.lua", "booking_lib.lua", bookingSweep, BookingSweep},
	{"booking_view.lua", "booking_lib.lua", bookingView, BookingView},
	{"booking_room.lua", "booking_lib.lua", bookingRoom, BookingRoom},
	{"booking_outbox.lua", "booking_lib.lua", bookingOutbox, BookingOutbox},
	{"booking_ack.lua", "booking_lib.lua", bookingAck, BookingAck},
	{"booking_end.lua", "booking_lib.lua", bookingEnd, BookingEnd},
	{"booking_extend.lua", "booking_lib.lua", bookingExtend, BookingExtend},
	{"booking_orders.lua", "booking_lib.lua", bookingOrders, BookingOrders},
	{"booking_sessions.lua", "booking_lib.lua", bookingSessions, BookingSessions},
	{"booking_rebuild.lua", "booking_lib.lua", bookingRebuild, BookingRebuild},
	{"booking_close.lua", "booking_lib.lua", bookingClose, BookingClose},
	{"booking_ended.lua", "", BookingEnded, BookingEnded},
	{"booking_active.lua", "", BookingActive, BookingActive},
}

// libs are the libs by the name Source.Lib gives them, and libFiles the
// files they are made of.
var (
	libs     = map[string]string{"lib.lua": roomLib, "booking_lib.lua": bookingLib}
	libFiles = map[string]bool{"lib.lua": true, "pace.lua": true, "booking_lib.lua": true}
)
