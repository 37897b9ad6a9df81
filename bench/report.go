// This file holds the Markdown report: a Doc that sections write
// paragraphs, lists and tables into, and the formatters that keep units
// consistent across sections.
package main

import (
	"bytes"
	"fmt"
	"strings"
	"time"
)

// Doc accumulates Markdown.
type Doc struct{ b bytes.Buffer }

// H2 starts a section.
func (d *Doc) H2(title string) { fmt.Fprintf(&d.b, "## %s\n\n", title) }

// H3 starts a subsection.
func (d *Doc) H3(title string) { fmt.Fprintf(&d.b, "### %s\n\n", title) }

// P writes one paragraph.
func (d *Doc) P(format string, args ...any) {
	fmt.Fprintf(&d.b, format, args...)
	d.b.WriteString("\n\n")
}

// List writes a bullet list.
func (d *Doc) List(items ...string) {
	for _, it := range items {
		fmt.Fprintf(&d.b, "- %s\n", it)
	}
	d.b.WriteString("\n")
}

// Table writes t.
func (d *Doc) Table(t *Table) {
	t.write(&d.b)
	d.b.WriteString("\n")
}

// Bytes returns the document so far.
func (d *Doc) Bytes() []byte { return d.b.Bytes() }

// Table is a Markdown table: the first column is left-aligned (labels),
// the others right-aligned (numbers).
type Table struct {
	header []string
	rows   [][]string
	left   bool
}

// NewTable returns a table with the given column headers.
func NewTable(header ...string) *Table { return &Table{header: header} }

// AlignLeft left-aligns every column (for tables of facts, not numbers).
func (t *Table) AlignLeft() *Table { t.left = true; return t }

// Row appends a row; each cell is formatted with fmt.Sprint.
func (t *Table) Row(cells ...any) {
	row := make([]string, len(cells))
	for i, c := range cells {
		row[i] = strings.ReplaceAll(fmt.Sprint(c), "|", `\|`)
	}
	t.rows = append(t.rows, row)
}

func (t *Table) write(b *bytes.Buffer) {
	line := func(cells []string) {
		b.WriteString("|")
		for i := range t.header {
			c := ""
			if i < len(cells) {
				c = cells[i]
			}
			fmt.Fprintf(b, " %s |", c)
		}
		b.WriteString("\n")
	}
	line(t.header)
	b.WriteString("|")
	for i := range t.header {
		if i == 0 || t.left {
			b.WriteString("---|")
		} else {
			b.WriteString("---:|")
		}
	}
	b.WriteString("\n")
	for _, r := range t.rows {
		line(r)
	}
}

// Dur formats a duration with three significant digits in a fitting unit.
func Dur(d time.Duration) string {
	switch {
	case d < time.Microsecond:
		return fmt.Sprintf("%d ns", d.Nanoseconds())
	case d < time.Millisecond:
		return sig3(float64(d)/float64(time.Microsecond)) + " µs"
	case d < time.Second:
		return sig3(float64(d)/float64(time.Millisecond)) + " ms"
	}
	return sig3(d.Seconds()) + " s"
}

// Ratio formats a/b as a multiplier ("1.23×").
func Ratio(a, b float64) string {
	if b == 0 {
		return "—"
	}
	return fmt.Sprintf("%.2f×", a/b)
}

// DurRatio is Ratio for durations.
func DurRatio(a, b time.Duration) string { return Ratio(float64(a), float64(b)) }

// MB formats bytes in megabytes (10^6 bytes, the unit the targets use).
func MB(bytes uint64) string { return fmt.Sprintf("%.1f MB", float64(bytes)/1e6) }

// Count formats n with thousands separators.
func Count(n uint64) string {
	s := fmt.Sprint(n)
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Rate formats events per second.
func Rate(perSec float64) string { return Count(uint64(perSec+0.5)) + "/s" }

// PassFail renders a target check.
func PassFail(ok bool) string {
	if ok {
		return "**pass**"
	}
	return "**FAIL**"
}

func sig3(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2f", v)
}
