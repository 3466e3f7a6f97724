// Package text is the one rule for the characters a text field takes: every
// text an admin or a client sends that Vestibule keeps or shows (a room's page
// texts, its URLs, a booking's cancel reason) is checked by it, so no field
// lets through what another refuses.
package text

import "strings"

// Refused reports whether r is a character no text field takes: a C0 control
// (U+0000–U+001F) but, where a text may hold lines (lines), tab and line feed;
// DEL (U+007F); a C1 control (U+0080–U+009F, NEL U+0085 among them), and the
// line and paragraph separators (U+2028, U+2029) where it may not; and the
// replacement character U+FFFD, which is what invalid UTF-8 decodes to.
func Refused(r rune, lines bool) bool {
	switch {
	case r == '\n', r == '\t', r == 0x2028, r == 0x2029:
		return !lines
	case r < 0x20, r == 0x7f, r >= 0x80 && r < 0xa0, r == 0xfffd:
		return true
	}
	return false
}

// Clean reports whether s holds no character Refused refuses (lines: s may
// hold line breaks and tabs).
func Clean(s string, lines bool) bool {
	return !strings.ContainsFunc(s, func(r rune) bool { return Refused(r, lines) })
}
