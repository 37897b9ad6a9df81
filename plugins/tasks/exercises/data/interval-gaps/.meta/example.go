package intervalgaps

import "slices"

// Span is the half-open time span [Start, End) in minutes.
type Span struct {
	Start, End int
}

// Gaps returns the free spans of day, at least min minutes long.
func Gaps(day Span, busy []Span, min int) []Span {
	b := slices.Clone(busy)
	slices.SortFunc(b, func(x, y Span) int { return x.Start - y.Start })
	var out []Span
	cursor := day.Start
	add := func(end int) {
		if end > day.End {
			end = day.End
		}
		if end-cursor >= min && end > cursor {
			out = append(out, Span{cursor, end})
		}
	}
	for _, s := range b {
		if s.End <= s.Start {
			continue
		}
		if s.Start > cursor {
			add(s.Start)
		}
		if s.End > cursor {
			cursor = s.End
		}
		if cursor >= day.End {
			return out
		}
	}
	add(day.End)
	return out
}
