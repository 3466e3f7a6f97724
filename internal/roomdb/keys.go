package roomdb

import (
	"encoding/binary"
	"strconv"

	"github.com/vestibule-dev/vestibule/internal/room"
)

// RegistryKey lists every room id. SET. It is the only key outside a room's
// slot, and no room script touches it.
const RegistryKey = "vst:rooms"

// Keys names a room's keys: this file names every key of a room and of its
// arrival shards (docs/ENGINE.md, "Keys", says what each holds). All share
// the hash tag {room} (I6).
type Keys struct {
	Config     string // HASH settings + pre-queue seed, settings version, measured rate
	State      string // HASH seq, head, admission bucket, rate ring, sweep cursor, epoch, counters
	Queue      string // ZSET waiting: member seq, score seq or draw
	Heartbeats string // HASH HeartbeatField(seq) -> HeartbeatValue(last seen ms)
	Grants     string // ZSET admitted: member seq, score claim deadline (ms)
	Active     string // ZSET sessions: member seq, score session end (ms)
	Used       string // ZSET consumed grants: member seq, score consume time (ms)
	Left       string // ZSET visitors who left: member seq, score queue score
	prefix     string // "vst:{room}:", before every key's own name
}

// KeysFor returns the keys of a room.
func KeysFor(roomID string) Keys {
	p := "vst:{" + roomID + "}:"
	return Keys{
		Config: p + "cfg", State: p + "st", Queue: p + "q", Heartbeats: p + "hb",
		Grants: p + "adm", Active: p + "act", Used: p + "used", Left: p + "left", prefix: p,
	}
}

// key is the room's key of that name.
func (k Keys) key(name string) string { return k.prefix + name }

// refDay is the day (UTC, since the epoch) of a time in ms: the reference
// hashes, the served records and the trails are kept by the day.
func refDay(ms int64) int64 { return ms / 86_400_000 }

// daily is the key of that name for the day of nowMS: name:<day>.
func daily(prefix, name string, nowMS int64) string {
	return prefix + name + ":" + strconv.FormatInt(refDay(nowMS), 10)
}

// Limiter is the key of one client's enqueue limiter (STRING: the GCRA's
// theoretical arrival time, ms, expiring once idle). client is a hash, never raw input.
func (k Keys) Limiter(client string) string {
	return k.key("rl:" + client)
}

// Proof is the key that spends one join challenge's nonce (STRING, expiring
// with the challenge). nonce is the server's own base64url, checked by its MAC.
func (k Keys) Proof(nonce string) string {
	return k.key("pow:" + nonce)
}

// Fence is the key of the last fence a change of the room's settings issued
// (STRING, fence.lua): the number its arrival shards take joins above.
func (k Keys) Fence() string {
	return k.key("fence")
}

// History is the key of the room's last day for the console's charts (HASH:
// field = minute % 1440, value = "minute:waiting:admitted:active:admitted in the
// last 60 s:evicted ever"), written by the first tick of each minute (tick.lua).
func (k Keys) History() string {
	return k.key("hist")
}

// NoticeKeys are the keys of a room's notices (docs/ENGINE.md, "Notices"),
// in the order the scripts take them after the room's: the registrations
// (HASH: member -> "expires ms:sealed address"), the notices due (ZSET:
// member -> when to send, ms) and the notified grants (ZSET: member -> claim
// deadline, ms).
func (k Keys) NoticeKeys() []string {
	return []string{k.key("ntc"), k.key("ntd"), k.key("ntg")}
}

// NoticeNetwork and NoticeAddress are the keys of one network's and one
// address's sign-up limiter (STRING: the GCRA's theoretical arrival time,
// ms, expiring once idle). network and address are hashes, never raw input.
func (k Keys) NoticeNetwork(network string) string {
	return k.key("nrl:" + network)
}

// NoticeAddress is the key of one address's sign-up limiter (NoticeNetwork).
func (k Keys) NoticeAddress(address string) string {
	return k.key("nra:" + address)
}

// List is the KEYS every room script takes, in lib.lua's order.
func (k Keys) List() []string {
	return []string{k.Config, k.State, k.Queue, k.Heartbeats, k.Grants, k.Active, k.Used, k.Left}
}

// HeartbeatField is a waiting visitor's field in the Heartbeats hash: the
// sequence as a 7-byte big-endian integer (lib.lua's hbf; sequences stay below
// 2^53), instead of 16 decimal digits. Exported for tools that fill a queue directly.
func HeartbeatField(seq int64) string {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(seq))
	return string(b[1:])
}

// HeartbeatValue is a heartbeat's value with no told poll (class 0): the
// last-seen time in ms as a 6-byte big-endian integer; such a visitor is stale
// after the grace (heartbeatTTLSeconds) of silence. Tools that fill a queue
// directly write it.
func HeartbeatValue(ms int64) string { return HeartbeatValueTold(ms, 0) }

// seenBits is how many low bits of a heartbeat value hold the last-seen ms
// (lib.lua's SEEN = 2^42: enough until 2109); the 6 bits above hold the class.
const seenBits = 42

// HeartbeatValueTold is a heartbeat's value as the engine writes it (lib.lua's
// hbv): class × 2^42 + last seen (ms), as a 6-byte big-endian integer. class
// (0–63) is ToldClass of the poll budget the visitor was given.
func HeartbeatValueTold(ms int64, class int) string {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(class)<<seenBits|uint64(ms))
	return string(b[2:])
}

// ParseHeartbeat reads a heartbeat value: last seen (ms) and class.
func ParseHeartbeat(v string) (seenMS int64, class int, ok bool) {
	if len(v) != 6 {
		return 0, 0, false
	}
	var b [8]byte
	copy(b[2:], v)
	n := binary.BigEndian.Uint64(b[:])
	return int64(n & (1<<seenBits - 1)), int(n >> seenBits), true
}

// Arrivals is the room's own arrival list (LIST of sequences, in order): the
// joins its shard takes while the room's joins are spread (joinShards > 0),
// waiting for the tick to merge them with the arrival shards' (merge.lua).
func (k Keys) Arrivals() string {
	return k.key("arr")
}

// ArrivalKeys names the keys of one arrival shard of a room: its own hash
// tag, {room~<letter><n>} ("~" is never in a room id, so no room's tag is
// another's shard's), so a cluster may put it on another node than the room.
type ArrivalKeys struct {
	State    string // HASH seq (the last sequence issued here), w (the room's waiting count at the last merge)
	Arrivals string // LIST sequences of the joins not merged yet, in order
	prefix   string
}

// ArrivalKeysFor returns the keys of a room's arrival shard i (0 ≤ i < MaxJoinShards).
func ArrivalKeysFor(roomID string, i int) ArrivalKeys {
	p := "vst:{" + ArrivalTag(roomID, i) + "}:"
	return ArrivalKeys{State: p + "st", Arrivals: p + "arr", prefix: p}
}

// arrivalArcs is how many equal arcs of the cluster's slot space, counted from
// the room's slot, ArrivalTag places shards in: shard i in arc i + 2, so the
// arcs on either side of the room's are left out.
const arrivalArcs = room.MaxJoinShards + 3

// ArrivalTag is the hash tag of a room's arrival shard i: room~<letter i><n>,
// with the smallest n ≥ 0 whose slot (CRC16 mod 16384, as Redis Cluster hashes
// tags) falls in the arc i + 2 of arrivalArcs from the room's slot. Tags are
// spread evenly over the slot space, and a cluster gives each node a
// contiguous range of slots (redis-cli --cluster create, ElastiCache), so the
// shards fall evenly over the nodes, fewer on the room's own node, which
// merges every join besides (docs/ENGINE.md, "Arrival shards"). The tag is a
// function of the room's id and i alone, so it never changes for a room.
func ArrivalTag(roomID string, i int) string {
	base := Slot(roomID)
	lo := (base + (i+2)*slotCount/arrivalArcs) % slotCount
	width := slotCount / arrivalArcs
	prefix := roomID + "~" + string(rune('a'+i))
	for n := 0; ; n++ {
		tag := prefix + strconv.Itoa(n)
		if (Slot(tag)-lo+slotCount)%slotCount < width {
			return tag
		}
	}
}

// slotCount is the number of Redis Cluster hash slots.
const slotCount = 16384

// Slot is the Redis Cluster hash slot of a hash tag: CRC16 (XMODEM) mod 16384.
func Slot(tag string) int {
	var crc uint16
	for i := 0; i < len(tag); i++ {
		crc = crc<<8 ^ crc16Table[byte(crc>>8)^tag[i]]
	}
	return int(crc) % slotCount
}

// crc16Table is CRC16-XMODEM's (polynomial 0x1021) by the top byte.
var crc16Table = func() (t [256]uint16) {
	for b := range t {
		c := uint16(b) << 8
		for range 8 {
			if c&0x8000 != 0 {
				c = c<<1 ^ 0x1021
			} else {
				c <<= 1
			}
		}
		t[b] = c
	}
	return t
}()

// Heartbeats is the shard's HASH of heartbeats (fields and values as the
// room's: HeartbeatField, HeartbeatValueTold) of the visitors who joined there
// and wait behind the room's zone (docs/ENGINE.md, "Heartbeats on the arrival
// shards"; spoll.lua).
func (k ArrivalKeys) Heartbeats() string { return k.prefix + "hb" }

// Progress is the shard's copy of the room's progress (ZSET: member = a rank
// from 0, score = the queue's score at that rank), from which its polls
// estimate positions (arrtrim.lua writes it each tick).
func (k ArrivalKeys) Progress() string { return k.prefix + "prog" }

// Limiter is the key of one client's join limiter on this shard: a client
// always joins through the same shard, so its limit is whole.
func (k ArrivalKeys) Limiter(client string) string { return k.prefix + "rl:" + client }

// Proof is the key that spends one join challenge's nonce on this shard.
func (k ArrivalKeys) Proof(nonce string) string { return k.prefix + "pow:" + nonce }

// Invitations is the key of the uses taken of each invitation of the room
// (HASH: id -> count).
func (k Keys) Invitations() string { return k.key("inv") }

// Revoked is the key of the room's revoked invitations (HASH: id -> revoked at, ms).
func (k Keys) Revoked() string { return k.key("invrev") }

// InvitationLog is the key of the room's log of invitation uses (LIST, newest
// first: "ms:use:returned:id:visitor", capped at InvitationLogKeep).
func (k Keys) InvitationLog() string { return k.key("invlog") }

// Refs is the key of the reference hash of the day of nowMS (HASH: visitor id
// -> sequence, expiring at the end of the next day: lib.lua remember), which
// a support lookup reads (Engine.Visitor).
func (k Keys) Refs(nowMS int64) string { return daily(k.prefix, "ref", nowMS) }

// Served is the key of the record of the room's visitors served on the day
// of nowMS (SET: HeartbeatField of each sequence whose grant was consumed or
// given up, expiring at the end of the second day after its day: lib.lua
// serve). used keeps a grant only until its token would have expired; this
// keeps it served as long as a lookup can find its visitor (servedDays), so
// support never restores a served place (restore.lua).
func (k Keys) Served(nowMS int64) string { return daily(k.prefix, "served", nowMS) }

// Trail is the key of the room's trail of the day of nowMS (HASH: field =
// HeartbeatField(seq), value = the last poll and the admission, ms, 6 bytes
// each, 0 for none), expiring at the end of the second day after its
// day, as the served records do (Keys.Served): a day after the references
// of that day, whatever the clocks.
func (k Keys) Trail(nowMS int64) string { return daily(k.prefix, "trail", nowMS) }

// Audit is the key of the room's audit log (LIST of AuditEntry JSON, newest
// first, capped at AuditKeep). Delete leaves it: who deleted a room stays
// on record.
func (k Keys) Audit() string { return k.key("audit") }

// Refs is the arrival shard's reference hash of the day of nowMS, for the
// joins it takes (HASH, as the room's Keys.Refs).
func (k ArrivalKeys) Refs(nowMS int64) string { return daily(k.prefix, "ref", nowMS) }

// Schedule is the key of the room's scheduled changes (HASH: field = the
// change's id, value = its room.ScheduledChange JSON), in the room's slot.
func (k Keys) Schedule() string { return k.key("sched") }

// ScheduleVersion is the key of the version of the room's schedule (HASH:
// v, raised by every change of the schedule in the same script; stored, the
// highest v the durable store was seen to hold), so that a copy of the
// schedule can say which version it is and the admission loop can tell a
// store that fell behind (durable.Queue.SyncSchedule).
func (k Keys) ScheduleVersion() string { return k.key("schedv") }

// ScheduleLease is the key that one process holds while it applies or
// cancels the change id (STRING: the holder's random token, expiring after
// ScheduleLeaseTTL).
func (k Keys) ScheduleLease(id string) string { return k.key("schedlease:" + id) }
