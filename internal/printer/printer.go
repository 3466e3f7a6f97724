// Package printer writes a program's text output and keeps the first write
// error, so that a command prints line by line and reports a failed write (a
// closed pipe, a full disk) once, at its end, instead of checking each line or
// losing the failure. After a failed write it writes nothing more.
package printer

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// Printer writes to W and keeps the first error.
type Printer struct {
	w   io.Writer
	err error
}

// New returns a Printer writing to w.
func New(w io.Writer) *Printer { return &Printer{w: w} }

// Printf writes as fmt.Fprintf does, unless a write has failed.
func (p *Printer) Printf(format string, a ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format, a...)
	}
}

// Println writes as fmt.Fprintln does, unless a write has failed.
func (p *Printer) Println(a ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintln(p.w, a...)
	}
}

// Err is the first write error, or nil.
func (p *Printer) Err() error { return p.err }

// Table is a Printer into a tabwriter (cells padded by two spaces); Flush
// writes the table out.
type Table struct {
	Printer
	tw *tabwriter.Writer
}

// NewTable returns a Table writing to w with the tabwriter flags given.
func NewTable(w io.Writer, flags uint) *Table {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', flags)
	return &Table{Printer: Printer{w: tw}, tw: tw}
}

// Flush writes the table out and returns the first error of its writes.
func (t *Table) Flush() error {
	if t.err != nil {
		return t.err
	}
	return t.tw.Flush()
}
