package rangecompress

import (
	"slices"
	"strconv"
	"strings"
)

// Compress returns the shelf label of nums.
func Compress(nums []int) string {
	s := slices.Clone(nums)
	slices.Sort(s)
	s = slices.Compact(s)
	var parts []string
	for i := 0; i < len(s); {
		j := i
		for j+1 < len(s) && s[j+1] == s[j]+1 {
			j++
		}
		if j-i >= 2 {
			parts = append(parts, strconv.Itoa(s[i])+"-"+strconv.Itoa(s[j]))
		} else {
			for k := i; k <= j; k++ {
				parts = append(parts, strconv.Itoa(s[k]))
			}
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}
