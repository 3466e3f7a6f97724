package room

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// docs/ENGINE.md's "Room settings" table lists exactly the settings of the
// table in config.go, so a new row there cannot go undocumented.
func TestSettingsDocumented(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "ENGINE.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## Room settings\n")
	if !ok {
		t.Fatal("docs/ENGINE.md has no \"Room settings\" section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	row := regexp.MustCompile("(?m)^\\| `([A-Za-z0-9]+)` \\|")
	var documented []string
	for _, m := range row.FindAllStringSubmatch(section, -1) {
		documented = append(documented, m[1])
	}
	var names []string
	for _, s := range Settings() {
		names = append(names, s.Name)
		if !slices.Contains(documented, s.Name) {
			t.Errorf("docs/ENGINE.md's settings table has no row for %s", s.Name)
		}
	}
	for _, d := range documented {
		if !slices.Contains(names, d) {
			t.Errorf("docs/ENGINE.md documents a setting %s that the table in config.go does not have", d)
		}
	}
}
