package roomdb_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/vestibule-dev/vestibule/internal/room"
	"github.com/vestibule-dev/vestibule/internal/roomdb"
)

// The settings table is the one source: its names are Config's JSON keys,
// its defaults are DefaultConfig's and inside their ranges, and Validate
// enforces exactly its ranges.
func TestSettingsTable(t *testing.T) {
	rows := room.Settings()
	var names []string
	for _, s := range rows {
		names = append(names, s.Name)
	}
	// Every JSON key of Config has a row, and every row a JSON key.
	c := baseConfig()
	c.OpensAt = ptr(time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC)) // omitempty
	c.Page = &room.Page{AccentColor: "#123456"}                  // omitempty
	c.OIDCRedirectURIs = []string{"https://app.example.com/cb"}  // omitempty
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	var keys map[string]any
	if err := json.Unmarshal(b, &keys); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(slices.Sorted(maps.Keys(keys)), slices.Sorted(slices.Values(names))); diff != "" {
		t.Errorf("Config's JSON keys (-) and the table's names (+) differ:\n%s", diff)
	}

	def, err := json.Marshal(room.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	var defaults map[string]any
	if err := json.Unmarshal(def, &defaults); err != nil {
		t.Fatal(err)
	}
	for _, s := range rows {
		if s.Doc == "" {
			t.Errorf("%s: no doc", s.Name)
		}
		// The row's default is DefaultConfig's.
		want, err := json.Marshal(s.Default)
		if err != nil {
			t.Fatal(err)
		}
		got, err := json.Marshal(defaults[s.Name])
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("%s: DefaultConfig has %s, the table's default is %s", s.Name, got, want)
		}
		if !s.Numeric {
			continue
		}
		v, ok := s.Default.(int64)
		if !ok || v < s.Min || v > s.Max || s.Min > s.Max {
			t.Errorf("%s: default %v outside %d..%d", s.Name, s.Default, s.Min, s.Max)
		}
		// Validate takes the bounds and refuses one past them, naming the setting.
		for _, x := range []struct {
			v  int64
			ok bool
		}{{s.Min, true}, {s.Max, true}, {s.Min - 1, false}, {s.Max + 1, false}} {
			c := withNumber(t, tableBase(s.Name), s.Name, x.v)
			err := c.Validate()
			var fe *room.FieldError
			switch {
			case x.ok && err != nil:
				t.Errorf("%s = %d: %v, want valid", s.Name, x.v, err)
			case !x.ok && (!errors.As(err, &fe) || fe.Field != s.Name || !errors.Is(err, room.ErrInvalidConfig)):
				t.Errorf("%s = %d: %v, want a FieldError for %s", s.Name, x.v, err, s.Name)
			case !x.ok && fe.Reason != fmt.Sprintf("%d is outside %d..%d", x.v, s.Min, s.Max):
				t.Errorf("%s = %d: reason %q", s.Name, x.v, fe.Reason)
			}
		}
	}
	mode := rows[slices.Index(names, "mode")]
	if diff := cmp.Diff([]string{"queue", "auto", "passthrough", "paused", "closed"}, mode.Choices); diff != "" {
		t.Errorf("mode choices (-want +got):\n%s", diff)
	}
	// The default has no origin; with one it is valid.
	if err := room.DefaultConfig().Validate(); err == nil {
		t.Error("DefaultConfig without an origin validates")
	}
	if err := baseConfig().Validate(); err != nil {
		t.Errorf("DefaultConfig with an origin: %v", err)
	}
	// Settings returns a copy: a caller cannot change the engine's table.
	rows[0].Name, rows[0].Max = "changed", 1
	if r := room.Settings()[0]; r.Name == "changed" || r.Max == 1 {
		t.Error("Settings() shares the table")
	}
}

// withNumber sets the numeric setting name through its JSON key.
// tableBase is the settings a number of the table is tried at its bounds
// over: sessionIdleSeconds is bounded by the session's longest life too
// (room.TestSessionIdleSecondsRange), so its range is tried under the longest.
func tableBase(name string) room.Config {
	c := baseConfig()
	if name == "sessionIdleSeconds" {
		c.MaxSessionSeconds = 604_800
	}
	return c
}

func withNumber(t *testing.T, c room.Config, name string, v int64) room.Config {
	t.Helper()
	if err := json.Unmarshal(fmt.Appendf(nil, `{%q: %d}`, name, v), &c); err != nil {
		t.Fatal(err)
	}
	return c
}

// Every setting goes to Redis and back unchanged, by every path that reads it:
// GetConfig (HGETALL), a place reply, Status; the hash's fields are the
// table's names (plus the engine's own).
func TestSettingsRoundTrip(t *testing.T) {
	opens := time.Date(2031, 5, 4, 10, 0, 0, 123_000_000, time.UTC)
	// Every setting away from its default.
	want := room.Config{MaxActive: 7, AdmitPerMinute: 77, SessionTTLSeconds: 700, ClaimTTLSeconds: 70,
		MaxSessionSeconds:   1400,
		HeartbeatTTLSeconds: 17, Mode: room.ModeAuto, OpensAt: &opens, OriginURL: "http://localhost:3000/buy?x=1",
		ClientEnqueuePerMinute: 7, ClientIPv4Prefix: 24, ClientIPv6Prefix: 56, JoinChallengeBits: 5, JoinShards: 3, Gate: true,
		AdmitPerMinuteMin: 7, QueueAbovePerMinute: 700, QueueBelowPerMinute: 70, CalmSeconds: 17, InviteOnly: true,
		SessionIdleSeconds: 70, NotifiedClaimTTLSeconds: 700,
		OIDCRedirectURIs: []string{"https://app.example.com/oauth2/idpresponse", "http://127.0.0.1:4180/oauth2/callback"}}
	def := room.DefaultConfig()
	want.Page = &room.Page{
		Title:   room.Text{All: "Spring Concert <2031> & \"friends\""},
		Message: room.Text{ByLang: map[string]string{"en": "Sold out.\nThank you!", "ko": "매진되었습니다.", "pt-BR": "Esgotado."}},
		LogoURL: "https://cdn.example/logo.png?v=2", AccentColor: "#C0ffee",
	}
	for _, s := range room.Settings() {
		a, _ := json.Marshal(want)
		b, _ := json.Marshal(def)
		var am, bm map[string]any
		json.Unmarshal(a, &am)
		json.Unmarshal(b, &bm)
		if cmp.Equal(am[s.Name], bm[s.Name]) {
			t.Fatalf("the test config leaves %s at its default", s.Name)
		}
	}
	forEachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		for _, c := range []room.Config{want, room.DefaultConfig()} {
			if c.OriginURL == "" {
				c.OriginURL = origin
			}
			e := newEnv(t, rdb, nil)
			put, err := e.eng.PutConfig(e.ctx, e.room, c)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c, put); diff != "" {
				t.Errorf("PutConfig answered (-want +got):\n%s", diff)
			}
			got, err := e.eng.GetConfig(e.ctx, e.room)
			if err != nil || !cmp.Equal(c, got) {
				t.Errorf("GetConfig = %v (-want +got):\n%s", err, cmp.Diff(c, got))
			}
			st, _, err := e.eng.Status(e.ctx, e.room)
			if err != nil || !cmp.Equal(c, st) {
				t.Errorf("Status = %v (-want +got):\n%s", err, cmp.Diff(c, st))
			}
			// A fresh engine has no cached settings: the place reply carries them.
			proof := room.JoinProof{Bits: int(c.JoinChallengeBits), Nonce: "roundtrip", Until: e.clk.Now().Add(time.Minute)}
			if c.InviteOnly {
				proof.Invitation = &room.Invitation{ID: "roundtrip", Room: e.room, Uses: 1}
			}
			p, err := roomdb.New(rdb, roomdb.WithClock(e.clk.Now)).Join(e.ctx, e.room, "v", proof)
			if err != nil || !cmp.Equal(c, p.Config) {
				t.Errorf("Join's Config = %v (-want +got):\n%s", err, cmp.Diff(c, p.Config))
			}
			fields, err := rdb.HKeys(e.ctx, e.keys.Config).Result()
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, s := range room.Settings() {
				names = append(names, s.Name)
			}
			fields = slices.DeleteFunc(fields, func(f string) bool {
				return f == "seed" || f == "ver" || f == "rate" || f == "waiting" || f == "arrk" || f == "full" || f == "share"
			})
			if diff := cmp.Diff(slices.Sorted(slices.Values(names)), slices.Sorted(slices.Values(fields))); diff != "" {
				t.Errorf("settings hash fields (-table +hash):\n%s", diff)
			}
		}
	})
}

// Status reads the settings and the counts in one call; an unknown room is ErrUnknownRoom.
func TestStatus(t *testing.T) {
	forEachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		e := newEnv(t, rdb, cfgWith(func(c *room.Config) { c.MaxActive = 1 }))
		e.warm()
		ts := e.enqueueN(3)
		e.tick()
		e.consume(ts[0].Seq)
		cfg, st, err := e.eng.Status(e.ctx, e.room)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(*cfgWith(func(c *room.Config) { c.MaxActive = 1 }), cfg); diff != "" {
			t.Errorf("Status config (-want +got):\n%s", diff)
		}
		want := room.Stats{Waiting: 2, Active: 1, AdmittedLastMinute: 1, Consumed: 1, PacePerMinute: 600, RatePerMinute: 600}
		st.DrawSeed = "" // random
		if diff := cmp.Diff(want, st); diff != "" {
			t.Errorf("Status stats (-want +got):\n%s", diff)
		}
		if s := e.stats(); s != st {
			t.Errorf("Stats = %+v, Status's = %+v", s, st)
		}
		unknown := newEnv(t, rdb, nil)
		if _, _, err := e.eng.Status(e.ctx, unknown.room); !errors.Is(err, room.ErrUnknownRoom) {
			t.Errorf("Status of an unknown room: %v", err)
		}
	})
}

// Consume and complete check the entry token's audience in the script: a
// token for another origin changes nothing, and an unknown room and an
// unknown grant are different answers.
func TestAudienceAndUnknowns(t *testing.T) {
	forEachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		e := newEnv(t, rdb, cfgWith(func(c *room.Config) { c.MaxActive = 2 }))
		e.warm()
		ts := e.enqueueN(2)
		e.tick()
		before := e.stats()
		for _, aud := range []string{"https://evil.example/", "", origin + "/", strings.ToUpper(origin)} {
			if _, err := e.eng.Consume(e.ctx, e.room, ts[0].Seq, aud); !errors.Is(err, room.ErrWrongAudience) {
				t.Errorf("Consume for %q: %v, want ErrWrongAudience", aud, err)
			}
			if err := e.eng.Complete(e.ctx, e.room, ts[1].Seq, aud); !errors.Is(err, room.ErrWrongAudience) {
				t.Errorf("Complete for %q: %v, want ErrWrongAudience", aud, err)
			}
		}
		// The audience comes before the grant: an unknown grant for another origin is an audience refusal.
		if _, err := e.eng.Consume(e.ctx, e.room, 42, "https://evil.example/"); !errors.Is(err, room.ErrWrongAudience) {
			t.Errorf("Consume of an unknown grant for another origin: %v, want ErrWrongAudience", err)
		}
		if after := e.stats(); after != before {
			t.Errorf("refused consumes changed the room: %+v, then %+v", before, after)
		}
		if diff := cmp.Diff(seqs(ts), e.grants()); diff != "" {
			t.Errorf("grants after refusals (-want +got):\n%s", diff)
		}
		// The right audience still works, and the session survives a wrong-audience complete.
		e.consume(ts[0].Seq)
		if err := e.eng.Complete(e.ctx, e.room, ts[0].Seq, "https://evil.example/"); !errors.Is(err, room.ErrWrongAudience) {
			t.Errorf("Complete for another origin: %v", err)
		}
		if diff := cmp.Diff([]int64{ts[0].Seq}, e.members(e.keys.Active)); diff != "" {
			t.Errorf("sessions after a refused complete (-want +got):\n%s", diff)
		}
		// A live origin change: the old origin's tokens are refused at once.
		e.put(*cfgWith(func(c *room.Config) { c.MaxActive, c.OriginURL = 2, "https://elsewhere.example/" }))
		if _, err := e.eng.Consume(e.ctx, e.room, ts[1].Seq, origin); !errors.Is(err, room.ErrWrongAudience) {
			t.Errorf("Consume after the origin changed: %v", err)
		}
		if _, err := e.eng.Consume(e.ctx, e.room, ts[1].Seq, "https://elsewhere.example/"); err != nil {
			t.Errorf("Consume for the new origin: %v", err)
		}

		// No room and no grant are different words, and different errors.
		unknown := newEnv(t, rdb, nil)
		if _, err := e.eng.Consume(e.ctx, unknown.room, 1, origin); !errors.Is(err, room.ErrUnknownRoom) || errors.Is(err, room.ErrUnknownGrant) {
			t.Errorf("Consume in an unknown room: %v, want ErrUnknownRoom", err)
		}
		if err := e.eng.Complete(e.ctx, unknown.room, 1, origin); !errors.Is(err, room.ErrUnknownRoom) || errors.Is(err, room.ErrUnknownGrant) {
			t.Errorf("Complete in an unknown room: %v, want ErrUnknownRoom", err)
		}
		if _, err := e.eng.Consume(e.ctx, e.room, 42, "https://elsewhere.example/"); !errors.Is(err, room.ErrUnknownGrant) || errors.Is(err, room.ErrUnknownRoom) {
			t.Errorf("Consume of an unknown grant: %v, want ErrUnknownGrant", err)
		}
		if err := e.eng.Complete(e.ctx, e.room, 42, "https://elsewhere.example/"); !errors.Is(err, room.ErrUnknownGrant) || errors.Is(err, room.ErrUnknownRoom) {
			t.Errorf("Complete of an unknown grant: %v, want ErrUnknownGrant", err)
		}
		if _, err := e.eng.Stats(e.ctx, unknown.room); !errors.Is(err, room.ErrUnknownRoom) {
			t.Errorf("Stats of an unknown room: %v, want ErrUnknownRoom", err)
		}
	})
}

// A Redis call that fails is ErrUnavailable wrapping the cause, so a context's
// end is visible to errors.Is, and it names the script or command that failed.
func TestErrorsWrapTheCause(t *testing.T) {
	forEachRedis(t, func(t *testing.T, rdb redis.UniversalClient) {
		e := newEnv(t, rdb, cfgWith(nil))
		tk := e.enqueueN(1)[0]
		cancelled, cancel := context.WithCancel(context.Background())
		cancel()
		expired, cancel2 := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
		defer cancel2()
		calls := []struct {
			name string
			call func(ctx context.Context) error
		}{
			{"enqueue script", func(ctx context.Context) error { _, err := e.eng.Enqueue(ctx, e.room, "v"); return err }},
			{"poll script", func(ctx context.Context) error { _, err := e.eng.Poll(ctx, tk); return err }},
			{"tick script", func(ctx context.Context) error { _, err := e.eng.Tick(ctx, e.room); return err }},
			{"consume script", func(ctx context.Context) error { _, err := e.eng.Consume(ctx, e.room, 1, origin); return err }},
			{"complete script", func(ctx context.Context) error { return e.eng.Complete(ctx, e.room, 1, origin) }},
			{"leave script", func(ctx context.Context) error { return e.eng.Leave(ctx, tk) }},
			{"fence script", func(ctx context.Context) error { _, err := e.eng.PutConfig(ctx, e.room, baseConfig()); return err }},
			{"stats script", func(ctx context.Context) error { _, _, err := e.eng.Status(ctx, e.room); return err }},
			{"ratelimit script", func(ctx context.Context) error { return e.eng.AllowEnqueue(ctx, e.room, "c") }},
			{"read settings", func(ctx context.Context) error { _, err := e.eng.GetConfig(ctx, e.room); return err }},
			{"list rooms", func(ctx context.Context) error { _, err := e.eng.Rooms(ctx); return err }},
		}
		for _, c := range calls {
			for _, ctx := range []struct {
				ctx   context.Context
				cause error
			}{{cancelled, context.Canceled}, {expired, context.DeadlineExceeded}} {
				err := c.call(ctx.ctx)
				if !errors.Is(err, room.ErrUnavailable) || !errors.Is(err, ctx.cause) {
					t.Errorf("%s with %v: %v, want ErrUnavailable wrapping it", c.name, ctx.cause, err)
				} else if !strings.Contains(err.Error(), c.name) {
					t.Errorf("%s: the error %q does not name it", c.name, err)
				}
			}
		}
	})
}
