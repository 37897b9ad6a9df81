// This file turns timing samples into summaries. Percentiles are taken
// from the sorted sample by nearest rank, with no interpolation and no
// assumptions about the distribution.
package main

import (
	"slices"
	"time"
)

// Summary describes a sample of durations.
type Summary struct {
	N                  int
	Min, P50, P99, Max time.Duration
	Mean               time.Duration
}

// Summarize sorts a copy of ds and summarizes it.
func Summarize(ds []time.Duration) Summary {
	if len(ds) == 0 {
		return Summary{}
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	var sum time.Duration
	for _, d := range s {
		sum += d
	}
	return Summary{
		N: len(s), Min: s[0], Max: s[len(s)-1],
		P50: rank(s, 50), P99: rank(s, 99),
		Mean: sum / time.Duration(len(s)),
	}
}

// rank returns the nearest-rank p-th percentile of sorted s.
func rank(s []time.Duration, p float64) time.Duration {
	i := int(float64(len(s))*p/100+0.9999999) - 1
	return s[max(0, min(i, len(s)-1))]
}

// Median returns the median of xs (the lower middle for even lengths).
func Median[T int64 | uint64 | float64 | time.Duration](xs []T) T {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[(len(s)-1)/2]
}
