package text_test

import (
	"testing"

	"github.com/vestibule-dev/vestibule/internal/text"
)

func TestClean(t *testing.T) {
	for _, c := range []struct {
		s           string
		line, lines bool
	}{
		{"Sold out. Thank you!", true, true},
		{"매진되었습니다 — Esgotado", true, true},
		{"two\nlines\tand a tab", false, true},
		{"", true, true},
		{"nul\x00", false, false},
		{"bell\a", false, false},
		{"cr\r", false, false},
		{"esc\x1b[31m", false, false},
		{"del\x7f", false, false},
		{"nel\u0085", false, false},
		{"csi\u009b", false, false},
		{"c1 start\u0080", false, false},
		{"nbsp\u00a0ok", true, true},
		{"line sep\u2028", false, true},
		{"para sep\u2029", false, true},
		{"bad utf-8 \xff", false, false},
		{"replacement \ufffd", false, false},
	} {
		if got := text.Clean(c.s, false); got != c.line {
			t.Errorf("Clean(%q, one line) = %v, want %v", c.s, got, c.line)
		}
		if got := text.Clean(c.s, true); got != c.lines {
			t.Errorf("Clean(%q, lines) = %v, want %v", c.s, got, c.lines)
		}
	}
}
