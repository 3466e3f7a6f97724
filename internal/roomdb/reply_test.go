package roomdb

import (
	"context"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/vestibule-dev/vestibule/internal/redistest"
	"github.com/vestibule-dev/vestibule/internal/room"
	"github.com/vestibule-dev/vestibule/lua"
)

// The room scripts (every one of lua.Sources) answer in one vocabulary: every
// one-word reply a script returns is a word the engine names (reply.go).
func TestReplyWords(t *testing.T) {
	word := regexp.MustCompile(`return \{'([a-z]+)'`)
	seen := map[string]bool{}
	for _, src := range lua.Sources {
		if !src.Room() {
			continue
		}
		for _, m := range word.FindAllStringSubmatch(src.Op, -1) {
			seen[m[1]] = true
			if !slices.Contains(replyWords, m[1]) {
				t.Errorf("%s answers %q, which is not a reply word", src.File, m[1])
			}
		}
	}
	for _, w := range replyWords {
		if !seen[w] {
			t.Errorf("the reply word %q is answered by no script", w)
		}
	}
	if seen["unknown"] {
		t.Error("a script still answers 'unknown'")
	}
}

// The settings survive the Redis encoding (EncodeConfig, decodePairs); the
// per-setting round trip is room's TestSettingsEncoding.
func TestSettingsPairs(t *testing.T) {
	c := room.DefaultConfig()
	c.OriginURL = "https://shop.example.com/checkout"
	got, err := decodePairs(EncodeConfig(c))
	if err != nil || !reflect.DeepEqual(got, c) {
		t.Errorf("defaults through the Redis encoding: %+v, %v; want %+v", got, err, c)
	}
	if _, err := decodePairs([]any{"maxActive"}); err == nil {
		t.Error("odd pairs decoded")
	}
}

// cfgWrite is a script's write to the settings hash: the command and its
// arguments after the key.
var cfgWrite = regexp.MustCompile(`'(HSET|HSETNX|HINCRBY)', K_CFG, ([^\n]*)\)`)

// cfgFields is every field name the room scripts (with what they use of their
// lib) write to the settings hash
// as a literal: HSET's and HSETNX's fields are every other argument, HINCRBY's
// the first.
func cfgFields() map[string]bool {
	literal := regexp.MustCompile(`^'([A-Za-z]+)'$`)
	fields := map[string]bool{}
	for _, src := range lua.Sources {
		if !src.Room() {
			continue
		}
		for _, m := range cfgWrite.FindAllStringSubmatch(src.Run, -1) {
			args := strings.Split(m[2], ", ")
			for i := 0; i < len(args); i += 2 {
				if f := literal.FindStringSubmatch(strings.TrimSpace(args[i])); f != nil {
					fields[f[1]] = true
				}
				if m[1] == "HINCRBY" {
					break
				}
			}
		}
	}
	return fields
}

// A settings reply (lib.lua settings, here stats.lua's) carries the settings
// alone: none of the fields the engine keeps beside them in the settings
// hash, whatever a script writes there.
func TestSettingsCarryNoInternalField(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.Single(t)
	roomID := redistest.Room(t)
	k := KeysFor(roomID)
	setting := map[string]bool{}
	for _, s := range settings {
		setting[s.Name] = true
	}
	internal := cfgFields()
	for _, f := range []string{"effplan", "effslope", "efftop", "zone", "netat"} {
		if !internal[f] {
			t.Fatalf("the scripts' writes to cfg were not read: %s missing from %v", f, internal)
		}
	}
	for f := range internal {
		if setting[f] {
			delete(internal, f)
		}
	}
	// The fields the Go side writes beside the settings (PutConfig: ver).
	c := room.DefaultConfig()
	c.OriginURL = "https://shop.example.com/"
	if _, err := New(rdb).PutConfig(ctx, roomID, c); err != nil {
		t.Fatal(err)
	}
	h, err := rdb.HGetAll(ctx, k.Config).Result()
	if err != nil {
		t.Fatal(err)
	}
	for f := range h {
		if !setting[f] {
			internal[f] = true
		}
	}
	var pairs []any
	for f := range internal {
		// region names the region a failover gave the room to; the engine
		// of no region (this test's) may run only a room of none.
		v := "1"
		if f == "region" {
			v = ""
		}
		pairs = append(pairs, f, v)
	}
	if err := rdb.HSet(ctx, k.Config, pairs...).Err(); err != nil {
		t.Fatal(err)
	}
	reply, err := lua.NewScript("stats", lua.Stats).Reply(ctx, rdb, k.List(), 0)
	if err != nil || len(reply) <= statsSettings {
		t.Fatalf("stats: %v, %v", reply, err)
	}
	got := reply[statsSettings:]
	for i := 0; i < len(got); i += 2 {
		if f := lua.Str(got[i]); !setting[f] {
			t.Errorf("the settings reply carries %q, which is no setting", f)
		}
	}
	if len(got) != 2*len(settings) {
		t.Errorf("the settings reply carries %d fields, want the %d settings", len(got)/2, len(settings))
	}
}
