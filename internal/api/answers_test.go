package api_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/vestibule-dev/vestibule/internal/api/bookingapi"
	"github.com/vestibule-dev/vestibule/internal/api/httpapi"
	"github.com/vestibule-dev/vestibule/internal/api/roomhttp"
)

// Every engine error a product answers, wrapped as the engines wrap them,
// gets its row's status and code, and docs/API.md lists that code under that
// status.
func TestAnswersAsDocumented(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "API.md"))
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile(`(?m)^\| (\d{3}) \| ([^|]*)\|`)
	code := regexp.MustCompile("`" + `([a-z_]+)` + "`")
	table := map[int]map[string]bool{}
	for _, m := range row.FindAllStringSubmatch(string(b), -1) {
		status, _ := strconv.Atoi(m[1])
		if table[status] == nil {
			table[status] = map[string]bool{}
		}
		for _, c := range code.FindAllStringSubmatch(m[2], -1) {
			table[status][c[1]] = true
		}
	}
	if len(table) == 0 {
		t.Fatal("docs/API.md has no table of error statuses")
	}
	for name, answers := range map[string]httpapi.Answers{"roomhttp": roomhttp.Answers, "bookingapi": bookingapi.Answers} {
		for _, a := range answers {
			e := httpapi.ToError(fmt.Errorf("engine: %w", a.Err), answers)
			if e.Status != a.Status || e.Code != a.Code {
				t.Errorf("%s %v: answered %d %s, want %d %s", name, a.Err, e.Status, e.Code, a.Status, a.Code)
			}
			if e.Message == "" || e.Cause != nil {
				t.Errorf("%s %v: message %q, cause %v: a 4xx says what is wrong and logs no cause", name, a.Err, e.Message, e.Cause)
			}
			if !table[a.Status][a.Code] {
				t.Errorf("docs/API.md does not list %s under %d", a.Code, a.Status)
			}
		}
	}
}
