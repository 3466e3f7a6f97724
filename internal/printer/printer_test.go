package printer_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/vestibule-dev/vestibule/internal/printer"
)

// failAfter accepts n writes, then refuses every one.
type failAfter struct {
	n      int
	writes int
	got    strings.Builder
}

func (f *failAfter) Write(b []byte) (int, error) {
	f.writes++
	if f.writes > f.n {
		return 0, errors.New("broken pipe")
	}
	return f.got.Write(b)
}

func TestPrinterKeepsTheFirstError(t *testing.T) {
	w := &failAfter{n: 1}
	p := printer.New(w)
	p.Printf("%s\n", "one")
	p.Println("two")
	p.Println("three")
	if p.Err() == nil || p.Err().Error() != "broken pipe" {
		t.Errorf("Err = %v, want the failed write's error", p.Err())
	}
	if w.writes != 2 || w.got.String() != "one\n" {
		t.Errorf("%d writes, %q written: nothing should be tried after the failure", w.writes, w.got.String())
	}
}

func TestTable(t *testing.T) {
	var b strings.Builder
	tb := printer.NewTable(&b, 0)
	tb.Printf("a\tbb\n")
	tb.Println("ccc\td")
	if err := tb.Flush(); err != nil {
		t.Fatal(err)
	}
	if b.String() != "a    bb\nccc  d\n" {
		t.Errorf("table %q", b.String())
	}
	broken := printer.NewTable(&failAfter{}, 0)
	broken.Println("x")
	if err := broken.Flush(); err == nil {
		t.Error("a table into a broken pipe flushed without an error")
	}
}
