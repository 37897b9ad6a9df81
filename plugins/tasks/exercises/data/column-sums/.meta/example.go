package columnsums

import (
	"fmt"
	"strconv"
	"strings"
)

// Sums returns the sum of every column of text.
func Sums(text string) ([]int, error) {
	var sums []int
	for i, line := range strings.Split(text, "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		fields := strings.Split(line, ",")
		if sums == nil {
			sums = make([]int, len(fields))
		} else if len(fields) != len(sums) {
			return nil, fmt.Errorf("line %d: %d fields, want %d", i+1, len(fields), len(sums))
		}
		for j, f := range fields {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil {
				return nil, fmt.Errorf("line %d: field %d: %q is not an integer", i+1, j+1, f)
			}
			sums[j] += n
		}
	}
	return sums, nil
}
