// This file holds the subprocess helpers every section shares: a cleanup
// stack that also runs on SIGINT/SIGTERM, commands that die with the
// benchmark, timed runs, re-exec of this binary in a hidden child mode
// with its peak RSS, and a check for leftover child processes.
package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// cleanups is a LIFO stack of functions to run at exit, normal or not.
var cleanups struct {
	mu   sync.Mutex
	next int
	fns  map[int]func()
}

// onExit registers fn to run at exit and returns a function that runs it
// now instead (at most once).
func onExit(fn func()) (runNow func()) {
	cleanups.mu.Lock()
	if cleanups.fns == nil {
		cleanups.fns = map[int]func(){}
	}
	id := cleanups.next
	cleanups.next++
	cleanups.fns[id] = fn
	cleanups.mu.Unlock()
	return func() {
		cleanups.mu.Lock()
		f, ok := cleanups.fns[id]
		delete(cleanups.fns, id)
		cleanups.mu.Unlock()
		if ok {
			f()
		}
	}
}

// runCleanups runs every registered function, newest first.
func runCleanups() {
	for {
		cleanups.mu.Lock()
		id, found := -1, false
		for k := range cleanups.fns {
			if k > id {
				id, found = k, true
			}
		}
		var f func()
		if found {
			f = cleanups.fns[id]
			delete(cleanups.fns, id)
		}
		cleanups.mu.Unlock()
		if !found {
			return
		}
		f()
	}
}

// command returns a command whose process the kernel kills if the
// benchmark dies first.
func command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	return cmd
}

// timeRun starts cmd, waits for it to exit and returns the wall time from
// fork to reaped exit.
func timeRun(cmd *exec.Cmd) (time.Duration, error) {
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	err := cmd.Wait()
	d := time.Since(start)
	if err != nil {
		return d, fmt.Errorf("%s: %w", cmd.Path, err)
	}
	return d, nil
}

// childFlag, as the first argument, runs this binary in a child mode
// (see child.go) instead of the benchmark.
const childFlag = "-bench-child"

// childProcesses lists the live (not zombie) processes whose parent is
// this one.
func childProcesses() []int {
	self := os.Getpid()
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...; comm may hold spaces and parens.
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(stat[i+1:]))
		if len(f) < 2 || f[0] == "Z" {
			continue
		}
		if ppid, _ := strconv.Atoi(f[1]); ppid == self {
			out = append(out, pid)
		}
	}
	return out
}
