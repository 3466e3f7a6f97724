package main

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
)

// A rehearsal leaves nothing in the working directory: the chart is written
// only when -chart names a file (it used to be crowd.png, always).
func TestRunWritesOnlyTheChartAskedFor(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	args := os.Args
	t.Cleanup(func() { os.Args = args })
	play := func(extra ...string) {
		t.Helper()
		flag.CommandLine = flag.NewFlagSet("vestibule-sim", flag.ContinueOnError)
		os.Args = append([]string{"vestibule-sim", "-driver", "virtual", "-visitors", "20", "-replay", "0"}, extra...)
		if code := run(); code != 0 {
			t.Fatalf("vestibule-sim %v: exit %d", os.Args[1:], code)
		}
	}
	play()
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Fatalf("a run without -chart left %v in the working directory", left)
	}
	chart := filepath.Join(t.TempDir(), "room.png")
	play("-chart", chart)
	if fi, err := os.Stat(chart); err != nil || fi.Size() == 0 {
		t.Fatalf("-chart %s: %v", chart, err)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Fatalf("a run with -chart elsewhere left %v in the working directory", left)
	}
}
