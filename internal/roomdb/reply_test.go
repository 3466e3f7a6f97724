package roomdb

import (
	"reflect"
	"regexp"
	"slices"
	"testing"

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
