package httpapi

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// docsErrorTable reads docs/API.md's table of error statuses and codes:
// status → the codes its rows list.
func docsErrorTable(t *testing.T) map[int][]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "API.md"))
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile(`(?m)^\| (\d{3}) \| ([^|]*)\|`)
	code := regexp.MustCompile("`" + `([a-z_]+)` + "`")
	table := map[int][]string{}
	for _, m := range row.FindAllStringSubmatch(string(b), -1) {
		status, _ := strconv.Atoi(m[1])
		for _, c := range code.FindAllStringSubmatch(m[2], -1) {
			table[status] = append(table[status], c[1])
		}
	}
	if len(table) == 0 {
		t.Fatal("docs/API.md has no table of error statuses")
	}
	return table
}

func documented(table map[int][]string, status int, code string) bool {
	for _, c := range table[status] {
		if c == code {
			return true
		}
	}
	return false
}

// The errors httpapi declares are answered as themselves, and docs/API.md
// lists each (the products' answers to their engines' errors are held by
// api.TestAnswersAsDocumented).
func TestToErrorAnswersAsDocumented(t *testing.T) {
	table := docsErrorTable(t)
	for _, e := range []*Error{ErrBadJSON, ErrInvalidToken, ErrTokenExpired, ErrNotOrigin} {
		if got := ToError(fmt.Errorf("wrapped: %w", e)); got != e {
			t.Errorf("%s: an *Error is not answered as itself: %v", e.Code, got)
		}
		if !documented(table, e.Status, e.Code) {
			t.Errorf("docs/API.md does not list %s under %d", e.Code, e.Status)
		}
	}
}

// Anything else is a 503 whose message says nothing of its cause, which
// only the log gets.
func TestToErrorUnforeseenIsUnavailable(t *testing.T) {
	cause := errors.New("dial tcp 10.0.0.7:6379: connection refused")
	e := ToError(cause)
	if e.Status != http.StatusServiceUnavailable || e.Code != "unavailable" || e.Cause != cause {
		t.Fatalf("answered %d %s (cause %v)", e.Status, e.Code, e.Cause)
	}
	if strings.Contains(e.Message, "10.0.0.7") {
		t.Errorf("the message shows the cause: %q", e.Message)
	}
	resp := ErrorResponse(e)
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Headers["Retry-After"] == "" || strings.Contains(resp.Body, "10.0.0.7") {
		t.Errorf("the answer: %d %v %s", resp.StatusCode, resp.Headers, resp.Body)
	}
}
