package intervalgaps

// Span is the half-open time span [Start, End) in minutes.
type Span struct {
	Start, End int
}

// Gaps returns the free spans of day, at least min minutes long.
func Gaps(day Span, busy []Span, min int) []Span {
	return nil
}
