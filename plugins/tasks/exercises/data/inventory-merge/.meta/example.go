package inventorymerge

import (
	"fmt"
	"sort"
	"strings"
)

// Merge combines two stock reports into a sorted stock list.
func Merge(a, b map[string]int) []string {
	total := map[string]int{}
	for _, m := range []map[string]int{a, b} {
		for name, n := range m {
			total[strings.ToLower(strings.TrimSpace(name))] += n
		}
	}
	var out []string
	for name, n := range total {
		if n > 0 {
			out = append(out, fmt.Sprintf("%s:%d", name, n))
		}
	}
	sort.Slice(out, func(i, j int) bool {
		return strings.SplitN(out[i], ":", 2)[0] < strings.SplitN(out[j], ":", 2)[0]
	})
	return out
}
