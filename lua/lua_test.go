package lua

import (
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// Each script carries every definition of its lib (lib.lua, booking_lib.lua)
// it uses, directly or through another, in the lib's order, and no others.
func TestWithLibKeepsWhatIsUsed(t *testing.T) {
	byLib := map[string]map[string]string{}
	for _, s := range Sources {
		if s.Lib == "" {
			if s.Run != s.Op {
				t.Errorf("%s stands alone but runs more than its file", s.File)
			}
			continue
		}
		if byLib[s.Lib] == nil {
			byLib[s.Lib] = map[string]string{}
		}
		if s.Run != withLib(libs[s.Lib], s.Op) {
			t.Errorf("%s: what runs is not %s's definitions it uses, then the file", s.File, s.Lib)
		}
		byLib[s.Lib][s.File] = s.Op
	}
	for name, scripts := range byLib {
		checkWithLib(t, libs[name], scripts)
	}
	// What the poll, the hottest script, leaves out.
	for _, n := range []string{"limit_client", "admitted_last_minute", "count_admissions", "free_slots"} {
		if strings.Contains(Poll, "local function "+n+"(") {
			t.Errorf("poll carries %s", n)
		}
	}
	if !strings.Contains(RateLimit, "local function limit_client(") || strings.Contains(RateLimit, "local function reply(") {
		t.Errorf("ratelimit: wrong definitions kept")
	}
}

// Every script file of this directory has its row in Sources, once, and every
// row its file, so that no script escapes the contract tests.
func TestEveryScriptHasASource(t *testing.T) {
	files, err := filepath.Glob("*.lua")
	if err != nil || len(files) == 0 {
		t.Fatalf("no script files found: %v", err)
	}
	rows := map[string]int{}
	for _, s := range Sources {
		rows[s.File]++
		if s.Lib != "" && libs[s.Lib] == "" {
			t.Errorf("%s: unknown lib %q", s.File, s.Lib)
		}
	}
	for _, f := range files {
		if libFiles[f] {
			continue
		}
		if rows[f] != 1 {
			t.Errorf("%s has %d rows in Sources, want 1", f, rows[f])
		}
		delete(rows, f)
	}
	for f := range rows {
		t.Errorf("Sources names %s, which is no file here", f)
	}
}

// contractRef is a KEYS or ARGV index a script's header documents or its code
// reads: KEYS[3], ARGV[3..10] (a range).
var contractRef = regexp.MustCompile(`(KEYS|ARGV)\[(\d+)(?:\s*\.\.\s*(\d+))?`)

// codeRef is a KEYS or ARGV index code reads by number: KEYS[3] (not ARGV[7 + i]).
var codeRef = regexp.MustCompile(`(KEYS|ARGV)\[(\d+)\]`)

// Each script opens with its contract (docs/ARCHITECTURE.md, "Redis"): a
// header of comment lines that starts with its file's name, documents every
// KEYS and ARGV index the code reads by number, and says what it returns.
func TestScriptContracts(t *testing.T) {
	for _, s := range Sources {
		lines := strings.Split(s.Op, "\n")
		if !strings.HasPrefix(lines[0], "-- "+s.File+":") {
			t.Errorf("%s: the header does not start with %q", s.File, "-- "+s.File+":")
		}
		var header, code []string
		for i, l := range lines {
			if !strings.HasPrefix(l, "--") {
				header, code = lines[:i], lines[i:]
				break
			}
		}
		h := strings.Join(header, "\n")
		if !strings.Contains(strings.ToLower(h), "return") {
			t.Errorf("%s: the header does not say what it returns", s.File)
		}
		documented := map[string]bool{}
		for _, m := range contractRef.FindAllStringSubmatch(h, -1) {
			lo, _ := strconv.Atoi(m[2])
			hi := lo
			if m[3] != "" {
				hi, _ = strconv.Atoi(m[3])
			}
			for i := lo; i <= hi; i++ {
				documented[m[1]+strconv.Itoa(i)] = true
			}
		}
		// A room script takes the room's KEYS (lib.lua's header) first.
		if s.Room() && strings.Contains(h, "the room's keys (lib.lua)") {
			for i := 1; i <= 8; i++ {
				documented["KEYS"+strconv.Itoa(i)] = true
			}
		}
		for _, l := range code {
			if strings.HasPrefix(strings.TrimSpace(l), "--") {
				continue
			}
			for _, m := range codeRef.FindAllStringSubmatch(l, -1) {
				if !documented[m[1]+m[2]] {
					t.Errorf("%s reads %s[%s], which its header does not document", s.File, m[1], m[2])
				}
			}
		}
	}
}

// checkWithLib: each script of scripts carries every definition of lib it
// uses, in lib's order, and no others.
func checkWithLib(t *testing.T, lib string, scripts map[string]string) {
	t.Helper()
	defs := libDefs(lib)
	if got := strings.Join(func() []string {
		var s []string
		for _, d := range defs {
			s = append(s, d.text)
		}
		return s
	}(), ""); got != strings.TrimRight(lib, "\n")+"\n" {
		t.Fatalf("the lib's definitions do not add up to the lib")
	}
	for name, op := range scripts {
		full := withLib(lib, op)
		if !strings.HasSuffix(full, op) {
			t.Fatalf("%s: the operation is not at the end", name)
		}
		part := strings.TrimSuffix(full, op)
		// Kept definitions appear in the lib's order.
		rest := part
		kept := map[string]bool{}
		for _, d := range defs {
			if strings.HasPrefix(rest, d.text) {
				rest = rest[len(d.text):]
				for _, n := range d.names {
					kept[n] = true
				}
			}
		}
		if rest != "" {
			t.Fatalf("%s: the lib part is not the lib's definitions in order: %.80q left", name, rest)
		}
		// Whatever the kept code and the operation name is defined.
		u := uses(part + op)
		for _, d := range defs {
			for _, n := range d.names {
				if u[n] && !kept[n] {
					t.Errorf("%s uses %s but its definition was left out", name, n)
				}
				if kept[n] && !u[n] {
					t.Errorf("%s carries %s, which nothing uses", name, n)
				}
			}
		}
	}
}
