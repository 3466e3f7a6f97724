package challenge_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/vestibule-dev/vestibule/internal/challenge"
)

func TestIssueSolveVerify(t *testing.T) {
	c := challenge.New([]byte("0123456789abcdef0123456789abcdef"))
	now := time.Now()
	ch := c.Issue("demo", 10, now)
	sol := challenge.Solve(ch)
	if challenge.ZeroBits(ch.Value, sol) < 10 {
		t.Fatalf("Solve gave %s with %d zero bits", sol, challenge.ZeroBits(ch.Value, sol))
	}
	p, err := c.Verify(ch.Value, sol, "demo", now)
	if err != nil || p.Bits != 10 || p.Nonce == "" || !p.ExpiresAt.Equal(ch.ExpiresAt) {
		t.Fatalf("Verify: %+v %v", p, err)
	}
	if again := c.Issue("demo", 10, now); again.Value == ch.Value {
		t.Fatal("two challenges alike: no nonce")
	}

	other := challenge.New([]byte("another deployment's secret....."))
	tampered := strings.Replace(ch.Value, ".10.", ".1.", 1)
	// A solution that does less work than asked: find one below 10 bits.
	weak := ""
	for n := 0; ; n++ {
		s := string(rune('0' + n%10))
		if n >= 10 {
			s = strings.Repeat("1", n/10) + s
		}
		if challenge.ZeroBits(ch.Value, s) < 10 {
			weak = s
			break
		}
	}
	for _, tc := range []struct {
		name, value, sol, room string
		at                     time.Time
		want                   error
	}{
		{"another room", ch.Value, sol, "other", now, challenge.ErrInvalid},
		{"another deployment", other.Issue("demo", 10, now).Value, sol, "demo", now, challenge.ErrInvalid},
		{"tampered difficulty", tampered, sol, "demo", now, challenge.ErrInvalid},
		{"garbage", "v1.demo", "1", "demo", now, challenge.ErrInvalid},
		{"oversize", strings.Repeat("a", 300), "1", "demo", now, challenge.ErrInvalid},
		{"expired", ch.Value, sol, "demo", ch.ExpiresAt, challenge.ErrExpired},
		{"unsolved", ch.Value, weak, "demo", now, challenge.ErrUnsolved},
		{"not a number", ch.Value, "x" + sol, "demo", now, challenge.ErrUnsolved},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := c.Verify(tc.value, tc.sol, tc.room, tc.at); !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
}

// Difficulty 0 asks no work: any counter solves it.
func TestZeroDifficulty(t *testing.T) {
	c := challenge.New([]byte("0123456789abcdef0123456789abcdef"))
	ch := c.Issue("demo", 0, time.Now())
	if _, err := c.Verify(ch.Value, "7", "demo", time.Now()); err != nil {
		t.Fatal(err)
	}
}

// IssueFor's nonce begins with the prefix and is one its accept approves; one
// that approves none still gets a valid challenge (the last nonce drawn).
func TestIssueForFitsTheNonce(t *testing.T) {
	c := challenge.New([]byte("0123456789abcdef0123456789abcdef"))
	now := time.Now()
	fits := func(n string) bool { return n[0] >= 'A' && n[0] <= 'D' } // 1 in 16, as 15 shards give
	for range 20 {
		ch := c.IssueFor("demo", 2, now, "s3-", func(n string) bool { return fits(strings.TrimPrefix(n, "s3-")) })
		p, err := c.Verify(ch.Value, challenge.Solve(ch), "demo", now)
		if err != nil || !strings.HasPrefix(p.Nonce, "s3-") || !fits(p.Nonce[3:]) {
			t.Fatalf("IssueFor: nonce %q, %v; want one with the prefix that fits", p.Nonce, err)
		}
	}
	var tries int
	ch := c.IssueFor("demo", 2, now, "", func(string) bool { tries++; return false })
	if _, err := c.Verify(ch.Value, challenge.Solve(ch), "demo", now); err != nil || tries < 2 {
		t.Fatalf("IssueFor with nothing accepted: %v after %d tries", err, tries)
	}
}
