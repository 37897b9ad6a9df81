package bracketdepth

// Depth returns the deepest bracket nesting of s, or -1 when its brackets
// are unbalanced.
func Depth(s string) int {
	return 0
}
