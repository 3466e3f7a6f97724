package roomdb_test

import (
	"context"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/vestibule-dev/vestibule/internal/room"
	"github.com/vestibule-dev/vestibule/internal/roomdb"
)

// scriptKeys records the KEYS of every script a client runs.
type scriptKeys struct {
	mu   sync.Mutex
	keys map[string]string // key -> the first script (its SHA) given it
}

func (h *scriptKeys) record(c redis.Cmder) {
	args := c.Args()
	if len(args) < 3 || (c.Name() != "evalsha" && c.Name() != "eval") {
		return
	}
	n, _ := args[2].(int)
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, k := range args[3 : 3+n] {
		if s, ok := k.(string); ok && h.keys[s] == "" {
			h.keys[s], _ = args[1].(string)
		}
	}
}

// eachCmd is a hook that calls its function with every command a client
// sends, alone or in a pipeline.
type eachCmd func(redis.Cmder)

func (f eachCmd) DialHook(next redis.DialHook) redis.DialHook { return next }
func (f eachCmd) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		f(cmd)
		return next(ctx, cmd)
	}
}
func (f eachCmd) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, c := range cmds {
			f(c)
		}
		return next(ctx, cmds)
	}
}

// namedKeys is every key keys.go names for a value of Keys or ArrivalKeys, by
// reflection, so that a key added there counts here: its string fields and
// the keys its methods return; a method of a client, a nonce or a day names
// many keys, given as prefixes (called with "" or day 0, the 0 cut off).
func namedKeys(v any) (exact []string, prefixes []string) {
	rv := reflect.ValueOf(v)
	for i := range rv.NumField() {
		if rv.Type().Field(i).IsExported() && rv.Field(i).Kind() == reflect.String {
			exact = append(exact, rv.Field(i).String())
		}
	}
	for i := range rv.NumMethod() {
		m := rv.Method(i)
		switch t := m.Type(); {
		case t.NumIn() == 0 && t.NumOut() == 1 && t.Out(0).Kind() == reflect.String:
			exact = append(exact, m.Call(nil)[0].String())
		case t.NumIn() == 0 && t.NumOut() == 1 && t.Out(0) == reflect.TypeOf([]string{}):
			exact = append(exact, m.Call(nil)[0].Interface().([]string)...)
		case t.NumIn() == 1 && t.In(0).Kind() == reflect.String && t.Out(0).Kind() == reflect.String:
			prefixes = append(prefixes, m.Call([]reflect.Value{reflect.ValueOf("")})[0].String())
		case t.NumIn() == 1 && t.In(0).Kind() == reflect.Int64 && t.Out(0).Kind() == reflect.String:
			day := m.Call([]reflect.Value{reflect.ValueOf(int64(0))})[0].String()
			prefixes = append(prefixes, strings.TrimSuffix(day, "0"))
		}
	}
	return exact, prefixes
}

// Every key a script is given is one keys.go names (Keys, ArrivalKeys):
// no other file of the engine makes a key of a room. A spread room's life,
// from its settings to its deletion, runs every kind of script it has.
func TestScriptsTakeOnlyKeysOfKeysGo(t *testing.T) {
	h := &scriptKeys{keys: map[string]string{}}
	rdb := hooked(t, eachCmd(h.record))
	e := newEnv(t, rdb, farRoom())
	known := map[string]bool{}
	var prefixes []string
	add := func(ex, pre []string) {
		for _, k := range ex {
			known[k] = true
		}
		prefixes = append(prefixes, pre...)
	}
	add(namedKeys(e.keys))
	for i := range room.MaxJoinShards {
		add(namedKeys(roomdb.ArrivalKeysFor(e.room, i)))
	}

	tickets := e.joinFar(40)
	for _, tk := range tickets[:20] {
		e.poll(tk)
	}
	if err := e.eng.ReportLoad(e.ctx, e.room, 0.5); err != nil {
		t.Fatal(err)
	}
	e.clk.Advance(20 * time.Second)
	e.tick()
	if err := e.eng.Leave(e.ctx, tickets[len(tickets)-1]); err != nil {
		t.Fatal(err)
	}
	for _, g := range e.grants() {
		e.consume(g)
		if err := e.eng.Complete(e.ctx, e.room, g, origin); err != nil {
			t.Fatal(err)
		}
	}
	e.stats()
	if _, err := e.eng.Visitor(e.ctx, e.room, "far3"); err != nil {
		t.Fatal(err)
	}
	if err := e.eng.Delete(e.ctx, e.room); err != nil {
		t.Fatal(err)
	}

	if len(h.keys) < 20 {
		t.Fatalf("the scripts were given %d keys: the room's life ran too few scripts", len(h.keys))
	}
	for k, sha := range h.keys {
		if known[k] {
			continue
		}
		ok := false
		for _, p := range prefixes {
			ok = ok || (strings.HasPrefix(k, p) && len(k) > len(p))
		}
		if !ok {
			t.Errorf("a script (%.8s) was given %q, which keys.go does not name", sha, k)
		}
	}
}
