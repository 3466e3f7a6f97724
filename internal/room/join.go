package room

import (
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"time"
)

// JoinProof is what a fresh join shows the room: a verified join challenge
// (the work it proves and the nonce that may join once; package challenge
// makes and checks them) and the client's address, which the per-client join
// limit (clientEnqueuePerMinute) counts. The zero value proves nothing and
// skips the limit.
type JoinProof struct {
	Bits  int
	Nonce string
	Until time.Time // the challenge's expiry: the spent nonce is kept until then
	// Client is the client's address ("" skips the per-client limit: for
	// callers that are not a client's request).
	Client string
	// Invitation is the join's invitation, its signature checked by the
	// caller (nil: none). The engine counts its use and keeps its
	// revocation (docs/API.md, "Invitations").
	Invitation *Invitation
}

// ChallengeError refuses a join without enough proven work: the room asks a
// join challenge of Bits. It wraps ErrChallengeRequired.
type ChallengeError struct {
	Bits int
	// The arrival shards the room spread its joins over when it refused (0
	// when it did not: its challenge's proof is then spent on the room's
	// shard, NonceShards) and the refused client's address, when the engine
	// knows them (Accepts).
	shards int64
	client string
}

func (e *ChallengeError) Error() string {
	return fmt.Sprintf("room: join challenge of %d bits required", e.Bits)
}

// Unwrap makes errors.Is(err, ErrChallengeRequired) true.
func (e *ChallengeError) Unwrap() error { return ErrChallengeRequired }

// Accepts reports whether a challenge with this nonce suits the refused
// client. A proof is spent in one place, which its nonce says (NoncePrefix,
// NonceShards): on the room's shard where the room did not spread its joins
// when it refused, else on the arrival shard the nonce picks, where the
// proof joins while the room spreads over as many. The client's join limit
// is counted on that shard: a challenge issued with a nonce Accepts takes the
// client's proofs to the shard its joins without one go to, so its limit
// holds however many proofs it brings (TestJoinChallengeKeepsAClientOnOneShard);
// any shard suits a join with no address. After a change of joinShards
// within the challenge's life the proof joins on the room's shard, and is
// spent on its own.
func (e *ChallengeError) Accepts(nonce string) bool {
	k := NonceShards(nonce)
	if k != e.shards {
		return false
	}
	if k == 0 || e.client == "" {
		return true
	}
	return ShardOf(JoinProof{Nonce: nonce}, "", k) == ShardOf(JoinProof{Client: e.client}, "", k)
}

// NoncePrefix is how the nonce of the challenge to issue begins: "s<k>-" in
// a room that spread its joins over k arrival shards when it refused, so the
// proof is spent on one of those k whatever the room does later (NonceShards);
// "" in any other, whose proofs are spent on the room's shard.
func (e *ChallengeError) NoncePrefix() string {
	if e.shards > 0 {
		return "s" + strconv.FormatInt(e.shards, 10) + "-"
	}
	return ""
}

// FitChallenge gives a join's *ChallengeError the arrival shards the room
// spreads its joins over now (0 for none) and the client (Accepts); it
// returns any other error as it is.
func FitChallenge(err error, shards int64, client string) error {
	var ce *ChallengeError
	if errors.As(err, &ce) {
		ce.shards, ce.client = min(max(shards, 0), MaxJoinShards), client
	}
	return err
}

// NonceShards is the arrival shards a challenge's nonce was issued for, k
// when the room spread its joins over k shards (ChallengeError.NoncePrefix,
// "s<k>-"): its proof is spent on the shard the nonce picks of those k,
// whatever shard it joins on. 0 for any other nonce, whose proof is spent on
// the room's shard.
func NonceShards(nonce string) int64 {
	rest, ok := strings.CutPrefix(nonce, "s")
	if !ok {
		return 0
	}
	k, _, ok := strings.Cut(rest, "-")
	n, err := strconv.ParseInt(k, 10, 64)
	if !ok || err != nil || n < 1 || n > MaxJoinShards {
		return 0
	}
	return n
}

// RetryError is a refusal for now: try again after After. It wraps ErrRateLimited.
type RetryError struct{ After time.Duration }

func (e *RetryError) Error() string {
	return fmt.Sprintf("room: too many requests, retry after %s", e.After)
}

// Unwrap makes errors.Is(err, ErrRateLimited) true.
func (e *RetryError) Unwrap() error { return ErrRateLimited }

// ShardOf picks the arrival shard of a join: by the proof's nonce when there
// is one (so a nonce is spent on one shard), else by the client's address (so
// a client's limit is counted on one shard), else by the visitor id.
func ShardOf(proof JoinProof, visitor string, shards int64) int {
	key := visitor
	switch {
	case proof.Nonce != "":
		key = proof.Nonce
	case proof.Client != "":
		key = proof.Client
	}
	h := fnv.New32a()
	h.Write([]byte(key))
	return int(h.Sum32() % uint32(shards))
}

// MaxJoinShards is the most arrival shards a room's joins spread over. With
// the room's own shard they make 16 sources, and each source's sequences keep
// to their own residue modulo SeqResidues, so no two can be equal.
const MaxJoinShards = 15

// SeqResidues is the modulus of the sequences' residues: the room's own shard
// issues sequences ≡ 0, arrival shard i sequences ≡ i + 1 (lib.lua next_seq).
const SeqResidues = 16
