package registry

import (
	"fmt"
	"slices"
	"strings"
)

// suggest returns up to three candidates close to name by edit distance,
// closest first.
func suggest(name string, candidates []string) []string {
	type scored struct {
		s string
		d int
	}
	limit := max(2, len(name)/3)
	var hits []scored
	for _, c := range candidates {
		d := distance(name, c)
		if strings.HasSuffix(c, "/"+name) {
			d = 0
		}
		if d <= limit {
			hits = append(hits, scored{c, d})
		}
	}
	slices.SortFunc(hits, func(a, b scored) int {
		if a.d != b.d {
			return a.d - b.d
		}
		return strings.Compare(a.s, b.s)
	})
	var out []string
	for _, h := range hits {
		if !slices.Contains(out, h.s) {
			out = append(out, h.s)
		}
		if len(out) == 3 {
			break
		}
	}
	return out
}

// distance is the Levenshtein distance between a and b.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func quoteJoin(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, " or ")
}
