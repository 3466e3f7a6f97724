package gate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vestibule-dev/vestibule/internal/room"
)

// The room id's pattern has one definition in Go, room.ValidRoomID. gate keeps
// a copy (roomPattern, and the room group of the cookie's grammar: a public
// package links nothing of the engine), and JavaScript three: the CloudFront
// Function's cookie grammar, the waiting page's ROOM_RE and the stack's
// room-paths function. This test fails when one drifts from the others.
func TestRoomIDCopiesAgree(t *testing.T) {
	for _, s := range []string{"", "a", "A-z_9", "-", "_", strings.Repeat("r", 64), strings.Repeat("r", 65),
		"a.b", "a/b", "a b", "café", "{a}", "a\n", "a%20b", "a:b"} {
		if roomPattern.MatchString(s) != room.ValidRoomID(s) {
			t.Errorf("room id %q: gate says %v, room.ValidRoomID %v", s, roomPattern.MatchString(s), room.ValidRoomID(s))
		}
	}
	class := strings.TrimSuffix(strings.TrimPrefix(roomPattern.String(), "^"), "$")
	group := `\.(` + class + `)\.`
	if !strings.Contains(cookiePattern.String(), group) {
		t.Errorf("the cookie's grammar has no room group %s: %s", group, cookiePattern)
	}
	if !strings.Contains(functionSource, group) {
		t.Errorf("the CloudFront Function's cookie grammar has no room group %s", group)
	}
	page, err := os.ReadFile(filepath.Join("..", "static", "js", "main.js"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "const ROOM_RE = /^" + class + "$/;"; !strings.Contains(string(page), want) {
		t.Errorf("static/js/main.js has no %s", want)
	}
	// The stack's room-paths function, wherever in infra/stack it is written.
	stackFiles, err := filepath.Glob(filepath.Join("..", "infra", "stack", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, f := range stackFiles {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for line := range strings.Lines(string(b)) {
			if strings.Contains(line, `(r|rooms)\/`) {
				found = true
				if !strings.Contains(line, `(r|rooms)\/`+class+`\/?$`) {
					t.Errorf("%s: the room-paths function's pattern is not %s: %s", f, class, strings.TrimSpace(line))
				}
			}
		}
	}
	if !found {
		t.Error("no room-paths function (/^\\/(r|rooms)\\/…/) in infra/stack")
	}
}
