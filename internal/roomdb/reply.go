package roomdb

// The scripts' replies, named once here; each script's header (lua/*.lua)
// documents the same shapes.

// Reply words: the one-word answers of the scripts, one vocabulary for all.
const (
	wordOK        = "ok"        // done (consume: followed by the session end)
	wordNoRoom    = "noroom"    // the room is unknown: it has no settings
	wordNoGrant   = "nogrant"   // consume, complete: no such grant or session
	wordClosed    = "closed"    // enqueue: the room is closed
	wordConsumed  = "consumed"  // consume: the grant was already used
	wordExpired   = "expired"   // consume: the claim deadline passed
	wordAudience  = "audience"  // consume, complete: the entry token's audience is not the room's origin
	wordSlow      = "slow"      // poll: too soon after the last poll; followed by the wait (ms)
	wordChallenge = "challenge" // enqueue: the room asks a join challenge of more work than proven; followed by the bits
	wordSpent     = "spent"     // enqueue: the join challenge's proof was used before
	wordLimited   = "limited"   // enqueue: the client's join limit; followed by the wait (ms)
	wordCreated   = "created"   // config: a new room
	wordUpdated   = "updated"   // config: an existing room's settings changed
	wordBusy      = "busy"      // tick with a guard: another tick ran less than the guard ago
	wordOpen      = "open"      // drain: the room is not closed
	wordArrived   = "arrived"   // arrive: the join is on an arrival shard; followed by the sequence and a position estimate
	wordStale     = "stale"     // arrive: a change of the settings fenced the shard after the ones the join was sent with
	wordRaced     = "raced"     // config: settings of a later change were stored first; nothing stored
	wordUninvited = "uninvited" // enqueue: an inviteOnly room, and the join holds no invitation
	wordRevoked   = "revoked"   // invite: the invitation was revoked
	wordUsed      = "used"      // invite: every use of the invitation was taken
	wordStands    = "stands"    // restore: the visitor's place is not lost
	wordOff       = "off"       // notice: the room offers no notices
	wordNoPlace   = "noplace"   // notice: the visitor holds no place in the queue
	wordNoNotice  = "nonotice"  // noticeack: no such notice due
	wordFull      = "full"      // schedput: the schedule holds the most changes
	wordLost      = "lost"      // schedfree, schedrefuse, config: the scheduled change's lease is not the caller's (ran out, or another holds it)
	wordGone      = "gone"      // schedrefuse: the scheduled change is no longer in the schedule
	wordRoom      = "room"      // spoll: the room's shard answers this place, not the arrival shard
)

// replyWords is every reply word, for the test that the scripts use no other.
var replyWords = []string{wordOK, wordNoRoom, wordNoGrant, wordClosed, wordConsumed, wordExpired,
	wordAudience, wordSlow, wordChallenge, wordSpent, wordLimited, wordCreated, wordUpdated, wordBusy, wordOpen, wordArrived,
	wordStale, wordRaced, wordUninvited, wordRevoked, wordUsed, wordStands, wordOff, wordNoPlace, wordNoNotice,
	wordFull, wordLost, wordGone, wordRoom}

// stateActive is the place state of a consumed grant (a running session); the
// API reports it as StateAdmitted with Place.Active.
const stateActive = "active"

// The place reply (lib.lua reply), by position.
const (
	placeState    = iota // state: prequeue, waiting, paused, closed, admitted, active, expired
	placeSeq             // the sequence (decimal)
	placeDraw            // the pre-queue draw, '' for none
	placePosition        // 1-based position, 0 when not waiting
	placeWaiting         // visitors waiting
	placeDeadline        // claim deadline or session end (ms), 0 for none
	placeRate            // the pace, admissions a minute × 1000 (lib.lua pace; Place.RatePerMinute)
	placeVersion         // the settings' version
	placeWithin          // poll within (ms): the budget of the next poll, 0 when not in the queue
	placeNotice          // 1 when the place holds a notice registration, else 0 (Place.Notice)
	placeSettings        // first of the settings' field, value pairs, when sent
)

// The tick reply (tick.lua), by position.
const (
	tickAdmitted  = iota // visitors admitted
	tickEvicted          // stale visitors evicted
	tickReclaimed        // expired grants reclaimed
	tickEnded            // sessions ended
	tickShards           // the most arrival shards the room's joins ever spread over (arrk; merge reads them)
	tickNotices          // notices due to send (TickResult.Notices)
	tickLen
	// A tick that changed something adds these (TickResult's event fields).
	tickFirst   = iota - 1 // lowest sequence admitted, 0 for none
	tickLast               // highest sequence admitted, 0 for none
	tickWaiting            // counts after the tick: waiting,
	tickGranted            // admitted (grants),
	tickActive             // active (sessions)
	tickLenEvent
	// A tick that switched the net or stepped the pace adds these (pace.lua steer).
	tickNet      = iota - 2 // '1' on, '0' off, '' no switch
	tickNetWhy              // why it switched
	tickPaceFrom            // the pace before × 1000, 0 when no step
	tickPaceTo              // after × 1000
	tickPaceWhy             // why
	tickLenSteer
)

// The stats reply (stats.lua), by position.
const (
	statsWaiting    = iota // visitors waiting (or in the pre-queue)
	statsAdmitted          // grants not yet consumed
	statsActive            // sessions running
	statsLastMinute        // admissions in the last 60 s
	statsEvicted           // visitors evicted, ever
	statsConsumed          // grants consumed, ever
	statsReplays           // replayed consumes refused, ever
	statsSeed              // the pre-queue lottery's seed ('' for none)
	statsPace              // the pace, admissions a minute × 1000 (lib.lua pace)
	statsNet               // the safety net: '1' on, else off
	statsNetWhy            // why it last switched
	statsPaceWhy           // why the pace is where it is (pace.lua pace_tick), '' for none
	statsRate              // the admission rate, a minute × 1000 (lib.lua steer_rate)
	statsSignups           // notice sign-ups, ever
	statsSent              // notices sent, ever
	statsFailed            // notices failed, ever
	statsSaved             // turns saved by notices, ever
	statsHeld              // places with a notice registration now
	statsClimbRate         // while the pace climbs, the places a minute now × 1000 (0: no climb)
	statsClimbSlope        // …more each minute × 1000
	statsClimbTop          // …up to this × 1000
	statsSettings          // first of the settings' field, value pairs
)

// The drain reply (drain.lua) when it is wordOK, by position.
const (
	drainRemoved = 1 // visitors removed by this call
	drainWaiting = 2 // visitors still waiting
	drainLen     = 3
)

// The arrive reply (arrive.lua) when it is wordArrived, and merge's (merge.lua).
const (
	arrivedSeq      = 1 // the join's sequence
	arrivedPosition = 2 // its position, estimated until the merge
	arrivedLen      = 3
	mergedAdded     = 0 // arrivals put in the queue by this merge
	mergedMark      = 1 // every sequence at or below it is merged
	mergedWaiting   = 2 // the queue's count after the merge
	mergedNear      = 3 // the score at the zone's end: arrivals above it keep their heartbeat on their shard
	mergedClass     = 4 // the told class of the merged arrivals' first heartbeat
	mergedPace      = 5 // the pace × 1000
	mergedZone      = 6 // the zone: the first places, whose polls go to the room's shard
	mergedHead      = 7 // the room's head
	mergedGrace     = 8 // heartbeatTTLSeconds in ms, for the shards' sweeps
	mergedClimb     = 9 // while the pace climbs, "rate slope top" in places a minute; "" for none
	mergedLen       = 10
	mergedStride    = 10 // on the last call: the progress's stride, then rank, score pairs
)

// The consume reply (consume.lua) when it is wordOK, and poll's when it is wordSlow.
const (
	consumeEnds = 1 // the session's end (ms)
	slowWait    = 1 // ms until the next poll is allowed
)

// The visitor reply (visitor.lua) when it is wordOK, by position; each ”
// (rank -1) when the visitor is not there.
const (
	visitorScore     = iota + 1 // the queue score
	visitorRank                 // 0-based; rankSecret in the pre-queue
	visitorHeartbeat            // the heartbeat's value (ParseHeartbeat)
	visitorDeadline             // the grant's claim deadline (ms)
	visitorEnds                 // the session's end (ms)
	visitorUsed                 // the used score (ms)
	visitorLeft                 // the left score
	visitorClaimTTL             // claimTTLSeconds
	visitorMark                 // the arrivals' merged mark ('' for a room that never spread)
	visitorServed               // '1' served, 'floor' at or below the floor or the tombstone, else ''
	visitorLen
)
