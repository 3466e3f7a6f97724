package main

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// printer writes a command's output and keeps the first write error, so that
// a command prints line by line and reports a failed write (a closed pipe, a
// full disk) once, at its end; after a failure it writes nothing more.
type printer struct {
	w   io.Writer
	err error
}

func (p *printer) printf(format string, a ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format, a...)
	}
}

func (p *printer) println(a ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintln(p.w, a...)
	}
}

// table is a printer into a tabwriter on w; flush writes the table out.
type table struct {
	printer
	tw *tabwriter.Writer
}

func newTable(w io.Writer, flags uint) *table {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', flags)
	return &table{printer: printer{w: tw}, tw: tw}
}

// flush writes the table out and returns the first error of its writes.
func (t *table) flush() error {
	if t.err != nil {
		return t.err
	}
	return t.tw.Flush()
}
