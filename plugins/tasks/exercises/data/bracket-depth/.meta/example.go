package bracketdepth

// Depth returns the deepest bracket nesting of s, or -1 when its brackets
// are unbalanced.
func Depth(s string) int {
	pairs := map[rune]rune{')': '(', ']': '[', '}': '{'}
	var stack []rune
	deepest := 0
	for _, r := range s {
		switch r {
		case '(', '[', '{':
			stack = append(stack, r)
			deepest = max(deepest, len(stack))
		case ')', ']', '}':
			if len(stack) == 0 || stack[len(stack)-1] != pairs[r] {
				return -1
			}
			stack = stack[:len(stack)-1]
		}
	}
	if len(stack) != 0 {
		return -1
	}
	return deepest
}
