// Command nop exits at once: the benchmarks' reference for the cost of
// exec'ing the smallest possible Go binary.
package main

func main() {}
